//! The web client's HTTP side: the page's files, `/login`, and the upgrade
//! of `/ws` to a WebSocket that speaks the socket's protocol.
//!
//! Every response carries the security headers ([`secure`]): a strict
//! Content-Security-Policy (this origin only, no inline script or style,
//! never framed), `nosniff`, no referrer. Every request but `/login` and
//! the icon needs a live session cookie. `/ws` — the only way to anything
//! of the conversation — also needs the session's key, which the login
//! handed to the page's own origin alone (a browser sends the cookie to
//! every port of the host, so another local server the owner visits gets
//! it), and an `Origin` that is the page's own (the `Host` it was asked
//! for, or `[web] url`), so another site's page is refused.

use super::auth::{self, LoginLimiter};
use super::door::{Door, Visit};
use super::page;
use super::store::{Codes, SESSION_IDLE_LIFETIME};
use crate::config::WebConfig;
use crate::log::{Log, LogError};
use crate::server::Shared;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hearth_protocol::ServerFrame;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::net::TcpListener;
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// The policy every response carries.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self' blob:; connect-src 'self'; manifest-src 'self'; \
    worker-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("[web] listen = \"{address}\": {source}")]
    Listen {
        address: String,
        source: std::io::Error,
    },
    #[error("[web] url = \"{0}\" must start with http:// or https://")]
    Url(String),
    #[error(transparent)]
    Log(#[from] LogError),
}

/// What the socket's connections need of the web client: codes for
/// `hearth web`, the sessions, and who to disconnect on a revoke.
#[derive(Clone)]
pub struct Web {
    codes: Codes,
    /// Where a browser opens the page, without a trailing `/`.
    url: String,
    /// Revoked sessions' ids, so their open pages are disconnected.
    revoked: broadcast::Sender<i64>,
    limiter: Arc<Mutex<LoginLimiter>>,
}

impl Web {
    /// Binds `[web] listen` and prepares the codes' tables.
    pub async fn bind(
        config: &WebConfig,
        log: &Log,
    ) -> Result<Option<(TcpListener, Web)>, WebError> {
        let Some(address) = &config.listen else {
            return Ok(None);
        };
        let listen_error = |source| WebError::Listen {
            address: address.clone(),
            source,
        };
        let listener = TcpListener::bind(address).await.map_err(listen_error)?;
        let bound = listener.local_addr().map_err(listen_error)?;
        let url = match &config.url {
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => {
                url.trim_end_matches('/').to_string()
            }
            Some(url) => return Err(WebError::Url(url.clone())),
            None => format!("http://{}", reachable(bound)),
        };
        tracing::info!("the web client listens on {bound}; `hearth web` prints a login link");
        let codes = Codes::open(log.clone()).await?;
        let (revoked, _) = broadcast::channel(64);
        let web = Web {
            codes,
            url,
            revoked,
            limiter: Arc::default(),
        };
        Ok(Some((listener, web)))
    }

    /// The answer to `web_login`: a link with a new one-time code.
    pub async fn login_frame(&self) -> Result<ServerFrame, LogError> {
        let (code, expires) = self.codes.new_code(chrono::Local::now()).await?;
        Ok(ServerFrame::WebLogin {
            url: format!("{}/login?code={code}", self.url),
            expires: expires.to_rfc3339(),
        })
    }

    /// The answer to `web_sessions`.
    pub async fn sessions_frame(&self) -> Result<ServerFrame, LogError> {
        let sessions = self.codes.sessions().await?;
        Ok(ServerFrame::WebSessions { sessions })
    }

    /// Revokes session `id` and disconnects its pages; the revoked session,
    /// or none when there is no such session.
    pub async fn revoke(&self, id: i64) -> Result<Option<ServerFrame>, LogError> {
        let Some(session) = self.codes.revoke(id).await? else {
            return Ok(None);
        };
        let _ = self.revoked.send(id);
        Ok(Some(ServerFrame::WebSessions {
            sessions: vec![session],
        }))
    }

