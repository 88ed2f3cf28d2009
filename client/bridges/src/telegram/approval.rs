//! Approvals on Telegram: a tool call waiting for approval goes to the
//! allowed users' chats with Allow and Deny buttons, and a press by an
//! allowed user answers it.
//!
//! A button's `callback_data` is `approve:<id>:yes` or `approve:<id>:no`.
//! The press goes to the daemon as an `approve` frame naming the user; then
//! `answerCallbackQuery` stops the button's spinner and says how it went
//! (allowed, denied, or already decided). Presses by anyone not on the
//! allowlist are ignored. Requests are live events, never logged: a bridge
//! that was down when one was asked misses it, and the timeout denies it.

use super::api::{Api, CallbackQuery, Failure};
use super::bridge::BridgeError;
use super::config::TelegramConfig;
use crate::bridge::delivery::Feed;
use crate::bridge::link::{self, LinkError};
use hearth_client::Connection;
use hearth_protocol::{ClientFrame, Event, ServerFrame};
use serde_json::{json, Value};

/// Characters of a call shown in a request (Telegram takes 4,096).
const SHOWN_CHARS: usize = 3000;

/// The text of a request's message, for an `approval` event that waits.
pub fn request_text(event: &Event) -> Option<String> {
    crate::bridge::approval::request_text(event, SHOWN_CHARS, "")
}

/// The Allow and Deny buttons of request `id`.
pub fn keyboard(id: &str) -> Value {
    json!({"inline_keyboard": [[
        {"text": "Allow", "callback_data": format!("approve:{id}:yes")},
        {"text": "Deny", "callback_data": format!("approve:{id}:no")},
    ]]})
}

/// A button's `callback_data` as a request id and an answer.
pub fn parse_data(data: &str) -> Option<(String, bool)> {
    let (id, answer) = data.strip_prefix("approve:")?.rsplit_once(':')?;
    let allow = match answer {
        "yes" => true,
        "no" => false,
        _ => return None,
    };
    (!id.is_empty()).then(|| (id.to_string(), allow))
}

/// What to do with a button press.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Press {
    /// An allowed user answers request `id`.
    Answer {
        query_id: String,
        id: String,
        allow: bool,
        /// The user, for the daemon's note.
        by: String,
    },
    /// Nothing to do, and why.
    Ignore(&'static str),
}

/// Decides what a press means.
pub fn classify(query: &CallbackQuery, config: &TelegramConfig) -> Press {
    if query.from.is_bot || !config.allows(query.from.id) {
        return Press::Ignore("a press by someone not on the allowlist");
    }
    match query.data.as_deref().and_then(parse_data) {
        Some((id, allow)) => Press::Answer {
            query_id: query.id.clone(),
            id,
            allow,
            by: query.from.handle(),
        },
        None => Press::Ignore("a press of a button that is no approval's"),
    }
}

/// Sends request `event` with its buttons to `chats`. A chat that cannot
/// take it is skipped: the request's timeout denies the call anyway.
pub async fn ask(
    api: &Api,
    config: &TelegramConfig,
    feed: &mut Feed,
    chats: &[i64],
    event: &Event,
) -> Result<(), BridgeError> {
    let (Some(text), Some(approval)) = (request_text(event), &event.approval) else {
        return Ok(());
    };
    let keyboard = keyboard(&approval.id);
    for &chat in chats {
        match feed
            .beside(api.send_with_keyboard(chat, &text, &keyboard))
            .await?
        {
            Ok(()) => {}
            Err(error) if error.failure() == Failure::Unauthorized => {
                return Err(BridgeError::Unauthorized {
                    error,
                    env: config.token_env.clone(),
                })
            }
            Err(error) => {
                tracing::warn!(
                    "cannot ask chat {chat} about approval {}: {error}",
                    approval.id
                )
            }
        }
    }
    Ok(())
}

