//! A small Telegram Bot API client over reqwest: `getMe`, `getUpdates`,
//! `sendMessage` (with buttons or without), `sendChatAction` and
//! `answerCallbackQuery`, and the types of what comes back.
//!
//! The token is part of every URL, so no error or log line here carries a
//! URL: reqwest's errors are stripped of theirs.

use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

/// How long a call other than the long poll may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How much longer than the poll itself the HTTP client waits for a long
/// poll's answer, so the poll ends on Telegram's side, never on ours.
const POLL_GRACE: Duration = Duration::from_secs(15);

/// How much of an unreadable body an error keeps.
const BODY_CHARS: usize = 300;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No answer: refused, reset or timed out.
    #[error("cannot reach the Telegram Bot API: {0}")]
    Network(String),
    /// Telegram answered `ok: false` (or an HTTP error).
    #[error("Telegram answered {code}: {description}")]
    Refused {
        code: u16,
        description: String,
        /// Seconds to wait, on 429 ("flood control").
        retry_after: Option<u64>,
    },
    /// An answer that is not the Bot API's envelope.
    #[error("unreadable answer from the Telegram Bot API: {0}")]
    BadAnswer(String),
}

/// What a failed call means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Flood control: try again after this long.
    Wait(Duration),
    /// The text's markup did not parse: send it again as plain text.
    Markup,
    /// The token is wrong or revoked: nothing will work until it is fixed.
    Unauthorized,
    /// This request can never succeed (the user blocked the bot, the chat
    /// does not exist, the request is malformed): skip it.
    Permanent,
    /// Worth trying again after a backoff (network, server trouble, a
    /// conflicting poller).
    Transient,
}

impl ApiError {
    /// How the caller should react, from the error code (and, for markup,
    /// the description: the Bot API has no other way to say it).
    pub fn failure(&self) -> Failure {
        match self {
            ApiError::Network(_) | ApiError::BadAnswer(_) => Failure::Transient,
            ApiError::Refused {
                code,
                description,
                retry_after,
            } => match code {
                429 => Failure::Wait(Duration::from_secs(retry_after.unwrap_or(1))),
                400 if description
                    .to_ascii_lowercase()
                    .contains("can't parse entities") =>
                {
                    Failure::Markup
                }
                401 | 404 => Failure::Unauthorized,
                400 | 403 => Failure::Permanent,
                _ => Failure::Transient,
            },
        }
    }

    /// Whether Telegram refused `getUpdates` because the bot has a webhook
    /// set: polling cannot work until the webhook is deleted.
    pub fn is_webhook_conflict(&self) -> bool {
        matches!(
            self,
            ApiError::Refused { code: 409, description, .. }
                if description.to_ascii_lowercase().contains("webhook")
        )
    }
}

/// One entry of `getUpdates`. Only messages and button presses are asked
/// for; anything else, or one this client cannot read, has neither and is
/// skipped, its `update_id` still confirmed.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    pub update_id: i64,
    pub message: Option<Message>,
    pub callback_query: Option<CallbackQuery>,
}

/// A press of a button under a message the bot sent.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct CallbackQuery {
    /// What `answerCallbackQuery` names.
    pub id: String,
    pub from: User,
    /// The button's `callback_data`.
    #[serde(default)]
    pub data: Option<String>,
}

/// The fields of a Telegram Message the bridge uses; the rest is ignored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Message {
    pub message_id: i64,
    #[serde(default)]
    pub from: Option<User>,
    pub chat: Chat,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub caption: Option<String>,
    /// Sizes of a photo; only its presence matters for now.
    #[serde(default)]
    pub photo: Option<Vec<Value>>,
    #[serde(default)]
    pub voice: Option<Value>,
    #[serde(default)]
    pub audio: Option<Value>,
    #[serde(default)]
    pub video: Option<Value>,
    #[serde(default)]
    pub video_note: Option<Value>,
    #[serde(default)]
    pub document: Option<Document>,
    #[serde(default)]
    pub sticker: Option<Sticker>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct User {
    pub id: i64,
    #[serde(default)]
    pub is_bot: bool,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub username: Option<String>,
}

