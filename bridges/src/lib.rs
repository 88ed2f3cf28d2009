//! hearth-bridges: the programs that relay between a messaging platform and
//! the agent, each a client of `hearthd` over the connection library
//! (`hearth-client`). Their platform dependencies (HTTP server, signatures,
//! the WhatsApp Web protocol) are compiled in this crate only.
//!
//! - `bridge/`: what the bridges share: the daemon link, ordered delivery
//!   from a stored cursor, splitting, the allowlist's refusal, the lock.
//! - `telegram/`: the Telegram bridge (`hearth telegram`).
//! - `whatsapp/`: the WhatsApp bridge (`hearth whatsapp`): the Cloud API, or
//!   a linked personal account (`whatsapp/web/`, feature `whatsapp-web`).

pub mod bridge;
pub mod telegram;
pub mod whatsapp;
