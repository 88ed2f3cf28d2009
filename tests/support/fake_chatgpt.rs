//! A fake of what a ChatGPT plan's sign-in talks to, on `127.0.0.1:0`: the
//! authorization server (`/oauth/authorize`, `/oauth/token` for the code
//! exchange with its PKCE check and for refreshes, the device-code
//! endpoints) and the Codex backend (`/backend-api/codex/responses`, which
//! takes only the latest access token and reports the plan's limits in
//! `x-codex-*` headers, or refuses at the limit with a 429).
//!
//! Tokens are JWTs of unsigned claims, as the daemon reads only their
//! claims: the id token names account `acct-test` on a `plus` plan.

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The account the fake's id tokens name.
pub const ACCOUNT: &str = "acct-test";
/// Its plan.
pub const PLAN: &str = "plus";
/// Its e-mail.
pub const EMAIL: &str = "someone@example.com";
/// `x-codex-primary-used-percent` of every answer.
pub const PRIMARY_USED: &str = "37";
/// Unix seconds the primary window resets at (2099-01-01).
pub const PRIMARY_RESET: i64 = 4_070_908_800;

/// What the backend answers the next request with.
#[derive(Debug, Clone)]
pub enum BackendReply {
    /// A streamed answer of this text.
    Text(String),
    /// 429 `usage_limit_reached`, resetting at these Unix seconds.
    UsageLimit { resets_at: i64 },
}

/// One request the backend received.
#[derive(Debug, Clone)]
pub struct BackendRequest {
    /// Names lowercased.
    pub headers: BTreeMap<String, String>,
    pub body: Value,
}

#[derive(Default)]
struct Fake {
    /// Its own address, which device codes redirect to.
    issuer: String,
    /// Authorization codes issued: their PKCE challenge and redirect address.
    codes: HashMap<String, (String, String)>,
    /// The access and refresh tokens now good.
    access: Option<String>,
    refresh: Option<String>,
    /// Every refresh token refused from now on (`refresh_token_invalidated`).
    revoked: bool,
    /// Seconds from issue to expiry of the next access tokens.
    lifetime: i64,
    issued: u64,
    refreshes: u64,
    /// Device-code polls answered so far; the second one is approved.
    polls: u64,
    /// The next backend request is refused with 401 whatever its token.
    refuse_next: bool,
    replies: VecDeque<BackendReply>,
    requests: Vec<BackendRequest>,
    /// Token requests as received (content type, body), for the exchange's checks.
    token_requests: Vec<(String, String)>,
}

type Shared = Arc<Mutex<Fake>>;

