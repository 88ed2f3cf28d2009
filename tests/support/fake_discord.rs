//! A fake Discord for end-to-end tests of the Discord bridge: the REST API
//! and the Gateway, as Discord's developer documentation describes them.
//!
//! [`FakeDiscord::start`] binds two listeners on `127.0.0.1:0`:
//!
//! - REST (`/api/v10`): `GET /gateway/bot` (the Gateway's address here),
//!   `POST /users/@me/channels` (a person's direct-message channel),
//!   `POST /channels/{id}/messages` (JSON, or multipart with a file),
//!   `GET /channels/{id}/messages` (the channel's history read back, see
//!   `fake_discord/messages.rs`),
//!   `POST /channels/{id}/typing`, `POST /interactions/{id}/{token}/callback`;
//!   every call must carry `Authorization: Bot <TOKEN>` (else 401, as
//!   Discord answers). A message send can be answered 429 with Discord's
//!   rate-limit headers and `retry_after` ([`FakeDiscord::rate_limit_next`]),
//!   refused with a JSON error ([`FakeDiscord::refuse_next`]), or held
//!   unanswered ([`FakeDiscord::hold_sends`]). Files people sent are served
//!   under `/attachments/`.
//! - The Gateway (WebSocket, JSON): Hello with `heartbeat_interval`, then
//!   Identify (the token checked: a wrong one closes with 4004) answered by
//!   the Ready dispatch, heartbeats answered by ACKs, Resume of a session
//!   no connection has answered by the Resumed dispatch (any other by
//!   Invalid Session, so the client identifies again). Dispatches carry
//!   increasing sequence numbers. [`FakeDiscord::drop_connections`] closes
//!   every connection as Discord does when it asks for a reconnect.
//!
//! A test plays the people who write ([`FakeDiscord::write`],
//! [`FakeDiscord::write_in`], [`FakeDiscord::send_file`]) and press buttons
//! ([`FakeDiscord::press`]): each becomes a `MESSAGE_CREATE` or
//! `INTERACTION_CREATE` dispatch to the newest identified session. Unlike
//! Discord, which drops what happens while a bot is offline, one written
//! before any session is identified waits for one, so a test need not race
//! the bridge's start; a test of a restart waits for the new session first.
//! Every message is also kept in its channel's history, as Discord keeps
//! it; [`FakeDiscord::write_while_down`] and
//! [`FakeDiscord::write_in_while_down`] write one there only, as Discord
//! does for a bot that is offline: only reading the history finds it.

mod gateway;
mod messages;

use crate::watched::Watched;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use gateway::gateway_connection;
pub use messages::ReadBack;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The bot token the fake accepts.
pub const TOKEN: &str = "fake-discord-token";

/// The `secrets.env` line [`FakeDiscord::discord_table`] names.
pub fn secrets() -> String {
    format!("HEARTH_TEST_DISCORD_TOKEN={TOKEN}\n")
}

/// The bot's own user and its application.
pub const BOT_ID: u64 = 900_000_000_000_000_001;
pub const APPLICATION_ID: u64 = 900_000_000_000_000_002;

/// The server the bot is in, its channel the tests allowlist, and another.
pub const GUILD_ID: u64 = 500_000_000_000_000_001;
pub const CHANNEL_ID: u64 = 500_000_000_000_000_002;
pub const OTHER_CHANNEL_ID: u64 = 500_000_000_000_000_003;

/// Someone on Discord.
#[derive(Clone, Copy, Debug)]
pub struct Person {
    pub id: u64,
    pub name: &'static str,
}

/// The owner the tests' bridges allow.
pub const OWNER: Person = Person {
    id: 111_111_111_111_111_111,
    name: "ada",
};

/// Someone a test allows beside the owner, who is not the owner.
pub const FRIEND: Person = Person {
    id: 222_222_222_222_222_222,
    name: "bob",
};

/// Someone the tests' bridges do not allow.
pub const STRANGER: Person = Person {
    id: 666_666_666_666_666_666,
    name: "mallory",
};

