//! What the providers share on the wire: the POST with its key, the mapping of
//! HTTP and connection failures to [`ModelError`], and reading a JSON body or
//! an SSE stream.
//!
//! The API key goes only into the `Authorization` header (marked sensitive);
//! no error message and no log line carries it.

use super::sse::{SseEvent, SseParser};
use super::{Model, ModelError};
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::Value;
use std::error::Error as _;
use std::fmt;

/// How much of an unreadable error body an error message keeps.
const ERROR_BODY_CHARS: usize = 500;
/// How much of an unreadable success body a `Garbage` error shows.
const GARBAGE_CHARS: usize = 200;

/// Whether a stream reader wants more events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    More,
    /// The answer is whole; the rest of the stream is not read.
    Stop,
}

/// Posts `body` as JSON to `{base_url}/{path}` and returns the response once
/// its status is a success. A refused or broken connection is
/// [`ModelError::Network`]; an HTTP error is [`ModelError::Status`] with the
/// provider's own message.
pub(super) async fn post_json(
    model: &Model,
    path: &str,
    body: &impl Serialize,
) -> Result<reqwest::Response, ModelError> {
    let url = format!("{}/{}", model.config.base_url(), path);
    let bytes = serde_json::to_vec(body)
        .map_err(|err| ModelError::Failed(format!("cannot encode the request: {err}")))?;
    tracing::debug!(url = %url, bytes = bytes.len(), "model request");
    let mut builder = model
        .http
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(bytes);
    if let Some(key) = &model.key {
        builder = builder.bearer_auth(key);
    }
    let response = builder
        .send()
        .await
        .map_err(|err| transport_error(model, &url, err))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    // The body only explains the status; when it cannot be read, the status
    // alone still says what happened.
    let body = response.text().await.unwrap_or_default();
    let message = match error_in_body(&body) {
        Some(message) => message,
        None if body.trim().is_empty() => {
            status.canonical_reason().unwrap_or("no body").to_string()
        }
        None => clip(body.trim(), ERROR_BODY_CHARS),
    };
    tracing::debug!(url = %url, status = status.as_u16(), %message, "model request refused");
    Err(ModelError::Status {
        provider: model.config.provider.name(),
        status: status.as_u16(),
        message,
    })
}

/// Whether the server answered one JSON body (a server that ignores
/// `stream: true`, or an error) rather than an event stream. Anything not
/// declared JSON is read as a stream.
pub(super) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.contains("json"))
}

/// Reads a whole body as JSON; a body that is not JSON is
/// [`ModelError::Garbage`].
pub(super) async fn read_json(
    model: &Model,
    response: reqwest::Response,
    what: &str,
) -> Result<Value, ModelError> {
    let url = response.url().to_string();
    let bytes = response
        .bytes()
        .await
        .map_err(|err| transport_error(model, &url, err))?;
    serde_json::from_slice(&bytes)
        .map_err(|err| garbage(what, err, &String::from_utf8_lossy(&bytes)))
}

/// Reads an SSE body, passing each event to `handle` as it arrives, until
/// `handle` says [`Flow::Stop`], returns an error, or the stream ends. Whether
/// an ended stream was whole is for the caller to judge.
pub(super) async fn read_events(
    model: &Model,
    response: reqwest::Response,
    mut handle: impl FnMut(SseEvent) -> Result<Flow, ModelError>,
) -> Result<(), ModelError> {
    let url = response.url().to_string();
    let mut parser = SseParser::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|err| transport_error(model, &url, err))?;
        for event in parser.feed(&chunk) {
            if handle(event)? == Flow::Stop {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The provider's message in a JSON error body: `{"error":{"message":..}}`,
/// `{"error":".."}` (Ollama) or `{"message":..}` (vLLM).
pub(super) fn error_in_body(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    error_in(&value).or_else(|| value.get("message")?.as_str().map(str::to_string))
}

/// The message of an `error` field of a JSON object, when it holds one; a
/// `null` error is no error.
pub(super) fn error_in(value: &Value) -> Option<String> {
    match value.get("error")? {
        Value::Null => None,
        Value::String(message) => Some(message.clone()),
        error => Some(match error.get("message").and_then(Value::as_str) {
            Some(message) => message.to_string(),
            None => clip(&error.to_string(), ERROR_BODY_CHARS),
        }),
    }
}

/// A [`ModelError::Garbage`] naming what could not be read, why, and how it began.
pub(super) fn garbage(what: &str, err: impl fmt::Display, text: &str) -> ModelError {
    ModelError::Garbage(format!(
        "{what} is not what was expected ({err}); it began {:?}",
        clip(text, GARBAGE_CHARS)
    ))
}

/// Maps a reqwest failure: a read that waited past the timeout is
/// [`ModelError::Timeout`]; anything else, including a connect timeout, is
/// [`ModelError::Network`] with the chain of causes.
fn transport_error(model: &Model, url: &str, err: reqwest::Error) -> ModelError {
    if err.is_timeout() && !err.is_connect() {
        return ModelError::Timeout(model.config.timeout_secs);
    }
    let err = err.without_url();
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    ModelError::Network {
        url: url.to_string(),
        message,
    }
}

/// At most `max` characters of `text`, with `…` when cut.
pub(super) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Written by hand so that the API key never reaches a log line.
impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("config", &self.config)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::model::Request;
    use std::path::Path;

    #[test]
    fn openai_error_message_is_extracted() {
        let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(
            error_in_body(body).as_deref(),
            Some("Incorrect API key provided")
        );
    }

    #[test]
    fn string_and_top_level_error_messages_are_extracted() {
        assert_eq!(
            error_in_body(r#"{"error":"model 'x' not found"}"#).as_deref(),
            Some("model 'x' not found")
        );
        assert_eq!(
            error_in_body(r#"{"object":"error","message":"bad tool","code":400}"#).as_deref(),
            Some("bad tool")
        );
        assert_eq!(error_in_body("<html>502</html>"), None);
        assert_eq!(error_in(&serde_json::json!({"error": null})), None);
    }

    #[test]
    fn clip_cuts_on_characters() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("héllo", 5), "héllo");
    }

    fn model(key: Option<&str>) -> Model {
        let text = "[model]\nprovider = \"openai-chat\"\nmodel = \"m\"\n";
        let config = Config::parse(Path::new("config.toml"), text)
            .ok()
            .and_then(|config| config.model)
            .expect("test config parses");
        Model::new(config, key.map(str::to_string))
    }

    #[test]
    fn debug_output_hides_the_key() {
        let shown = format!("{:?}", model(Some("sk-secret")));
        assert!(!shown.contains("sk-secret"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn a_model_call_can_run_on_any_thread() {
        fn is_send<T: Send>(_: &T) {}
        let model = model(None);
        let request = Request {
            instructions: String::new(),
            tools: vec![],
            items: vec![],
            cache_key: None,
            cache_marks: vec![],
        };
        let mut on_text = |_: &str| {};
        is_send(&model.complete(&request, &mut on_text));
    }
}
