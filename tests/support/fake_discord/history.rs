//! The fake's message history: every channel's messages as Discord keeps
//! them (the people's, also those written while the bot was away, and the
//! bot's own), and `GET /channels/{id}/messages` reading them back as
//! Discord's documentation says: `after` (messages with a greater id),
//! `limit` (1 to 100, 50 when not given), newest first, and no `guild_id`
//! (a field of the Gateway's `MESSAGE_CREATE` alone).

use super::{authorized, json_response, unauthorized, Shared};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// One `GET /channels/{id}/messages` the bridge made.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadBack {
    pub channel: u64,
    pub after: Option<u64>,
    pub limit: Option<u64>,
}

/// Keeps `message` (as dispatched) in its channel's history.
pub(super) fn keep(shared: &Shared, message: &Value) {
    let channel = message["channel_id"]
        .as_str()
        .and_then(|id| id.parse::<u64>().ok())
        .unwrap_or_default();
    let mut kept = message.clone();
    if let Some(fields) = kept.as_object_mut() {
        fields.remove("guild_id");
    }
    shared.lock().history.entry(channel).or_default().push(kept);
}

/// The messages of a channel's `history` that `after` and `limit` ask for,
/// newest first: with `after`, the `limit` oldest after it; without, the
/// `limit` newest.
fn page(history: &[Value], after: Option<u64>, limit: usize) -> Vec<Value> {
    let id = |message: &Value| {
        message["id"]
            .as_str()
            .and_then(|id| id.parse::<u64>().ok())
            .unwrap_or_default()
    };
    let mut chosen: Vec<Value> = match after {
        Some(after) => history
            .iter()
            .filter(|message| id(message) > after)
            .take(limit)
            .cloned()
            .collect(),
        None => {
            let skip = history.len().saturating_sub(limit);
            history[skip..].to_vec()
        }
    };
    chosen.reverse();
    chosen
}

pub(super) async fn channel_messages(
    State(shared): State<Arc<Shared>>,
    Path(channel): Path<u64>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&shared, &headers) {
        return unauthorized();
    }
    let number = |name: &str| query.get(name).and_then(|value| value.parse::<u64>().ok());
    let (after, limit) = (number("after"), number("limit"));
    shared.lock().calls.read_back.push(ReadBack {
        channel,
        after,
        limit,
    });
    shared.bump();
    let wanted = limit.unwrap_or(50);
    if !(1..=100).contains(&wanted) {
        let error = json!({"message": "Invalid Form Body", "code": 50035});
        return json_response(StatusCode::BAD_REQUEST, &error);
    }
    let state = shared.lock();
    let history = state.history.get(&channel).map(Vec::as_slice);
    let messages = page(history.unwrap_or_default(), after, wanted as usize);
    drop(state);
    json_response(StatusCode::OK, &Value::Array(messages))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_the_oldest_after_the_id_newest_first() {
        let history: Vec<Value> = (1..=5).map(|id| json!({"id": id.to_string()})).collect();
        let ids = |page: Vec<Value>| -> Vec<String> {
            page.iter()
                .map(|message| message["id"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(ids(page(&history, Some(1), 2)), ["3", "2"]);
        assert_eq!(ids(page(&history, Some(4), 2)), ["5"]);
        assert_eq!(ids(page(&history, None, 2)), ["5", "4"]);
    }
}
