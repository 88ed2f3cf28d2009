//! The webhook Meta delivers to: one path, `GET` for the verification
//! challenge and `POST` for deliveries.
//!
//! A delivery is checked against its signature (`X-Hub-Signature-256`, an
//! HMAC-SHA256 of the raw body under the app secret) before anything reads
//! it; a bad or missing one is answered 401 and leaves no trace. A signed
//! delivery's messages go to the inbound half, and Meta gets 200 only once
//! the daemon has every one of them durably, so a failure is delivered again
//! (Meta retries for days) rather than lost.

use super::payload::{self, Received};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// The header that carries a delivery's signature.
pub const SIGNATURE_HEADER: &str = "x-hub-signature-256";

/// Meta sends up to 3 MB in one delivery; more is refused unread.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// A signed delivery's messages, for the inbound half. `done` is told
/// whether the daemon took them all; Meta's answer waits for it.
#[derive(Debug)]
pub struct Delivery {
    pub messages: Vec<Received>,
    /// Sends its `statuses[]` report failed, each to be noted.
    pub failed: Vec<payload::FailedSend>,
    pub done: oneshot::Sender<bool>,
}

/// What the webhook's handlers share.
struct Webhook {
    verify_token: String,
    app_secret: String,
    deliveries: mpsc::Sender<Delivery>,
}

/// The webhook's routes on `path`: deliveries go to `deliveries`.
pub fn router(
    path: &str,
    verify_token: String,
    app_secret: String,
    deliveries: mpsc::Sender<Delivery>,
) -> Router {
    let webhook = Arc::new(Webhook {
        verify_token,
        app_secret,
        deliveries,
    });
    Router::new()
        .route(path, get(verify).post(deliver))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(webhook)
}

/// `GET`: Meta checks that the webhook is ours.
async fn verify(
    State(webhook): State<Arc<Webhook>>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    match answer_challenge(&params, &webhook.verify_token) {
        Some(challenge) => {
            tracing::info!("whatsapp: Meta verified the webhook");
            (StatusCode::OK, challenge).into_response()
        }
        None => StatusCode::FORBIDDEN.into_response(),
    }
}

/// `POST`: a delivery of messages and statuses.
async fn deliver(State(webhook): State<Arc<Webhook>>, headers: HeaderMap, body: Bytes) -> Response {
    let signature = headers.get(SIGNATURE_HEADER).map(|value| value.as_bytes());
    if !signature_is_valid(webhook.app_secret.as_bytes(), signature, &body) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let messages = match payload::parse(&body) {
        Ok(messages) => messages,
        Err(err) => {
            tracing::warn!("whatsapp: a signed delivery does not read: {err}");
            return StatusCode::BAD_REQUEST.into_response();
        }
    };
    let failed = payload::failed_sends(&body);
    if messages.is_empty() && failed.is_empty() {
        return StatusCode::OK.into_response();
    }
    let (done, taken) = oneshot::channel();
    let delivery = Delivery {
        messages,
        failed,
        done,
    };
    if webhook.deliveries.send(delivery).await.is_err() {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    match taken.await {
        Ok(true) => StatusCode::OK.into_response(),
        // The daemon did not take them: Meta delivers them again later.
        _ => StatusCode::SERVICE_UNAVAILABLE.into_response(),
    }
}

/// The challenge to echo when the query is Meta's verification
/// (`hub.mode=subscribe`, our verify token, a challenge); `None` otherwise.
pub fn answer_challenge(params: &HashMap<String, String>, verify_token: &str) -> Option<String> {
    let param = |name: &str| params.get(name).map(String::as_str);
    if param("hub.mode") != Some("subscribe") {
        return None;
    }
    let token = param("hub.verify_token")?;
    if !same_secret(token.as_bytes(), verify_token.as_bytes()) {
        return None;
    }
    param("hub.challenge")
        .filter(|challenge| !challenge.is_empty())
        .map(str::to_string)
}

/// Whether `header` (`sha256=<hex>`) is the HMAC-SHA256 of `body` under
/// `app_secret`. The digests are compared in constant time.
pub fn signature_is_valid(app_secret: &[u8], header: Option<&[u8]>, body: &[u8]) -> bool {
    let Some(hex) = header.and_then(|header| header.strip_prefix(b"sha256=")) else {
        return false;
    };
    let Some(tag) = decode_hex(hex) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(app_secret) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&tag).is_ok()
}

