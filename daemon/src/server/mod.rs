//! The socket: WebSocket over the daemon's Unix socket (or TCP with a
//! token), one task per client.
//!
//! A client says `hello`; the daemon answers `welcome`, sends the messages
//! after the client's `since` (if given) and then every event live. Messages
//! are sent in id order and never twice: the subscription to live events is
//! taken before the catch-up is read, and live messages at or below the last
//! id sent are skipped. A client too slow for the live stream is caught up
//! from the log rather than dropped; what waits for it is bounded in bytes.
//!
//! Bad input — not JSON, an unknown type, too large, another protocol
//! version, a frame out of sequence — gets an `error` frame and changes nothing.
//!
//! - `listener.rs`: where clients connect (the doors), and the accept loop.
//! - `websocket.rs`: one client's WebSocket: frames in and out, decoded.
//! - `hello.rs`: the handshake: version, the TCP token or the Unix socket's
//!   owner key, which agent.
//! - `connection.rs`: one client's protocol: hello, welcome, catch-up, live.
//! - `handlers.rs`: one handler per client frame, each returning its answer
//!   or a typed [`Refusal`]; `handlers/` holds them grouped by concern.
//! - `shared.rs`: what every connection shares, and what clients ask of
//!   the daemon's own loop (`stop`, `reload`).
//! - `preauth.rs`: bounds on connections that have not said hello yet.
//! - `peer.rs`: who is at the other end of the Unix socket; a process a
//!   tool started, or one whose ancestry cannot be read whole, is turned
//!   away.
//! - `queue.rs`: one client's live events, bounded in bytes; past the
//!   bound the client is caught up from the log.
//!
//! A client that attaches gets, after `welcome`, the approvals that wait and
//! what its agent is doing (an `activity` event). When the daemon stops,
//! every connection ends with a WebSocket close frame that says why.

mod connection;
mod handlers;
mod hello;
mod listener;
mod peer;
pub mod preauth;
mod queue;
mod shared;
pub mod web;
mod websocket;

pub use handlers::Refusal;
pub use hello::token_matches;
pub use listener::{serve, serve_browser, Listener};
pub use queue::{queued_bytes, MAX_QUEUED_BYTES};
pub use shared::{Control, ReloadOutcome, Shared};
pub use websocket::Stream;