    /// Resolves when session `id` is revoked.
    pub fn revoked(&self, id: i64) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut revoked = self.revoked.subscribe();
        async move {
            loop {
                match revoked.recv().await {
                    Ok(gone) if gone == id => return,
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
                }
            }
        }
    }
}

/// The address to print for a bound one: an unspecified address (`0.0.0.0`)
/// is reached on loopback from this machine.
fn reachable(bound: SocketAddr) -> SocketAddr {
    match bound.ip() {
        ip if ip.is_unspecified() && ip.is_ipv4() => {
            SocketAddr::from(([127, 0, 0, 1], bound.port()))
        }
        ip if ip.is_unspecified() => {
            SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, bound.port()))
        }
        _ => bound,
    }
}

#[derive(Clone)]
struct Site {
    shared: Arc<Shared>,
    web: Web,
}

/// Serves the page and its WebSocket until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    web: Web,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let site = Site { shared, web };
    let routes = Router::new()
        .route("/login", axum::routing::get(login))
        .route("/ws", axum::routing::get(upgrade))
        .fallback(file)
        .layer(axum::middleware::map_response(secure))
        .with_state(site);
    let stopped = async move {
        while !*shutdown.borrow_and_update() {
            if shutdown.changed().await.is_err() {
                return;
            }
        }
    };
    let routes = routes.into_make_service_with_connect_info::<Visit>();
    if let Err(err) = axum::serve(Door::new(listener), routes)
        .with_graceful_shutdown(stopped)
        .await
    {
        tracing::warn!("the web client stopped: {err}");
    }
}

/// Adds the security headers to every response.
async fn secure(mut response: Response) -> Response {
    let headers = response.headers_mut();
    let set = |headers: &mut HeaderMap, name: &'static str, value: &'static str| {
        headers.insert(name, HeaderValue::from_static(value));
    };
    set(headers, "content-security-policy", CONTENT_SECURITY_POLICY);
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "referrer-policy", "no-referrer");
    set(headers, "x-frame-options", "DENY");
    set(headers, "cross-origin-opener-policy", "same-origin");
    set(headers, "cross-origin-resource-policy", "same-origin");
    if !headers.contains_key(header::CACHE_CONTROL) {
        set(headers, "cache-control", "no-store");
    }
    response
}

fn text(status: StatusCode, body: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// The live session the request's cookie names, and whose key is `key`
/// when one is asked for.
async fn session(site: &Site, headers: &HeaderMap, key: Option<&str>) -> Option<i64> {
    let token = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|cookie| auth::cookie(cookie, auth::COOKIE))?;
    match site
        .web
        .codes
        .session(token, key, chrono::Local::now())
        .await
    {
        Ok(id) => id,
        Err(err) => {
            tracing::warn!("cannot check a web session: {err}");
            None
        }
    }
}

