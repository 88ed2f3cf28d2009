//! A fake WhatsApp Cloud API (Meta's Graph API) for end-to-end tests of the
//! WhatsApp bridge.
//!
//! [`FakeGraph::start`] binds `127.0.0.1:0` and answers, under
//! [`FakeGraph::graph_base`]: `POST /{PHONE_NUMBER_ID}/messages` (text and
//! image messages, and read marks with "typing…"), `POST
//! /{PHONE_NUMBER_ID}/media` (an upload), `GET /{media_id}` (a media
//! file's address) and `GET` of that address (the file), each only with
//! the Bearer [`ACCESS_TOKEN`], as Graph does. A test scripts failures of
//! sends ([`FakeGraph::fail_next_send`]), can hold every send until the
//! client goes away ([`FakeGraph::hold_sends`]), and reads what the bridge
//! did ([`FakeGraph::calls`], [`FakeGraph::wait_until`]). Errors come in
//! Graph's envelope, `{"error": {"message", "type", "code", …}}`. The HTTP
//! is the fake model's: one request per connection.

use crate::fake_model::http::{self, Request, RequestError};
use crate::meta_webhook::{APP_SECRET, VERIFY_TOKEN};
use crate::watched::Watched;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The business phone number's id the fake serves.
pub const PHONE_NUMBER_ID: &str = "1098765";

/// The access token the fake accepts.
pub const ACCESS_TOKEN: &str = "EAAtest-access-token";

/// The API version in the fake's paths, as in Graph's.
const VERSION: &str = "/v23.0";

/// One text message sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    /// The recipient's WhatsApp id (or number, as sent): `to`, or for a
    /// business-scoped user id `recipient` (see [`recipient`]).
    pub to: String,
    pub text: String,
}

/// How the next send fails, as Graph says it.
#[derive(Clone, Copy, Debug)]
pub enum Failure {
    /// 400, code 131047: more than 24 hours since the person wrote.
    OutsideWindow,
    /// 429, code 130429: the Cloud API's rate limit.
    TooManyRequests,
    /// 500 without Graph's envelope.
    ServerError,
    /// 400, code 131026: the message cannot be delivered.
    Undeliverable,
}

impl Failure {
    fn answer(self) -> (u16, Value) {
        match self {
            Failure::OutsideWindow => (
                400,
                graph_error(
                    131047,
                    "(#131047) Re-engagement message",
                    Some("Message failed to send because more than 24 hours have passed since the customer last replied to this number."),
                ),
            ),
            Failure::TooManyRequests => (429, graph_error(130429, "(#130429) Rate limit hit", None)),
            Failure::ServerError => (500, json!("Internal Server Error")),
            Failure::Undeliverable => (
                400,
                graph_error(131026, "(#131026) Message Undeliverable", None),
            ),
        }
    }
}

fn graph_error(code: i64, message: &str, details: Option<&str>) -> Value {
    let mut error =
        json!({"message": message, "type": "OAuthException", "code": code, "fbtrace_id": "AbCdEf"});
    if let Some(details) = details {
        error["error_data"] = json!({"messaging_product": "whatsapp", "details": details});
    }
    json!({ "error": error })
}

/// What the bridge did so far.
#[derive(Clone, Debug, Default)]
pub struct Calls {
    /// Every text send answered, successful or not, in order.
    pub attempts: Vec<Sent>,
    /// The sends answered with success: what people saw.
    pub sent: Vec<Sent>,
    /// Read marks: the message ids, each with whether it asked for "typing…".
    pub reads: Vec<(String, bool)>,
    /// Sends held by [`FakeGraph::hold_sends`] now.
    pub held: Vec<Sent>,
    /// Sends taken but not answered yet ([`FakeGraph::answer_late`]).
    pub unanswered: Vec<Sent>,
    /// Media ids whose address was asked for, and files downloaded.
    pub media_lookups: Vec<String>,
    pub downloads: Vec<String>,
    /// Requests refused for a missing or wrong access token.
    pub unauthorized: usize,
    /// Media uploaded (`POST /{PHONE_NUMBER_ID}/media`): type and bytes.
    pub uploads: Vec<(String, Vec<u8>)>,
    /// Image messages sent: the recipient and the media id.
    pub images: Vec<(String, String)>,
    /// Document messages sent: the recipient and the media id.
    pub documents: Vec<(String, String)>,
    /// The JSON body of every `POST /{PHONE_NUMBER_ID}/messages`, in
    /// order, as sent: what the conformance tests check.
    pub message_bodies: Vec<Value>,
}

