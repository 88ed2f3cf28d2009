//! The bridge's life: read the configuration and token, take the home's
//! bridge lock, read the bridge's state from the daemon, then run the
//! inbound and outbound halves until one fails, the daemon goes away or the
//! process is told to stop.
//!
//! Everything the bridge must remember lives in the daemon's database (the
//! update offset, the delivery cursor, the chats), so the process itself
//! keeps nothing and may be killed at any moment: hearthd starts it again.

use super::api::{Api, ApiError};
use super::config::{ConfigError, TelegramConfig};
use super::inbound::Inbound;
use super::outbound::Outbound;
use crate::bridge::delivery::{run_halves, Cursor};
use crate::bridge::link::{self, LinkError};
use crate::bridge::lock::{lock, LockError};
use crate::bridge::people::parse_chats;
use hearth_client::connect_running;
use hearth_protocol::home::Home;
use std::collections::BTreeSet;
use std::future::Future;
use tokio::sync::watch;

/// What the bridge's messages and notes say they came from.
pub const SOURCE: &str = "telegram";

/// One past the last update whose message the daemon acknowledged: the
/// next `getUpdates` offset.
pub const OFFSET_STATE: &str = "telegram.offset";

/// The id of the last log message delivered or skipped, or `start` when
/// none was yet and the log was empty.
pub const CURSOR_STATE: &str = "telegram.cursor";

/// The private chats of allowed users that have written to the bot, as a
/// JSON list of ids.
pub const CHATS_STATE: &str = "telegram.chats";

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error("Telegram refused the bot token ({error}); check ${env} or secrets.env")]
    Unauthorized { error: ApiError, env: String },
    #[error(transparent)]
    Api(#[from] ApiError),
}

impl BridgeError {
    /// Whether the bridge cannot run until its configuration (or token) is
    /// fixed, so starting it again would only fail again.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            BridgeError::Config(_) | BridgeError::Unauthorized { .. }
        )
    }
}

/// Runs the bridge for `home` until `shutdown` completes or it fails. Why it
/// cannot start is said on stderr, which hearthd keeps in its log and shows
/// in `hearth status` — never in the agent's conversation.
pub async fn run(home: &Home, shutdown: impl Future<Output = ()>) -> Result<(), BridgeError> {
    let setup = TelegramConfig::load(home).and_then(|config| {
        let token = config.token(home)?;
        Ok((config, token))
    });
    let (config, token) = setup?;
    let _lock = lock(&home.bridge_lock("telegram"), "Telegram", "telegram")?;
    let api = Api::new(&config.api_base, &token)?;

    let (mut control, _) = connect_running(home, None, "telegram", None)
        .await
        .map_err(LinkError::from)?;
    let offset =
        link::read_state(&mut control, OFFSET_STATE, |text| text.parse::<i64>().ok()).await?;
    let cursor = link::read_state(&mut control, CURSOR_STATE, Cursor::parse).await?;
    let chats: BTreeSet<i64> = link::read_state(&mut control, CHATS_STATE, parse_chats)
        .await?
        .unwrap_or_default();
    let (chats_out, chats_in) = watch::channel(chats);

    // The outbound half starts first: it fixes where delivery begins before
    // any new message can be logged by the inbound half.
    let outbound = Outbound::start(home, &api, &config, cursor, chats_in).await?;
    let inbound = Inbound::new(&api, &config, control, offset, chats_out);
    tracing::info!(
        "telegram bridge running for {} allowed user(s)",
        config.allow.len()
    );
    let (stop, stopping) = watch::channel(false);
    run_halves(outbound.run(stopping), inbound.run(), shutdown, stop).await
}
