//! The Matrix bridge: `hearth matrix`, a client of the daemon like the
//! terminal, which relays the allowed people's messages in and the agent's
//! replies out through a Matrix account of the agent's own, end-to-end
//! encrypted. hearthd starts it when `config.toml` has a `[matrix]` table.
//! The account itself (matrix-sdk, its keys and store) lives in the
//! hearth-matrix program (`client/matrix-client/`), which the bridge starts
//! and speaks with over stdin and stdout. What it shares with the other
//! bridges is in `crate::bridge`.
//!
//! - `config.rs`: the `[matrix]` table: the homeserver, the account and its
//!   secret, who is allowed, where hearth-matrix is.
//! - `sidecar.rs`: hearth-matrix started, its requests and events.
//! - `bridge.rs`: start-up, the state names, running both halves.
//! - `inbound.rs`: Matrix → daemon: invites, allowlist, files, idempotency
//!   keys, answers to approvals.
//! - `outbound.rs`: daemon → Matrix: the courier of ordered delivery.
//! - `format.rs`: Markdown as Matrix HTML beside a plain body (pure).
//! - `approval.rs`: approvals asked, and answered by a reaction or a reply.

pub mod approval;
pub mod bridge;
pub mod config;
pub mod format;
pub mod inbound;
pub mod outbound;
pub mod sidecar;

pub use bridge::{run, BridgeError};
pub use config::MatrixConfig;