impl Calls {
    /// The texts a number received, in order.
    pub fn sent_to(&self, to: &str) -> Vec<String> {
        self.sent
            .iter()
            .filter(|sent| sent.to == to)
            .map(|sent| sent.text.clone())
            .collect()
    }
}

/// The fake API, serving until dropped.
pub struct FakeGraph {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept_loop: JoinHandle<()>,
}

struct Shared {
    addr: SocketAddr,
    /// The state, bumped on every change for [`FakeGraph::wait_until`] and held
    /// sends.
    watched: Watched<State>,
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
    failures: VecDeque<Failure>,
    hold: bool,
    late: bool,
    next_id: u64,
    /// Media by id: MIME type and bytes.
    media: HashMap<String, (String, Vec<u8>)>,
}

impl FakeGraph {
    /// Binds `127.0.0.1:0` and serves in the background.
    pub async fn start() -> FakeGraph {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("fake graph: cannot bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound address");
        let shared = Arc::new(Shared {
            addr,
            watched: Watched::new(State::default()),
        });
        let accept_loop = tokio::spawn(accept_loop(listener, shared.clone()));
        FakeGraph {
            addr,
            shared,
            accept_loop,
        }
    }

    /// The `graph_base` a bridge is configured with.
    pub fn graph_base(&self) -> String {
        format!("http://{}{VERSION}", self.addr)
    }

    /// A `[whatsapp]` table for this fake, listening on a port the system
    /// picks and allowing `allow` (TOML list items); its secrets are
    /// [`whatsapp_secrets`].
    pub fn whatsapp_table(&self, allow: &str) -> String {
        format!(
            "[whatsapp]\nlisten = \"127.0.0.1:0\"\nverify_token_env = \"HEARTH_TEST_WA_VERIFY\"\n\
             app_secret_env = \"HEARTH_TEST_WA_SECRET\"\naccess_token_env = \"HEARTH_TEST_WA_TOKEN\"\n\
             phone_number_id = \"{PHONE_NUMBER_ID}\"\ngraph_base = \"{}\"\nallow = [{allow}]\n",
            self.graph_base()
        )
    }

    /// The next send (after any failures queued before) fails so.
    pub fn fail_next_send(&self, failure: Failure) {
        self.shared.lock().failures.push_back(failure);
    }

    /// While on, every text send is held unanswered (and shown in
    /// [`Calls::held`]); a held request whose client goes away is dropped
    /// unrecorded, and turning this off answers the rest.
    pub fn hold_sends(&self, hold: bool) {
        self.shared.lock().hold = hold;
        self.shared.bump();
    }

    /// While on, a text send that succeeds is recorded as sent at once but
    /// answered only when this is turned off (shown meanwhile in
    /// [`Calls::unanswered`]): WhatsApp took the message, and a client that
    /// goes away before the answer does not know it did.
    pub fn answer_late(&self, late: bool) {
        self.shared.lock().late = late;
        self.shared.bump();
    }

    /// Makes a media file downloadable under `id`.
    pub fn add_media(&self, id: &str, mime_type: &str, bytes: &[u8]) {
        let entry = (mime_type.to_string(), bytes.to_vec());
        self.shared.lock().media.insert(id.to_string(), entry);
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
            .wait_until("fake graph", what, calls, done)
            .await
    }
}

/// The `secrets.env` lines [`FakeGraph::whatsapp_table`] names: the
/// webhook's verify token and app secret, and `access_token`.
pub fn whatsapp_secrets(access_token: &str) -> String {
    format!(
        "HEARTH_TEST_WA_VERIFY={VERIFY_TOKEN}\nHEARTH_TEST_WA_SECRET={APP_SECRET}\n\
         HEARTH_TEST_WA_TOKEN={access_token}\n"
    )
}

impl Drop for FakeGraph {
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
            return http::write_json(stream, 400, &graph_error(100, &message, None)).await
        }
    };
    let bearer = format!("Bearer {ACCESS_TOKEN}");
    if request.headers.get("authorization") != Some(&bearer) {
        shared.lock().calls.unauthorized += 1;
        shared.bump();
        let error = graph_error(
            190,
            "Invalid OAuth access token - Cannot parse access token",
            None,
        );
        return http::write_json(stream, 401, &error).await;
    }
    if let Some(id) = request.path.strip_prefix("/media/") {
        return download(stream, shared, id).await;
    }
    let Some(rest) = request.path.strip_prefix(&format!("{VERSION}/")) else {
        return not_found(stream).await;
    };
    let messages = format!("{PHONE_NUMBER_ID}/messages");
    let media = format!("{PHONE_NUMBER_ID}/media");
    match (request.method.as_str(), rest) {
        ("POST", path) if path == messages => post_message(stream, shared, &request).await,
        ("POST", path) if path == media => upload(stream, shared, &request).await,
        ("GET", id) if !id.contains('/') => media_address(stream, shared, id).await,
        _ => not_found(stream).await,
    }
}

