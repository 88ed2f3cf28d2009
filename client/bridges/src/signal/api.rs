//! The signal-cli methods the bridge calls, over [`Rpc`]: `send` (text with
//! `textStyle` ranges, or a file as a data URI), `sendTyping`,
//! `getAttachment`, `subscribeReceive`, and what a send's answer means.

use super::format::Styled;
use super::rpc::{Rpc, RpcError, RATE_LIMIT_ERROR, UNTRUSTED_KEY_ERROR};
use base64::Engine;
use serde_json::{json, Value};
use std::time::Duration;

/// How long a send may take (signal-cli may fetch keys first).
const SEND_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a small request may take.
const SHORT_TIMEOUT: Duration = Duration::from_secs(20);
/// How long a rate-limited send waits when signal-cli does not say.
const RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// Why one send did not go through, as signal-cli answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendFailure {
    /// Rate limited: wait this long.
    #[error("rate limited for {0:?}")]
    Wait(Duration),
    /// A network failure, or no answer: worth another try.
    #[error("{0}")]
    Retry(String),
    /// The recipient cannot take it (not on Signal, a changed safety
    /// number), in words for the note.
    #[error("{0}")]
    Skip(String),
    /// signal-cli refused the text's styles.
    #[error("{0}")]
    Markup(String),
    /// The connection to signal-cli is gone.
    #[error("signal-cli closed the connection")]
    Closed,
}

/// Sends `styled` to `to`; the message's timestamp when it went.
pub async fn send_text(rpc: &Rpc, to: &str, styled: &Styled) -> Result<u64, SendFailure> {
    let mut params = json!({"recipient": [to], "message": styled.text});
    if !styled.styles.is_empty() {
        let styles: Vec<String> = styled.styles.iter().map(|range| range.encode()).collect();
        params["textStyle"] = json!(styles);
    }
    outcome(
        rpc.call("send", params, SEND_TIMEOUT).await,
        !styled.styles.is_empty(),
    )
}

/// Sends a file (`bytes` of `media_type`, named `name`) to `to`, as a data
/// URI, signal-cli's way to take a file that is not on its disk.
pub async fn send_file(
    rpc: &Rpc,
    to: &str,
    media_type: &str,
    name: &str,
    bytes: &[u8],
) -> Result<u64, SendFailure> {
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    let uri = format!("data:{media_type};filename={name};base64,{data}");
    let params = json!({"recipient": [to], "attachments": [uri]});
    outcome(rpc.call("send", params, SEND_TIMEOUT).await, false)
}

/// Shows "typing…" to `to`.
pub async fn send_typing(rpc: &Rpc, to: &str) -> Result<(), RpcError> {
    let params = json!({"recipient": [to]});
    rpc.call("sendTyping", params, SHORT_TIMEOUT)
        .await
        .map(drop)
}

/// Asks signal-cli for the messages that arrive (needed when it runs with
/// `--receive-mode manual`, as the bridge starts it; a signal-cli that
/// receives on its own sends each message twice then, and the second is
/// passed over).
pub async fn subscribe(rpc: &Rpc) -> Result<(), RpcError> {
    rpc.call("subscribeReceive", json!({}), SHORT_TIMEOUT)
        .await
        .map(drop)
}

/// Why a file could not be fetched from signal-cli.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error("the file is {0} bytes, over the limit of {1}")]
    TooLarge(u64, usize),
    #[error("signal-cli gave no file")]
    NoData,
    #[error("signal-cli gave a file that is not base64")]
    NotBase64,
}

