//! A fake Telegram Bot API for end-to-end tests of the bridge.
//!
//! [`FakeTelegram::start`] binds `127.0.0.1:0` and answers
//! `POST /bot<TOKEN>/getMe` (the bot [`BOT_USERNAME`]), `/getUpdates`,
//! `/sendMessage`, `/sendChatAction` and `/answerCallbackQuery` with the
//! Bot API's JSON envelopes. A test plays
//! the people who write to the bot ([`FakeTelegram::write`]) and press its
//! buttons ([`FakeTelegram::press`]), scripts failures of `sendMessage`
//! ([`FakeTelegram::fail_next_send`]), can hold every `sendMessage` until
//! the client goes away ([`FakeTelegram::hold_sends`]), and reads what the
//! bridge did ([`FakeTelegram::calls`], [`FakeTelegram::wait_until`]).
//! Photos people send are served by `getFile` and the file download, and
//! `sendPhoto` takes the bot's images (`files.rs`). While a webhook is set
//! ([`FakeTelegram::set_webhook`]) `getUpdates` answers 409 as Telegram
//! does, until `deleteWebhook` removes it. Two pollers of one bot overlap
//! as they do on Telegram: a `getUpdates` still waiting when another
//! arrives is answered 409 `Conflict: terminated by other getUpdates
//! request` ([`Calls::poll_conflicts`]).
//!
//! `getUpdates` behaves like Telegram's: a long poll that holds until an
//! update is queued or its `timeout` passes, and an `offset` confirms (and
//! forgets) every update before it. The HTTP is the fake model's: one
//! request per connection.

mod files;
mod html;

pub use files::photo_bytes;
pub use html::read_html;

use crate::fake_model::http::{self, RequestError};
use crate::watched::Watched;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The bot token the fake accepts.
pub const TOKEN: &str = "123456:TEST-token";

/// The bot's username, as `getMe` gives it.
pub const BOT_USERNAME: &str = "hearth_test_bot";

/// Someone who writes to the bot; their private chat has their id.
#[derive(Clone, Copy, Debug)]
pub struct Person {
    pub id: i64,
    pub first_name: &'static str,
    pub username: Option<&'static str>,
}

/// The `secrets.env` line [`FakeTelegram::telegram_table`] names: the
/// bot token.
pub fn secrets() -> String {
    format!("HEARTH_TEST_TELEGRAM_TOKEN={TOKEN}\n")
}

/// The owner the tests' bridges allow.
pub const OWNER: Person = Person {
    id: 4242,
    first_name: "Ada",
    username: Some("ada"),
};

/// Someone the tests' bridges do not allow.
pub const STRANGER: Person = Person {
    id: 999,
    first_name: "Mallory",
    username: Some("mallory"),
};

/// One `sendMessage` request.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    pub chat_id: i64,
    pub text: String,
    pub parse_mode: Option<String>,
}

/// One `getUpdates` request.
#[derive(Clone, Debug, PartialEq)]
pub struct Poll {
    pub offset: Option<i64>,
    pub timeout: Option<u64>,
    pub allowed_updates: Value,
}

/// How the next `sendMessage` fails, as Telegram says it.
#[derive(Clone, Copy, Debug)]
pub enum Failure {
    /// 429 with `parameters.retry_after`.
    TooManyRequests { retry_after: u64 },
    /// 400 "Bad Request: can't parse entities: …".
    CantParseEntities,
    /// 403 "Forbidden: bot was blocked by the user".
    Blocked,
    /// 400 "Bad Request: chat not found".
    ChatNotFound,
}

impl Failure {
    fn answer(self) -> (u16, Value) {
        let (code, description, parameters) = match self {
            Failure::TooManyRequests { retry_after } => (
                429,
                format!("Too Many Requests: retry after {retry_after}"),
                Some(json!({"retry_after": retry_after})),
            ),
            Failure::CantParseEntities => (
                400,
                "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0"
                    .to_string(),
                None,
            ),
            Failure::Blocked => (
                403,
                "Forbidden: bot was blocked by the user".to_string(),
                None,
            ),
            Failure::ChatNotFound => (400, "Bad Request: chat not found".to_string(), None),
        };
        let mut body = json!({"ok": false, "error_code": code, "description": description});
        if let Some(parameters) = parameters {
            body["parameters"] = parameters;
        }
        (code, body)
    }
}

