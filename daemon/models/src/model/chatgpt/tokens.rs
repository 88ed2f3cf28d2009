//! The sign-in's tokens: what the authorization server issued, kept in one
//! private file of the home, and renewed with the refresh token.
//!
//! The file is `chatgpt-tokens.json` beside `secrets.env`: written whole to
//! a private (0600) temporary file and renamed over the old one, so a
//! reader never sees half of it. It holds the id token (whose claims name
//! the ChatGPT account), the access token sent with every request, the
//! refresh token, and the authorization server they came from, which the
//! refresh goes back to. No log line, error or frame carries a token.

use super::ChatGptError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The claim of OpenAI's tokens that holds the ChatGPT account.
const AUTH_CLAIM: &str = "https://api.openai.com/auth";

/// An access token is renewed this long before it expires, so a request
/// never leaves with one that runs out on the way.
pub const RENEW_BEFORE_SECS: i64 = 5 * 60;

/// An access token whose expiry cannot be read is renewed after this long,
/// as OpenAI's own client does (eight days).
const RENEW_UNDATED_AFTER_SECS: i64 = 8 * 24 * 3600;

/// The stored sign-in. `Debug` shows no token.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// Where the tokens came from, and where they are refreshed.
    pub issuer: String,
    pub id_token: String,
    pub access_token: String,
    pub refresh_token: String,
    /// The ChatGPT account the requests are made for (`chatgpt-account-id`).
    #[serde(default)]
    pub account_id: Option<String>,
    /// Unix seconds of the last sign-in or refresh.
    pub refreshed_at: i64,
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokens")
            .field("issuer", &self.issuer)
            .field("account_id", &self.account_id)
            .field("refreshed_at", &self.refreshed_at)
            .finish_non_exhaustive()
    }
}

/// What the id token says about the person who signed in.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Identity {
    pub email: Option<String>,
    pub account_id: Option<String>,
    /// `plus`, `pro`, `team`, …
    pub plan: Option<String>,
}

impl Tokens {
    /// Tokens as an authorization server issued them now; the account is
    /// read from the id token's claims.
    pub fn issued(
        issuer: &str,
        id_token: String,
        access_token: String,
        refresh_token: String,
    ) -> Tokens {
        let account_id = identity(&id_token).account_id;
        Tokens {
            issuer: issuer.trim_end_matches('/').to_string(),
            id_token,
            access_token,
            refresh_token,
            account_id,
            refreshed_at: now(),
        }
    }

    /// Who signed in, from the id token.
    pub fn identity(&self) -> Identity {
        identity(&self.id_token)
    }

    /// Unix seconds the access token expires at, when it says.
    pub fn expires_at(&self) -> Option<i64> {
        claims(&self.access_token)?.get("exp")?.as_i64()
    }

    /// Whether the access token should be renewed before it is sent at
    /// `now`: it expires within [`RENEW_BEFORE_SECS`], or, undated, it is
    /// older than eight days.
    pub fn due(&self, now: i64) -> bool {
        match self.expires_at() {
            Some(exp) => exp - now <= RENEW_BEFORE_SECS,
            None => now - self.refreshed_at >= RENEW_UNDATED_AFTER_SECS,
        }
    }
}

/// Unix seconds now.
pub fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// The JSON claims of a JWT, unverified: only what the token says about
/// itself, never a check of who made it (the server that takes it checks).
fn claims(jwt: &str) -> Option<Value> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn identity(id_token: &str) -> Identity {
    let Some(claims) = claims(id_token) else {
        return Identity::default();
    };
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
    let auth = claims.get(AUTH_CLAIM);
    Identity {
        email: text(claims.get("email")),
        account_id: text(auth.and_then(|auth| auth.get("chatgpt_account_id"))),
        plan: text(auth.and_then(|auth| auth.get("chatgpt_plan_type"))),
    }
}

/// The tokens stored at `path`; none when no one signed in.
pub fn load(path: &Path) -> Result<Option<Tokens>, ChatGptError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(ChatGptError::Store(format!(
                "cannot read {}: {err}",
                path.display()
            )))
        }
    };
    serde_json::from_str(&text).map(Some).map_err(|err| {
        ChatGptError::Store(format!(
            "{} is not a sign-in hearth wrote ({err}); run `hearth login chatgpt` again",
            path.display()
        ))
    })
}

/// Stores `tokens` at `path`, private to the user, replacing what was there.
pub fn save(path: &Path, tokens: &Tokens) -> Result<(), ChatGptError> {
    let failed = |err: std::io::Error| {
        ChatGptError::Store(format!("cannot write {}: {err}", path.display()))
    };
    let text = serde_json::to_vec_pretty(tokens)
        .map_err(|err| ChatGptError::Store(format!("cannot encode the tokens: {err}")))?;
    let temporary = temporary_beside(path);
    let mut file = private_file(&temporary).map_err(failed)?;
    let written = file.write_all(&text).and_then(|()| file.sync_all());
    if let Err(err) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(failed(err));
    }
    Ok(())
}

/// Forgets the sign-in; whether there was one.
pub fn forget(path: &Path) -> Result<bool, ChatGptError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(ChatGptError::Store(format!(
            "cannot remove {}: {err}",
            path.display()
        ))),
    }
}

fn temporary_beside(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    path.with_file_name(name)
}

/// A new file only its owner may read or write, whatever the umask.
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(claims: Value) -> String {
        let part = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
        format!(
            "{}.{}.sig",
            part(&serde_json::json!({"alg": "none"})),
            part(&claims)
        )
    }

    #[test]
    fn the_account_and_plan_are_read_from_the_id_tokens_claims() {
        let id = jwt(serde_json::json!({
            "email": "a@example.com",
            AUTH_CLAIM: {"chatgpt_account_id": "acct-1", "chatgpt_plan_type": "plus"}
        }));
        let tokens = Tokens::issued("https://issuer/", id, "a".into(), "r".into());
        assert_eq!(tokens.account_id.as_deref(), Some("acct-1"));
        assert_eq!(tokens.issuer, "https://issuer");
        let who = tokens.identity();
        assert_eq!(who.plan.as_deref(), Some("plus"));
        assert_eq!(who.email.as_deref(), Some("a@example.com"));
    }

    #[test]
    fn a_token_is_due_shortly_before_it_expires() {
        let access = jwt(serde_json::json!({"exp": 10_000}));
        let mut tokens = Tokens::issued("i", "x".into(), access, "r".into());
        assert!(!tokens.due(10_000 - RENEW_BEFORE_SECS - 1));
        assert!(tokens.due(10_000 - RENEW_BEFORE_SECS));
        tokens.access_token = "opaque".into();
        tokens.refreshed_at = 0;
        assert!(!tokens.due(RENEW_UNDATED_AFTER_SECS - 1));
        assert!(tokens.due(RENEW_UNDATED_AFTER_SECS));
    }

    #[test]
    fn stored_tokens_are_private_and_debug_shows_none() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chatgpt-tokens.json");
        let tokens = Tokens::issued(
            "i",
            "id-secret".into(),
            "access-secret".into(),
            "refresh-secret".into(),
        );
        save(&path, &tokens).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(load(&path).unwrap(), Some(tokens.clone()));
        let shown = format!("{tokens:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(forget(&path).unwrap());
        assert_eq!(load(&path).unwrap(), None);
        assert!(!forget(&path).unwrap());
    }
}