/// One message the bot sent, as Discord took it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Sent {
    pub channel: u64,
    pub content: String,
    /// The `custom_id`s of its buttons, in order.
    pub buttons: Vec<String>,
    /// The names of its files.
    pub files: Vec<String>,
    /// Its `allowed_mentions`, as sent.
    pub allowed_mentions: Value,
    pub id: u64,
}

/// One interaction callback.
#[derive(Clone, Debug, PartialEq)]
pub struct Callback {
    pub interaction: u64,
    /// The response's `type` (4: a message, 7: the message updated).
    pub kind: u64,
    pub content: String,
    /// Whether only the one who pressed sees it.
    pub ephemeral: bool,
    /// Whether the buttons were taken away.
    pub buttons_removed: bool,
}

/// What the bridge did so far.
#[derive(Clone, Debug, Default)]
pub struct Calls {
    /// The messages taken, in order: what people saw.
    pub sent: Vec<Sent>,
    /// Sends held by [`FakeDiscord::hold_sends`] now.
    pub held: usize,
    /// Channels "typing…" was shown in, in order.
    pub typing: Vec<u64>,
    /// The users whose direct-message channels were asked for.
    pub dms_opened: Vec<u64>,
    pub callbacks: Vec<Callback>,
    /// Identify payloads accepted, in order.
    pub identifies: Vec<Value>,
    /// Resumes asked for.
    pub resumes: usize,
    /// Heartbeats answered with an ACK.
    pub heartbeats: usize,
    /// Sessions identified and still connected.
    pub sessions: usize,
    /// When each 429 was answered, and when the send after it arrived.
    pub rate_limited_at: Vec<Instant>,
    pub sends_at: Vec<Instant>,
    /// REST calls with a wrong or missing token.
    pub unauthorized: usize,
    /// Attachments fetched, by name.
    pub fetched: Vec<String>,
    /// Channel histories read, in order.
    pub read_back: Vec<ReadBack>,
}

impl Calls {
    /// The texts sent in `channel`, in order.
    pub fn sent_in(&self, channel: u64) -> Vec<String> {
        self.sent
            .iter()
            .filter(|sent| sent.channel == channel)
            .map(|sent| sent.content.clone())
            .collect()
    }
}

/// How the next message send is answered instead of taken.
enum Trouble {
    RateLimited {
        retry_after: f64,
    },
    Refused {
        status: u16,
        code: u64,
        message: String,
    },
}

#[derive(Default)]
struct FakeState {
    calls: Calls,
    /// Dispatches (event name and data) waiting for a session.
    waiting: VecDeque<(String, Value)>,
    /// The identified sessions: their number and where their dispatches go.
    sessions: Vec<(u64, mpsc::UnboundedSender<(String, Value)>)>,
    next_session: u64,
    next_id: u64,
    trouble: VecDeque<Trouble>,
    hold: bool,
    /// How often every Gateway connection was dropped.
    drops: u64,
    /// Direct-message channel of each user.
    dms: BTreeMap<u64, u64>,
    /// Files people sent, by name.
    files: BTreeMap<String, Vec<u8>>,
    /// Each channel's messages, oldest first, as read back.
    history: BTreeMap<u64, Vec<Value>>,
}

struct Shared {
    /// The state, bumped on every change for [`FakeDiscord::wait_until`] and held
    /// sends.
    watched: Watched<FakeState>,
    rest: SocketAddr,
    gateway: SocketAddr,
}

impl std::ops::Deref for Shared {
    type Target = Watched<FakeState>;

    fn deref(&self) -> &Watched<FakeState> {
        &self.watched
    }
}

impl Shared {
    fn next_id(&self) -> u64 {
        let mut state = self.lock();
        state.next_id += 1;
        800_000_000_000_000_000 + state.next_id
    }

    fn dm_channel(&self, user: u64) -> u64 {
        let next = self.next_id();
        *self.lock().dms.entry(user).or_insert(next)
    }

