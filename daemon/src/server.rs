//! The socket: WebSocket over the daemon's Unix socket, one task per client.
//!
//! A client says `hello`; the daemon answers `welcome`, sends the messages
//! after the client's `since` (if given) and then every event live. Messages
//! are sent in id order and never twice: the subscription to live events is
//! taken before the catch-up is read, and live messages at or below the last
//! id sent are skipped. A client too slow for the live stream is caught up
//! from the log rather than dropped.
//!
//! Bad input — not JSON, an unknown type, too large, another protocol
//! version, a frame out of sequence — gets an `error` frame and changes nothing.

use crate::approvals::{self, Approvals};
use crate::images::{self, ImageStore};
use crate::log::{Log, LogError, NewMessage};
use crate::schedule::{Schedule, When};
use crate::turn::AgentHandle;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use hearth_protocol::{
    AgentStatus, ClientFrame, ErrorCode, Event, EventKind, Kind, ReceiptStatus, ScheduleInfo,
    ServerFrame, Status, MAX_FRAME_BYTES, PROTOCOL_VERSION,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

/// Frames above this size close the connection at the WebSocket layer; frames
/// between [`MAX_FRAME_BYTES`] and this get an `error` frame instead.
const HARD_FRAME_LIMIT: usize = 16 * MAX_FRAME_BYTES;

/// Messages sent per catch-up page.
const CATCH_UP_PAGE: u32 = 500;

/// What every connection shares.
pub struct Shared {
    pub log: Log,
    pub events: broadcast::Sender<Event>,
    /// The top agent.
    pub agent: AgentHandle,
    /// Every agent by name, the top one and its subagents.
    pub agents: std::collections::BTreeMap<String, AgentHandle>,
    /// `provider/model`, or none.
    pub model: Option<String>,
    /// Clients attached now.
    pub clients: AtomicU64,
    /// When the daemon started, for `status`.
    pub started: std::time::Instant,
    /// Tool calls waiting for a person: `approve` frames answer them.
    pub approvals: Approvals,
    /// Where `image_put` stores images and `image_get` reads them.
    pub images: ImageStore,
}

/// A client's byte stream: the Unix socket, or TCP with a token.
trait ClientStream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> ClientStream for T {}
type Stream = Box<dyn ClientStream>;

type Sink = SplitSink<WebSocketStream<Stream>, WsMessage>;
type Source = SplitStream<WebSocketStream<Stream>>;

/// Where clients connect.
pub enum Listener {
    /// The private Unix socket: its file mode is the access check.
    Unix(UnixListener),
    /// A TCP address: a client must say the token in its hello first.
    Tcp {
        listener: TcpListener,
        token: String,
    },
}

/// Accepts clients until `shutdown` turns true.
pub async fn serve(listener: Listener, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let accepted: std::io::Result<(Stream, Option<String>)> = tokio::select! {
            accepted = accept(&listener) => accepted,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok((stream, token)) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    shared.clients.fetch_add(1, Ordering::Relaxed);
                    if let Err(err) = connection(stream, token.as_deref(), &shared).await {
                        tracing::debug!("client connection ended: {err}");
                    }
                    shared.clients.fetch_sub(1, Ordering::Relaxed);
                });
            }
            Err(err) => tracing::warn!("cannot accept a client: {err}"),
        }
    }
}

async fn accept(listener: &Listener) -> std::io::Result<(Stream, Option<String>)> {
    match listener {
        Listener::Unix(listener) => {
            let (stream, _) = listener.accept().await?;
            Ok((Box::new(stream), None))
        }
        Listener::Tcp { listener, token } => {
            let (stream, peer) = listener.accept().await?;
            tracing::debug!("TCP client from {peer}");
            Ok((Box::new(stream), Some(token.clone())))
        }
    }
}

/// Compares a given token with the expected one in time that does not
/// depend on where they differ.
pub fn token_matches(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    let mut difference = given.len() ^ expected.len();
    for (at, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(at).copied().unwrap_or(0));
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::token_matches;

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(token_matches("s3cret-token", "s3cret-token"));
        assert!(!token_matches("s3cret-tokem", "s3cret-token"));
        assert!(!token_matches("s3cret", "s3cret-token"));
        assert!(!token_matches("s3cret-token-and-more", "s3cret-token"));
        assert!(!token_matches("", "s3cret-token"));
    }
}

