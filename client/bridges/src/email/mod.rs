//! The email bridge: `hearth email`, a client of the daemon like the
//! terminal, which reads the allowed people's mail from the agent's
//! mailbox over IMAP and sends the agent's replies over SMTP, threaded
//! under the mail they answer. hearthd starts it when `config.toml` has an
//! `[email]` table. What it shares with the other bridges (the daemon
//! link, ordered delivery, the gate for strangers, the lock) is in
//! `crate::bridge`.
//!
//! A `From` header is whatever the sender wrote, so a mail counts as the
//! allowed person's only when the user's own receiving server vouches for
//! it (`authentication.rs`); every other mail is recorded as refused and
//! never answered.
//!
//! - `config.rs`: the `[email]` table: the servers, the login, who is
//!   allowed, which server's verdict is trusted.
//! - `authentication.rs`: the `Authentication-Results` verdict on a
//!   sender (pure).
//! - `incoming.rs`: a mail read: sender, thread, words, files (pure).
//! - `outgoing.rs`: a reply or a new mail built, threaded (pure).
//! - `imap.rs`: the folder over IMAP: new mail by UID, IDLE.
//! - `smtp.rs`: mail out over SMTP.
//! - `bridge.rs`: start-up, the state names, running both halves.
//! - `inbound.rs`: mail → daemon: reconnects, the folder's cursor, the
//!   checks, files, answers to approvals.
//! - `outbound.rs`: daemon → mail: the courier of ordered delivery.
//! - `approval.rs`: approvals asked in a mail, answered by a reply.

pub mod approval;
pub mod authentication;
pub mod bridge;
pub mod config;
pub mod imap;
pub mod inbound;
pub mod incoming;
pub mod outbound;
pub mod outgoing;
pub mod smtp;

pub use bridge::{run, BridgeError};
pub use config::EmailConfig;
