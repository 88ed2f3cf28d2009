//! The bridge's side of its daemon connections: requests whose answers may
//! come after live events, the bridge's small state in the daemon, notes,
//! and waiting on Telegram while the connection keeps being read.

use super::bridge::BridgeError;
use crate::connection::{ConnectError, Connection};
use hearth_protocol::{ClientFrame, Event, ServerFrame};
use std::future::Future;

/// What the bridge's messages and notes say they came from.
pub const SOURCE: &str = "telegram";

/// One past the last update whose message the daemon acknowledged: the
/// next `getUpdates` offset.
pub const OFFSET_STATE: &str = "telegram.offset";

/// The id of the last log message delivered or skipped, or `start` when
/// none was yet and the log was empty.
pub const CURSOR_STATE: &str = "telegram.cursor";

/// The private chats of allowed users that have written to the bot, as a
/// JSON list of ids.
pub const CHATS_STATE: &str = "telegram.chats";

/// Sends `frame` and returns the daemon's answer; live events that arrive
/// first go to `on_event`. An `error` frame is [`BridgeError::Refused`].
pub async fn request(
    connection: &mut Connection,
    frame: ClientFrame,
    on_event: &mut dyn FnMut(Event),
) -> Result<ServerFrame, BridgeError> {
    match connection.request(&frame, on_event).await? {
        ServerFrame::Error { code, message } => Err(BridgeError::Refused { code, message }),
        answer => Ok(answer),
    }
}

/// Reads a state the bridge keeps in the daemon.
pub async fn get_state(
    connection: &mut Connection,
    name: &str,
    on_event: &mut dyn FnMut(Event),
) -> Result<Option<String>, BridgeError> {
    let frame = ClientFrame::StateGet {
        name: name.to_string(),
    };
    match request(connection, frame, on_event).await? {
        ServerFrame::State { value, .. } => Ok(value),
        other => Err(BridgeError::Unexpected(other.encode())),
    }
}

/// Writes a state; returns once the daemon holds it durably.
pub async fn set_state(
    connection: &mut Connection,
    name: &str,
    value: String,
    on_event: &mut dyn FnMut(Event),
) -> Result<(), BridgeError> {
    let frame = ClientFrame::StateSet {
        name: name.to_string(),
        value,
    };
    match request(connection, frame, on_event).await? {
        ServerFrame::State { .. } => Ok(()),
        other => Err(BridgeError::Unexpected(other.encode())),
    }
}

/// Logs a `note` from the bridge; returns once it is durable.
pub async fn note(
    connection: &mut Connection,
    text: String,
    on_event: &mut dyn FnMut(Event),
) -> Result<(), BridgeError> {
    tracing::info!("{text}");
    let frame = ClientFrame::Note {
        text,
        source: SOURCE.to_string(),
    };
    match request(connection, frame, on_event).await? {
        ServerFrame::Ack { .. } => Ok(()),
        other => Err(BridgeError::Unexpected(other.encode())),
    }
}

/// Runs `work` (a call to Telegram, a wait) while reading the connection, so
/// the daemon's events never pile up unread and a daemon that goes away is
/// noticed at once. Events go to `on_event`.
pub async fn beside<F: Future>(
    connection: &mut Connection,
    work: F,
    on_event: &mut dyn FnMut(Event),
) -> Result<F::Output, BridgeError> {
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