/// Takes a button press: an allowed user's answer goes to the daemon, then
/// the press is answered with how it went.
pub async fn take_press(
    api: &Api,
    config: &TelegramConfig,
    connection: &mut Connection,
    query: CallbackQuery,
) -> Result<(), BridgeError> {
    let (query_id, id, allow, by) = match classify(&query, config) {
        Press::Answer {
            query_id,
            id,
            allow,
            by,
        } => (query_id, id, allow, by),
        Press::Ignore(why) => {
            tracing::debug!("skipping button press {}: {why}", query.id);
            return Ok(());
        }
    };
    let frame = ClientFrame::Approve {
        id,
        allow,
        by: Some(by),
    };
    let said = match link::request(connection, frame, &mut |_| {}).await {
        Ok(ServerFrame::Ack { .. }) if allow => "Allowed.".to_string(),
        Ok(ServerFrame::Ack { .. }) => "Denied.".to_string(),
        Ok(other) => return Err(LinkError::Unexpected(other.encode()).into()),
        // Unknown, or decided already: the person is told so.
        Err(LinkError::Refused { message, .. }) => message,
        Err(err) => return Err(err.into()),
    };
    let answer = api.answer_callback_query(&query_id, &said);
    if let Err(err) = link::beside(connection, answer, &mut |_| {}).await? {
        tracing::warn!("cannot answer a button press: {err}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telegram::api::parse_updates;
    use hearth_protocol::{Approval, EventKind};
    use std::path::Path;

    fn config() -> TelegramConfig {
        TelegramConfig::parse(Path::new("c"), "[telegram]\nallow = [42]\n").unwrap()
    }

    fn press(from: i64, data: &str) -> CallbackQuery {
        let update = json!([{"update_id": 1, "callback_query": {
            "id": "q1", "chat_instance": "c",
            "from": {"id": from, "is_bot": false, "first_name": "Ada", "username": "ada"},
            "message": {"message_id": 5, "date": 0, "chat": {"id": from, "type": "private"}},
            "data": data
        }}]);
        parse_updates(update)
            .unwrap()
            .remove(0)
            .callback_query
            .unwrap()
    }

    #[test]
    fn buttons_carry_the_id_and_the_answer() {
        let keyboard = keyboard("abc123");
        assert_eq!(
            keyboard["inline_keyboard"][0][0]["callback_data"],
            "approve:abc123:yes"
        );
        assert_eq!(keyboard["inline_keyboard"][0][1]["text"], "Deny");
        assert_eq!(
            parse_data("approve:abc123:no"),
            Some(("abc123".into(), false))
        );
        assert_eq!(parse_data("approve::yes"), None);
        assert_eq!(parse_data("approve:abc123:maybe"), None);
        assert_eq!(parse_data("other:abc123:yes"), None);
    }

    #[test]
    fn an_allowed_users_press_answers_and_others_are_ignored() {
        assert_eq!(
            classify(&press(42, "approve:abc123:yes"), &config()),
            Press::Answer {
                query_id: "q1".into(),
                id: "abc123".into(),
                allow: true,
                by: "@ada".into()
            }
        );
        assert!(matches!(
            classify(&press(7, "approve:abc123:yes"), &config()),
            Press::Ignore(_)
        ));
        assert!(matches!(
            classify(&press(42, "something else"), &config()),
            Press::Ignore(_)
        ));
    }

    #[test]
    fn a_waiting_request_is_asked_and_a_decided_one_is_not() {
        let mut event = Event::signal(
            EventKind::Approval,
            "hearth",
            Some("shell `git push`".into()),
        );
        event.approval = Some(Box::new(Approval {
            id: "abc123".into(),
            tool: "shell".into(),
            arguments: "{}".into(),
            deadline: String::new(),
            timeout_secs: 300,
            allowed: None,
        }));
        assert_eq!(
            request_text(&event).as_deref(),
            Some(
                "hearth asks to run shell `git push`\n\nAllow it? (approval abc123; denied in 300 s without an answer)"
            )
        );
        if let Some(approval) = event.approval.as_mut() {
            approval.allowed = Some(true);
        }
        assert_eq!(request_text(&event), None);
    }
}