/// The bytes of attachment `id` that `from` sent, at most `limit`.
pub async fn fetch_attachment(
    rpc: &Rpc,
    id: &str,
    from: &str,
    limit: usize,
) -> Result<Vec<u8>, FetchError> {
    let params = json!({"id": id, "recipient": from});
    let answer = rpc.call("getAttachment", params, SEND_TIMEOUT).await?;
    let data = answer
        .get("data")
        .and_then(Value::as_str)
        .ok_or(FetchError::NoData)?;
    // Four base64 characters hold three bytes.
    if data.len() / 4 * 3 > limit + 3 {
        return Err(FetchError::TooLarge((data.len() / 4 * 3) as u64, limit));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|_| FetchError::NotBase64)?;
    if bytes.len() > limit {
        return Err(FetchError::TooLarge(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

/// What a send's answer means (pure): its timestamp, or why it failed.
/// `styled`: whether the text carried styles (then an invalid request is
/// a refused markup).
pub fn outcome(answer: Result<Value, RpcError>, styled: bool) -> Result<u64, SendFailure> {
    let timestamp = |result: &Value| result.get("timestamp").and_then(Value::as_u64);
    match answer {
        Ok(result) => match failure_of(&result) {
            Some(failure) => Err(failure),
            None => Ok(timestamp(&result).unwrap_or_default()),
        },
        Err(RpcError::Refused {
            code,
            message,
            data,
            ..
        }) => {
            let results = data.as_ref().and_then(|data| data.get("response"));
            if let Some(failure) = results.and_then(failure_of) {
                return Err(failure);
            }
            Err(match code {
                RATE_LIMIT_ERROR => SendFailure::Wait(RATE_LIMIT_WAIT),
                UNTRUSTED_KEY_ERROR => SendFailure::Skip(untrusted()),
                // Invalid parameters: with styles, the styles are suspect.
                -32602 if styled => SendFailure::Markup(message),
                // An I/O error, an internal one: worth another try.
                -3 | -32603 => SendFailure::Retry(message),
                _ => SendFailure::Skip(message),
            })
        }
        Err(RpcError::Timeout { method, after }) => Err(SendFailure::Retry(format!(
            "signal-cli did not answer {method} within {after:?}"
        ))),
        Err(RpcError::Closed | RpcError::Write(_) | RpcError::Connect { .. }) => {
            Err(SendFailure::Closed)
        }
    }
}

fn untrusted() -> String {
    "their safety number changed; compare it, then trust it with `signal-cli trust`".to_string()
}

/// The failure a send's `results` show when no recipient got it.
fn failure_of(result: &Value) -> Option<SendFailure> {
    let results = result.get("results")?.as_array()?;
    if results.is_empty() || results.iter().any(|r| r["type"] == "SUCCESS") {
        return None;
    }
    let first = &results[0];
    let kind = first["type"].as_str().unwrap_or_default();
    Some(match kind {
        "RATE_LIMIT_FAILURE" => SendFailure::Wait(
            first["retryAfterSeconds"]
                .as_u64()
                .map_or(RATE_LIMIT_WAIT, Duration::from_secs),
        ),
        "NETWORK_FAILURE" => SendFailure::Retry("a network failure".into()),
        "UNREGISTERED_FAILURE" => SendFailure::Skip("not registered on Signal".into()),
        "IDENTITY_FAILURE" => SendFailure::Skip(untrusted()),
        other => SendFailure::Skip(format!("signal-cli says {other}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(code: i64, data: Option<Value>) -> Result<Value, RpcError> {
        Err(RpcError::Refused {
            method: "send".into(),
            code,
            message: "Failed to send message".into(),
            data,
        })
    }

    #[test]
    fn a_sends_answer_says_whether_to_wait_retry_or_skip() {
        let ok = json!({"timestamp": 7, "results": [{"type": "SUCCESS", "recipientAddress": {"number": "+1"}}]});
        assert_eq!(outcome(Ok(ok), true), Ok(7));
        let limited = json!({"response": {"timestamp": 7, "results": [
            {"type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 12}]}});
        assert_eq!(
            outcome(refused(RATE_LIMIT_ERROR, Some(limited)), false),
            Err(SendFailure::Wait(Duration::from_secs(12)))
        );
        assert_eq!(
            outcome(refused(RATE_LIMIT_ERROR, None), false),
            Err(SendFailure::Wait(RATE_LIMIT_WAIT))
        );
        let unregistered = json!({"response": {"results": [{"type": "UNREGISTERED_FAILURE"}]}});
        assert_eq!(
            outcome(refused(-1, Some(unregistered)), false),
            Err(SendFailure::Skip("not registered on Signal".into()))
        );
        let network = json!({"timestamp": 7, "results": [{"type": "NETWORK_FAILURE"}]});
        assert!(matches!(
            outcome(Ok(network), false),
            Err(SendFailure::Retry(_))
        ));
        assert!(matches!(
            outcome(refused(-32602, None), true),
            Err(SendFailure::Markup(_))
        ));
        assert!(matches!(
            outcome(refused(UNTRUSTED_KEY_ERROR, None), false),
            Err(SendFailure::Skip(_))
        ));
        assert_eq!(
            outcome(Err(RpcError::Closed), false),
            Err(SendFailure::Closed)
        );
    }
}
