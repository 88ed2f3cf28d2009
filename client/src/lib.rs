//! hearth-client: the connection library and the clients built on it.
//!
//! - `connection.rs`: a greeted WebSocket connection to `hearthd`'s Unix socket.
//! - `terminal.rs`: the interactive terminal client (`hearth` with no subcommand).
//! - `approvals.rs`: the terminal's side of approvals: requests shown, `y`/`n` answers.
//! - `commands.rs`: the scripted subcommands (`send`, `log`, `status`, `interrupt`).
//! - `launch.rs`: attaching, with `hearthd` started in the background.
//! - `inbox.rs`: `hearth notify` and `hearth schedule`.
//! - `session.rs`: how events look in the terminal, and what it remembers.
//! - `service.rs`: `hearth backup` and `hearth service install`.
//! - `stats.rs`: `hearth stats`, model usage and cost per day and agent.
//! - `images.rs`: image files to attach, stored in and fetched from the daemon.
//! - `bridge/`: what the bridges share: the daemon link, ordered delivery
//!   from a stored cursor, splitting, the allowlist's refusal, the lock.
//! - `telegram/`: the Telegram bridge (`hearth telegram`).
//! - `whatsapp/`: the WhatsApp bridge (`hearth whatsapp`): the Cloud API, or
//!   a linked personal account (`whatsapp/web/`, feature `whatsapp-web`).
//!
//! Where a home's files live (the socket among them) is `hearth_protocol::home`,
//! shared with the daemon. The binary's thin `main.rs` is built by the root
//! package.

pub mod approvals;
pub mod bridge;
pub mod commands;
pub mod connection;
pub mod images;
pub mod inbox;
pub mod launch;
pub mod service;
pub mod session;
pub mod stats;
pub mod telegram;
pub mod terminal;
pub mod whatsapp;

pub use connection::{ConnectError, Connection, Welcome};
