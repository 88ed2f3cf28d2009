//! Signing in: in a browser, with a callback to a local server on the
//! address OpenAI's client registered (`http://localhost:1455/auth/callback`,
//! or port 1457 when 1455 is taken), or with a device code entered in a
//! browser anywhere, for a server without one. Either way the result is
//! [`Tokens`]; the caller stores them.

use super::oauth::{self, DeviceCode, Pkce};
use super::tokens::Tokens;
use super::ChatGptError;
use axum::extract::{Query, State};
use axum::response::Html;
use axum::routing::get;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::oneshot;

/// The callback port OpenAI's client registered, and its fallback.
pub const CALLBACK_PORTS: [u16; 2] = [1455, 1457];

/// The callback's path.
pub const CALLBACK_PATH: &str = "/auth/callback";

/// A sign-in waiting for the browser to come back.
pub struct BrowserSignIn {
    /// The address to open in a browser.
    pub url: String,
    redirect_uri: String,
    pkce: Pkce,
    issuer: String,
    code: oneshot::Receiver<Result<String, ChatGptError>>,
    server: tokio::task::JoinHandle<()>,
}

/// What the callback's handler shares.
struct Waiting {
    state: String,
    /// Taken by the first callback that carries the right state.
    send: Mutex<Option<oneshot::Sender<Result<String, ChatGptError>>>>,
}

/// Starts a sign-in: listens on 127.0.0.1 at `port` (or the registered
/// ports when none is given; 0 for any, in tests) and makes the address
/// the browser opens.
pub async fn start_browser(issuer: &str, port: Option<u16>) -> Result<BrowserSignIn, ChatGptError> {
    let pkce = Pkce::new()?;
    let state = oauth::new_state()?;
    let ports: Vec<u16> = match port {
        Some(port) => vec![port],
        None => CALLBACK_PORTS.to_vec(),
    };
    let mut listener = None;
    let mut last_error = None;
    for port in ports {
        match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            Ok(bound) => {
                listener = Some(bound);
                break;
            }
            Err(err) => last_error = Some(format!("port {port}: {err}")),
        }
    }
    let Some(listener) = listener else {
        return Err(ChatGptError::Failed(format!(
            "cannot listen for the sign-in's callback ({}); is another sign-in running? \
             `hearth login chatgpt --device` needs no local port",
            last_error.unwrap_or_default()
        )));
    };
    let port = listener
        .local_addr()
        .map_err(|err| ChatGptError::Failed(format!("cannot listen: {err}")))?
        .port();
    let redirect_uri = format!("http://localhost:{port}{CALLBACK_PATH}");
    let (send, code) = oneshot::channel();
    let waiting = Arc::new(Waiting {
        state: state.clone(),
        send: Mutex::new(Some(send)),
    });
    let app = axum::Router::new()
        .route(CALLBACK_PATH, get(callback))
        .with_state(waiting);
    let server = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            tracing::warn!("the sign-in's callback server stopped: {err}");
        }
    });
    Ok(BrowserSignIn {
        url: oauth::authorize_url(issuer, &redirect_uri, &pkce, &state),
        redirect_uri,
        pkce,
        issuer: issuer.trim_end_matches('/').to_string(),
        code,
        server,
    })
}

impl BrowserSignIn {
    /// Waits for the browser's callback and exchanges its code for tokens.
    pub async fn finish(self) -> Result<Tokens, ChatGptError> {
        let code = self.code.await;
        self.server.abort();
        let code = code.map_err(|_| ChatGptError::Failed("the sign-in was abandoned".into()))??;
        oauth::exchange_code(
            &client(),
            &self.issuer,
            &self.redirect_uri,
            &self.pkce.verifier,
            &code,
        )
        .await
    }
}

/// `GET /auth/callback?code=…&state=…` (or `?error=…`): hands the code to
/// the waiting sign-in. A wrong state is refused and the sign-in waits on.
async fn callback(
    State(waiting): State<Arc<Waiting>>,
    Query(params): Query<HashMap<String, String>>,
) -> (axum::http::StatusCode, Html<&'static str>) {
    use axum::http::StatusCode;
    if params.get("state") != Some(&waiting.state) {
        return (
            StatusCode::BAD_REQUEST,
            Html("<p>This sign-in is not the one hearth is waiting for.</p>"),
        );
    }
    let result = match (params.get("code"), params.get("error")) {
        (_, Some(error)) => Err(ChatGptError::Failed(format!(
            "the sign-in was refused: {}",
            params
                .get("error_description")
                .filter(|text| !text.is_empty())
                .unwrap_or(error)
        ))),
        (Some(code), None) if !code.is_empty() => Ok(code.clone()),
        _ => Err(ChatGptError::Failed(
            "the sign-in came back without a code".into(),
        )),
    };
    let ok = result.is_ok();
    let send = waiting
        .send
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(send) = send {
        let _ = send.send(result);
    }
    if ok {
        (
            StatusCode::OK,
            Html("<p>Signed in to ChatGPT. You can close this page and go back to hearth.</p>"),
        )
    } else {
        (
            StatusCode::BAD_REQUEST,
            Html("<p>The sign-in did not complete; hearth says why.</p>"),
        )
    }
}

/// Signs in with a device code: `show` is given the code and where to
/// enter it, then this waits until it was entered (15 minutes at most).
pub async fn with_device_code(
    issuer: &str,
    show: impl FnOnce(&DeviceCode),
) -> Result<Tokens, ChatGptError> {
    let http = client();
    let code = oauth::device_code(&http, issuer).await?;
    show(&code);
    oauth::device_tokens(&http, issuer, &code).await
}

/// The HTTP client of a sign-in: no call to the authorization server
/// takes longer than a minute.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        // Building fails only when the TLS backend cannot load, which the
        // rustls build rules out.
        .unwrap_or_else(|_| reqwest::Client::new())
}