/// `GET /login?code=…`: spends the code, sets the session cookie and sends
/// the browser on to the page with the session's key in the address's
/// fragment, which no browser sends to a server; the page keeps the key in
/// its origin's storage and drops it from the address bar.
async fn login(
    State(site): State<Site>,
    ConnectInfo(visit): ConnectInfo<Visit>,
    request: Request,
) -> Response {
    let address = visit.address.ip();
    let allowed = site
        .web
        .limiter
        .lock()
        .map(|mut limiter| limiter.allows(address, Instant::now()))
        .unwrap_or(false);
    if !allowed {
        return text(StatusCode::TOO_MANY_REQUESTS, page::TOO_MANY);
    }
    let code = request
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .find_map(|pair| pair.strip_prefix("code="))
        .unwrap_or("");
    let headers = request.headers();
    let browser = header_str(headers, header::USER_AGENT);
    let used = match site
        .web
        .codes
        .use_code(code, browser, chrono::Local::now())
        .await
    {
        Ok(used) => used,
        Err(err) => {
            tracing::warn!("cannot use a web login code: {err}");
            None
        }
    };
    let Some(session) = used else {
        if let Ok(mut limiter) = site.web.limiter.lock() {
            limiter.failed(address, Instant::now());
        }
        return text(StatusCode::FORBIDDEN, page::BAD_CODE);
    };
    let id = session.id;
    tracing::info!("web session {id} logged in");
    let forwarded = header::HeaderName::from_static("x-forwarded-proto");
    let https = site.web.url.starts_with("https://")
        || header_str(headers, forwarded).eq_ignore_ascii_case("https");
    let cookie = auth::session_cookie(&session.token, https, SESSION_IDLE_LIFETIME);
    // A page that moves on to `/` rather than a redirect: a login link
    // opened from another site's page would otherwise arrive at `/` as that
    // site's navigation, without the SameSite=Strict cookie.
    let mut response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        page::logged_in(&session.key),
    )
        .into_response();
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// The page's files; everything but the icon needs a session.
async fn file(State(site): State<Site>, request: Request) -> Response {
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return text(StatusCode::METHOD_NOT_ALLOWED, page::NOT_FOUND);
    }
    let Some(asset) = page::find(request.uri().path()) else {
        return text(StatusCode::NOT_FOUND, page::NOT_FOUND);
    };
    if !asset.public && session(&site, request.headers(), None).await.is_none() {
        return text(StatusCode::UNAUTHORIZED, page::LOGIN_NEEDED);
    }
    (
        [
            (header::CONTENT_TYPE, asset.content_type),
            // Revalidated each time: a new hearthd brings a new page.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        asset.body,
    )
        .into_response()
}

/// `GET /ws`: the page's own origin and a live session, proved by its
/// cookie and its key, then the socket's protocol over the upgraded
/// connection.
async fn upgrade(
    State(site): State<Site>,
    ConnectInfo(visit): ConnectInfo<Visit>,
    mut request: Request,
) -> Response {
    let headers = request.headers();
    let host = header_str(headers, header::HOST);
    let origin = header_str(headers, header::ORIGIN);
    // The configured address counts too: a proxy may rewrite `Host`.
    if !auth::same_origin(origin, host) && origin != site.web.url {
        return text(StatusCode::FORBIDDEN, page::CROSS_ORIGIN);
    }
    let protocols = headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok());
    let (session_key, hearth) = auth::offered_key(protocols);
    // Without a key nothing is looked up: a cookie alone proves nothing
    // here, whoever replays it.
    let Some(session_key) = session_key else {
        return text(StatusCode::UNAUTHORIZED, page::LOGIN_AGAIN);
    };
    let Some(id) = session(&site, headers, Some(session_key)).await else {
        return text(StatusCode::UNAUTHORIZED, page::LOGIN_AGAIN);
    };
    let headers = request.headers();
    let is_websocket = header_str(headers, header::UPGRADE).eq_ignore_ascii_case("websocket")
        && header_str(headers, header::SEC_WEBSOCKET_VERSION) == "13";
    let key = header_str(headers, header::SEC_WEBSOCKET_KEY);
    if !is_websocket || key.is_empty() {
        return text(StatusCode::BAD_REQUEST, page::NOT_WEBSOCKET);
    }
    let accept = derive_accept_key(key.as_bytes());
    visit.greeted();
    let upgraded = hyper::upgrade::on(&mut request);
    let Site { shared, web } = site;
    tokio::spawn(async move {
        let stream = match upgraded.await {
            Ok(upgraded) => hyper_util::rt::TokioIo::new(upgraded),
            Err(err) => {
                tracing::debug!("a web client's upgrade failed: {err}");
                return;
            }
        };
        tokio::select! {
            () = crate::server::serve_browser(Box::new(stream), shared) => {}
            () = web.revoked(id) => tracing::info!("web session {id} was revoked; its page is disconnected"),
        }
    });
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = response.headers_mut();
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        headers.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if hearth {
        headers.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(auth::SUBPROTOCOL),
        );
    }
    response
}