impl User {
    /// How a note names the user: `@username`, else the first name.
    pub fn handle(&self) -> String {
        match &self.username {
            Some(username) => format!("@{username}"),
            None => self.first_name.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Chat {
    /// Up to 52 significant bits.
    pub id: i64,
    /// `private`, `group`, `supergroup` or `channel`.
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Document {
    #[serde(default)]
    pub file_id: Option<String>,
    #[serde(default)]
    pub file_name: Option<String>,
    #[serde(default)]
    pub mime_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Sticker {
    #[serde(default)]
    pub emoji: Option<String>,
}

/// The Bot API envelope: `{ok, result}` or `{ok: false, error_code,
/// description, parameters}`.
#[derive(Deserialize)]
struct Envelope {
    ok: bool,
    #[serde(default)]
    result: Value,
    #[serde(default)]
    error_code: Option<u16>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Parameters>,
}

#[derive(Deserialize)]
struct Parameters {
    #[serde(default)]
    retry_after: Option<u64>,
}

/// The client of one bot.
#[derive(Clone)]
pub struct Api {
    pub(super) http: reqwest::Client,
    /// `{api_base}/bot{token}`: the prefix of every method's URL.
    pub(super) bot_url: String,
}

impl Api {
    pub fn new(api_base: &str, token: &str) -> Result<Api, ApiError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|err| ApiError::Network(err.without_url().to_string()))?;
        Ok(Api {
            http,
            bot_url: format!("{}/bot{token}", api_base.trim_end_matches('/')),
        })
    }

    /// The bot itself (`getMe`): the call that proves a token works.
    pub async fn get_me(&self) -> Result<User, ApiError> {
        let result = self.call("getMe", &json!({}), CALL_TIMEOUT).await?;
        serde_json::from_value(result).map_err(|err| ApiError::BadAnswer(err.to_string()))
    }

    /// Long-polls for messages after `offset` (all unconfirmed ones when
    /// `None`). Calling it with an offset confirms every update before it,
    /// and Telegram forgets them.
    pub async fn get_updates(
        &self,
        offset: Option<i64>,
        timeout_secs: u64,
    ) -> Result<Vec<Update>, ApiError> {
        let mut body = json!({
            "timeout": timeout_secs,
            "allowed_updates": ["message", "callback_query"],
        });
        if let Some(offset) = offset {
            body["offset"] = json!(offset);
        }
        let timeout = Duration::from_secs(timeout_secs) + POLL_GRACE;
        let result = self.call("getUpdates", &body, timeout).await?;
        parse_updates(result)
    }

    /// Sends one message of at most 4,096 characters, with `parse_mode`
    /// (`HTML`) or as plain text.
    pub async fn send_message(
        &self,
        chat_id: i64,
        text: &str,
        parse_mode: Option<&str>,
    ) -> Result<(), ApiError> {
        let mut body = json!({"chat_id": chat_id, "text": text});
        if let Some(mode) = parse_mode {
            body["parse_mode"] = json!(mode);
        }
        self.call("sendMessage", &body, CALL_TIMEOUT).await?;
        Ok(())
    }

    /// Sends plain `text` with an inline keyboard (`reply_markup`).
    pub async fn send_with_keyboard(
        &self,
        chat_id: i64,
        text: &str,
        keyboard: &Value,
    ) -> Result<(), ApiError> {
        let body = json!({"chat_id": chat_id, "text": text, "reply_markup": keyboard});
        self.call("sendMessage", &body, CALL_TIMEOUT).await?;
        Ok(())
    }

    /// Answers a button press: stops its spinner and shows `text` briefly.
    pub async fn answer_callback_query(&self, query_id: &str, text: &str) -> Result<(), ApiError> {
        let body = json!({"callback_query_id": query_id, "text": text});
        self.call("answerCallbackQuery", &body, CALL_TIMEOUT)
            .await?;
        Ok(())
    }

    /// Removes the bot's webhook so that `getUpdates` works; updates
    /// waiting for the webhook stay and are polled next.
    pub async fn delete_webhook(&self) -> Result<(), ApiError> {
        let body = json!({"drop_pending_updates": false});
        self.call("deleteWebhook", &body, CALL_TIMEOUT).await?;
        Ok(())
    }

    /// Shows "typing…" in the chat for up to five seconds.
    pub async fn send_typing(&self, chat_id: i64) -> Result<(), ApiError> {
        let body = json!({"chat_id": chat_id, "action": "typing"});
        self.call("sendChatAction", &body, CALL_TIMEOUT).await?;
        Ok(())
    }

    /// Posts `body` to `method` and returns the envelope's `result`.
    pub(super) async fn call(
        &self,
        method: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, ApiError> {
        let response = self
            .http
            .post(format!("{}/{method}", self.bot_url))
            .json(body)
            .timeout(timeout)
            .send()
            .await
            .map_err(|err| ApiError::Network(err.without_url().to_string()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|err| ApiError::Network(err.without_url().to_string()))?;
        read_envelope(status.as_u16(), &text)
    }
}

/// The `result` of a Bot API answer, or the error it reports.
pub(super) fn read_envelope(status: u16, text: &str) -> Result<Value, ApiError> {
    match serde_json::from_str::<Envelope>(text) {
        Ok(envelope) if envelope.ok => Ok(envelope.result),
        Ok(envelope) => Err(ApiError::Refused {
            code: envelope.error_code.unwrap_or(status),
            description: envelope
                .description
                .unwrap_or_else(|| "no description".to_string()),
            retry_after: envelope.parameters.and_then(|p| p.retry_after),
        }),
        Err(_) if (200..300).contains(&status) => Err(ApiError::BadAnswer(clip(text))),
        Err(_) => Err(ApiError::Refused {
            code: status,
            description: clip(text),
            retry_after: None,
        }),
    }
}

/// The updates of a `getUpdates` result. An update whose message does not
/// read is kept without it, so its id is still confirmed.
pub fn parse_updates(result: Value) -> Result<Vec<Update>, ApiError> {
    let Value::Array(items) = result else {
        return Err(ApiError::BadAnswer(
            "getUpdates did not return a list".to_string(),
        ));
    };
    items
        .into_iter()
        .map(|item| {
            let update_id = item
                .get("update_id")
                .and_then(Value::as_i64)
                .ok_or_else(|| {
                    ApiError::BadAnswer(format!(
                        "an update without update_id: {}",
                        clip(&item.to_string())
                    ))
                })?;
            let message = field::<Message>(&item, "message", update_id);
            let callback_query = field::<CallbackQuery>(&item, "callback_query", update_id);
            Ok(Update {
                update_id,
                message,
                callback_query,
            })
        })
        .collect()
}

/// An update's `name` field, when it is there and reads.
fn field<T: serde::de::DeserializeOwned>(item: &Value, name: &str, update_id: i64) -> Option<T> {
    match item.get(name) {
        None | Some(Value::Null) => None,
        Some(value) => match serde_json::from_value::<T>(value.clone()) {
            Ok(value) => Some(value),
            Err(err) => {
                tracing::warn!("skipping update {update_id}: unreadable {name}: {err}");
                None
            }
        },
    }
}

fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(BODY_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_read_with_their_messages() {
        let result = json!([
            {"update_id": 7, "message": {
                "message_id": 3, "date": 1767225600,
                "from": {"id": 42, "is_bot": false, "first_name": "Ada", "username": "ada", "language_code": "en"},
                "chat": {"id": 42, "type": "private", "first_name": "Ada"},
                "text": "hello", "entities": []
            }},
            {"update_id": 8, "message": {
                "message_id": 4, "date": 1767225601,
                "from": {"id": 42, "is_bot": false, "first_name": "Ada"},
                "chat": {"id": 42, "type": "private"},
                "photo": [{"file_id": "a", "file_unique_id": "b", "width": 90, "height": 90}],
                "caption": "my cat"
            }},
            {"update_id": 9, "edited_message": {"message_id": 3}},
            {"update_id": 10, "message": {"message_id": "not a number"}}
        ]);
        let updates = parse_updates(result).unwrap();
        assert_eq!(updates.len(), 4);
        let first = updates[0].message.as_ref().unwrap();
        assert_eq!(first.message_id, 3);
        assert_eq!(first.text.as_deref(), Some("hello"));
        assert_eq!(first.chat.kind, "private");
        let from = first.from.as_ref().unwrap();
        assert_eq!((from.id, from.handle()), (42, "@ada".to_string()));
        let photo = updates[1].message.as_ref().unwrap();
        assert_eq!(photo.caption.as_deref(), Some("my cat"));
        assert!(photo.photo.is_some());
        assert_eq!(photo.from.as_ref().unwrap().handle(), "Ada");
        assert_eq!(
            updates[2],
            Update {
                update_id: 9,
                message: None,
                callback_query: None
            }
        );
        assert_eq!(
            updates[3],
            Update {
                update_id: 10,
                message: None,
                callback_query: None
            }
        );
    }

    #[test]
    fn errors_say_what_to_do() {
        let failure = |status: u16, body: &str| read_envelope(status, body).unwrap_err().failure();
        assert_eq!(
            failure(
                429,
                r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 9","parameters":{"retry_after":9}}"#
            ),
            Failure::Wait(Duration::from_secs(9))
        );
        assert_eq!(
            failure(
                400,
                r#"{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"}"#
            ),
            Failure::Markup
        );
        assert_eq!(
            failure(
                403,
                r#"{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}"#
            ),
            Failure::Permanent
        );
        assert_eq!(
            failure(
                400,
                r#"{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}"#
            ),
            Failure::Permanent
        );
        assert_eq!(
            failure(
                401,
                r#"{"ok":false,"error_code":401,"description":"Unauthorized"}"#
            ),
            Failure::Unauthorized
        );
        assert_eq!(
            failure(
                409,
                r#"{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request"}"#
            ),
            Failure::Transient
        );
        assert_eq!(failure(502, "<html>Bad Gateway</html>"), Failure::Transient);
        assert_eq!(failure(200, "not json"), Failure::Transient);
        assert_eq!(
            read_envelope(200, r#"{"ok":true,"result":true}"#).unwrap(),
            json!(true)
        );
    }

    #[test]
    fn a_webhook_conflict_is_told_apart_from_another_poller() {
        let conflict = |body: &str| read_envelope(409, body).unwrap_err().is_webhook_conflict();
        assert!(conflict(
            r#"{"ok":false,"error_code":409,"description":"Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}"#
        ));
        assert!(!conflict(
            r#"{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request"}"#
        ));
    }

    #[test]
    fn an_error_never_shows_the_token() {
        let api = Api::new("http://127.0.0.1:1/", "123:SECRET").unwrap();
        assert_eq!(api.bot_url, "http://127.0.0.1:1/bot123:SECRET");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = runtime.block_on(api.send_typing(1)).unwrap_err();
        assert_eq!(err.failure(), Failure::Transient);
        assert!(!err.to_string().contains("SECRET"), "{err}");
    }
}