    /// Sends a dispatch to the newest session, or keeps it for the next.
    fn dispatch(&self, event: &str, data: Value) {
        let mut state = self.lock();
        let item = (event.to_string(), data);
        match state.sessions.last() {
            Some((_, to)) => {
                if let Err(mpsc::error::SendError(item)) = to.send(item) {
                    state.waiting.push_front(item);
                }
            }
            None => state.waiting.push_back(item),
        }
        drop(state);
        self.bump();
    }
}

/// The fake; stops when dropped.
pub struct FakeDiscord {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeDiscord {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn user_json(id: u64, name: &str, bot: bool) -> Value {
    json!({
        "id": id.to_string(),
        "username": name,
        "global_name": name,
        "discriminator": "0",
        "avatar": null,
        "bot": bot,
    })
}

fn message_json(
    id: u64,
    channel: u64,
    guild: Option<u64>,
    author: Value,
    content: &str,
    attachments: Vec<Value>,
    flags: u64,
) -> Value {
    let mut message = json!({
        "id": id.to_string(),
        "channel_id": channel.to_string(),
        "author": author,
        "content": content,
        "timestamp": "2026-01-01T00:00:00.000000+00:00",
        "edited_timestamp": null,
        "tts": false,
        "mention_everyone": false,
        "mentions": [],
        "mention_roles": [],
        "attachments": attachments,
        "embeds": [],
        "pinned": false,
        "type": 0,
        "flags": flags,
        "components": [],
    });
    if let Some(guild) = guild {
        message["guild_id"] = json!(guild.to_string());
    }
    message
}

impl FakeDiscord {
    pub async fn start() -> FakeDiscord {
        let rest_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gateway_listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let shared = Arc::new(Shared {
            watched: Watched::new(FakeState::default()),
            rest: rest_listener.local_addr().unwrap(),
            gateway: gateway_listener.local_addr().unwrap(),
        });
        let router = Router::new()
            .route("/api/v10/gateway/bot", get(gateway_bot))
            .route("/api/v10/users/@me/channels", post(open_dm))
            .route(
                "/api/v10/channels/{channel}/messages",
                post(messages::create_message).get(messages::channel_messages),
            )
            .route("/api/v10/channels/{channel}/typing", post(typing))
            .route(
                "/api/v10/interactions/{id}/{token}/callback",
                post(interaction_callback),
            )
            .route("/attachments/{name}", get(attachment))
            .with_state(shared.clone());
        let rest = tokio::spawn(async move {
            let _ = axum::serve(rest_listener, router).await;
        });
        let gateway_shared = shared.clone();
        let gateway = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = gateway_listener.accept().await else {
                    return;
                };
                tokio::spawn(gateway_connection(gateway_shared.clone(), stream));
            }
        });
        FakeDiscord {
            shared,
            tasks: vec![rest, gateway],
        }
    }

    /// The REST API's address, for `api_base`.
    pub fn api_base(&self) -> String {
        format!("http://{}", self.shared.rest)
    }

    /// A `[discord]` table allowing the owner, its token under the name
    /// [`secrets`] gives; `extra` lines go inside the table.
    pub fn discord_table(&self, extra: &str) -> String {
        format!(
            "[discord]\ntoken_env = \"HEARTH_TEST_DISCORD_TOKEN\"\nallow = [{}]\napi_base = \"{}\"\n{extra}\n",
            OWNER.id,
            self.api_base()
        )
    }

    /// `person`'s direct-message channel with the bot.
    pub fn dm_of(&self, person: &Person) -> u64 {
        self.shared.dm_channel(person.id)
    }

    /// `person` writes `text` to the bot in a direct message; the
    /// message's id.
    pub fn write(&self, person: &Person, text: &str) -> u64 {
        let channel = self.dm_of(person);
        self.post(person, channel, None, text, Vec::new(), 0)
    }

    /// `person` writes `text` in a server channel.
    pub fn write_in(&self, person: &Person, channel: u64, text: &str) -> u64 {
        self.post(person, channel, Some(GUILD_ID), text, Vec::new(), 0)
    }

    /// `person` writes `text` to the bot in a direct message while the bot
    /// is offline: kept in the channel's history, sent on no Gateway.
    pub fn write_while_down(&self, person: &Person, text: &str) -> u64 {
        let channel = self.dm_of(person);
        self.write_unseen(person, channel, None, text)
    }

    /// `person` writes `text` in a server channel while the bot is offline.
    pub fn write_in_while_down(&self, person: &Person, channel: u64, text: &str) -> u64 {
        self.write_unseen(person, channel, Some(GUILD_ID), text)
    }

    /// A message kept in the history and dispatched to no session.
    fn write_unseen(&self, person: &Person, channel: u64, guild: Option<u64>, text: &str) -> u64 {
        let id = self.shared.next_id();
        let author = user_json(person.id, person.name, false);
        let message = message_json(id, channel, guild, author, text, Vec::new(), 0);
        messages::keep(&self.shared, &message);
        id
    }

    /// `person` sends a file in a direct message (a voice message when
    /// `voice`, as Discord's apps send them: Ogg Opus with a duration).
    pub fn send_file(
        &self,
        person: &Person,
        content_type: &str,
        name: &str,
        bytes: &[u8],
        voice: bool,
        text: &str,
    ) -> u64 {
        self.shared
            .lock()
            .files
            .insert(name.to_string(), bytes.to_vec());
        let mut attachment = json!({
            "id": self.shared.next_id().to_string(),
            "filename": name,
            "content_type": content_type,
            "size": bytes.len(),
            "url": format!("http://{}/attachments/{name}", self.shared.rest),
            "proxy_url": format!("http://{}/attachments/{name}", self.shared.rest),
        });
        if voice {
            attachment["duration_secs"] = json!(4.2);
            attachment["waveform"] = json!("AAAA");
        }
        let channel = self.dm_of(person);
        let flags = if voice { 1 << 13 } else { 0 };
        self.post(person, channel, None, text, vec![attachment], flags)
    }

    fn post(
        &self,
        person: &Person,
        channel: u64,
        guild: Option<u64>,
        text: &str,
        attachments: Vec<Value>,
        flags: u64,
    ) -> u64 {
        let id = self.shared.next_id();
        let author = user_json(person.id, person.name, false);
        let message = message_json(id, channel, guild, author, text, attachments, flags);
        messages::keep(&self.shared, &message);
        self.shared.dispatch("MESSAGE_CREATE", message);
        id
    }

    /// `person` presses the button `custom_id` under the bot's message
    /// `sent`; the interaction's id.
    pub fn press(&self, person: &Person, sent: &Sent, custom_id: &str) -> u64 {
        let id = self.shared.next_id();
        let message = message_json(
            sent.id,
            sent.channel,
            None,
            user_json(BOT_ID, "hearth", true),
            &sent.content,
            Vec::new(),
            0,
        );
        let interaction = json!({
            "id": id.to_string(),
            "application_id": APPLICATION_ID.to_string(),
            "type": 3,
            "data": {"custom_id": custom_id, "component_type": 2},
            "channel": {"id": sent.channel.to_string(), "type": 1},
            "channel_id": sent.channel.to_string(),
            "user": user_json(person.id, person.name, false),
            "token": format!("interaction-token-{id}"),
            "version": 1,
            "message": message,
            "app_permissions": "0",
            "locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"1": person.id.to_string()},
            "context": 1,
            "attachment_size_limit": 10_485_760,
        });
        self.shared.dispatch("INTERACTION_CREATE", interaction);
        id
    }

    /// The next message send is answered 429, asking to wait `retry_after`
    /// seconds.
    pub fn rate_limit_next(&self, retry_after: f64) {
        self.shared
            .lock()
            .trouble
            .push_back(Trouble::RateLimited { retry_after });
    }

    /// The next message send is refused with `status` and Discord's JSON
    /// error `code` and `message`.
    pub fn refuse_next(&self, status: u16, code: u64, message: &str) {
        self.shared.lock().trouble.push_back(Trouble::Refused {
            status,
            code,
            message: message.to_string(),
        });
    }

    /// While on, message sends wait unanswered (and are not taken); turned
    /// off, the waiting ones are answered 503 and never shown.
    pub fn hold_sends(&self, hold: bool) {
        self.shared.lock().hold = hold;
        self.shared.bump();
    }

    /// Closes every Gateway connection with 4000 (unknown error): the
    /// client connects again and resumes its session.
    pub fn drop_connections(&self) {
        self.shared.lock().drops += 1;
        self.shared.bump();
    }

    pub fn calls(&self) -> Calls {
        self.shared.lock().calls.clone()
    }

    /// Waits until `done` holds for the calls, and returns them.
    pub async fn wait_until(&self, what: &str, done: impl Fn(&Calls) -> bool) -> Calls {
        let calls = |state: &FakeState| state.calls.clone();
        self.shared
            .wait_until("fake Discord", what, calls, done)
            .await
    }
}

