//! A fake signal-cli JSON-RPC daemon (`signal-cli daemon --socket` /
//! `--tcp` with `--receive-mode manual`) for end-to-end tests of the
//! Signal bridge.
//!
//! [`FakeSignal::start`] listens on a Unix socket in a temporary folder and
//! on `127.0.0.1:0`, and speaks `signal-cli-jsonrpc(5)`: one JSON-RPC 2.0
//! object a line; `subscribeReceive` answers a subscription id, after which
//! the messages people sent arrive as `receive` notifications with
//! `{subscription, result: {envelope, account}}`; `send` (with
//! `textStyle` and data-URI `attachments`), `sendTyping` and
//! `getAttachment` are answered as signal-cli answers them; anything else
//! is `-32601 Method not implemented`.
//!
//! As with a real signal-cli in manual mode, a message waits "on Signal's
//! servers" until a connection subscribes, and is delivered once to the
//! newest subscriber. A test plays the people who write
//! ([`FakeSignal::write`], [`FakeSignal::react`], [`FakeSignal::send_file`]),
//! can hold every `send` until the client goes away
//! ([`FakeSignal::hold_sends`]), and reads what the bridge did
//! ([`FakeSignal::calls`], [`FakeSignal::wait_until`]).

use crate::watched::Watched;
use base64::Engine;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{mpsc, watch};
use tokio::task::{JoinHandle, JoinSet};

/// The account the fake is registered as.
pub const ACCOUNT: &str = "+15550001111";

/// Someone on Signal.
#[derive(Clone, Copy, Debug)]
pub struct Person {
    pub number: &'static str,
    pub uuid: &'static str,
    pub name: &'static str,
}

/// One `send` that went through.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Sent {
    pub recipient: String,
    pub message: String,
    /// The `textStyle` ranges, as sent (`start:length:STYLE`).
    pub styles: Vec<String>,
    /// The attachments, as sent (data URIs).
    pub attachments: Vec<String>,
    /// The timestamp it was given.
    pub timestamp: u64,
}

/// What the bridge did so far.
#[derive(Clone, Debug, Default)]
pub struct Calls {
    /// The sends answered with success, in order: what people saw.
    pub sent: Vec<Sent>,
    /// Sends held by [`FakeSignal::hold_sends`] now.
    pub held: Vec<Sent>,
    /// `sendTyping` recipients, in order.
    pub typing: Vec<String>,
    /// `getAttachment` ids, in order.
    pub fetched: Vec<String>,
    /// Connections subscribed now.
    pub subscribers: usize,
    /// Every request, in order: method and params.
    pub requests: Vec<(String, Value)>,
}

impl Calls {
    /// The texts `number` received, in order.
    pub fn sent_to(&self, number: &str) -> Vec<String> {
        self.sent
            .iter()
            .filter(|sent| sent.recipient == number)
            .map(|sent| sent.message.clone())
            .collect()
    }
}

#[derive(Default)]
struct State {
    calls: Calls,
    /// Envelopes waiting for a subscriber, oldest first.
    waiting: VecDeque<Value>,
    /// The subscribed connections: their id and subscription, and where
    /// their lines go; the newest gets the messages.
    subscribed: Vec<(u64, u64, mpsc::UnboundedSender<String>)>,
    next_connection: u64,
    next_subscription: u64,
    next_timestamp: u64,
    hold: bool,
    /// The files people sent, by attachment id.
    files: BTreeMap<String, Vec<u8>>,
}

struct Shared {
    /// The state, bumped on every change for [`FakeSignal::wait_until`] and held
    /// sends.
    watched: Watched<State>,
}

impl std::ops::Deref for Shared {
    type Target = Watched<State>;

    fn deref(&self) -> &Watched<State> {
        &self.watched
    }
}

impl Shared {
    fn timestamp(&self) -> u64 {
        let mut state = self.lock();
        state.next_timestamp += 1;
        state.next_timestamp
    }

    /// Delivers the waiting envelopes to the newest subscriber.
    fn deliver(&self) {
        let mut state = self.lock();
        let Some((_, subscription, to)) = state.subscribed.last().cloned() else {
            return;
        };
        while let Some(envelope) = state.waiting.pop_front() {
            let note = json!({"jsonrpc": "2.0", "method": "receive", "params": {
                "subscription": subscription,
                "result": {"envelope": envelope, "account": ACCOUNT},
            }});
            if to.send(note.to_string()).is_err() {
                state.waiting.push_front(envelope);
                break;
            }
        }
    }
}

