//! A ChatGPT plan as a model provider, the way OpenAI's open-source Codex
//! client uses one: signed in with OAuth (PKCE, or a device code), then
//! Responses requests to the Codex backend with the access token and the
//! ChatGPT account.
//!
//! - `tokens.rs`: the stored sign-in (a private file of the home), its
//!   claims and when it is due for renewal.
//! - `oauth.rs`: the authorization server's endpoints: authorize, token
//!   (code exchange, refresh), device codes.
//! - `login.rs`: the two ways to sign in: a browser with a local callback,
//!   or a device code.
//! - `limits.rs`: the plan's usage limits the backend reports, kept for
//!   `hearth status`, and its refusal at the limit.
//!
//! A request goes out with `Authorization: Bearer`, `chatgpt-account-id`,
//! `originator`, `OpenAI-Beta` and the conversation's `session_id`, as
//! that client sends them; the body is the Responses API's
//! (`responses.rs`), with `store: false`, streaming, the instructions and
//! a stable `prompt_cache_key`. An access token due to expire is renewed
//! first, and a 401 renews it once and tries again; a refresh the server
//! refuses for good asks the person to sign in again. Requests on a plan
//! are metered in tokens, never priced as API calls (`usage/prices.rs`).
//!
//! Both addresses can be moved, for tests or a proxy: the backend with the
//! model's `base_url`, the authorization server with
//! `$HEARTH_CHATGPT_ISSUER` at sign-in (the tokens remember it).

pub mod limits;
pub mod login;
pub mod oauth;
pub mod tokens;

use super::bill::Metering;
use super::provider::Provider;
use super::{responses, ModelError, Request, Response};
use hearth_protocol::home::Home;
use reqwest::header::{HeaderMap, HeaderValue};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// OpenAI's authorization server.
pub const ISSUER: &str = "https://auth.openai.com";
/// The public OAuth client of OpenAI's Codex client.
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// The Codex backend's Responses API.
pub const BACKEND: &str = "https://chatgpt.com/backend-api/codex";
/// Who the requests say they come from, as that client says it.
pub const ORIGINATOR: &str = "codex_cli_rs";
/// Moves the authorization server at sign-in (tests, a proxy).
pub const ISSUER_ENV: &str = "HEARTH_CHATGPT_ISSUER";

/// Why signing in, or using the sign-in, failed.
#[derive(Debug, thiserror::Error)]
pub enum ChatGptError {
    #[error("no one is signed in to ChatGPT: run `hearth login chatgpt`")]
    NotSignedIn,
    /// The refresh token is no good any more; only a new sign-in helps.
    #[error("the ChatGPT sign-in must be renewed ({0}): run `hearth login chatgpt`")]
    SignInExpired(String),
    /// The authorization server could not be reached.
    #[error("{0}")]
    Unreachable(String),
    /// The tokens' file could not be read or written.
    #[error("{0}")]
    Store(String),
    #[error("{0}")]
    Failed(String),
}

impl From<ChatGptError> for ModelError {
    fn from(err: ChatGptError) -> ModelError {
        match err {
            ChatGptError::NotSignedIn | ChatGptError::SignInExpired(_) => {
                ModelError::SignIn(err.to_string())
            }
            // A refresh that failed for a passing reason may work next time.
            ChatGptError::Unreachable(message) | ChatGptError::Failed(message) => {
                ModelError::Unavailable {
                    provider: "chatgpt",
                    message,
                }
            }
            ChatGptError::Store(message) => ModelError::Failed(message),
        }
    }
}

/// The authorization server a sign-in goes to: `$HEARTH_CHATGPT_ISSUER`,
/// else OpenAI's.
pub fn issuer() -> String {
    std::env::var(ISSUER_ENV)
        .ok()
        .map(|url| url.trim().trim_end_matches('/').to_string())
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| ISSUER.to_string())
}

/// Where a home keeps its sign-in: beside `secrets.env`, out of the
/// shell's reach like it.
pub fn tokens_file(home: &Home) -> PathBuf {
    home.config_dir.join("chatgpt-tokens.json")
}

