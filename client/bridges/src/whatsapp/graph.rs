//! A small client of the WhatsApp Cloud API (Meta's Graph API) over
//! reqwest: sending text, the read mark with "typing…", downloading an
//! inbound message's media and uploading media (see `media.rs`).
//!
//! The access token travels only in the `Authorization` header, never in a
//! URL, and no error here carries a URL or a header.

use crate::bridge::multipart::Form;
use hearth_protocol::whatsapp::is_whatsapp_number;
use serde::Deserialize;
use serde_json::{json, Value};
use std::time::Duration;

/// How long one call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest media file downloaded (WhatsApp's own limit for documents).
pub const MAX_MEDIA_BYTES: u64 = 100 * 1024 * 1024;

/// How much of an unreadable body an error keeps.
const BODY_CHARS: usize = 300;

/// The Graph error code of a free-form message outside the 24-hour
/// customer-service window ("Re-engagement message").
pub const OUTSIDE_WINDOW: i64 = 131047;

/// The Graph error code of an invalid or expired access token.
const BAD_TOKEN: i64 = 190;

/// Graph error codes that mean "too many, slow down" although the HTTP
/// status is not 429: API calls (4, 80007), the Cloud API's throughput
/// (130429) and messages to one user (131056).
const RATE_LIMITS: [i64; 4] = [4, 80007, 130429, 131056];

#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// No answer: refused, reset or timed out.
    #[error("cannot reach the WhatsApp Cloud API: {0}")]
    Network(String),
    /// Graph answered with an error.
    #[error("WhatsApp answered {status}: {message}{}", code.map(|code| format!(" (code {code})")).unwrap_or_default())]
    Refused {
        status: u16,
        /// Graph's `error.code`, when the body had one.
        code: Option<i64>,
        message: String,
    },
    /// A success that is not what the call returns.
    #[error("unreadable answer from the WhatsApp Cloud API: {0}")]
    BadAnswer(String),
    /// Not a media id a webhook gives (only letters, digits, `_` and `-`).
    #[error("`{0}` is not a media id")]
    BadMediaId(String),
    /// A media file over [`MAX_MEDIA_BYTES`].
    #[error("the media file has {0} bytes, over the limit of {MAX_MEDIA_BYTES}")]
    TooLarge(u64),
}

/// What a failed call means for the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// More than 24 hours since the person last wrote: only templates may
    /// go out until they write again. Skip the message.
    OutsideWindow,
    /// The access token is wrong or expired: nothing will work until it is
    /// fixed.
    Unauthorized,
    /// Worth trying again after a backoff: network, rate limits, server
    /// trouble.
    Retry,
    /// This request can never succeed (a bad number, an unsupported
    /// message): skip it.
    Permanent,
}

impl GraphError {
    /// How the caller should react, from the status and Graph's code.
    pub fn failure(&self) -> Failure {
        match self {
            GraphError::Network(_) | GraphError::BadAnswer(_) => Failure::Retry,
            GraphError::BadMediaId(_) | GraphError::TooLarge(_) => Failure::Permanent,
            GraphError::Refused { status, code, .. } => match (status, code) {
                (_, Some(OUTSIDE_WINDOW)) => Failure::OutsideWindow,
                (401, _) | (_, Some(BAD_TOKEN)) => Failure::Unauthorized,
                (429, _) => Failure::Retry,
                (_, Some(code)) if RATE_LIMITS.contains(code) => Failure::Retry,
                (status, _) if *status >= 500 => Failure::Retry,
                _ => Failure::Permanent,
            },
        }
    }
}

/// A downloaded media file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    pub mime_type: String,
    pub bytes: Vec<u8>,
}

/// Names a message's recipient: a number goes in `to`, a business-scoped
/// user id in `recipient`. The Cloud API reads `to` first when both are
/// there, so only one is sent.
pub(super) fn address(request: &mut Value, to: &str) {
    let field = if is_whatsapp_number(to) {
        "to"
    } else {
        "recipient"
    };
    request[field] = Value::String(to.to_string());
}

