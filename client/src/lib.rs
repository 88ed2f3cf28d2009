//! hearth-client: the connection library every client of `hearthd` is built
//! on — the terminal and script commands (`hearth-cli`) and the bridges
//! (`hearth-bridges`).
//!
//! - `connection.rs`: a greeted WebSocket connection to `hearthd`'s Unix
//!   socket, following the top agent or a named one.
//! - `running.rs`: connecting to a daemon that is already running (never
//!   starting one), the error the commands and bridges share, and `ask`, one
//!   request and its expected answer.
//! - `log_walk.rs`: reading the log backwards in `history` pages.
//! - `images.rs`: image files to attach, stored in and fetched from the daemon.
//! - `media.rs`: audio and documents to attach, stored in the daemon.
//!
//! Where a home's files live (the socket among them) is `hearth_protocol::home`,
//! shared with the daemon.

pub mod connection;
pub mod images;
pub mod log_walk;
pub mod media;
pub mod running;

pub use connection::{ConnectError, Connection, Welcome};
pub use log_walk::LogWalk;
pub use running::{ask, ask_once, connect_running, CommandError};
