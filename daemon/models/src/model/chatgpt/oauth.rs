//! The authorization server's endpoints, as OpenAI's Codex client uses
//! them: `/oauth/authorize` (in the browser), `/oauth/token` (the code
//! exchanged with its PKCE verifier, and refreshes), and the device-code
//! endpoints under `/api/accounts/deviceauth/` for a machine without a
//! browser.

use super::tokens::Tokens;
use super::{ChatGptError, CLIENT_ID, ORIGINATOR};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::time::Duration;

/// What the sign-in asks for: who the person is, and a refresh token.
pub const SCOPES: &str = "openid profile email offline_access";

/// How long the device code stays good, as the server says it does.
pub const DEVICE_CODE_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// A PKCE pair: the verifier kept here, its S256 challenge sent ahead.
#[derive(Clone)]
pub struct Pkce {
    pub verifier: String,
    pub challenge: String,
}

impl Pkce {
    /// A fresh verifier of 64 random bytes (86 URL-safe characters).
    pub fn new() -> Result<Pkce, ChatGptError> {
        let verifier = URL_SAFE_NO_PAD.encode(random_bytes(64)?);
        Ok(Pkce {
            challenge: challenge_of(&verifier),
            verifier,
        })
    }
}

/// The S256 challenge of `verifier`: its SHA-256, base64url without padding.
pub fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A random `state` for one sign-in, checked on the callback.
pub fn new_state() -> Result<String, ChatGptError> {
    Ok(URL_SAFE_NO_PAD.encode(random_bytes(32)?))
}

fn random_bytes(count: usize) -> Result<Vec<u8>, ChatGptError> {
    let mut bytes = vec![0u8; count];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut file| file.read_exact(&mut bytes))
        .map_err(|err| ChatGptError::Failed(format!("cannot read random bytes: {err}")))?;
    Ok(bytes)
}

/// The address the browser opens to sign in.
pub fn authorize_url(issuer: &str, redirect_uri: &str, pkce: &Pkce, state: &str) -> String {
    let base = format!("{}/oauth/authorize", issuer.trim_end_matches('/'));
    let params = [
        ("response_type", "code"),
        ("client_id", CLIENT_ID),
        ("redirect_uri", redirect_uri),
        ("scope", SCOPES),
        ("code_challenge", &pkce.challenge),
        ("code_challenge_method", "S256"),
        ("id_token_add_organizations", "true"),
        ("codex_cli_simplified_flow", "true"),
        ("state", state),
        ("originator", ORIGINATOR),
    ];
    match reqwest::Url::parse_with_params(&base, params) {
        Ok(url) => url.to_string(),
        // The issuer is ours or the user's setting; a malformed one still
        // shows in the message that follows when the exchange fails.
        Err(_) => base,
    }
}

/// `key=value&…`, form-encoded.
fn form(pairs: &[(&str, &str)]) -> String {
    match reqwest::Url::parse_with_params("http://form.invalid/", pairs) {
        Ok(url) => url.query().unwrap_or_default().to_string(),
        // The literal base always parses.
        Err(_) => String::new(),
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    id_token: Option<String>,
    access_token: Option<String>,
    refresh_token: Option<String>,
}

/// Exchanges an authorization code (with its PKCE verifier) for tokens.
pub async fn exchange_code(
    http: &reqwest::Client,
    issuer: &str,
    redirect_uri: &str,
    verifier: &str,
    code: &str,
) -> Result<Tokens, ChatGptError> {
    let issuer = issuer.trim_end_matches('/');
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("client_id", CLIENT_ID),
        ("code_verifier", verifier),
    ]);
    let response = http
        .post(format!("{issuer}/oauth/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .map_err(|err| unreachable(issuer, &err))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        return Err(ChatGptError::Failed(format!(
            "the authorization server refused the sign-in ({status}: {})",
            error_text(&text)
        )));
    }
    let answer: TokenAnswer = serde_json::from_str(&text).map_err(|err| {
        ChatGptError::Failed(format!(
            "the authorization server's answer is unreadable: {err}"
        ))
    })?;
    match (answer.id_token, answer.access_token, answer.refresh_token) {
        (Some(id), Some(access), Some(refresh)) => Ok(Tokens::issued(issuer, id, access, refresh)),
        _ => Err(ChatGptError::Failed(
            "the authorization server's answer lacks a token".into(),
        )),
    }
}