#[derive(Debug, thiserror::Error)]
enum ConnectionError {
    #[error("websocket: {0}")]
    WebSocket(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("{0}")]
    Log(#[from] LogError),
    #[error("the client left")]
    Gone,
}

async fn send(sink: &mut Sink, frame: &ServerFrame) -> Result<(), ConnectionError> {
    sink.send(WsMessage::Text(frame.encode().into())).await?;
    Ok(())
}

async fn refuse(sink: &mut Sink, code: ErrorCode, message: String) -> Result<(), ConnectionError> {
    send(sink, &ServerFrame::Error { code, message }).await
}

/// The next text frame, decoded; `Ok(None)` when the client left. Frames that
/// cannot be read are answered with an error here and skipped.
async fn next_frame(
    source: &mut Source,
    sink: &mut Sink,
) -> Result<Option<ClientFrame>, ConnectionError> {
    loop {
        let text = match source.next().await {
            None | Some(Ok(WsMessage::Close(_))) => return Ok(None),
            Some(Err(err)) => return Err(err.into()),
            Some(Ok(WsMessage::Text(text))) => text,
            Some(Ok(WsMessage::Binary(_))) => {
                refuse(
                    sink,
                    ErrorCode::BadFrame,
                    "binary frames are not part of the protocol; send JSON text frames".into(),
                )
                .await?;
                continue;
            }
            Some(Ok(_)) => continue,
        };
        match ClientFrame::decode(&text) {
            Ok(frame) => return Ok(Some(frame)),
            Err(err) => refuse(sink, err.code, err.message).await?,
        }
    }
}

/// One client. Over TCP (`token` is set), nothing but a hello with the right
/// token is answered with anything but a refusal.
async fn connection(
    stream: Stream,
    token: Option<&str>,
    shared: &Shared,
) -> Result<(), ConnectionError> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(HARD_FRAME_LIMIT))
        .max_frame_size(Some(HARD_FRAME_LIMIT));
    let socket = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await?;
    let (mut sink, mut source) = socket.split();

    let (since, handle, client) = loop {
        match next_frame(&mut source, &mut sink).await? {
            None => return Ok(()),
            Some(ClientFrame::Hello { version, .. }) if version != PROTOCOL_VERSION => {
                let message = format!(
                    "this daemon speaks protocol version {PROTOCOL_VERSION}, not {version}; update the client"
                );
                refuse(&mut sink, ErrorCode::Version, message).await?;
            }
            Some(ClientFrame::Hello { token: given, .. })
                if token.is_some_and(|token| {
                    !given.as_deref().is_some_and(|g| token_matches(g, token))
                }) =>
            {
                let message = "this listener needs the right `token` in hello".to_string();
                refuse(&mut sink, ErrorCode::Unauthorized, message).await?;
                return Ok(());
            }
            Some(ClientFrame::Hello {
                since,
                agent,
                client,
                ..
            }) => {
                let wanted = agent.unwrap_or_else(|| shared.agent.name.clone());
                match shared.agents.get(&wanted) {
                    Some(handle) => break (since, handle.clone(), client),
                    None => {
                        let known: Vec<&str> = shared.agents.keys().map(String::as_str).collect();
                        let message = format!(
                            "there is no agent `{wanted}`; this daemon runs {}",
                            known.join(", ")
                        );
                        refuse(&mut sink, ErrorCode::Refused, message).await?;
                    }
                }
            }
            Some(_) if token.is_some() => {
                let message = "say hello with the listener's token first".to_string();
                refuse(&mut sink, ErrorCode::Unauthorized, message).await?;
                return Ok(());
            }
            Some(_) => {
                refuse(&mut sink, ErrorCode::Sequence, "say hello first".into()).await?;
            }
        }
    };

    let agent = handle.name.clone();
    // Subscribe before reading where the log ends, so nothing falls between.
    let mut events = shared.events.subscribe();
    let next_id = shared.log.next_id(&agent).await?;
    let last_id = next_id.checked_sub(1);
    send(
        &mut sink,
        &ServerFrame::Welcome {
            version: PROTOCOL_VERSION,
            agent: agent.clone(),
            last_id,
            busy: handle.is_busy(),
        },
    )
    .await?;
    // The id of the newest message this client has: nothing at or below it is sent again.
    let mut sent_through: Option<u64> = match since {
        Some(since) => catch_up(&mut sink, &shared.log, &agent, Some(since)).await?,
        None => last_id,
    };
    // Requests that wait now: this client may answer them too.
    for request in shared.approvals.waiting() {
        send(&mut sink, &ServerFrame::Event(request)).await?;
    }

    loop {
        tokio::select! {
            frame = next_frame(&mut source, &mut sink) => {
                let Some(frame) = frame? else { return Ok(()) };
                answer(frame, &mut sink, shared, &handle, &client).await?;
            }
            event = events.recv() => match event {
                Ok(event) => {
                    // Approvals go to every client: a subagent's would
                    // otherwise reach no one, as people follow the top agent.
                    if event.agent != agent && event.kind != EventKind::Approval {
                        continue;
                    }
                    if let (Some(id), Some(_)) = (event.id, event.kind.message_kind()) {
                        if sent_through.is_some_and(|through| id <= through) {
                            continue;
                        }
                        sent_through = Some(id);
                    }
                    send(&mut sink, &ServerFrame::Event(event)).await?;
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    sent_through = catch_up(&mut sink, &shared.log, &agent, sent_through).await?;
                }
                Err(broadcast::error::RecvError::Closed) => return Err(ConnectionError::Gone),
            },
        }
    }
}

