//! `hearth setup`: an interactive wizard that writes a working
//! `config.toml` and `secrets.env`, and a flag for every question so that
//! scripts can run it too.
//!
//! - `wizard.rs`: the steps in order, and what is written when.
//! - `model.rs`: provider, model, key and layout; the test request.
//! - `telegram.rs`: the bot token (`getMe`) and pairing by code.
//! - `discord.rs`: the bot token (checked with Discord) and pairing by
//!   code over the Gateway.
//! - `signal.rs`: the agent's Signal number, the way to signal-cli, and
//!   pairing by code.
//! - `email.rs`: the agent's mailbox, who may write, whose verdict on
//!   senders is believed; the login proved.
//! - `matrix.rs`: the agent's Matrix account (its password proved by one
//!   login) and the people allowed.
//! - `ask.rs`: questions on a terminal, or answers from flags.
//! - `edit.rs`: `config.toml` edited in place, the rest of it kept (pure).
//! - `files.rs`: private, atomic writes; `secrets.env` entries.

mod ask;
mod discord;
mod edit;
mod email;
mod files;
mod matrix;
mod model;
mod signal;
mod telegram;
mod wizard;

pub use wizard::{run, SetupError};

use std::time::Duration;

/// The answers given on the command line; a question whose answer is here
/// is not asked.
#[derive(Debug, Clone, Default)]
pub struct SetupOptions {
    /// `ollama`, `openai`, `anthropic`, `chatgpt` or `openai-chat`.
    pub provider: Option<String>,
    /// With `chatgpt`: sign in with a device code rather than a browser.
    pub device: bool,
    pub model: Option<String>,
    /// The provider's address (up to `/v1`), or the Ollama server's.
    pub base_url: Option<String>,
    /// The variable that holds the key, named in `[model] api_key_env`.
    pub key_env: Option<String>,
    /// The key is read from stdin and stored in `secrets.env`.
    pub key_stdin: bool,
    /// Leave Telegram as it is.
    pub no_telegram: bool,
    /// The variable (or `secrets.env` entry) holding the bot token.
    pub telegram_token_env: Option<String>,
    /// Pair a Telegram account by code.
    pub telegram_pair: bool,
    /// Telegram user ids to allow, without pairing.
    pub telegram_allow: Vec<i64>,
    /// Another Bot API address than Telegram's (a local Bot API server).
    pub telegram_api_base: Option<String>,
    /// Leave Signal as it is.
    pub no_signal: bool,
    /// The agent's Signal number (signal-cli's account).
    pub signal_account: Option<String>,
    /// Pair a Signal number by code.
    pub signal_pair: bool,
    /// Signal numbers to allow, without pairing.
    pub signal_allow: Vec<String>,
    /// Reach a running `signal-cli daemon --socket` here.
    pub signal_socket: Option<std::path::PathBuf>,
    /// Reach a running `signal-cli daemon --tcp` here.
    pub signal_tcp: Option<String>,
    /// The signal-cli program the bridge starts.
    pub signal_command: Option<String>,
    /// The email step's answers.
    pub email: EmailOptions,
    /// Leave Discord as it is.
    pub no_discord: bool,
    /// The variable (or `secrets.env` entry) holding the Discord bot token.
    pub discord_token_env: Option<String>,
    /// Pair a Discord account by code.
    pub discord_pair: bool,
    /// Discord user ids to allow, without pairing.
    pub discord_allow: Vec<u64>,
    /// The one server channel the bot also reads and answers in.
    pub discord_channel: Option<u64>,
    /// Another REST address than Discord's own (a test's fake).
    pub discord_api_base: Option<String>,
    /// The Matrix step's answers.
    pub matrix: MatrixOptions,
    /// How long pairing waits for the code.
    pub pair_timeout: Option<Duration>,
    /// Install the systemd user service (`Some(true)`), or not (`Some(false)`).
    pub service: Option<bool>,
    /// Ask nothing: every answer from its flag or its default.
    pub yes: bool,
}

/// The email step's answers given on the command line.
#[derive(Debug, Clone, Default)]
pub struct EmailOptions {
    /// Leave email as it is.
    pub skip: bool,
    /// The agent's own address.
    pub address: Option<String>,
    pub imap_host: Option<String>,
    pub imap_port: Option<u16>,
    pub smtp_host: Option<String>,
    pub smtp_port: Option<u16>,
    /// The mailbox's login (the address unless given).
    pub user: Option<String>,
    /// The variable (or `secrets.env` entry) holding the password.
    pub password_env: Option<String>,
    /// Addresses allowed to write to the agent.
    pub allow: Vec<String>,
    /// The authserv-id of the user's provider.
    pub authserv_id: Option<String>,
}

/// The Matrix step's answers given on the command line.
#[derive(Debug, Clone, Default)]
pub struct MatrixOptions {
    /// Leave Matrix as it is.
    pub skip: bool,
    /// The agent's homeserver.
    pub homeserver: Option<String>,
    /// The agent's Matrix account.
    pub user: Option<String>,
    /// The variable (or `secrets.env` entry) holding its password.
    pub password_env: Option<String>,
    /// Matrix ids to allow.
    pub allow: Vec<String>,
    /// The hearth-matrix program the bridge starts.
    pub command: Option<String>,
}
