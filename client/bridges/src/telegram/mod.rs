//! The Telegram bridge: `hearth telegram`, a client of the daemon like the
//! terminal, which relays the allowed users' messages in and the agent's
//! replies out through a Telegram bot. hearthd starts it when `config.toml`
//! has a `[telegram]` table. What it shares with the WhatsApp bridge (the
//! daemon link, ordered delivery, splitting, the allowlist's refusal, the
//! lock) is in `crate::bridge`.
//!
//! - `config.rs`: the `[telegram]` table and the bot token.
//! - `api.rs`: the Bot API client (long polling, sending) and its errors.
//! - `bridge.rs`: start-up, the state names, running both halves.
//! - `inbound.rs`: Telegram → daemon: allowlist, submit with idempotency keys,
//!   the update offset confirmed only after the daemon acknowledged.
//! - `outbound.rs`: daemon → Telegram: the courier of ordered delivery, with
//!   retries, fallbacks and "typing…".
//! - `format.rs`: Markdown as Telegram HTML, through the bridges' Markdown
//!   core (pure).
//! - `photos.rs`: owners' photos in as images, shown images out with `sendPhoto`.
//! - `approval.rs`: approvals asked with Allow and Deny buttons, and answered
//!   by a press.

pub mod api;
pub mod approval;
pub mod bridge;
pub mod config;
pub mod files;
pub mod format;
pub mod inbound;
pub mod outbound;
mod photos;

pub use bridge::{run, BridgeError};
pub use config::TelegramConfig;