/// Renews `tokens` with their refresh token. A refresh the server refuses
/// for good (the token expired, was used already or revoked) is
/// [`ChatGptError::SignInExpired`]; anything else may pass.
pub async fn refresh(http: &reqwest::Client, tokens: &Tokens) -> Result<Tokens, ChatGptError> {
    let issuer = tokens.issuer.trim_end_matches('/');
    let body = serde_json::json!({
        "client_id": CLIENT_ID,
        "grant_type": "refresh_token",
        "refresh_token": tokens.refresh_token,
        "scope": "openid profile email",
    });
    let response = http
        .post(format!("{issuer}/oauth/token"))
        .json(&body)
        .send()
        .await
        .map_err(|err| unreachable(issuer, &err))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if !status.is_success() {
        let code = error_code(&text);
        let reason = match code.as_deref() {
            Some("refresh_token_expired") => Some("it expired"),
            Some("refresh_token_reused") => Some("its refresh token was used already"),
            Some("refresh_token_invalidated") => Some("it was revoked"),
            _ if status.as_u16() == 401 => Some("the authorization server refused it"),
            _ => None,
        };
        return Err(match reason {
            Some(reason) => ChatGptError::SignInExpired(reason.to_string()),
            None => ChatGptError::Failed(format!(
                "the sign-in could not be refreshed ({status}: {})",
                error_text(&text)
            )),
        });
    }
    let answer: TokenAnswer = serde_json::from_str(&text).map_err(|err| {
        ChatGptError::Failed(format!("the refresh's answer is unreadable: {err}"))
    })?;
    let mut renewed = tokens.clone();
    if let Some(id) = answer.id_token {
        renewed.account_id = Tokens::issued(issuer, id.clone(), String::new(), String::new())
            .account_id
            .or(renewed.account_id);
        renewed.id_token = id;
    }
    renewed.access_token = answer.access_token.unwrap_or(renewed.access_token);
    renewed.refresh_token = answer.refresh_token.unwrap_or(renewed.refresh_token);
    renewed.refreshed_at = super::tokens::now();
    Ok(renewed)
}

/// A device code shown to the person, who enters it at `verification_url`
/// in a browser anywhere.
#[derive(Debug, Clone)]
pub struct DeviceCode {
    pub verification_url: String,
    pub user_code: String,
    device_auth_id: String,
    /// Between two polls.
    pub interval: Duration,
}

