//! hearth-client: the connection library and the clients built on it.
//!
//! - `connection.rs`: a greeted WebSocket connection to `hearthd`'s Unix socket.
//! - `terminal.rs`: the interactive terminal client (`hearth` with no subcommand).
//! - `commands.rs`: the scripted subcommands (`send`, `log`, `status`, `interrupt`).
//! - `inbox.rs`: `hearth notify` and `hearth schedule`.
//! - `service.rs`: `hearth backup` and `hearth service install`.
//! - `stats.rs`: `hearth stats`, model usage and cost per day and agent.
//! - `telegram/`: the Telegram bridge (`hearth telegram`).
//!
//! Where a home's files live (the socket among them) is `hearth_protocol::home`,
//! shared with the daemon. The binary's thin `main.rs` is built by the root
//! package.

pub mod commands;
pub mod connection;
pub mod inbox;
pub mod service;
pub mod stats;
pub mod telegram;
pub mod terminal;

pub use connection::{ConnectError, Connection, Welcome};