/// What the bridge did so far.
#[derive(Clone, Debug, Default)]
pub struct Calls {
    pub polls: Vec<Poll>,
    /// Every `sendMessage` answered, successful or not, in order.
    pub attempts: Vec<Sent>,
    /// The `sendMessage` requests answered with success: what people saw.
    pub sent: Vec<Sent>,
    /// `sendChatAction` requests: chat and action.
    pub actions: Vec<(i64, String)>,
    /// `sendMessage` requests held by [`FakeTelegram::hold_sends`] now.
    pub held: Vec<Sent>,
    /// The `reply_markup` of every successful `sendMessage` that had one:
    /// chat, text and markup.
    pub keyboards: Vec<(i64, String, Value)>,
    /// `answerCallbackQuery` requests: the press's id and the text shown.
    pub answered: Vec<(String, String)>,
    /// Files downloaded, by their `file_path`.
    pub downloads: Vec<String>,
    /// `sendPhoto` requests: chat, the photo's media type and bytes.
    pub photos: Vec<(i64, String, Vec<u8>)>,
    /// `sendDocument` requests: chat, the file's media type and bytes.
    pub documents: Vec<(i64, String, Vec<u8>)>,
    /// `getUpdates` requests refused because a webhook was set.
    pub webhook_conflicts: usize,
    /// Long polls ended with 409 because another `getUpdates` arrived.
    pub poll_conflicts: usize,
    /// The bodies of `deleteWebhook` requests.
    pub webhook_deletions: Vec<Value>,
    /// Every Bot API call, in order: the method and its parameters as
    /// sent (a JSON body; for `sendPhoto`'s multipart form, each field's
    /// text, and for the file its part's `content_type` and `bytes`), for
    /// the conformance tests.
    pub requests: Vec<(String, Value)>,
}

impl Calls {
    /// The texts a chat received, in order.
    pub fn sent_to(&self, chat_id: i64) -> Vec<String> {
        self.sent
            .iter()
            .filter(|sent| sent.chat_id == chat_id)
            .map(|sent| sent.text.clone())
            .collect()
    }
}

/// The fake API, serving until dropped.
pub struct FakeTelegram {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept_loop: JoinHandle<()>,
}

struct Shared {
    /// The state, bumped on every change for [`FakeTelegram::wait_until`] and held
    /// sends.
    watched: Watched<State>,
    /// Wakes long polls when an update is queued.
    queued: Notify,
    /// Wakes long polls when another `getUpdates` arrives.
    superseded: Notify,
}

impl std::ops::Deref for Shared {
    type Target = Watched<State>;

    fn deref(&self) -> &Watched<State> {
        &self.watched
    }
}

#[derive(Default)]
struct State {
    calls: Calls,
    /// Updates not yet confirmed, oldest first.
    updates: Vec<Value>,
    next_update_id: i64,
    next_message_id: i64,
    failures: VecDeque<Failure>,
    hold: bool,
    /// Whether the bot has a webhook set, which makes `getUpdates` fail.
    webhook: bool,
    /// How many `getUpdates` have arrived: the latest one is the poller
    /// Telegram answers, any earlier one still waiting is terminated.
    polls_begun: u64,
    /// The files people sent, by file id, for `getFile` and downloads.
    files: std::collections::BTreeMap<String, Vec<u8>>,
}

