//! One client's protocol: hello, welcome, catch-up, then the live loop that
//! answers the client's frames and forwards the log's events.

use super::handlers::{self, Context, Failure};
use super::hello;
use super::listener::Door;
use super::preauth;
use super::queue::{EventQueue, Next};
use super::shared::Shared;
use super::websocket::{ConnectionError, Stream, WebSocket};
use crate::log::Log;
use hearth_protocol::{Event, ServerFrame, PROTOCOL_VERSION};
use tokio::sync::watch;

/// Messages sent per catch-up page: few enough that a page of the largest
/// messages (1 MiB each) is a bounded read.
const CATCH_UP_PAGE: u32 = 64;

/// Serves one client until it leaves. Over TCP, nothing but a hello with
/// the right token is answered with anything but a refusal; on the Unix
/// socket a hello without the owner key is refused and the connection ends.
///
/// Until its hello is accepted the client has [`preauth::hello_deadline`]
/// and [`preauth::PREAUTH_BYTES`]; `admitted` is its place among the
/// connections that wait for their hello, given back once greeted (none
/// for a browser, whose session `web::http` checked before the upgrade).
pub async fn run(
    stream: Stream,
    door: Door<'_>,
    shared: &Shared,
    admitted: Option<preauth::Admitted>,
) -> Result<(), ConnectionError> {
    let secret = match door {
        Door::Tcp(token) => hello::Secret::Token(token),
        Door::Unix => hello::Secret::OwnerKey(&shared.owner_key),
        Door::Browser | Door::NotOwner(_) => hello::Secret::None,
    };
    let mut closing = shared.closing.subscribe();
    let (stream, budget) = preauth::Budgeted::new(stream, preauth::PREAUTH_BYTES);
    let handshake = async {
        let stream: Stream = Box::new(stream);
        let mut socket = match door {
            // `web::http` answered the handshake over HTTP.
            Door::Browser => WebSocket::upgraded(stream).await,
            Door::Unix | Door::Tcp(_) | Door::NotOwner(_) => WebSocket::accept(stream).await?,
        };
        let greeted = match door {
            Door::NotOwner(not_owner) => hello::turn_away(&mut socket, not_owner).await?,
            _ => hello::greet(&mut socket, secret, shared).await?,
        };
        Ok::<_, ConnectionError>(greeted.map(|greeted| (socket, greeted)))
    };
    // A daemon that stops meanwhile just drops a client that has not said
    // hello: it has no connection to close yet.
    let handshake = tokio::select! {
        handshake = tokio::time::timeout(preauth::hello_deadline(), handshake) => handshake,
        _ = closed(&mut closing) => return Ok(()),
    };
    let Ok(handshake) = handshake else {
        tracing::debug!("a client said no hello in time; closed");
        return Ok(());
    };
    let Some((mut socket, greeted)) = handshake? else {
        return Ok(());
    };
    budget.lift();
    if let Some(admitted) = admitted {
        admitted.greeted();
    }
    let handle = greeted.handle;
    let agent = handle.name.clone();

    // Subscribe before reading where the log ends, so nothing falls between.
    let events = EventQueue::start(shared.events.subscribe(), agent.clone());
    let next_id = shared.log.next_id(&agent).await?;
    let last_id = next_id.checked_sub(1);
    socket
        .send(&ServerFrame::Welcome {
            version: PROTOCOL_VERSION,
            agent: agent.clone(),
            last_id,
            busy: handle.is_busy(),
        })
        .await?;
    // The id of the newest message this client has: nothing at or below it is sent again.
    let mut sent_through: Option<u64> = match greeted.since {
        Some(since) => catch_up(&mut socket, &shared.log, &agent, Some(since)).await?,
        None => last_id,
    };
    // Requests that wait now: this client may answer them too.
    for request in shared.approvals.waiting() {
        socket.send(&ServerFrame::Event(request)).await?;
    }
    // What the agent is doing now; changes follow as events.
    socket
        .send(&ServerFrame::Event(handle.activity.event()))
        .await?;

    let context = Context {
        shared,
        handle: &handle,
        client: &greeted.client,
        door,
    };
    loop {
        tokio::select! {
            reason = closed(&mut closing) => return socket.close(reason).await,
            frame = socket.next_frame() => {
                let Some(frame) = frame? else { return Ok(()) };
                match handlers::answer(frame, &context).await {
                    Ok(answer) => socket.send(&answer).await?,
                    Err(Failure::Refused(refusal)) => {
                        socket.refuse(refusal.code, refusal.message).await?;
                    }
                    Err(Failure::Log(err)) => return Err(err.into()),
                }
            }
            next = events.next() => match next {
                Next::Event(event) => {
                    if let (Some(id), Some(_)) = (event.id, event.kind.message_kind()) {
                        if sent_through.is_some_and(|through| id <= through) {
                            continue;
                        }
                        sent_through = Some(id);
                    }
                    socket.send(&ServerFrame::Event(event)).await?;
                }
                // Too slow for the live stream: what was dropped comes
                // from the log, with the approvals that wait and what the
                // agent is doing now.
                Next::Behind => {
                    sent_through = catch_up(&mut socket, &shared.log, &agent, sent_through).await?;
                    for request in shared.approvals.waiting() {
                        socket.send(&ServerFrame::Event(request)).await?;
                    }
                    socket
                        .send(&ServerFrame::Event(handle.activity.event()))
                        .await?;
                }
                Next::Closed => return Err(ConnectionError::Gone),
            },
        }
    }
}

/// Completes with the close frame's reason once the daemon stops.
async fn closed(closing: &mut watch::Receiver<Option<&'static str>>) -> &'static str {
    match closing.wait_for(Option::is_some).await {
        Ok(reason) => reason.unwrap_or(hearth_protocol::CLOSE_STOPPING),
        // The daemon is gone altogether.
        Err(_) => hearth_protocol::CLOSE_STOPPING,
    }
}

/// Sends every message after `after` (all when none), page by page; returns
/// the id of the last one sent.
async fn catch_up(
    socket: &mut WebSocket,
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
            socket
                .send(&ServerFrame::Event(Event::message(&entry.message)))
                .await?;
        }
    }
}
