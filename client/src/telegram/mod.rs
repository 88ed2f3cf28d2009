//! The Telegram bridge: `hearth telegram`, a client of the daemon like the
//! terminal, which relays the allowed users' messages in and the agent's
//! replies out through a Telegram bot. hearthd starts it when `config.toml`
//! has a `[telegram]` table.
//!
//! - `config.rs`: the `[telegram]` table and the bot token.
//! - `api.rs`: the Bot API client (long polling, sending) and its errors.
//! - `bridge.rs`: start-up, the one-bridge-per-home lock, running both halves.
//! - `inbound.rs`: Telegram → daemon: allowlist, submit with idempotency keys,
//!   the update offset confirmed only after the daemon acknowledged.
//! - `outbound.rs`: daemon → Telegram: what goes out, in log order from a
//!   stored cursor, with retries, fallbacks and "typing…".
//! - `format.rs` and `split.rs`: Markdown as Telegram HTML, and long text in
//!   4,096-character parts (pure).
//! - `link.rs`: requests, state and notes over the daemon connections.

pub mod api;
pub mod bridge;
pub mod config;
pub mod format;
pub mod inbound;
mod link;
pub mod outbound;
pub mod split;

pub use bridge::{run, BridgeError, EXIT_CONFIG};
pub use config::TelegramConfig;