/// The fake signal-cli, serving until dropped.
pub struct FakeSignal {
    dir: tempfile::TempDir,
    tcp: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Drop for FakeSignal {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FakeSignal {
    pub async fn start() -> FakeSignal {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let unix = UnixListener::bind(dir.path().join("signal-cli.socket")).expect("a socket");
        let tcp = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let tcp_addr = tcp.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            watched: Watched::new(State {
                next_timestamp: 1_767_225_600_000,
                ..State::default()
            }),
        });
        let serving = shared.clone();
        let accept = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                tokio::select! {
                    Ok((stream, _)) = unix.accept() => {
                        let (read, write) = stream.into_split();
                        connections.spawn(serve(read, write, serving.clone()));
                    }
                    Ok((stream, _)) = tcp.accept() => {
                        let (read, write) = stream.into_split();
                        connections.spawn(serve(read, write, serving.clone()));
                    }
                }
            }
        });
        FakeSignal {
            dir,
            tcp: tcp_addr,
            shared,
            accept,
        }
    }

    /// The socket for `[signal] socket`.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("signal-cli.socket")
    }

    /// The address for `[signal] tcp`.
    pub fn tcp(&self) -> String {
        self.tcp.to_string()
    }

    /// `from` writes `text`; returns the message's timestamp.
    pub fn write(&self, from: &Person, text: &str) -> u64 {
        self.message(from, json!({"message": text}))
    }

    /// `from` replies `text` quoting the message sent at `quoted`.
    pub fn reply(&self, from: &Person, text: &str, quoted: u64) -> u64 {
        let quote = json!({"id": quoted, "author": ACCOUNT, "authorNumber": ACCOUNT, "text": ""});
        self.message(from, json!({"message": text, "quote": quote}))
    }

    /// `from` reacts with `emoji` to the message sent at `target`.
    pub fn react(&self, from: &Person, emoji: &str, target: u64) -> u64 {
        let reaction = json!({"emoji": emoji, "targetAuthor": ACCOUNT,
            "targetAuthorNumber": ACCOUNT, "targetSentTimestamp": target, "isRemove": false});
        self.message(from, json!({"message": null, "reaction": reaction}))
    }

    /// `from` sends a file (`content_type`, maybe a file name) with a
    /// caption or without; signal-cli keeps it under a new id.
    pub fn send_file(
        &self,
        from: &Person,
        content_type: &str,
        filename: Option<&str>,
        bytes: &[u8],
        caption: Option<&str>,
    ) -> u64 {
        let id = format!("attachment-{}", self.shared.timestamp());
        self.shared.lock().files.insert(id.clone(), bytes.to_vec());
        let attachment = json!({"contentType": content_type, "filename": filename, "id": id,
            "size": bytes.len(), "width": null, "height": null, "caption": null,
            "uploadTimestamp": null});
        self.message(
            from,
            json!({"message": caption, "attachments": [attachment]}),
        )
    }

    /// Queues an envelope with a data message of `fields`.
    fn message(&self, from: &Person, fields: Value) -> u64 {
        let timestamp = self.shared.timestamp();
        let mut data = json!({"timestamp": timestamp, "expiresInSeconds": 0, "viewOnce": false});
        for (key, value) in fields.as_object().into_iter().flatten() {
            data[key] = value.clone();
        }
        let envelope = json!({
            "source": from.number, "sourceNumber": from.number, "sourceUuid": from.uuid,
            "sourceName": from.name, "sourceDevice": 1, "timestamp": timestamp,
            "serverReceivedTimestamp": timestamp + 5, "serverDeliveredTimestamp": timestamp + 9,
            "dataMessage": data,
        });
        self.shared.lock().waiting.push_back(envelope);
        self.shared.deliver();
        self.shared.bump();
        timestamp
    }

    /// While on, every `send` is held unanswered; when turned off, the held
    /// ones of connections still open are answered (and count as sent).
    pub fn hold_sends(&self, hold: bool) {
        self.shared.lock().hold = hold;
        self.shared.bump();
    }

    pub fn calls(&self) -> Calls {
        self.shared.lock().calls.clone()
    }

    /// Waits until `done` holds for the calls so far and returns them.
    pub async fn wait_until(&self, what: &str, done: impl Fn(&Calls) -> bool) -> Calls {
        let calls = |state: &State| state.calls.clone();
        self.shared
            .wait_until("fake signal-cli", what, calls, done)
            .await
    }
}