/// Asks for a device code.
pub async fn device_code(http: &reqwest::Client, issuer: &str) -> Result<DeviceCode, ChatGptError> {
    let issuer = issuer.trim_end_matches('/');
    let response = http
        .post(format!("{issuer}/api/accounts/deviceauth/usercode"))
        .json(&serde_json::json!({ "client_id": CLIENT_ID }))
        .send()
        .await
        .map_err(|err| unreachable(issuer, &err))?;
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    if status.as_u16() == 404 {
        return Err(ChatGptError::Failed(
            "this authorization server offers no device codes; sign in with a browser \
             (`hearth login chatgpt` without --device)"
                .into(),
        ));
    }
    if !status.is_success() {
        return Err(ChatGptError::Failed(format!(
            "the device code was refused ({status}: {})",
            error_text(&text)
        )));
    }
    let value: Value = serde_json::from_str(&text)
        .map_err(|err| ChatGptError::Failed(format!("the device code is unreadable: {err}")))?;
    let text_of = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let interval = match value.get("interval") {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
    .unwrap_or(5)
    .max(1);
    match (
        text_of("device_auth_id"),
        text_of("user_code").or_else(|| text_of("usercode")),
    ) {
        (Some(device_auth_id), Some(user_code)) => Ok(DeviceCode {
            verification_url: format!("{issuer}/codex/device"),
            user_code,
            device_auth_id,
            interval: Duration::from_secs(interval),
        }),
        _ => Err(ChatGptError::Failed(
            "the device code answer lacks its code".into(),
        )),
    }
}

/// Polls until the person entered the code, then exchanges the
/// authorization code the server hands over for tokens. Gives up after
/// [`DEVICE_CODE_LIFETIME`].
pub async fn device_tokens(
    http: &reqwest::Client,
    issuer: &str,
    code: &DeviceCode,
) -> Result<Tokens, ChatGptError> {
    let issuer = issuer.trim_end_matches('/');
    let deadline = tokio::time::Instant::now() + DEVICE_CODE_LIFETIME;
    loop {
        let response = http
            .post(format!("{issuer}/api/accounts/deviceauth/token"))
            .json(&serde_json::json!({
                "device_auth_id": code.device_auth_id,
                "user_code": code.user_code,
            }))
            .send()
            .await
            .map_err(|err| unreachable(issuer, &err))?;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        if (200..300).contains(&status) {
            let value: Value = serde_json::from_str(&text).map_err(|err| {
                ChatGptError::Failed(format!("the device sign-in's answer is unreadable: {err}"))
            })?;
            let field = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
            let redirect_uri = format!("{issuer}/deviceauth/callback");
            return exchange_code(
                http,
                issuer,
                &redirect_uri,
                field("code_verifier"),
                field("authorization_code"),
            )
            .await;
        }
        // Not yet entered: 403 or 404, as the server answers meanwhile.
        if status != 403 && status != 404 {
            return Err(ChatGptError::Failed(format!(
                "the device sign-in failed ({status}: {})",
                error_text(&text)
            )));
        }
        if tokio::time::Instant::now() + code.interval > deadline {
            return Err(ChatGptError::Failed(
                "the code was not entered within 15 minutes; run `hearth login chatgpt --device` again"
                    .into(),
            ));
        }
        tokio::time::sleep(code.interval).await;
    }
}

fn unreachable(issuer: &str, err: &reqwest::Error) -> ChatGptError {
    use std::error::Error as _;
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    ChatGptError::Unreachable(format!("cannot reach {issuer}: {text}"))
}

/// The error code of an OAuth error body: `error` as a string (RFC 6749),
/// or `error.code` as OpenAI nests it.
fn error_code(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let error = value.get("error")?;
    let code = match error {
        Value::String(code) => code.clone(),
        other => other.get("code")?.as_str()?.to_string(),
    };
    Some(code.to_ascii_lowercase())
}

/// An error body's words, short.
fn error_text(body: &str) -> String {
    let value: Option<Value> = serde_json::from_str(body).ok();
    let described = value.as_ref().and_then(|value| {
        let error = value.get("error")?;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        text(value.get("error_description"))
            .or_else(|| text(error.get("message")))
            .or_else(|| text(Some(error)))
    });
    let text = described.unwrap_or_else(|| body.trim().to_string());
    text.chars().take(300).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_is_the_s256_of_the_verifier() {
        // RFC 7636, appendix B.
        assert_eq!(
            challenge_of("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
        let pkce = Pkce::new().unwrap();
        assert_eq!(pkce.verifier.len(), 86);
        assert_eq!(pkce.challenge, challenge_of(&pkce.verifier));
    }

    #[test]
    fn the_authorize_url_carries_the_clients_parameters() {
        let pkce = Pkce {
            verifier: "v".into(),
            challenge: "c".into(),
        };
        let url = authorize_url(
            "https://auth.example/",
            "http://localhost:1455/auth/callback",
            &pkce,
            "s",
        );
        let url = reqwest::Url::parse(&url).unwrap();
        assert_eq!(url.path(), "/oauth/authorize");
        let pairs: std::collections::BTreeMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(pairs["client_id"], CLIENT_ID);
        assert_eq!(pairs["redirect_uri"], "http://localhost:1455/auth/callback");
        assert_eq!(pairs["scope"], SCOPES);
        assert_eq!(pairs["code_challenge_method"], "S256");
        assert_eq!(pairs["code_challenge"], "c");
        assert_eq!(pairs["state"], "s");
        assert_eq!(pairs["response_type"], "code");
    }

    #[test]
    fn error_codes_are_read_flat_or_nested() {
        assert_eq!(
            error_code(r#"{"error":{"code":"refresh_token_expired","message":"x"}}"#).as_deref(),
            Some("refresh_token_expired")
        );
        assert_eq!(
            error_code(r#"{"error":"invalid_grant"}"#).as_deref(),
            Some("invalid_grant")
        );
    }
}
