//! The bridge's life: read the configuration, take the home's bridge lock,
//! reach signal-cli (on its socket, at its TCP address, or started here),
//! subscribe to the messages it receives, read the bridge's state from the
//! daemon, then run the inbound and outbound halves until one fails, the
//! daemon or signal-cli goes away, or the process is told to stop.
//!
//! Everything the bridge must remember lives in the daemon's database (the
//! delivery cursor, the people who wrote), so the process keeps nothing and
//! may be killed at any moment: hearthd starts it again.

use super::api;
use super::approval::Open;
use super::config::{ConfigError, Reach, SignalConfig};
use super::inbound::Inbound;
use super::outbound::Outbound;
use super::rpc::{Rpc, RpcError};
use super::signal_cli::{self, StartError};
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
pub const SOURCE: &str = "signal";

/// The id of the last log message delivered or skipped, or `start` when
/// none was yet and the log was empty.
pub const CURSOR_STATE: &str = "signal.cursor";

/// The allowed people who have written, as a JSON list of addresses.
pub const CHATS_STATE: &str = "signal.chats";

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Rpc(#[from] RpcError),
}

impl BridgeError {
    /// Whether the bridge cannot run until its configuration is fixed, so
    /// starting it again would only fail again.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            BridgeError::Config(_) | BridgeError::Start(StartError::Spawn { .. })
        )
    }
}

/// Runs the bridge for `home` until `shutdown` completes or it fails. Why it
/// cannot start is said on stderr, which hearthd keeps in its log and shows
/// in `hearth status` — never in the agent's conversation.
pub async fn run(home: &Home, shutdown: impl Future<Output = ()>) -> Result<(), BridgeError> {
    let config = SignalConfig::load(home)?;
    let _lock = lock(&home.bridge_lock("signal"), "Signal", "signal")?;
    // `_started` is kept for as long as the bridge runs: dropping it stops
    // the signal-cli the bridge started.
    let (_started, rpc, notifications) = match &config.reach {
        Reach::Socket(path) => {
            let (rpc, notifications) = Rpc::unix(path, &config.account).await?;
            (None, rpc, notifications)
        }
        Reach::Tcp(address) => {
            let (rpc, notifications) = Rpc::tcp(address, &config.account).await?;
            (None, rpc, notifications)
        }
        Reach::Command(program) => {
            let socket = signal_cli::socket_path(home);
            let (process, rpc, notifications) =
                signal_cli::start(program, &config.account, &socket).await?;
            (Some(process), rpc, notifications)
        }
    };
    let (mut control, _) = connect_running(home, None, "signal", None)
        .await
        .map_err(LinkError::from)?;
    let cursor = link::read_state(&mut control, CURSOR_STATE, Cursor::parse).await?;
    let chats: BTreeSet<String> = link::read_state(&mut control, CHATS_STATE, parse_chats)
        .await?
        .unwrap_or_default();
    let (chats_out, chats_in) = watch::channel(chats);
    let open = Open::default();

    // The outbound half starts first: it fixes where delivery begins before
    // any new message can be logged by the inbound half.
    let outbound = Outbound::start(home, &rpc, &config, cursor, chats_in, open.clone()).await?;
    let inbound = Inbound::new(&rpc, &config, control, notifications, chats_out, open);
    // Only now are messages taken from Signal: both halves are ready.
    api::subscribe(&rpc).await?;
    tracing::info!(
        "signal bridge running as {} for {} allowed people",
        config.account,
        config.allow.len()
    );
    let (stop, stopping) = watch::channel(false);
    run_halves(outbound.run(stopping), inbound.run(), shutdown, stop).await
}