/// Serves one connection until it closes.
async fn serve(
    read: impl AsyncRead + Unpin,
    mut write: impl AsyncWrite + Unpin + Send + 'static,
    shared: Arc<Shared>,
) {
    let connection = {
        let mut state = shared.lock();
        state.next_connection += 1;
        state.next_connection
    };
    let (lines_out, mut lines) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(line) = lines.recv().await {
            if write
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
    });
    let (closed, on_closed) = watch::channel(false);
    let mut requests = JoinSet::new();
    let mut reader = BufReader::new(read).lines();
    while let Ok(Some(line)) = reader.next_line().await {
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            let error = json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32700, "message": "parse error", "data": null}});
            let _ = lines_out.send(error.to_string());
            continue;
        };
        requests.spawn(answer(
            request,
            connection,
            lines_out.clone(),
            shared.clone(),
            on_closed.clone(),
        ));
    }
    let _ = closed.send(true);
    {
        let mut state = shared.lock();
        state.subscribed.retain(|(id, _, _)| *id != connection);
        state.calls.subscribers = state.subscribed.len();
    }
    shared.bump();
    while requests.join_next().await.is_some() {}
    writer.abort();
}

/// Answers one request (a held send waits first).
async fn answer(
    request: Value,
    connection: u64,
    out: mpsc::UnboundedSender<String>,
    shared: Arc<Shared>,
    mut closed: watch::Receiver<bool>,
) {
    let id = request["id"].clone();
    let method = request["method"].as_str().unwrap_or_default().to_string();
    let params = request.get("params").cloned().unwrap_or(json!({}));
    shared
        .lock()
        .calls
        .requests
        .push((method.clone(), params.clone()));
    shared.bump();
    let reply = |result: Result<Value, (i64, String)>| {
        let line = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, message)) => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": code, "message": message, "data": null}}),
        };
        let _ = out.send(line.to_string());
    };
    if params["account"] != ACCOUNT {
        return reply(Err((-32602, "Specified account does not exist".into())));
    }
    match method.as_str() {
        "subscribeReceive" => {
            let subscription = {
                let mut state = shared.lock();
                let subscription = state.next_subscription;
                state.next_subscription += 1;
                state
                    .subscribed
                    .push((connection, subscription, out.clone()));
                state.calls.subscribers = state.subscribed.len();
                subscription
            };
            reply(Ok(json!(subscription)));
            shared.deliver();
            shared.bump();
        }
        "sendTyping" => {
            let to = recipient(&params);
            shared.lock().calls.typing.push(to);
            shared.bump();
            reply(Ok(json!({})));
        }
        "getAttachment" => {
            let wanted = params["id"].as_str().unwrap_or_default().to_string();
            let file = shared.lock().files.get(&wanted).cloned();
            shared.lock().calls.fetched.push(wanted.clone());
            shared.bump();
            match file {
                Some(bytes) => {
                    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                    reply(Ok(json!({"data": data})))
                }
                None => reply(Err((
                    -1,
                    format!("Could not find attachment with ID: {wanted}"),
                ))),
            }
        }
        "send" => {
            let strings = |key: &str| -> Vec<String> {
                match &params[key] {
                    Value::String(one) => vec![one.clone()],
                    Value::Array(many) => many
                        .iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect(),
                    _ => Vec::new(),
                }
            };
            let mut sent = Sent {
                recipient: recipient(&params),
                message: params["message"].as_str().unwrap_or_default().to_string(),
                styles: strings("textStyle"),
                attachments: strings("attachments"),
                timestamp: 0,
            };
            if !held(&shared, &sent, &mut closed).await {
                return;
            }
            sent.timestamp = shared.timestamp();
            let timestamp = sent.timestamp;
            let to = sent.recipient.clone();
            shared.lock().calls.sent.push(sent);
            shared.bump();
            reply(Ok(json!({"timestamp": timestamp, "results": [{
                "recipientAddress": {"uuid": null, "number": to}, "type": "SUCCESS"}]})));
        }
        _ => reply(Err((-32601, "Method not implemented".into()))),
    }
}

/// The one recipient of a request (`recipient` is a list or one value).
fn recipient(params: &Value) -> String {
    match &params["recipient"] {
        Value::Array(many) => many
            .first()
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        Value::String(one) => one.clone(),
        _ => String::new(),
    }
}

/// Holds a send while holding is on. False when the connection closed
/// meanwhile: the send is dropped, never answered.
async fn held(shared: &Shared, sent: &Sent, closed: &mut watch::Receiver<bool>) -> bool {
    if !shared.lock().hold {
        return true;
    }
    shared.lock().calls.held.push(sent.clone());
    shared.bump();
    let mut changed = shared.subscribe();
    let going_on = loop {
        if *closed.borrow() {
            break false;
        }
        if !shared.lock().hold {
            break true;
        }
        tokio::select! {
            _ = changed.changed() => {}
            _ = closed.changed() => {}
        }
    };
    shared.lock().calls.held.retain(|other| other != sent);
    shared.bump();
    going_on
}