/// Whether a REST call carries the bot's token; counts the ones that do not.
fn authorized(shared: &Shared, headers: &HeaderMap) -> bool {
    let given = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok());
    let ok = given == Some(&format!("Bot {TOKEN}"));
    if !ok {
        shared.lock().calls.unauthorized += 1;
        shared.bump();
    }
    ok
}

/// A JSON answer, as Discord gives every one.
fn json_response(status: StatusCode, body: &Value) -> Response {
    let json = [(axum::http::header::CONTENT_TYPE, "application/json")];
    (status, json, body.to_string()).into_response()
}

fn unauthorized() -> Response {
    let body = json!({"message": "401: Unauthorized", "code": 0});
    json_response(StatusCode::UNAUTHORIZED, &body)
}

async fn gateway_bot(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !authorized(&shared, &headers) {
        return unauthorized();
    }
    let info = json!({
        "url": format!("ws://{}", shared.gateway),
        "shards": 1,
        "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0, "max_concurrency": 1},
    });
    json_response(StatusCode::OK, &info)
}

async fn open_dm(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if !authorized(&shared, &headers) {
        return unauthorized();
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let Some(user) = body["recipient_id"]
        .as_str()
        .and_then(|id| id.parse::<u64>().ok())
        .or_else(|| body["recipient_id"].as_u64())
    else {
        let error = json!({"message": "Invalid Form Body", "code": 50035});
        return json_response(StatusCode::BAD_REQUEST, &error);
    };
    let channel = shared.dm_channel(user);
    shared.lock().calls.dms_opened.push(user);
    shared.bump();
    let channel = json!({
        "id": channel.to_string(),
        "type": 1,
        "recipients": [user_json(user, "someone", false)],
    });
    json_response(StatusCode::OK, &channel)
}

async fn typing(
    State(shared): State<Arc<Shared>>,
    Path(channel): Path<u64>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&shared, &headers) {
        return unauthorized();
    }
    shared.lock().calls.typing.push(channel);
    shared.bump();
    StatusCode::NO_CONTENT.into_response()
}

async fn interaction_callback(
    State(shared): State<Arc<Shared>>,
    Path((id, _token)): Path<(u64, String)>,
    body: Bytes,
) -> Response {
    // Interaction callbacks are authorized by the token in their path.
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let data = &body["data"];
    let callback = Callback {
        interaction: id,
        kind: body["type"].as_u64().unwrap_or_default(),
        content: data["content"].as_str().unwrap_or_default().to_string(),
        ephemeral: data["flags"].as_u64().is_some_and(|flags| flags & 64 != 0),
        buttons_removed: data["components"].as_array().is_some_and(Vec::is_empty),
    };
    shared.lock().calls.callbacks.push(callback);
    shared.bump();
    StatusCode::NO_CONTENT.into_response()
}

async fn attachment(State(shared): State<Arc<Shared>>, Path(name): Path<String>) -> Response {
    let bytes = shared.lock().files.get(&name).cloned();
    match bytes {
        Some(bytes) => {
            shared.lock().calls.fetched.push(name);
            shared.bump();
            bytes.into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}
