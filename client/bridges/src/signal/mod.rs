//! The Signal bridge: `hearth signal`, a client of the daemon like the
//! terminal, which relays the allowed people's messages in and the agent's
//! replies out through signal-cli's JSON-RPC interface. hearthd starts it
//! when `config.toml` has a `[signal]` table. What it shares with the other
//! bridges (the daemon link, ordered delivery, splitting, the gate for
//! strangers, the lock) is in `crate::bridge`.
//!
//! - `config.rs`: the `[signal]` table: the account, who is allowed, how
//!   signal-cli is reached.
//! - `rpc.rs`: JSON-RPC over a Unix or TCP socket: requests and answers,
//!   the `receive` notifications.
//! - `signal_cli.rs`: signal-cli started by the bridge when configured so.
//! - `api.rs`: the methods called (`send`, `sendTyping`, `getAttachment`,
//!   `subscribeReceive`) and what a send's answer means.
//! - `envelope.rs`: what arrived, read and classified (pure).
//! - `bridge.rs`: start-up, the state names, running both halves.
//! - `inbound.rs`: Signal → daemon: allowlist, files, idempotency keys,
//!   answers to approvals.
//! - `outbound.rs`: daemon → Signal: the courier of ordered delivery.
//! - `format.rs`: Markdown as Signal's text styles (pure).
//! - `approval.rs`: approvals asked, and answered by a reaction or a reply.

pub mod api;
pub mod approval;
pub mod bridge;
pub mod config;
pub mod envelope;
pub mod format;
pub mod inbound;
pub mod outbound;
pub mod rpc;
pub mod signal_cli;

pub use bridge::{run, BridgeError};
pub use config::SignalConfig;
