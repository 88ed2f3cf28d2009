//! The bridge's life: read the configuration and the account's secret,
//! take the home's bridge lock, start hearth-matrix and log the account in
//! (the first time as a new device; after that the stored one, whose keys
//! read what was sent while the bridge was away), read the bridge's state
//! from the daemon, start syncing, then run the inbound and outbound halves
//! until one fails, the daemon or hearth-matrix goes away, or the process
//! is told to stop.
//!
//! Everything the bridge must remember about the conversation lives in the
//! daemon's database (the delivery cursor, the rooms that wrote); the
//! account's keys and where syncing stopped live in its store. The process
//! may be killed at any moment: hearthd starts it again.

use super::approval::Open;
use super::config::{ConfigError, MatrixConfig};
use super::inbound::{Inbound, Threads};
use super::outbound::Outbound;
use super::sidecar::{Sidecar, SidecarError};
use crate::bridge::delivery::{run_halves, Cursor};
use crate::bridge::link::{self, LinkError};
use crate::bridge::lock::{lock, LockError};
use crate::bridge::people::parse_chats;
use hearth_client::connect_running;
use hearth_protocol::home::Home;
use serde_json::json;
use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;

/// What the bridge's messages and notes say they came from.
pub const SOURCE: &str = "matrix";

/// The id of the last log message delivered or skipped, or `start`.
pub const CURSOR_STATE: &str = "matrix.cursor";

/// The rooms allowed people wrote in, as a JSON list of `[room, person]`.
pub const CHATS_STATE: &str = "matrix.chats";

/// The device name the account's sessions show in other clients.
pub const DEVICE_NAME: &str = "hearth";

/// How long logging in (and opening the store) may take.
const LOGIN_TIMEOUT: Duration = Duration::from_secs(60);

/// A room and the allowed person who wrote there.
pub type Chat = (String, String);

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error(transparent)]
    Sidecar(#[from] SidecarError),
}

impl BridgeError {
    /// Whether the bridge cannot run until its configuration is fixed, so
    /// starting it again would only fail again.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            BridgeError::Config(_) | BridgeError::Sidecar(SidecarError::Spawn { .. })
        )
    }
}

/// Runs the bridge for `home` until `shutdown` completes or it fails. Why it
/// cannot start is said on stderr, which hearthd keeps in its log and shows
/// in `hearth status` — never in the agent's conversation.
pub async fn run(home: &Home, shutdown: impl Future<Output = ()>) -> Result<(), BridgeError> {
    let config = MatrixConfig::load(home)?;
    let (secret_kind, secret) = config.secret(home)?;
    let _lock = lock(&home.bridge_lock("matrix"), "Matrix", "matrix")?;
    // `sidecar` is kept for as long as the bridge runs: dropping it stops
    // hearth-matrix.
    let (sidecar, events) = Sidecar::start(&config.program(), &config.store_dir(home))?;
    let mut login = json!({
        "homeserver": config.homeserver,
        "user": config.user,
        "device_name": DEVICE_NAME,
    });
    login[secret_kind] = json!(secret);
    let account = sidecar.call("login", login, LOGIN_TIMEOUT).await?;
    let (mut control, _) = connect_running(home, None, "matrix", None)
        .await
        .map_err(LinkError::from)?;
    let cursor = link::read_state(&mut control, CURSOR_STATE, Cursor::parse).await?;
    let chats: BTreeSet<Chat> = link::read_state(&mut control, CHATS_STATE, parse_chats)
        .await?
        .unwrap_or_default();
    let (chats_out, chats_in) = watch::channel(chats);
    let open = Open::default();
    let threads = Threads::default();

    // The outbound half starts first: it fixes where delivery begins before
    // any new message can be logged by the inbound half.
    let outbound = Outbound::start(
        home,
        &sidecar,
        &config,
        cursor,
        chats_in,
        open.clone(),
        threads.clone(),
    )
    .await?;
    let inbound = Inbound::new(&sidecar, &config, control, events, chats_out, open, threads);
    // Only now are events taken from Matrix: both halves are ready.
    sidecar.call("start", json!({}), LOGIN_TIMEOUT).await?;
    tracing::info!(
        "matrix bridge running as {} (device {}) for {} allowed people",
        config.user,
        account["device_id"].as_str().unwrap_or("?"),
        config.allow.len()
    );
    let (stop, stopping) = watch::channel(false);
    run_halves(outbound.run(stopping), inbound.run(), shutdown, stop).await
}