impl FakeTelegram {
    /// Binds `127.0.0.1:0` and serves in the background.
    pub async fn start() -> FakeTelegram {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("fake telegram: cannot bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
        let shared = Arc::new(Shared {
            watched: Watched::new(State {
                next_update_id: 500_000,
                next_message_id: 1,
                ..State::default()
            }),
            queued: Notify::new(),
            superseded: Notify::new(),
        });
        let accept_loop = tokio::spawn(accept_loop(listener, shared.clone()));
        FakeTelegram {
            addr,
            shared,
            accept_loop,
        }
    }

    /// The `api_base` a bridge is configured with.
    pub fn api_base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A `[telegram]` table for this fake that allows [`OWNER`]; its
    /// secret is [`secrets`].
    pub fn telegram_table(&self) -> String {
        format!(
            "[telegram]\ntoken_env = \"HEARTH_TEST_TELEGRAM_TOKEN\"\nallow = [{}]\napi_base = \"{}\"\n",
            OWNER.id,
            self.api_base()
        )
    }

    /// `from` writes `text` to the bot in their private chat; returns the
    /// message id.
    pub fn write(&self, from: &Person, text: &str) -> i64 {
        self.queue_message(from, json!({"text": text}))
    }

    /// `from` sends a photo, with a caption or without.
    pub fn send_photo(&self, from: &Person, caption: Option<&str>) -> i64 {
        self.send_photo_bytes(from, &photo_bytes(), caption)
    }

    /// `from` sends a photo whose largest size has these bytes (the file
    /// `large`, which `getFile` and the download then serve).
    pub fn send_photo_bytes(&self, from: &Person, bytes: &[u8], caption: Option<&str>) -> i64 {
        self.shared
            .lock()
            .files
            .insert("large".to_string(), bytes.to_vec());
        let mut fields = json!({"photo": [
            {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90},
            {"file_id": "large", "file_unique_id": "l", "width": 1280, "height": 1280}
        ]});
        if let Some(caption) = caption {
            fields["caption"] = json!(caption);
        }
        self.queue_message(from, fields)
    }

    /// `from` sends a file under `field` (`voice`, `audio`, `video_note`,
    /// `document`) described by `described` (which names its `file_id`),
    /// with these bytes for `getFile` and the download.
    pub fn send_file(
        &self,
        from: &Person,
        field: &str,
        described: Value,
        bytes: &[u8],
        caption: Option<&str>,
    ) -> i64 {
        let file_id = described["file_id"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        self.shared.lock().files.insert(file_id, bytes.to_vec());
        let mut fields = json!({ field: described });
        if let Some(caption) = caption {
            fields["caption"] = json!(caption);
        }
        self.queue_message(from, fields)
    }

    fn queue_message(&self, from: &Person, fields: Value) -> i64 {
        let message_id = {
            let mut state = self.shared.lock();
            let update_id = state.next_update_id;
            let message_id = state.next_message_id;
            state.next_update_id += 1;
            state.next_message_id += 1;
            let user = json!({"id": from.id, "is_bot": false, "first_name": from.first_name, "username": from.username});
            let mut message = json!({
                "message_id": message_id,
                "from": user,
                "chat": {"id": from.id, "type": "private", "first_name": from.first_name},
                "date": 1_767_225_600 + message_id,
            });
            for (key, value) in fields.as_object().into_iter().flatten() {
                message[key] = value.clone();
            }
            state
                .updates
                .push(json!({"update_id": update_id, "message": message}));
            message_id
        };
        self.shared.queued.notify_waiters();
        self.shared.bump();
        message_id
    }

    /// `from` presses a button whose `callback_data` is `data`, under a
    /// message in their private chat; returns the press's id.
    pub fn press(&self, from: &Person, data: &str) -> String {
        let query_id = {
            let mut state = self.shared.lock();
            let update_id = state.next_update_id;
            state.next_update_id += 1;
            let query_id = format!("press-{update_id}");
            let user = json!({"id": from.id, "is_bot": false, "first_name": from.first_name, "username": from.username});
            let query = json!({
                "id": query_id,
                "from": user,
                "chat_instance": "fake",
                "message": {
                    "message_id": 1,
                    "date": 1_767_225_600,
                    "chat": {"id": from.id, "type": "private"},
                    "text": "the request",
                },
                "data": data,
            });
            state
                .updates
                .push(json!({"update_id": update_id, "callback_query": query}));
            query_id
        };
        self.shared.queued.notify_waiters();
        self.shared.bump();
        query_id
    }

    /// The next `sendMessage` (after any failures queued before) fails so.
    pub fn fail_next_send(&self, failure: Failure) {
        self.shared.lock().failures.push_back(failure);
    }

    /// While on, every `sendMessage` is held unanswered (and shown in
    /// [`Calls::held`]); a held request whose client goes away is dropped
    /// unrecorded, and turning this off answers the rest.
    pub fn hold_sends(&self, hold: bool) {
        self.shared.lock().hold = hold;
        self.shared.bump();
    }

    /// Sets (or removes) the bot's webhook.
    pub fn set_webhook(&self, set: bool) {
        self.shared.lock().webhook = set;
        self.shared.bump();
    }

    /// What the bridge did so far.
    pub fn calls(&self) -> Calls {
        self.shared.lock().calls.clone()
    }

    /// Waits until `done` holds for the calls so far and returns them.
    ///
    /// # Panics
    /// After [`crate::harness::DEADLINE`], naming `what` and showing the calls.
    pub async fn wait_until(&self, what: &str, done: impl Fn(&Calls) -> bool) -> Calls {
        let calls = |state: &State| state.calls.clone();
        self.shared
            .wait_until("fake telegram", what, calls, done)
            .await
    }
}

impl Drop for FakeTelegram {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    http::accept_each(listener, |mut stream| {
        let shared = shared.clone();
        async move {
            // A failed write means the client left: nothing to do.
            let _ = serve(&mut stream, &shared).await;
        }
    })
    .await;
}

async fn serve(stream: &mut TcpStream, shared: &Shared) -> io::Result<()> {
    let request = match http::read_request(stream).await {
        Ok(request) => request,
        Err(RequestError::Disconnected) => return Ok(()),
        Err(RequestError::Malformed(message)) => {
            return http::write_json(stream, 400, &refusal(400, &message)).await
        }
    };
    if let Some(served) = files::download(stream, shared, &request.path).await {
        return served;
    }
    let prefix = format!("/bot{TOKEN}/");
    let Some(method) = request.path.strip_prefix(&prefix) else {
        return http::write_json(stream, 401, &refusal(401, "Unauthorized")).await;
    };
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    if method != "sendPhoto" && method != "sendDocument" {
        let call = (method.to_string(), body.clone());
        shared.lock().calls.requests.push(call);
    }
    match method {
        "getMe" => {
            let bot = json!({"id": 123456, "is_bot": true, "first_name": "hearth", "username": BOT_USERNAME, "can_join_groups": true});
            http::write_json(stream, 200, &json!({"ok": true, "result": bot})).await
        }
        "getUpdates" => get_updates(stream, shared, &body).await,
        "sendMessage" => send_message(stream, shared, &body).await,
        "getFile" => files::get_file(stream, shared, &body).await,
        "sendPhoto" => files::send_photo(stream, shared, &request, "photo").await,
        "sendDocument" => files::send_photo(stream, shared, &request, "document").await,
        "answerCallbackQuery" => {
            let id = body["callback_query_id"].as_str().unwrap_or_default();
            let text = body["text"].as_str().unwrap_or_default();
            let answered = (id.to_string(), text.to_string());
            shared.lock().calls.answered.push(answered);
            shared.bump();
            http::write_json(stream, 200, &json!({"ok": true, "result": true})).await
        }
        "deleteWebhook" => {
            {
                let mut state = shared.lock();
                state.webhook = false;
                state.calls.webhook_deletions.push(body.clone());
            }
            shared.bump();
            http::write_json(stream, 200, &json!({"ok": true, "result": true})).await
        }
        "sendChatAction" => {
            let chat_id = body["chat_id"].as_i64().unwrap_or_default();
            let action = body["action"].as_str().unwrap_or_default().to_string();
            shared.lock().calls.actions.push((chat_id, action));
            shared.bump();
            http::write_json(stream, 200, &json!({"ok": true, "result": true})).await
        }
        _ => http::write_json(stream, 404, &refusal(404, "Not Found")).await,
    }
}

fn refusal(code: u16, description: &str) -> Value {
    json!({"ok": false, "error_code": code, "description": description})
}

async fn get_updates(stream: &mut TcpStream, shared: &Shared, body: &Value) -> io::Result<()> {
    let offset = body["offset"].as_i64();
    let timeout = body["timeout"].as_u64();
    if shared.lock().webhook {
        shared.lock().calls.webhook_conflicts += 1;
        shared.bump();
        let description = "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first";
        return http::write_json(stream, 409, &refusal(409, description)).await;
    }
    let mine = {
        let mut state = shared.lock();
        state.polls_begun += 1;
        state.polls_begun
    };
    shared.superseded.notify_waiters();
    {
        let mut state = shared.lock();
        state.calls.polls.push(Poll {
            offset,
            timeout,
            allowed_updates: body["allowed_updates"].clone(),
        });
        if let Some(offset) = offset {
            // Confirmed: Telegram forgets them.
            state
                .updates
                .retain(|update| update["update_id"].as_i64().unwrap_or_default() >= offset);
        }
    }
    shared.bump();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(timeout.unwrap_or(0));
    loop {
        let queued = shared.queued.notified();
        tokio::pin!(queued);
        queued.as_mut().enable();
        let superseded = shared.superseded.notified();
        tokio::pin!(superseded);
        superseded.as_mut().enable();
        if shared.lock().polls_begun != mine {
            shared.lock().calls.poll_conflicts += 1;
            shared.bump();
            let description = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";
            return http::write_json(stream, 409, &refusal(409, description)).await;
        }
        let pending = shared.lock().updates.clone();
        if !pending.is_empty() {
            return http::write_json(stream, 200, &json!({"ok": true, "result": pending})).await;
        }
        tokio::select! {
            () = &mut queued => {}
            () = &mut superseded => {}
            () = tokio::time::sleep_until(deadline) => {
                return http::write_json(stream, 200, &json!({"ok": true, "result": []})).await;
            }
            () = http::client_gone(stream) => return Ok(()),
        }
    }
}

async fn send_message(stream: &mut TcpStream, shared: &Shared, body: &Value) -> io::Result<()> {
    let sent = Sent {
        chat_id: body["chat_id"].as_i64().unwrap_or_default(),
        text: body["text"].as_str().unwrap_or_default().to_string(),
        parse_mode: body["parse_mode"].as_str().map(str::to_string),
    };
    if !hold(stream, shared, &sent).await {
        return Ok(());
    }
    let visible = match sent.parse_mode.as_deref() {
        Some("HTML") => read_html(&sent.text),
        None => Ok(sent.text.clone()),
        Some(other) => Err(format!("unsupported parse_mode \"{other}\"")),
    };
    let (status, answer) = {
        let mut state = shared.lock();
        state.calls.attempts.push(sent.clone());
        let failure = state.failures.pop_front();
        match (failure, visible) {
            (Some(failure), _) => failure.answer(),
            (None, Err(why)) => {
                let description = format!("Bad Request: can't parse entities: {why}");
                (400, refusal(400, &description))
            }
            (None, Ok(visible)) if visible.trim().is_empty() => {
                (400, refusal(400, "Bad Request: message text is empty"))
            }
            (None, Ok(visible)) if visible.encode_utf16().count() > 4096 => {
                (400, refusal(400, "Bad Request: message is too long"))
            }
            (None, Ok(visible)) => {
                state.calls.sent.push(sent.clone());
                if !body["reply_markup"].is_null() {
                    let keyboard = (
                        sent.chat_id,
                        sent.text.clone(),
                        body["reply_markup"].clone(),
                    );
                    state.calls.keyboards.push(keyboard);
                }
                let message_id = state.next_message_id;
                state.next_message_id += 1;
                let message = json!({
                    "message_id": message_id,
                    "from": {"id": 1, "is_bot": true, "first_name": "hearth", "username": "hearth_bot"},
                    "chat": {"id": sent.chat_id, "type": "private"},
                    "date": 1_767_225_600 + message_id,
                    "text": visible,
                });
                (200, json!({"ok": true, "result": message}))
            }
        }
    };
    shared.bump();
    http::write_json(stream, status, &answer).await
}

/// Holds a `sendMessage` while holding is on. False when the client went
/// away meanwhile: the request is dropped unrecorded.
async fn hold(stream: &mut TcpStream, shared: &Shared, sent: &Sent) -> bool {
    let mut changed = shared.subscribe();
    if !shared.lock().hold {
        return true;
    }
    shared.lock().calls.held.push(sent.clone());
    shared.bump();
    let released = loop {
        if !shared.lock().hold {
            break true;
        }
        tokio::select! {
            _ = changed.changed() => {}
            () = http::client_gone(stream) => break false,
        }
    };
    {
        let mut state = shared.lock();
        if let Some(at) = state.calls.held.iter().position(|held| held == sent) {
            state.calls.held.remove(at);
        }
    }
    shared.bump();
    released
}
