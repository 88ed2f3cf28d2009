//! What the providers share on the wire: the POST with its key, the mapping of
//! HTTP and connection failures to [`ModelError`], and reading a JSON body or
//! an SSE stream.
//!
//! The API key goes only into its auth header (marked sensitive): `Authorization:
//! Bearer` for OpenAI, `x-api-key` for Anthropic. No error message and no log
//! line carries it.

use super::error::{classify, WireError};
use super::provider::Provider;
use super::retry;
use super::sse::{SseEvent, SseParser};
use super::ModelError;
use crate::model::ProviderKind;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use serde::Serialize;
use serde_json::Value;
use std::error::Error as _;
use std::fmt;
use std::time::{Duration, SystemTime};

/// How much of an unreadable error body an error message keeps.
const ERROR_BODY_CHARS: usize = 500;
/// How much of an error body is read: enough for any provider's error.
const ERROR_BODY_BYTES: usize = 64 * 1024;
/// The largest JSON answer read: far above any real answer, far below what
/// a hostile server could make hearthd hold.
pub(super) const MAX_JSON_BYTES: usize = 16 * 1024 * 1024;
/// How much of an unreadable success body a `Garbage` error shows.
const GARBAGE_CHARS: usize = 200;
/// The Messages API version this daemon speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Whether a stream reader wants more events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    More,
    /// The answer is whole; the rest of the stream is not read.
    Stop,
}

/// Posts `body` as JSON to `{base_url}/{path}` and returns the response once
/// its status is a success. A refused or broken connection is
/// [`ModelError::Network`]; an HTTP error is sorted by [`classify`] from the
/// provider's own error body, keeping any wait the provider asked for.
pub(super) async fn post_json(
    provider: &Provider,
    path: &str,
    body: &impl Serialize,
) -> Result<reqwest::Response, ModelError> {
    post_json_with(provider, path, body, HeaderMap::new()).await
}