/// Sends every message after `after` (all when none), page by page; returns
/// the id of the last one sent.
async fn catch_up(
    sink: &mut Sink,
    log: &Log,
    agent: &str,
    after: Option<u64>,
) -> Result<Option<u64>, ConnectionError> {
    let mut through = after;
    loop {
        let from = through.map_or(0, |id| id + 1);
        let page = log.range(agent, from, u64::MAX, CATCH_UP_PAGE).await?;
        if page.is_empty() {
            return Ok(through);
        }
        for entry in page {
            through = Some(entry.message.id);
            send(sink, &ServerFrame::Event(Event::message(&entry.message))).await?;
        }
    }
}

async fn answer(
    frame: ClientFrame,
    sink: &mut Sink,
    shared: &Shared,
    handle: &AgentHandle,
    client: &str,
) -> Result<(), ConnectionError> {
    let agent = &handle.name;
    match frame {
        ClientFrame::Hello { .. } => {
            refuse(sink, ErrorCode::Sequence, "hello was already said".into()).await
        }
        ClientFrame::Submit {
            text,
            source,
            key,
            images: hashes,
        } => {
            // With images the words may be empty; every other check holds.
            let words = if hashes.is_empty() {
                text.as_str()
            } else {
                "(images)"
            };
            if let Some(why) = check_submit(words, &source, key.as_deref()) {
                return refuse(sink, ErrorCode::Refused, why).await;
            }
            let attached = match shared.images.attach(&hashes) {
                Ok(attached) => attached,
                Err(err) => return send(sink, &err.frame()).await,
            };
            let mut message = NewMessage::new(Kind::User, &source, text);
            message.key = key;
            if !attached.is_empty() {
                message.data = Some(images::data(&attached));
            }
            match shared.log.submit(agent, message).await {
                Ok((id, duplicate)) => {
                    if !duplicate {
                        handle.wake();
                    }
                    send(sink, &ServerFrame::Ack { id, duplicate }).await
                }
                Err(err) => {
                    tracing::error!("cannot log a submitted message: {err}");
                    let message = format!("the message was not logged: {err}");
                    refuse(sink, ErrorCode::Storage, message).await
                }
            }
        }
        ClientFrame::Note { text, source } => {
            if let Some(why) = check_submit(&text, &source, None) {
                return refuse(sink, ErrorCode::Refused, why).await;
            }
            let logged = shared
                .log
                .append(agent, NewMessage::new(Kind::Note, &source, text))
                .await?;
            send(
                sink,
                &ServerFrame::Ack {
                    id: logged.id,
                    duplicate: false,
                },
            )
            .await
        }
        ClientFrame::Approve { id, allow, by } => {
            let who = approvals::who(client, by.as_deref());
            match shared.approvals.answer(&id, allow, &who).await {
                Ok(noted) => {
                    let ack = ServerFrame::Ack {
                        id: noted,
                        duplicate: false,
                    };
                    send(sink, &ack).await
                }
                Err(err) => refuse(sink, ErrorCode::Refused, err.to_string()).await,
            }
        }
        ClientFrame::Interrupt => {
            let running = handle.interrupt();
            send(sink, &ServerFrame::Interrupted { running }).await
        }
        ClientFrame::History { before, limit } => {
            let limit = limit.unwrap_or(50).clamp(1, 1000);
            let messages = shared.log.page(agent, before, limit).await?;
            send(sink, &ServerFrame::History { messages }).await
        }
        ClientFrame::Status => {
            let status = status(shared, handle).await?;
            send(sink, &ServerFrame::Status(status)).await
        }
        ClientFrame::Notify { key, text, source } => {
            if let Some(why) = check_submit(&text, &source, Some(&key)) {
                return refuse(sink, ErrorCode::Refused, why).await;
            }
            match shared.log.notify(agent, &key, &text, &source).await {
                Ok((seq, duplicate)) => {
                    let status = if duplicate {
                        ReceiptStatus::Duplicate
                    } else {
                        handle.wake();
                        ReceiptStatus::Accepted
                    };
                    send(sink, &ServerFrame::Receipt { status, seq }).await
                }
                Err(err) => {
                    refuse(
                        sink,
                        ErrorCode::Storage,
                        format!("the event was not stored: {err}"),
                    )
                    .await
                }
            }
        }
        ClientFrame::ScheduleAdd { when, text } => {
            if text.trim().is_empty() {
                return refuse(
                    sink,
                    ErrorCode::Refused,
                    "the schedule's text is empty".into(),
                )
                .await;
            }
            match When::parse(&when, chrono::Utc::now()) {
                Ok(when) => {
                    let schedule = shared.log.add_schedule(agent, when, &text).await?;
                    handle.wake();
                    send(sink, &schedules(vec![schedule])).await
                }
                Err(err) => refuse(sink, ErrorCode::Refused, err.to_string()).await,
            }
        }
        ClientFrame::ScheduleList => {
            let list = shared.log.schedules(agent).await?;
            send(sink, &schedules(list)).await
        }
        ClientFrame::ScheduleCancel { id } => {
            let before = shared.log.schedules(agent).await?;
            if shared.log.cancel_schedule(agent, id).await? {
                let cancelled = before.into_iter().filter(|s| s.id == id).collect();
                send(sink, &schedules(cancelled)).await
            } else {
                refuse(
                    sink,
                    ErrorCode::Refused,
                    format!("there is no active schedule #{id}"),
                )
                .await
            }
        }
        ClientFrame::Backup { path } => {
            let target = std::path::Path::new(&path);
            if !target.is_absolute() || target.exists() {
                let why =
                    format!("the backup path must be absolute and must not exist yet: {path}");
                return refuse(sink, ErrorCode::Refused, why).await;
            }
            match shared.log.backup(target).await {
                Ok(bytes) => send(sink, &ServerFrame::BackedUp { path, bytes }).await,
                Err(err) => {
                    refuse(
                        sink,
                        ErrorCode::Refused,
                        format!("the backup failed: {err}"),
                    )
                    .await
                }
            }
        }
        ClientFrame::StateGet { name } => {
            let value = shared.log.get_state(&name).await?;
            send(sink, &ServerFrame::State { name, value }).await
        }
        ClientFrame::StateSet { name, value } => {
            shared.log.set_state(&name, &value).await?;
            send(
                sink,
                &ServerFrame::State {
                    name,
                    value: Some(value),
                },
            )
            .await
        }
        ClientFrame::ImagePut {
            media_type,
            data_base64,
        } => {
            let answer = shared.images.answer_put(&media_type, &data_base64).await;
            send(sink, &answer).await
        }
        ClientFrame::ImageGet { sha256 } => {
            send(sink, &shared.images.answer_get(&sha256).await).await
        }
        ClientFrame::Stats { days } => {
            let days = days.unwrap_or(7).clamp(1, 3660);
            let today = chrono::Local::now().date_naive();
            let since = crate::usage::window_start(today, days);
            let rows = shared.log.usage_stats(since).await?;
            send(sink, &ServerFrame::Stats { days, rows }).await
        }
    }
}