/// The `X-Hub-Signature-256` value Meta sends with `body`: for tests and
/// tools that play Meta.
pub fn signature(app_secret: &[u8], body: &[u8]) -> String {
    // HMAC takes a key of any length; this cannot fail.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(app_secret) else {
        return String::new();
    };
    mac.update(body);
    let digest = mac.finalize().into_bytes();
    let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("sha256={hex}")
}

/// Whether two secrets are equal, in time that depends only on their
/// lengths, so a wrong guess learns nothing from how fast it was refused.
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    let mut difference = given.len() ^ expected.len();
    for (at, byte) in given.iter().enumerate() {
        let other = expected
            .get(at % expected.len().max(1))
            .copied()
            .unwrap_or(0);
        difference |= usize::from(byte ^ other);
    }
    difference == 0
}

/// Hex digits (either case) as bytes; `None` for anything else.
fn decode_hex(hex: &[u8]) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    hex.chunks(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GitHub's documented example of the same scheme.
    const SECRET: &[u8] = b"It's a Secret to Everybody";
    const BODY: &[u8] = b"Hello, World!";
    const GOOD: &[u8] = b"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";

    #[test]
    fn a_good_signature_is_taken() {
        assert!(signature_is_valid(SECRET, Some(GOOD), BODY));
        assert_eq!(signature(SECRET, BODY).as_bytes(), GOOD);
        let upper = b"sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17";
        assert!(signature_is_valid(SECRET, Some(upper), BODY));
    }

    #[test]
    fn bad_missing_and_misprefixed_signatures_are_refused() {
        assert!(!signature_is_valid(SECRET, None, BODY));
        assert!(!signature_is_valid(SECRET, Some(b""), BODY));
        assert!(!signature_is_valid(b"another secret", Some(GOOD), BODY));
        assert!(!signature_is_valid(SECRET, Some(GOOD), b"Hello, World?"));
        let mut last_differs = GOOD.to_vec();
        *last_differs.last_mut().unwrap() = b'8';
        assert!(!signature_is_valid(SECRET, Some(&last_differs), BODY));
        let sha1 = [b"sha1=".as_slice(), &GOOD[7..]].concat();
        assert!(!signature_is_valid(SECRET, Some(&sha1), BODY));
        assert!(
            !signature_is_valid(SECRET, Some(&GOOD[7..]), BODY),
            "no prefix"
        );
        assert!(
            !signature_is_valid(SECRET, Some(&GOOD[..GOOD.len() - 2]), BODY),
            "short"
        );
        assert!(
            !signature_is_valid(SECRET, Some(b"sha256=zz"), BODY),
            "not hex"
        );
        // Meta signs the raw bytes: the same JSON re-serialized does not pass.
        let raw = br#"{"name":"Caf\u00e9"}"#;
        let reserialized =
            serde_json::to_vec(&serde_json::from_slice::<serde_json::Value>(raw).unwrap()).unwrap();
        let signed = signature(SECRET, raw);
        assert!(signature_is_valid(SECRET, Some(signed.as_bytes()), raw));
        assert!(!signature_is_valid(
            SECRET,
            Some(signed.as_bytes()),
            &reserialized
        ));
    }

    #[test]
    fn secrets_compare_whole_in_constant_time() {
        assert!(same_secret(b"verify-me", b"verify-me"));
        assert!(!same_secret(b"verify-mE", b"verify-me"));
        assert!(
            !same_secret(b"verify-m", b"verify-me"),
            "a prefix is not the secret"
        );
        assert!(!same_secret(b"verify-mee", b"verify-me"));
        assert!(!same_secret(b"", b"verify-me"));
        assert!(!same_secret(b"x", b""));
        assert!(same_secret(b"", b""));
    }

    fn query(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_challenge_is_answered_only_for_our_token() {
        let good = query(&[
            ("hub.mode", "subscribe"),
            ("hub.verify_token", "verify-me"),
            ("hub.challenge", "1158201444"),
        ]);
        assert_eq!(
            answer_challenge(&good, "verify-me").as_deref(),
            Some("1158201444")
        );
        assert_eq!(answer_challenge(&good, "another"), None);
        let mut unsubscribe = good.clone();
        unsubscribe.insert("hub.mode".into(), "unsubscribe".into());
        assert_eq!(answer_challenge(&unsubscribe, "verify-me"), None);
        let mut no_token = good.clone();
        no_token.remove("hub.verify_token");
        assert_eq!(answer_challenge(&no_token, "verify-me"), None);
        let mut no_challenge = good;
        no_challenge.remove("hub.challenge");
        assert_eq!(answer_challenge(&no_challenge, "verify-me"), None);
    }
}