/// The fake, serving until dropped.
pub struct FakeChatGpt {
    addr: SocketAddr,
    fake: Shared,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeChatGpt {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeChatGpt {
    pub async fn start() -> FakeChatGpt {
        let fake: Shared = Arc::new(Mutex::new(Fake {
            lifetime: 3600,
            ..Fake::default()
        }));
        let app = axum::Router::new()
            .route("/oauth/authorize", get(authorize))
            .route("/oauth/token", post(token))
            .route("/api/accounts/deviceauth/usercode", post(user_code))
            .route("/api/accounts/deviceauth/token", post(device_token))
            .route("/backend-api/codex/responses", post(responses))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake");
        let addr = listener.local_addr().expect("its address");
        fake.lock().unwrap_or_else(PoisonError::into_inner).issuer = format!("http://{addr}");
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeChatGpt { addr, fake, server }
    }

    fn lock(&self) -> MutexGuard<'_, Fake> {
        self.fake.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The authorization server's address (`HEARTH_CHATGPT_ISSUER`).
    pub fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The backend's address (`base_url` of a `chatgpt` model).
    pub fn backend(&self) -> String {
        format!("http://{}/backend-api/codex", self.addr)
    }

    /// Issues tokens as a sign-in would, without one, for tests of what
    /// comes after it: the stored form, as hearth keeps it.
    pub fn sign_in_directly(&self) -> hearth_daemon::model::chatgpt::tokens::Tokens {
        let (id, access, refresh) = issue(&mut self.lock());
        hearth_daemon::model::chatgpt::tokens::Tokens::issued(&self.issuer(), id, access, refresh)
    }

    /// Access tokens issued from now on expire `secs` after issue
    /// (negative: already expired).
    pub fn set_lifetime(&self, secs: i64) {
        self.lock().lifetime = secs;
    }

    /// Every refresh from now on is refused: the sign-in was revoked.
    pub fn revoke(&self) {
        self.lock().revoked = true;
    }

    /// The next backend request is refused with 401, as when the backend
    /// no longer takes an access token before it expires.
    pub fn refuse_next_request(&self) {
        self.lock().refuse_next = true;
    }

    pub fn push(&self, reply: BackendReply) {
        self.lock().replies.push_back(reply);
    }

    pub fn requests(&self) -> Vec<BackendRequest> {
        self.lock().requests.clone()
    }

    pub fn refreshes(&self) -> u64 {
        self.lock().refreshes
    }

    /// The access token the backend takes now.
    pub fn current_access(&self) -> Option<String> {
        self.lock().access.clone()
    }

    /// The token endpoint's requests: content type and body.
    pub fn token_requests(&self) -> Vec<(String, String)> {
        self.lock().token_requests.clone()
    }
}

fn jwt(claims: Value) -> String {
    let part = |value: Value| URL_SAFE_NO_PAD.encode(value.to_string());
    format!("{}.{}.unsigned", part(json!({"alg": "none"})), part(claims))
}

/// New tokens; the old ones stop working.
fn issue(fake: &mut Fake) -> (String, String, String) {
    fake.issued += 1;
    let n = fake.issued;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64);
    let id = jwt(json!({
        "email": EMAIL,
        "https://api.openai.com/auth": {
            "chatgpt_account_id": ACCOUNT,
            "chatgpt_plan_type": PLAN,
        },
    }));
    let access = jwt(json!({"exp": now + fake.lifetime, "n": n}));
    let refresh = format!("refresh-{n}-secret");
    fake.access = Some(access.clone());
    fake.refresh = Some(refresh.clone());
    (id, access, refresh)
}

fn tokens_answer(fake: &mut Fake) -> Response {
    let (id, access, refresh) = issue(fake);
    json_reply(
        StatusCode::OK,
        json!({
            "id_token": id,
            "access_token": access,
            "refresh_token": refresh,
            "token_type": "Bearer",
            "expires_in": fake.lifetime,
        }),
    )
}

fn json_reply(status: StatusCode, value: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn refused(status: StatusCode, code: &str, message: &str) -> Response {
    json_reply(status, json!({"error": {"code": code, "message": message}}))
}

/// The browser's sign-in: approved at once, back to the redirect address.
async fn authorize(
    State(fake): State<Shared>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let param = |key: &str| params.get(key).cloned().unwrap_or_default();
    if param("client_id") != hearth_daemon::model::chatgpt::CLIENT_ID
        || param("response_type") != "code"
        || param("code_challenge_method") != "S256"
        || param("code_challenge").is_empty()
        || !param("scope")
            .split(' ')
            .any(|scope| scope == "offline_access")
    {
        return (StatusCode::BAD_REQUEST, "bad authorize request").into_response();
    }
    let code = format!("code-{}", params.len());
    fake.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .codes
        .insert(
            code.clone(),
            (param("code_challenge"), param("redirect_uri")),
        );
    let mut back = match reqwest::Url::parse(&param("redirect_uri")) {
        Ok(url) => url,
        Err(_) => return (StatusCode::BAD_REQUEST, "bad redirect_uri").into_response(),
    };
    back.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &param("state"));
    (StatusCode::FOUND, [(header::LOCATION, back.to_string())]).into_response()
}

/// The token endpoint: a code exchange (form-encoded, PKCE checked) or a
/// refresh (JSON, the refresh token rotated).
async fn token(State(fake): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let mut fake = fake.lock().unwrap_or_else(PoisonError::into_inner);
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_string();
    fake.token_requests
        .push((content_type.clone(), body.clone()));
    if content_type.starts_with("application/x-www-form-urlencoded") {
        let form: HashMap<String, String> = reqwest::Url::parse(&format!("http://f/?{body}"))
            .map(|url| url.query_pairs().into_owned().collect())
            .unwrap_or_default();
        let field = |key: &str| form.get(key).cloned().unwrap_or_default();
        let Some((challenge, redirect)) = fake.codes.remove(&field("code")) else {
            return refused(StatusCode::BAD_REQUEST, "invalid_grant", "unknown code");
        };
        let verified = URL_SAFE_NO_PAD.encode(Sha256::digest(field("code_verifier").as_bytes()));
        if field("grant_type") != "authorization_code"
            || field("client_id") != hearth_daemon::model::chatgpt::CLIENT_ID
            || verified != challenge
            || field("redirect_uri") != redirect
        {
            return refused(
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "PKCE or redirect mismatch",
            );
        }
        return tokens_answer(&mut fake);
    }
    let request: Value = serde_json::from_str(&body).unwrap_or_default();
    let given = request["refresh_token"].as_str().unwrap_or_default();
    if request["grant_type"] != "refresh_token"
        || request["client_id"] != hearth_daemon::model::chatgpt::CLIENT_ID
    {
        return refused(StatusCode::BAD_REQUEST, "invalid_request", "bad refresh");
    }
    if fake.revoked {
        return refused(
            StatusCode::UNAUTHORIZED,
            "refresh_token_invalidated",
            "Your refresh token has been invalidated.",
        );
    }
    if fake.refresh.as_deref() != Some(given) {
        return refused(
            StatusCode::UNAUTHORIZED,
            "refresh_token_reused",
            "Your refresh token has already been used.",
        );
    }
    fake.refreshes += 1;
    tokens_answer(&mut fake)
}

async fn user_code(body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or_default();
    if request["client_id"] != hearth_daemon::model::chatgpt::CLIENT_ID {
        return refused(StatusCode::BAD_REQUEST, "invalid_client", "unknown client");
    }
    json_reply(
        StatusCode::OK,
        json!({
            "device_auth_id": "device-1",
            "user_code": "WXYZ-2345",
            "interval": "1",
        }),
    )
}

/// Pending (403) on the first poll; on the second the person has entered
/// the code, and the server hands over a code with its PKCE pair.
async fn device_token(State(fake): State<Shared>, body: String) -> Response {
    let request: Value = serde_json::from_str(&body).unwrap_or_default();
    if request["device_auth_id"] != "device-1" || request["user_code"] != "WXYZ-2345" {
        return refused(StatusCode::BAD_REQUEST, "invalid_request", "unknown device");
    }
    let mut fake = fake.lock().unwrap_or_else(PoisonError::into_inner);
    fake.polls += 1;
    if fake.polls < 2 {
        return refused(
            StatusCode::FORBIDDEN,
            "deviceauth_authorization_pending",
            "pending",
        );
    }
    let verifier = "device-verifier-0123456789-0123456789-0123456789".to_string();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    // The code's redirect address is the server's own, as the real one's is.
    let redirect = format!("{}/deviceauth/callback", fake.issuer);
    fake.codes
        .insert("device-code".to_string(), (challenge.clone(), redirect));
    json_reply(
        StatusCode::OK,
        json!({
            "authorization_code": "device-code",
            "code_challenge": challenge,
            "code_verifier": verifier,
        }),
    )
}

/// The Codex backend's Responses endpoint.
async fn responses(State(fake): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let mut fake = fake.lock().unwrap_or_else(PoisonError::into_inner);
    let recorded = BackendRequest {
        headers: headers
            .iter()
            .map(|(name, value)| {
                (
                    name.as_str().to_string(),
                    value.to_str().unwrap_or_default().to_string(),
                )
            })
            .collect(),
        body: serde_json::from_str(&body).unwrap_or(Value::String(body.clone())),
    };
    fake.requests.push(recorded.clone());
    let bearer = recorded
        .headers
        .get("authorization")
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_string);
    let refuse = std::mem::take(&mut fake.refuse_next);
    if refuse || bearer.is_none() || bearer != fake.access {
        return refused(
            StatusCode::UNAUTHORIZED,
            "token_expired",
            "Provided authentication token is expired. Please try signing in again.",
        );
    }
    let limits = [
        ("x-codex-primary-used-percent", PRIMARY_USED.to_string()),
        ("x-codex-primary-window-minutes", "300".to_string()),
        ("x-codex-primary-reset-at", PRIMARY_RESET.to_string()),
        ("x-codex-secondary-used-percent", "12".to_string()),
        ("x-codex-secondary-window-minutes", "10080".to_string()),
    ];
    let mut response = match fake.replies.pop_front() {
        Some(BackendReply::UsageLimit { resets_at }) => json_reply(
            StatusCode::TOO_MANY_REQUESTS,
            json!({"error": {
                "type": "usage_limit_reached",
                "message": "The usage limit has been reached",
                "plan_type": PLAN,
                "resets_at": resets_at,
            }}),
        ),
        Some(BackendReply::Text(text)) => stream(&text),
        None => stream("(the fake backend had no reply scripted)"),
    };
    for (name, value) in limits {
        if let Ok(value) = value.parse() {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// An answer of `text` as the backend streams it.
fn stream(text: &str) -> Response {
    let events = [
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": text}),
        json!({"type": "response.output_item.done", "item": {
            "type": "message", "id": "msg_1", "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }}),
        json!({"type": "response.completed", "response": {
            "id": "resp_1", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]}],
            "usage": {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1000},
                "output_tokens": 20, "total_tokens": 1220},
        }}),
    ];
    let body: String = events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap_or("")
            )
        })
        .collect();
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .body(Body::from(body))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}
