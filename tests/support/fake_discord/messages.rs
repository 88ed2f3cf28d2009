//! The fake's channel messages: the bot's sends (`POST
//! /channels/{id}/messages`, JSON or multipart, with the trouble a test
//! asked for), and every channel's history as Discord keeps it (the
//! people's messages, also those written while the bot was away, and the
//! bot's own), read back by `GET /channels/{id}/messages` as Discord's
//! documentation says: `after` (messages with a greater id), `limit` (1 to
//! 100, 50 when not given), newest first, and no `guild_id` (a field of
//! the Gateway's `MESSAGE_CREATE` alone).

use super::{
    authorized, json_response, message_json, unauthorized, user_json, Sent, Shared, Trouble, BOT_ID,
};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Counts a held send while it waits.
struct Held(Arc<Shared>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.lock().calls.held -= 1;
        self.0.bump();
    }
}

pub(super) async fn create_message(
    State(shared): State<Arc<Shared>>,
    Path(channel): Path<u64>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !authorized(&shared, &headers) {
        return unauthorized();
    }
    let now = Instant::now();
    shared.lock().calls.sends_at.push(now);
    let trouble = shared.lock().trouble.pop_front();
    match trouble {
        Some(Trouble::RateLimited { retry_after }) => {
            shared.lock().calls.rate_limited_at.push(now);
            shared.bump();
            let body = json!({
                "message": "You are being rate limited.",
                "retry_after": retry_after,
                "global": false,
            });
            let mut response = json_response(StatusCode::TOO_MANY_REQUESTS, &body);
            let headers = response.headers_mut();
            let seconds = format!("{retry_after}");
            for (name, value) in [
                ("retry-after", format!("{}", retry_after.ceil() as u64)),
                ("x-ratelimit-limit", "5".to_string()),
                ("x-ratelimit-remaining", "0".to_string()),
                ("x-ratelimit-reset-after", seconds),
                ("x-ratelimit-bucket", "fake-bucket".to_string()),
                ("x-ratelimit-scope", "user".to_string()),
            ] {
                headers.insert(name, value.parse().unwrap());
            }
            return response;
        }
        Some(Trouble::Refused {
            status,
            code,
            message,
        }) => {
            shared.bump();
            let body = json!({"message": message, "code": code});
            let status = StatusCode::from_u16(status).unwrap();
            return json_response(status, &body);
        }
        None => {}
    }
    if shared.lock().hold {
        shared.lock().calls.held += 1;
        shared.bump();
        let _held = Held(shared.clone());
        let mut changed = shared.subscribe();
        while shared.lock().hold {
            let _ = changed.changed().await;
        }
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    let content_type = headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    let (payload, files) = if content_type.starts_with("multipart/form-data") {
        read_multipart(&body)
    } else {
        (
            serde_json::from_slice(&body).unwrap_or_default(),
            Vec::new(),
        )
    };
    let buttons: Vec<String> = payload["components"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
        .filter_map(|button| button["custom_id"].as_str().map(str::to_string))
        .collect();
    let content = payload["content"].as_str().unwrap_or_default().to_string();
    let id = shared.next_id();
    let sent = Sent {
        channel,
        content: content.clone(),
        buttons,
        files,
        allowed_mentions: payload["allowed_mentions"].clone(),
        id,
    };
    shared.lock().calls.sent.push(sent);
    shared.bump();
    let author = user_json(BOT_ID, "hearth", true);
    let mut message = message_json(id, channel, None, author, &content, Vec::new(), 0);
    if let Some(components) = payload.get("components") {
        message["components"] = components.clone();
    }
    keep(&shared, &message);
    json_response(StatusCode::OK, &message)
}

/// The `payload_json` part and the file names of a multipart body.
fn read_multipart(body: &[u8]) -> (Value, Vec<String>) {
    let text = String::from_utf8_lossy(body);
    let mut payload = Value::Null;
    let mut files = Vec::new();
    for part in text.split("Content-Disposition: form-data; ").skip(1) {
        let head = part.split("\r\n\r\n").next().unwrap_or_default();
        if let Some(at) = head.find("filename=\"") {
            let rest = &head[at + 10..];
            files.push(rest.split('"').next().unwrap_or_default().to_string());
        } else if head.starts_with("name=\"payload_json\"") {
            let value = part.split("\r\n\r\n").nth(1).unwrap_or_default();
            let value = value.split("\r\n--").next().unwrap_or_default();
            payload = serde_json::from_str(value).unwrap_or_default();
        }
    }
    (payload, files)
}

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
    fn a_multipart_body_gives_its_payload_and_file_names() {
        let body = "--b\r\nContent-Disposition: form-data; name=\"payload_json\"\r\n\r\n{\"content\":\"hi\"}\r\n--b\r\nContent-Disposition: form-data; name=\"files[0]\"; filename=\"image.png\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n--b--\r\n";
        let (payload, files) = read_multipart(body.as_bytes());
        assert_eq!(payload["content"], "hi");
        assert_eq!(files, vec!["image.png"]);
    }

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