async fn not_found(stream: &mut TcpStream) -> io::Result<()> {
    let error = graph_error(803, "Some of the aliases you requested do not exist", None);
    http::write_json(stream, 404, &error).await
}

async fn post_message(
    stream: &mut TcpStream,
    shared: &Shared,
    request: &Request,
) -> io::Result<()> {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    shared.lock().calls.message_bodies.push(body.clone());
    if body["messaging_product"] != "whatsapp" {
        let error = graph_error(100, "The parameter messaging_product is required.", None);
        return http::write_json(stream, 400, &error).await;
    }
    if body["status"] == "read" {
        let id = body["message_id"].as_str().unwrap_or_default().to_string();
        let typing = body["typing_indicator"]["type"] == "text";
        shared.lock().calls.reads.push((id, typing));
        shared.bump();
        return http::write_json(stream, 200, &json!({"success": true})).await;
    }
    let Some(to) = recipient(&body) else {
        let error = graph_error(100, "(#100) The parameter to is required.", None);
        return http::write_json(stream, 400, &error).await;
    };
    let sent = Sent {
        to,
        text: body["text"]["body"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    };
    if body["type"] == "image" || body["type"] == "document" {
        return send_image(stream, shared, &body).await;
    }
    if body["type"] != "text" {
        let error = graph_error(100, "Only text and image messages are faked", None);
        return http::write_json(stream, 400, &error).await;
    }
    if !hold(stream, shared, &sent).await {
        return Ok(());
    }
    let (status, answer) = {
        let mut state = shared.lock();
        state.calls.attempts.push(sent.clone());
        if let Some(failure) = state.failures.pop_front() {
            failure.answer()
        } else if sent.text.trim().is_empty() {
            (
                400,
                graph_error(100, "Param text['body'] is required.", None),
            )
        } else if sent.text.chars().count() > 4096 {
            let message = "Param text['body'] must be at most 4096 characters long.";
            (400, graph_error(100, message, None))
        } else {
            state.calls.sent.push(sent.clone());
            state.next_id += 1;
            let id = format!("wamid.out.{}", state.next_id);
            let answer = json!({
                "messaging_product": "whatsapp",
                "contacts": [contact(&sent.to)],
                "messages": [{"id": id}],
            });
            (200, answer)
        }
    };
    shared.bump();
    if status == 200 && !answer_late(stream, shared, &sent).await {
        return Ok(());
    }
    http::write_json(stream, status, &answer).await
}

/// Whom a message is for, as the Cloud API reads it: `to` (a number), or
/// when it is absent `recipient` (a business-scoped user id).
pub fn recipient(body: &Value) -> Option<String> {
    [&body["to"], &body["recipient"]]
        .into_iter()
        .find_map(|field| field.as_str().filter(|id| !id.is_empty()))
        .map(str::to_string)
}

/// The answer's `contacts[]` entry: `wa_id` for a number, `user_id` for a
/// business-scoped user id.
fn contact(to: &str) -> Value {
    if to.bytes().all(|b| b.is_ascii_digit()) {
        json!({"input": to, "wa_id": to})
    } else {
        json!({"input": to, "user_id": to})
    }
}

/// Holds the answer to a send already recorded, while answering late is
/// on. False when the client went away meanwhile (the message stays sent).
async fn answer_late(stream: &mut TcpStream, shared: &Shared, sent: &Sent) -> bool {
    let late = |state: &State| state.late;
    wait_while(stream, shared, sent, late, |calls| &mut calls.unanswered).await
}

/// `POST /{PHONE_NUMBER_ID}/media`: an upload in multipart form data
/// (`messaging_product`, `type`, `file`); the file becomes media.
async fn upload(stream: &mut TcpStream, shared: &Shared, request: &Request) -> io::Result<()> {
    let parts = http::form_parts(request).unwrap_or_default();
    let field = |name: &str| {
        parts
            .iter()
            .find(|(head, _)| head.contains(&format!("name=\"{name}\"")))
    };
    let product = field("messaging_product").map(|(_, value)| value.as_slice());
    let (Some(b"whatsapp"), Some((head, bytes))) = (product, field("file")) else {
        let error = graph_error(100, "messaging_product and file are required.", None);
        return http::write_json(stream, 400, &error).await;
    };
    let mime_type = http::part_header(head, "content-type")
        .unwrap_or_default()
        .to_string();
    let id = {
        let mut state = shared.lock();
        state.next_id += 1;
        let id = format!("uploaded{}", state.next_id);
        state.calls.uploads.push((mime_type.clone(), bytes.clone()));
        state.media.insert(id.clone(), (mime_type, bytes.clone()));
        id
    };
    shared.bump();
    http::write_json(stream, 200, &json!({ "id": id })).await
}

/// An image or document message naming uploaded media. The Cloud API
/// takes only JPEG and PNG as images, up to 5 MB.
async fn send_image(stream: &mut TcpStream, shared: &Shared, body: &Value) -> io::Result<()> {
    let to = recipient(body).unwrap_or_default();
    let kind = body["type"].as_str().unwrap_or_default().to_string();
    let media_id = body[&kind]["id"].as_str().unwrap_or_default().to_string();
    let (status, answer) = {
        let mut state = shared.lock();
        let image_taken = |(mime, bytes): &(String, Vec<u8>)| {
            matches!(mime.as_str(), "image/jpeg" | "image/png") && bytes.len() <= 5_000_000
        };
        let taken = state
            .media
            .get(&media_id)
            .is_some_and(|media| kind == "document" || image_taken(media));
        if taken {
            let sent = (to.clone(), media_id);
            if kind == "document" {
                state.calls.documents.push(sent);
            } else {
                state.calls.images.push(sent);
            }
            state.next_id += 1;
            let answer = json!({
                "messaging_product": "whatsapp",
                "contacts": [contact(&to)],
                "messages": [{"id": format!("wamid.out.{}", state.next_id)}],
            });
            (200, answer)
        } else {
            (
                400,
                graph_error(131053, "(#131053) Media upload error", None),
            )
        }
    };
    shared.bump();
    http::write_json(stream, status, &answer).await
}

/// `GET /{media_id}`: where the file is, for five minutes.
async fn media_address(stream: &mut TcpStream, shared: &Shared, id: &str) -> io::Result<()> {
    let found = {
        let mut state = shared.lock();
        state.calls.media_lookups.push(id.to_string());
        state
            .media
            .get(id)
            .map(|(mime, bytes)| (mime.clone(), bytes.len()))
    };
    shared.bump();
    let Some((mime_type, size)) = found else {
        return not_found(stream).await;
    };
    let answer = json!({
        "messaging_product": "whatsapp",
        "url": format!("http://{}/media/{id}?ext=1&hash=x", shared.addr),
        "mime_type": mime_type,
        "sha256": "not-checked",
        "file_size": size.to_string(),
        "id": id,
    });
    http::write_json(stream, 200, &answer).await
}

/// `GET` of a media file's address.
async fn download(stream: &mut TcpStream, shared: &Shared, id: &str) -> io::Result<()> {
    let found = {
        let mut state = shared.lock();
        state.calls.downloads.push(id.to_string());
        state.media.get(id).cloned()
    };
    shared.bump();
    match found {
        Some((mime_type, bytes)) => http::write_response(stream, 200, &mime_type, &bytes).await,
        None => not_found(stream).await,
    }
}

/// Holds a send while holding is on. False when the client went away
/// meanwhile: the request is dropped unrecorded.
async fn hold(stream: &mut TcpStream, shared: &Shared, sent: &Sent) -> bool {
    let hold = |state: &State| state.hold;
    wait_while(stream, shared, sent, hold, |calls| &mut calls.held).await
}

/// Waits while `on` holds, showing `sent` in the list `shown` meanwhile.
/// False when the client went away before.
async fn wait_while(
    stream: &mut TcpStream,
    shared: &Shared,
    sent: &Sent,
    on: impl Fn(&State) -> bool,
    shown: impl Fn(&mut Calls) -> &mut Vec<Sent>,
) -> bool {
    let mut changed = shared.subscribe();
    if !on(&shared.lock()) {
        return true;
    }
    shown(&mut shared.lock().calls).push(sent.clone());
    shared.bump();
    let waited = loop {
        if !on(&shared.lock()) {
            break true;
        }
        tokio::select! {
            _ = changed.changed() => {}
            () = http::client_gone(stream) => break false,
        }
    };
    {
        let mut state = shared.lock();
        let list = shown(&mut state.calls);
        if let Some(at) = list.iter().position(|s| s == sent) {
            list.remove(at);
        }
    }
    shared.bump();
    waited
}
