//! hearth-cli: the `hearth` program's own parts, built on the connection
//! library (`hearth-client`).
//!
//! - `terminal.rs`: the interactive terminal client (`hearth` with no subcommand).
//! - `approvals.rs`: the terminal's side of approvals: requests shown, `y`/`n` answers.
//! - `session.rs`: how events look in the terminal, and what it remembers.
//! - `launch.rs`: attaching, with `hearthd` started in the background.
//! - `commands.rs`: the scripted subcommands (`send`, `log`, `status`, `interrupt`).
//! - `inbox.rs`: `hearth notify` and `hearth schedule`.
//! - `service.rs`: `hearth backup` and `hearth service install`.
//! - `stats.rs`: `hearth stats`, model usage and cost per day and agent.
//!
//! The binary's thin `main.rs` is built by the root package; it also runs
//! the bridges (`hearth telegram`, `hearth whatsapp`) from `hearth-bridges`.

pub mod approvals;
pub mod commands;
pub mod inbox;
pub mod launch;
pub mod service;
pub mod session;
pub mod stats;
pub mod terminal;