/// [`post_json`] with more headers (the Codex backend's sign-in, which
/// takes the place of a key).
pub(super) async fn post_json_with(
    provider: &Provider,
    path: &str,
    body: &impl Serialize,
    headers: HeaderMap,
) -> Result<reqwest::Response, ModelError> {
    let url = format!("{}/{}", provider.config.base_url(), path);
    let bytes = serde_json::to_vec(body)
        .map_err(|err| ModelError::Failed(format!("cannot encode the request: {err}")))?;
    tracing::debug!(url = %url, bytes = bytes.len(), "model request");
    let mut builder = provider
        .http
        .post(&url)
        .header(CONTENT_TYPE, "application/json")
        .headers(headers)
        .body(bytes);
    match provider.config.provider {
        ProviderKind::Anthropic => {
            builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
            if let Some(key) = &provider.key {
                if let Ok(mut value) = HeaderValue::from_str(key) {
                    value.set_sensitive(true);
                    builder = builder.header("x-api-key", value);
                }
            }
        }
        ProviderKind::OpenAiChat | ProviderKind::OpenAiResponses => {
            if let Some(key) = &provider.key {
                builder = builder.bearer_auth(key);
            }
        }
        // Its token came with `headers`.
        ProviderKind::ChatGpt => {}
    }
    let response = builder
        .send()
        .await
        .map_err(|err| transport_error(provider, &url, err))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry::server_delay(response.headers(), SystemTime::now());
    let codex = provider.config.provider == ProviderKind::ChatGpt;
    if codex {
        super::chatgpt::limits::record_headers(response.headers(), None, false);
    }
    // The body only explains the status; when it cannot be read, the status
    // alone still says what happened. Its start is enough.
    let body = match read_prefix(response, ERROR_BODY_BYTES).await {
        Ok((bytes, _)) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => String::new(),
    };
    let mut error = error_in_body(&body).unwrap_or_else(|| WireError {
        message: clip(body.trim(), ERROR_BODY_CHARS),
        ..WireError::default()
    });
    // A server may quote the key it refused; it goes no further than here.
    if let Some(key) = provider.key.as_deref().filter(|key| !key.is_empty()) {
        error.message = error.message.replace(key, "[redacted key]");
    }
    tracing::debug!(url = %url, status = status.as_u16(), message = %error.message, "model request refused");
    // A plan at its limit waits hours, not seconds: no retry helps.
    if let Some(refusal) = codex
        .then(|| super::chatgpt::limits::refusal(&body))
        .flatten()
    {
        return Err(ModelError::PlanLimit(refusal.message()));
    }
    Err(classify(
        &provider.source(),
        Some(status.as_u16()),
        &error,
        retry_after,
    ))
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

/// Reads a whole body as JSON; a body that is not JSON, or larger than
/// [`MAX_JSON_BYTES`], is [`ModelError::Garbage`].
pub(super) async fn read_json(
    provider: &Provider,
    response: reqwest::Response,
    what: &str,
) -> Result<Value, ModelError> {
    let url = response.url().to_string();
    let (bytes, cut) = read_prefix(response, MAX_JSON_BYTES)
        .await
        .map_err(|err| transport_error(provider, &url, err))?;
    if cut {
        return Err(too_large(what, MAX_JSON_BYTES));
    }
    serde_json::from_slice(&bytes)
        .map_err(|err| garbage(what, err, &String::from_utf8_lossy(&bytes)))
}

/// At most `limit` bytes of a body, and whether there was more (which is
/// then not read). A declared length over the limit reads nothing.
async fn read_prefix(
    response: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    if response
        .content_length()
        .is_some_and(|length| length > limit as u64)
    {
        return Ok((Vec::new(), true));
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > limit {
            let room = limit - body.len();
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// The error for an answer past a size limit.
fn too_large(what: &str, limit: usize) -> ModelError {
    ModelError::Garbage(format!(
        "{what} is larger than {} MiB; hearth reads no more of it",
        limit / (1024 * 1024)
    ))
}

/// Reads an SSE body, passing each event to `handle` as it arrives, until
/// `handle` says [`Flow::Stop`], returns an error, or the stream ends. Whether
/// an ended stream was whole is for the caller to judge; a body that does
/// not even begin like an event stream (a proxy's HTML page) is
/// [`ModelError::Garbage`], and so is a line or an event longer than
/// [`super::sse::MAX_EVENT_BYTES`].
///
/// The model has `timeout_secs` from one event to the next: comments
/// (keep-alives) and `ping` events are no progress, so a server that sends
/// only those still times out.
pub(super) async fn read_events(
    provider: &Provider,
    response: reqwest::Response,
    mut handle: impl FnMut(SseEvent) -> Result<Flow, ModelError>,
) -> Result<(), ModelError> {
    let url = response.url().to_string();
    let mut parser = SseParser::new();
    let mut chunks = response.bytes_stream();
    let mut any_event = false;
    let patience = Duration::from_secs(provider.config.timeout_secs);
    let mut deadline = tokio::time::Instant::now() + patience;
    // The start of the body, for the error when no event ever comes.
    let mut head = Vec::new();
    loop {
        let Ok(next) = tokio::time::timeout_at(deadline, chunks.next()).await else {
            return Err(ModelError::Timeout(provider.config.timeout_secs));
        };
        let Some(chunk) = next else { break };
        // The server was reached and answered: a connection that breaks
        // now is an answer cut short, not a server out of reach.
        let chunk = chunk.map_err(|err| match transport_error(provider, &url, err) {
            ModelError::Network { message, .. } => {
                tracing::warn!("the answer's stream from {url} broke: {message}");
                ModelError::Cut
            }
            other => other,
        })?;
        if !any_event && head.len() < GARBAGE_CHARS * 4 {
            head.extend_from_slice(&chunk[..chunk.len().min(GARBAGE_CHARS * 4)]);
        }
        let events = parser
            .feed(&chunk)
            .map_err(|err| ModelError::Garbage(format!("{err}; hearth reads no more of it")))?;
        if events
            .iter()
            .any(|event| event.event.as_deref() != Some("ping"))
        {
            deadline = tokio::time::Instant::now() + patience;
        }
        for event in events {
            any_event = true;
            if handle(event)? == Flow::Stop {
                return Ok(());
            }
        }
    }
    let head = String::from_utf8_lossy(&head);
    let start = head.trim_start();
    // Comments (keep-alives) before a cut are still a stream, only cut.
    let stream_like = ["data", "event", "id", "retry", ":"]
        .iter()
        .any(|field| start.starts_with(field));
    if !any_event && !start.is_empty() && !stream_like {
        return Err(garbage("the event stream", "it holds no event", &head));
    }
    Ok(())
}

/// The provider's error in a JSON error body (see [`wire_error`]).
pub(super) fn error_in_body(body: &str) -> Option<WireError> {
    wire_error(&serde_json::from_str(body).ok()?)
}

/// The provider's error in a JSON object: `{"error":{"type","code","message"}}`
/// (OpenAI; Anthropic, whose spend limit's code is in
/// `error.details.error_code`), `{"error":".."}` (Ollama), or a top-level
/// `message` with `type` and `code` (vLLM; the Responses API's `error`
/// event). A `null` error is no error.
pub(super) fn wire_error(value: &Value) -> Option<WireError> {
    let text = |value: Option<&Value>| match value? {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    };
    match value.get("error") {
        Some(Value::Null) | None => {}
        Some(Value::String(message)) => {
            return Some(WireError {
                message: message.clone(),
                ..WireError::default()
            })
        }
        Some(error) => {
            return Some(WireError {
                kind: text(error.get("type")),
                code: text(error.get("code"))
                    .or_else(|| text(error.pointer("/details/error_code"))),
                message: text(error.get("message"))
                    .unwrap_or_else(|| clip(&error.to_string(), ERROR_BODY_CHARS)),
            })
        }
    }
    let message = text(value.get("message"))?;
    Some(WireError {
        // The Responses API's `error` event names itself in `type`.
        kind: text(value.get("type")).filter(|kind| kind != "error"),
        code: text(value.get("code")),
        message,
    })
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
fn transport_error(provider: &Provider, url: &str, err: reqwest::Error) -> ModelError {
    if err.is_timeout() && !err.is_connect() {
        return ModelError::Timeout(provider.config.timeout_secs);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::test_file::Config;
    use crate::model::{Model, Request};
    use serde_json::json;
    use std::path::Path;

    fn message(body: &str) -> Option<String> {
        error_in_body(body).map(|error| error.message)
    }

    #[test]
    fn openai_error_is_extracted() {
        let body = r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}"#;
        assert_eq!(
            error_in_body(body),
            Some(WireError {
                kind: Some("invalid_request_error".into()),
                code: Some("invalid_api_key".into()),
                message: "Incorrect API key provided".into(),
            })
        );
    }

    #[test]
    fn anthropic_error_and_its_details_code_are_extracted() {
        let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"limit","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_1"}"#;
        let error = error_in_body(body).unwrap();
        assert_eq!(error.kind.as_deref(), Some("rate_limit_error"));
        assert_eq!(error.code.as_deref(), Some("enforced_spend_limit_reached"));
    }

    #[test]
    fn string_and_top_level_error_messages_are_extracted() {
        assert_eq!(
            message(r#"{"error":"model 'x' not found"}"#).as_deref(),
            Some("model 'x' not found")
        );
        let vllm = error_in_body(
            r#"{"object":"error","message":"bad tool","type":"BadRequestError","code":400}"#,
        )
        .unwrap();
        assert_eq!(vllm.message, "bad tool");
        assert_eq!(vllm.code.as_deref(), Some("400"));
        assert_eq!(vllm.kind.as_deref(), Some("BadRequestError"));
        let event =
            wire_error(&json!({"type":"error","code":"server_error","message":"boom"})).unwrap();
        assert_eq!(event.kind, None);
        assert_eq!(event.code.as_deref(), Some("server_error"));
        assert_eq!(error_in_body("<html>502</html>"), None);
        assert_eq!(wire_error(&json!({"error": null})), None);
    }

    #[test]
    fn clip_cuts_on_characters() {
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("héllo", 5), "héllo");
    }

    fn model(key: Option<&str>) -> Model {
        let text = "[model]\nprovider = \"openai-chat\"\nmodel = \"m\"\n\n[[model.fallback]]\nprovider = \"anthropic\"\nmodel = \"c\"\n";
        let config = Config::parse(Path::new("config.toml"), text)
            .ok()
            .and_then(|config| config.model)
            .expect("test config parses");
        Model::new(config, |_| key.map(str::to_string))
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
        let mut on_note = |_: crate::model::CallNews| {};
        let mut bills = Vec::new();
        is_send(&model.complete(&request, &mut on_text, &mut on_note, &mut bills));
    }
}
