//! hearth-bridges: the programs that relay between a messaging platform and
//! the agent, each a client of `hearthd` over the connection library
//! (`hearth-client`). Their platform dependencies (HTTP server, signatures,
//! the WhatsApp Web protocol) are compiled in this crate only.
//!
//! - `bridge/`: what the bridges share: the daemon link; the one delivery
//!   loop (in log order from a stored cursor, split at the platform's
//!   limit, retried, skipped with a note) with the platform's part behind
//!   the `Courier` trait (`bridge/courier.rs`), which a new channel
//!   implements; the one gate for strangers (`bridge/people.rs`); the
//!   agent's Markdown read once and rendered for each platform
//!   (`bridge/markdown/`); the lock.
//! - `telegram/`: the Telegram bridge (`hearth telegram`).
//! - `signal/`: the Signal bridge (`hearth signal`), through signal-cli's
//!   JSON-RPC interface.
//! - `email/`: the email bridge (`hearth email`): IMAP in, SMTP out,
//!   senders believed only as the user's receiving server vouches.
//! - `discord/`: the Discord bridge (`hearth discord`), a bot over the
//!   Gateway and the REST API.
//! - `matrix/`: the Matrix bridge (`hearth matrix`), end-to-end encrypted,
//!   through the hearth-matrix program (`client/matrix-client/`).
//! - `whatsapp/`: the WhatsApp bridge (`hearth whatsapp`): the Cloud API, or
//!   a linked personal account (`whatsapp/web/`, feature `whatsapp-web`).

pub mod bridge;
pub mod discord;
pub mod email;
pub mod matrix;
pub mod signal;
pub mod telegram;
pub mod whatsapp;