/// One sign-in as this process uses it: refreshes are made one at a time,
/// since a refresh token is good for one refresh and every model of the
/// process shares it.
struct Session {
    path: PathBuf,
    refreshing: tokio::sync::Mutex<()>,
}

/// The session of the tokens at `path`, shared by every model of the process.
fn session(path: &Path) -> Arc<Session> {
    static SESSIONS: Mutex<BTreeMap<PathBuf, Arc<Session>>> = Mutex::new(BTreeMap::new());
    let mut sessions = SESSIONS.lock().unwrap_or_else(PoisonError::into_inner);
    sessions
        .entry(path.to_path_buf())
        .or_insert_with(|| {
            Arc::new(Session {
                path: path.to_path_buf(),
                refreshing: tokio::sync::Mutex::new(()),
            })
        })
        .clone()
}

impl Session {
    /// Tokens good to send now: the stored ones (the file is the truth, so
    /// a sign-in made while the daemon runs applies at once), renewed first
    /// when due, or when `failed` is the access token a server just refused.
    async fn tokens(
        &self,
        http: &reqwest::Client,
        failed: Option<&str>,
    ) -> Result<tokens::Tokens, ChatGptError> {
        let _one_at_a_time = self.refreshing.lock().await;
        let mut current = tokens::load(&self.path)?.ok_or(ChatGptError::NotSignedIn)?;
        let refused = failed == Some(current.access_token.as_str());
        let now = tokens::now();
        if refused || current.due(now) {
            match oauth::refresh(http, &current).await {
                Ok(renewed) => {
                    tokens::save(&self.path, &renewed)?;
                    tracing::info!("the ChatGPT sign-in was refreshed");
                    current = renewed;
                }
                Err(ChatGptError::SignInExpired(reason)) => {
                    return Err(ChatGptError::SignInExpired(reason))
                }
                // Still good for a while: use it, and refresh next time.
                Err(err) if !refused && current.expires_at().is_some_and(|exp| exp > now) => {
                    tracing::warn!("the ChatGPT sign-in could not be refreshed yet: {err}");
                }
                Err(err) => return Err(err),
            }
        }
        crate::redact::hold([
            current.access_token.clone(),
            current.refresh_token.clone(),
            current.id_token.clone(),
        ]);
        Ok(current)
    }
}

/// The headers a Codex backend request carries besides the body's type.
fn headers(tokens: &tokens::Tokens, request: &Request) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let mut put = |name: &'static str, value: &str, sensitive: bool| {
        if let Ok(mut value) = HeaderValue::from_str(value) {
            value.set_sensitive(sensitive);
            headers.insert(name, value);
        }
    };
    put(
        "authorization",
        &format!("Bearer {}", tokens.access_token),
        true,
    );
    if let Some(account) = &tokens.account_id {
        put("chatgpt-account-id", account, false);
    }
    put("originator", ORIGINATOR, false);
    put("openai-beta", "responses=experimental", false);
    put("accept", "text/event-stream", false);
    if let Some(key) = &request.cache_key {
        put("session_id", key, false);
    }
    headers
}

/// Sends `request` to the Codex backend: the Responses wire format with
/// the sign-in's headers, renewed and tried once more after a 401.
pub(super) async fn complete(
    provider: &Provider,
    request: &Request,
    on_text: &mut (dyn FnMut(&str) + Send),
    metering: &mut Metering,
) -> Result<Response, ModelError> {
    let path = provider
        .config
        .tokens_file
        .as_deref()
        .ok_or_else(|| ModelError::SignIn(ChatGptError::NotSignedIn.to_string()))?;
    let session = session(path);
    let tokens = session.tokens(&provider.http, None).await?;
    let plan = tokens.identity().plan;
    let first = responses::complete_with(
        provider,
        request,
        on_text,
        metering,
        headers(&tokens, request),
        plan.as_deref(),
    )
    .await;
    match first {
        Err(ModelError::Auth { status: 401, .. }) => {
            let tokens = session
                .tokens(&provider.http, Some(&tokens.access_token))
                .await?;
            responses::complete_with(
                provider,
                request,
                on_text,
                metering,
                headers(&tokens, request),
                plan.as_deref(),
            )
            .await
        }
        other => other,
    }
}