/// What `GET /{media_id}` answers.
#[derive(Deserialize)]
struct MediaInfo {
    url: String,
    #[serde(default)]
    mime_type: Option<String>,
}

/// The client of one business phone number.
#[derive(Clone)]
pub struct Graph {
    http: reqwest::Client,
    /// Up to and including the version: `https://graph.facebook.com/v23.0`.
    base: String,
    phone_number_id: String,
    access_token: String,
}

impl Graph {
    pub fn new(base: &str, phone_number_id: &str, access_token: &str) -> Result<Graph, GraphError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(network)?;
        Ok(Graph {
            http,
            base: base.trim_end_matches('/').to_string(),
            phone_number_id: phone_number_id.to_string(),
            access_token: access_token.to_string(),
        })
    }

    /// Sends one text message of at most 4,096 characters to `to` (a
    /// WhatsApp id: a number or a business-scoped user id); returns the
    /// new message's id.
    pub async fn send_text(&self, to: &str, body: &str) -> Result<String, GraphError> {
        let mut request = json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "type": "text",
            "text": {"preview_url": false, "body": body},
        });
        address(&mut request, to);
        let answer = self.post_message(&request).await?;
        answer["messages"][0]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| GraphError::BadAnswer(clip(&answer.to_string())))
    }

    /// Marks message `message_id` read and shows "typing…" to its sender
    /// (until the reply, or 25 seconds).
    pub async fn mark_read_typing(&self, message_id: &str) -> Result<(), GraphError> {
        let request = json!({
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": message_id,
            "typing_indicator": {"type": "text"},
        });
        self.post_message(&request).await.map(drop)
    }

    /// Downloads an inbound message's media: its address from
    /// `GET /{media_id}`, then the file from that address, both with the
    /// access token. The address is valid for five minutes.
    pub async fn media(&self, media_id: &str) -> Result<Media, GraphError> {
        let id_bytes = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        if media_id.is_empty() || !media_id.bytes().all(id_bytes) {
            return Err(GraphError::BadMediaId(clip(media_id)));
        }
        let info = self.get(&format!("{}/{media_id}", self.base)).await?;
        let info: MediaInfo = read_json(info).await?;
        let response = self.get(&info.url).await?;
        if let Some(length) = response.content_length().filter(|&l| l > MAX_MEDIA_BYTES) {
            return Err(GraphError::TooLarge(length));
        }
        let header_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        let bytes = response.bytes().await.map_err(network)?;
        if bytes.len() as u64 > MAX_MEDIA_BYTES {
            return Err(GraphError::TooLarge(bytes.len() as u64));
        }
        Ok(Media {
            mime_type: info
                .mime_type
                .or(header_type)
                .unwrap_or_else(|| "application/octet-stream".to_string()),
            bytes: bytes.to_vec(),
        })
    }

    /// Uploads a file to `/{phone_number_id}/media` (multipart form data:
    /// `messaging_product`, `type` and `file`); returns the answer, whose
    /// `id` names the media for a message.
    pub(super) async fn upload(&self, form: Form) -> Result<Value, GraphError> {
        let response = self
            .http
            .post(format!("{}/{}/media", self.base, self.phone_number_id))
            .bearer_auth(&self.access_token)
            .header(reqwest::header::CONTENT_TYPE, form.content_type)
            .body(form.body)
            .send()
            .await
            .map_err(network)?;
        read_json(checked(response).await?).await
    }

    /// Posts to `/{phone_number_id}/messages` and returns the answer.
    pub(super) async fn post_message(&self, request: &Value) -> Result<Value, GraphError> {
        let response = self
            .http
            .post(format!("{}/{}/messages", self.base, self.phone_number_id))
            .bearer_auth(&self.access_token)
            .json(request)
            .send()
            .await
            .map_err(network)?;
        read_json(checked(response).await?).await
    }

    /// A successful GET, or the error Graph answered.
    async fn get(&self, url: &str) -> Result<reqwest::Response, GraphError> {
        let response = self
            .http
            .get(url)
            .bearer_auth(&self.access_token)
            .send()
            .await
            .map_err(network)?;
        checked(response).await
    }
}

