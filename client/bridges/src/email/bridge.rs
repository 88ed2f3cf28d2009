//! The bridge's life: read the configuration and the password, take the
//! home's bridge lock, read the bridge's state from the daemon, then run
//! the inbound (IMAP) and outbound (SMTP) halves until one fails, the
//! daemon goes away, or the process is told to stop.
//!
//! Everything the bridge must remember lives in the daemon's database (the
//! delivery cursor, the folder's cursor, the people who wrote and the
//! mail to answer each), so the process keeps nothing and may be killed at
//! any moment: hearthd starts it again.

use super::approval::Open;
use super::config::{ConfigError, EmailConfig};
use super::imap::ImapError;
use super::inbound::{parse_chats, Chats, Inbound};
use super::outbound::Outbound;
use super::smtp::Smtp;
use crate::bridge::delivery::{run_halves, Cursor};
use crate::bridge::link::{self, LinkError};
use crate::bridge::lock::{lock, LockError};
use hearth_client::connect_running;
use hearth_protocol::home::Home;
use std::future::Future;
use tokio::sync::watch;

/// What the bridge's messages and notes say they came from.
pub const SOURCE: &str = "email";

/// The id of the last log message delivered or skipped (see `bridge::delivery`).
pub const CURSOR_STATE: &str = "email.cursor";

/// The folder's UIDVALIDITY and the last UID taken, `validity:uid`.
pub const FOLDER_STATE: &str = "email.folder";

/// The allowed people who have written, each with the mail a reply
/// answers, as a JSON object.
pub const CHATS_STATE: &str = "email.chats";

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error(transparent)]
    Imap(#[from] ImapError),
    #[error("SMTP: {0}")]
    Smtp(String),
}

impl BridgeError {
    /// Whether the bridge cannot run until its configuration is fixed, so
    /// starting it again would only fail again.
    pub fn is_config(&self) -> bool {
        matches!(self, BridgeError::Config(_) | BridgeError::Smtp(_))
    }
}

/// Runs the bridge for `home` until `shutdown` completes or it fails. Why it
/// cannot start is said on stderr, which hearthd keeps in its log and shows
/// in `hearth status` — never in the agent's conversation.
pub async fn run(home: &Home, shutdown: impl Future<Output = ()>) -> Result<(), BridgeError> {
    let config = EmailConfig::load(home)?;
    let password = config.password(home)?;
    let _lock = lock(&home.bridge_lock("email"), "email", "email")?;
    let smtp = Smtp::new(&config, &password).map_err(BridgeError::Smtp)?;
    let (mut control, _) = connect_running(home, None, "email", None)
        .await
        .map_err(LinkError::from)?;
    let cursor = link::read_state(&mut control, CURSOR_STATE, Cursor::parse).await?;
    let chats: Chats = link::read_state(&mut control, CHATS_STATE, parse_chats)
        .await?
        .unwrap_or_default();
    let (chats_out, chats_in) = watch::channel(chats);
    let open = Open::default();

    // The outbound half starts first: it fixes where delivery begins before
    // any new message can be logged by the inbound half.
    let outbound = Outbound::start(home, &smtp, &config, cursor, chats_in, open.clone()).await?;
    let inbound = Inbound::new(&smtp, &config, &password, control, chats_out, open);
    tracing::info!(
        "email bridge running as {} for {} allowed addresses",
        config.address,
        config.allow.len()
    );
    let (stop, stopping) = watch::channel(false);
    run_halves(outbound.run(stopping), inbound.run(), shutdown, stop).await
}
