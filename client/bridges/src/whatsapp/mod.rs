//! The WhatsApp bridge: `hearth whatsapp`, a client of the daemon like the
//! terminal, which relays the allowed numbers' messages in and the agent's
//! replies out. hearthd starts it when `config.toml` has a `[whatsapp]`
//! table. What it shares with the Telegram bridge (the daemon link, ordered
//! delivery, splitting, the allowlist's refusal, the lock) is in
//! `crate::bridge`.
//!
//! Two backends: the WhatsApp Business Cloud API (`backend = "cloud"`, the
//! default; the files below), and a personal account linked as a WhatsApp
//! Web device (`backend = "web"`, `hearth whatsapp link`; in `web/`, built
//! only with the `whatsapp-web` feature).
//!
//! - `config.rs`: the `[whatsapp]` table and the three secrets.
//! - `webhook.rs`: the HTTP server Meta delivers to: the verification
//!   challenge, the signature check, answering only once the daemon took
//!   the messages.
//! - `payload.rs`: what a delivery says (pure).
//! - `inbound.rs`: WhatsApp → daemon: allowlist, submit with idempotency keys.
//! - `outbound.rs`: daemon → WhatsApp: the courier of ordered delivery, the
//!   24-hour window, read marks with "typing…".
//! - `format.rs`: the agent's Markdown in WhatsApp's formatting (both
//!   backends).
//! - `graph.rs`: the Graph API client (send, read mark, media) and its errors.
//! - `media.rs`: received images in as attachments, shown images out.
//! - `bridge.rs`: start-up (and the choice of backend), the state names,
//!   running the webhook and both halves.
//! - `web/`: the linked-device backend.

pub mod bridge;
pub mod config;
pub mod format;
pub mod graph;
pub mod inbound;
pub mod media;
pub mod outbound;
pub mod payload;
#[cfg(feature = "whatsapp-web")]
pub mod web;
pub mod webhook;

pub use bridge::{link, run, BridgeError, SOURCE};
pub use config::WhatsAppConfig;