fn schedules(list: Vec<Schedule>) -> ServerFrame {
    ServerFrame::Schedules {
        schedules: list
            .into_iter()
            .map(|s| ScheduleInfo {
                id: s.id,
                when: s.when,
                text: s.text,
                next: s.next,
            })
            .collect(),
    }
}

/// Why a submit is refused, if it is.
fn check_submit(text: &str, source: &str, key: Option<&str>) -> Option<String> {
    if text.trim().is_empty() {
        return Some("the message is empty".into());
    }
    if source.is_empty() || source.len() > 64 || source.chars().any(char::is_whitespace) {
        return Some("`source` must be a short name without spaces, like `terminal`".into());
    }
    if key.is_some_and(|key| key.is_empty() || key.len() > 256) {
        return Some("`key` must be 1 to 256 bytes".into());
    }
    None
}

async fn status(shared: &Shared, handle: &AgentHandle) -> Result<Status, LogError> {
    let agent = &handle.name;
    let next_id = shared.log.next_id(agent).await?;
    let taken_after = shared
        .log
        .last_turn(agent)
        .await?
        .map_or(-1, |(turn, _)| turn.taken_through as i64);
    let waiting = shared.log.waiting(agent, taken_after).await?.len() as u64;
    Ok(Status {
        agent: agent.clone(),
        busy: handle.is_busy(),
        last_id: next_id.checked_sub(1),
        waiting,
        model: shared.model.clone(),
        clients: shared.clients.load(Ordering::Relaxed),
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        uptime_secs: shared.started.elapsed().as_secs(),
        agents: std::iter::once(&shared.agent)
            .chain(
                shared
                    .agents
                    .values()
                    .filter(|h| h.name != shared.agent.name),
            )
            .map(|h| AgentStatus {
                name: h.name.clone(),
                busy: h.is_busy(),
            })
            .collect(),
        next_schedule: shared
            .log
            .schedules(agent)
            .await?
            .first()
            .map(|s| format!("{} {}", s.next, s.text)),
        cost_today_usd: Some(
            shared
                .log
                .spending(chrono::Local::now().date_naive())
                .await?
                .today,
        ),
    })
}
