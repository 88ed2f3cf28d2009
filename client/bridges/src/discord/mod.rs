//! The Discord bridge: `hearth discord`, a client of the daemon like the
//! terminal, which relays the allowed people's messages in and the agent's
//! replies out as a Discord bot, over the Gateway (twilight-gateway) and
//! the REST API (twilight-http). hearthd starts it when `config.toml` has
//! a `[discord]` table. What it shares with the other bridges (the daemon
//! link, ordered delivery, the gate for strangers, the Markdown core, the
//! lock) is in `crate::bridge`.
//!
//! - `config.rs`: the `[discord]` table: the token's variable, who is
//!   allowed, the owner, the one server channel besides direct messages.
//! - `rest.rs`: the REST calls made, and what a refusal means.
//! - `bridge.rs`: start-up, the state names, running both halves.
//! - `inbound.rs`: Gateway → daemon: allowlist, files, idempotency keys,
//!   buttons pressed; on each (re)connect, what was written while the bot
//!   was away, read back over REST.
//! - `marks.rs`: how far each chat was read, so nothing written while the
//!   bridge was away is lost and nothing is taken twice (pure).
//! - `outbound.rs`: daemon → Discord: the courier of ordered delivery.
//! - `format.rs`: Markdown in Discord's dialect, 2,000 characters a
//!   message (pure).
//! - `approval.rs`: approvals as messages with Allow and Deny buttons.

pub mod approval;
pub mod bridge;
pub mod config;
pub mod format;
pub mod inbound;
pub mod marks;
pub mod outbound;
pub mod rest;

pub use bridge::{run, BridgeError};
pub use config::DiscordConfig;