fn network(err: reqwest::Error) -> GraphError {
    GraphError::Network(err.without_url().to_string())
}

/// The response when it succeeded; else the error its body reports.
async fn checked(response: reqwest::Response) -> Result<reqwest::Response, GraphError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let text = response.text().await.map_err(network)?;
    Err(read_error(status.as_u16(), &text))
}

async fn read_json<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
) -> Result<T, GraphError> {
    let text = response.text().await.map_err(network)?;
    serde_json::from_str(&text).map_err(|_| GraphError::BadAnswer(clip(&text)))
}

/// Graph's error envelope: `{"error": {"message", "type", "code", …}}`.
pub fn read_error(status: u16, text: &str) -> GraphError {
    let body: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let error = &body["error"];
    let details = error["error_data"]["details"].as_str();
    let message = match (error["message"].as_str(), details) {
        (Some(message), Some(details)) if details != message => format!("{message}: {details}"),
        (Some(message), _) => message.to_string(),
        (None, _) => clip(text),
    };
    GraphError::Refused {
        status,
        code: error["code"].as_i64(),
        message,
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
    fn errors_say_what_to_do() {
        let failure = |status, body: &str| read_error(status, body).failure();
        let window = r#"{"error":{"message":"(#131047) Re-engagement message","type":"OAuthException","code":131047,"error_data":{"messaging_product":"whatsapp","details":"Message failed to send because more than 24 hours have passed since the customer last replied to this number."},"fbtrace_id":"A"}}"#;
        assert_eq!(failure(400, window), Failure::OutsideWindow);
        let said = read_error(400, window).to_string();
        assert!(
            said.contains("Re-engagement message")
                && said.contains("24 hours")
                && said.contains("(code 131047)"),
            "{said}"
        );
        assert_eq!(
            failure(
                401,
                r#"{"error":{"message":"Invalid OAuth access token.","type":"OAuthException","code":190}}"#
            ),
            Failure::Unauthorized
        );
        assert_eq!(
            failure(400, r#"{"error":{"message":"expired","code":190}}"#),
            Failure::Unauthorized
        );
        assert_eq!(
            failure(
                429,
                r#"{"error":{"message":"(#130429) Rate limit hit","code":130429}}"#
            ),
            Failure::Retry
        );
        assert_eq!(
            failure(
                400,
                r#"{"error":{"message":"(#131056) pair rate limit","code":131056}}"#
            ),
            Failure::Retry
        );
        assert_eq!(
            failure(503, "<html>Service Unavailable</html>"),
            Failure::Retry
        );
        assert_eq!(
            failure(
                400,
                r#"{"error":{"message":"(#131026) Message Undeliverable","code":131026}}"#
            ),
            Failure::Permanent
        );
        assert_eq!(failure(404, "not found"), Failure::Permanent);
        assert_eq!(
            read_error(502, "<html>Bad Gateway</html>").to_string(),
            "WhatsApp answered 502: <html>Bad Gateway</html>"
        );
    }

    #[test]
    fn an_error_never_shows_the_token() {
        let graph = Graph::new("http://127.0.0.1:1/v23.0/", "1098765", "EAA-SECRET").unwrap();
        assert_eq!(graph.base, "http://127.0.0.1:1/v23.0");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = runtime
            .block_on(graph.send_text("15551234567", "hi"))
            .unwrap_err();
        assert_eq!(err.failure(), Failure::Retry);
        assert!(!err.to_string().contains("SECRET"), "{err}");
        let err = runtime.block_on(graph.media("../etc")).unwrap_err();
        assert_eq!(err.failure(), Failure::Permanent);
    }
}
