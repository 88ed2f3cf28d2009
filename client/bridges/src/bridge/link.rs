//! A bridge's side of its daemon connections: requests whose answers may
//! come after live events, the bridge's small state in the daemon, notes,
//! and waiting on the platform while the connection keeps being read.

use hearth_client::CommandError;
use hearth_client::{ConnectError, Connection};
use hearth_protocol::{ClientFrame, ErrorCode, Event, ServerFrame};
use std::future::Future;

/// What can go wrong between a bridge and the daemon.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error(transparent)]
    Connection(#[from] ConnectError),
    #[error("hearthd refused: {message}")]
    Refused { code: ErrorCode, message: String },
    #[error("hearthd answered with an unexpected frame: {0}")]
    Unexpected(String),
    #[error("the bridge's state `{name}` in hearthd is unreadable: {value:?}")]
    BadState { name: &'static str, value: String },
}

/// Sends `frame` and returns the daemon's answer; live events that arrive
/// first go to `on_event`. An `error` frame is [`LinkError::Refused`].
pub async fn request(
    connection: &mut Connection,
    frame: ClientFrame,
    on_event: &mut dyn FnMut(Event),
) -> Result<ServerFrame, LinkError> {
    match connection.request(&frame, on_event).await? {
        ServerFrame::Error { code, message } => Err(LinkError::Refused { code, message }),
        answer => Ok(answer),
    }
}

/// Submits a person's message under the idempotency `key` made of the
/// platform's message id (logged once, however often it is submitted). A
/// message the daemon refuses for good is noted and passed over, so it does
/// not stall the ones after it; other failures are the caller's. `person`
/// names the writer when that is not the owner: the daemon then treats the
/// words as untrusted input.
pub async fn submit(
    connection: &mut Connection,
    source: &str,
    key: String,
    text: String,
    images: Vec<String>,
    person: Option<String>,
    media: Vec<hearth_protocol::MediaAttachment>,
) -> Result<(), LinkError> {
    let frame = ClientFrame::Submit {
        text,
        source: source.to_string(),
        key: Some(key.clone()),
        images,
        person,
        media,
    };
    match request(connection, frame, &mut |_| {}).await {
        Ok(ServerFrame::Ack { id, duplicate }) => {
            tracing::debug!("{key} is message #{id} (duplicate: {duplicate})");
            Ok(())
        }
        Ok(other) => Err(LinkError::Unexpected(other.encode())),
        Err(LinkError::Refused {
            code: ErrorCode::Refused,
            message,
        }) => {
            let text = format!("{source}: hearthd refused message {key}: {message}");
            note(connection, source, text, &mut |_| {}).await
        }
        Err(err) => Err(err),
    }
}

/// Reads a state the bridge keeps in the daemon.
pub async fn get_state(
    connection: &mut Connection,
    name: &str,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<String>, LinkError> {
    let frame = ClientFrame::StateGet {
        name: name.to_string(),
    };
    match request(connection, frame, on_event).await? {
        ServerFrame::State { value, .. } => Ok(value),
        other => Err(LinkError::Unexpected(other.encode())),
    }
}

/// Reads a state and parses it; `None` when it was never written.
pub async fn read_state<T>(
    connection: &mut Connection,
    name: &'static str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, LinkError> {
    match get_state(connection, name, &mut |_| {}).await? {
        None => Ok(None),
        Some(value) => match parse(value.trim()) {
            Some(parsed) => Ok(Some(parsed)),
            None => Err(LinkError::BadState { name, value }),
        },
    }
}

/// Writes a state; returns once the daemon holds it durably.
pub async fn set_state(
    connection: &mut Connection,
    name: &str,
    value: String,
    on_event: &mut dyn FnMut(Event),
) -> Result<(), LinkError> {
    let frame = ClientFrame::StateSet {
        name: name.to_string(),
        value,
    };
    match request(connection, frame, on_event).await? {
        ServerFrame::State { .. } => Ok(()),
        other => Err(LinkError::Unexpected(other.encode())),
    }
}

/// Logs a `note` from the bridge named `source`; returns once it is durable.
pub async fn note(
    connection: &mut Connection,
    source: &str,
    text: String,
    on_event: &mut dyn FnMut(Event),
) -> Result<(), LinkError> {
    tracing::info!("{text}");
    let frame = ClientFrame::Note {
        text,
        source: source.to_string(),
    };
    match request(connection, frame, on_event).await? {
        ServerFrame::Ack { .. } => Ok(()),
        other => Err(LinkError::Unexpected(other.encode())),
    }
}

/// Runs `work` (a call to the platform, a wait) while reading the
/// connection, so the daemon's events never pile up unread and a daemon that
/// goes away is noticed at once. Events go to `on_event`.
pub async fn beside<F: Future>(
    connection: &mut Connection,
    work: F,
    on_event: &mut dyn FnMut(Event),
) -> Result<F::Output, LinkError> {
    tokio::pin!(work);
    loop {
        tokio::select! {
            output = &mut work => return Ok(output),
            frame = connection.next() => match frame? {
                None => return Err(ConnectError::Closed.into()),
                Some(ServerFrame::Event(event)) => on_event(event),
                Some(other) => tracing::warn!("unexpected frame from hearthd: {}", other.encode()),
            },
        }
    }
}
