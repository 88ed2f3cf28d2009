//! What the Telegram and WhatsApp bridges share. A bridge is a client of
//! the daemon like the terminal: it relays the allowed people's messages in
//! and the agent's messages out, keeps everything it must remember in the
//! daemon's database, and can be killed at any moment.
//!
//! - `config.rs`: a bridge's table of `config.toml`, its secrets from the
//!   environment or `secrets.env`, what goes out besides replies.
//! - `link.rs`: requests, state and notes over the daemon connections.
//! - `files.rs`: a voice note or document a person sent, stored in the daemon.
//! - `delivery.rs`: the agent's messages out in log order from a cursor
//!   stored in the daemon (the daemon's side, [`delivery::Feed`]).
//! - `courier.rs`: the platform's side, [`courier::Courier`] (who gets
//!   what, how one send goes, what the platform refused), and the one loop
//!   every bridge sends through: split at the platform's limit, waits and
//!   retries, skips with a note.
//! - `people.rs`: the one gate for strangers ([`people::Gate`]: refused
//!   once per run, with a note) and the chats that get the agent's messages.
//! - `approval.rs`: an approval request as a bridge's message.
//! - `lock.rs`: one bridge of a kind per home.
//! - `markdown/`: the agent's Markdown read once and rendered for each
//!   platform, cut between blocks at its limit (pure).
//! - `multipart.rs`: an upload's `multipart/form-data` body (pure).
//! - `fitting.rs`: an image fitted to the platform before it goes out: a
//!   photo, a document when it cannot be one, or a refusal in words.
//! - `backoff.rs` and `split.rs`: waits between retries, and long text in
//!   parts a platform takes (pure).

pub mod approval;
pub mod backoff;
pub mod config;
pub mod courier;
pub mod delivery;
pub mod files;
pub mod fitting;
pub mod link;
pub mod lock;
pub mod markdown;
pub mod multipart;
pub mod people;
pub mod split;

/// The exit status of a bridge that cannot run as configured; defined with
/// what the daemon and the bridges agree on.
pub use hearth_protocol::exit::EXIT_CONFIG;
