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
use super::link::{self, CHATS_STATE, CURSOR_STATE, OFFSET_STATE};
use super::outbound::{Cursor, Outbound};
use crate::commands::{connect_running, CommandError};
use crate::connection::ConnectError;
use hearth_protocol::home::Home;
use hearth_protocol::ErrorCode;
use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::future::Future;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::sync::watch;

/// The exit status of a bridge that cannot run as configured (sysexits'
/// `EX_CONFIG`): hearthd does not restart it until its own next start.
pub const EXIT_CONFIG: u8 = 78;

/// How long a bridge that cannot start tries to tell the daemon why.
const NOTE_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("another Telegram bridge is already running for this home ({0} is locked); hearthd starts one itself when config.toml has a [telegram] table")]
    AlreadyRunning(PathBuf),
    #[error("cannot lock {path}: {source}")]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error(transparent)]
    Connection(#[from] ConnectError),
    #[error("hearthd refused: {message}")]
    Refused { code: ErrorCode, message: String },
    #[error("hearthd answered with an unexpected frame: {0}")]
    Unexpected(String),
    #[error("the bridge's state `{name}` in hearthd is unreadable: {value:?}")]
    BadState { name: &'static str, value: String },
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

/// Runs the bridge for `home` until `shutdown` completes or it fails. A
/// configuration that cannot work is also told to the daemon as a note, when
/// one runs, so the user sees it in `hearth`.
pub async fn run(home: &Home, shutdown: impl Future<Output = ()>) -> Result<(), BridgeError> {
    let setup = TelegramConfig::load(home).and_then(|config| {
        let token = config.token(home)?;
        Ok((config, token))
    });
    let (config, token) = match setup {
        Ok(setup) => setup,
        Err(err) => {
            let text = format!("telegram: the bridge cannot start: {err}");
            let _ = tokio::time::timeout(NOTE_TIMEOUT, tell_daemon(home, text)).await;
            return Err(err.into());
        }
    };
    let _lock = lock(&home.data_dir.join("telegram.lock"))?;
    let api = Api::new(&config.api_base, &token)?;

    let (mut control, _) = connect_running(home, "telegram", None).await?;
    let offset = read_state(&mut control, OFFSET_STATE, |text| text.parse::<i64>().ok()).await?;
    let cursor = read_state(&mut control, CURSOR_STATE, Cursor::parse).await?;
    let chats: BTreeSet<i64> = read_state(&mut control, CHATS_STATE, |text| {
        serde_json::from_str(text).ok()
    })
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
    tokio::select! {
        result = inbound.run() => result.map(|never| match never {}),
        result = outbound.run() => result.map(|never| match never {}),
        () = shutdown => Ok(()),
    }
}

/// A state read from the daemon and parsed; `None` when never written.
async fn read_state<T>(
    connection: &mut crate::connection::Connection,
    name: &'static str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, BridgeError> {
    match link::get_state(connection, name, &mut |_| {}).await? {
        None => Ok(None),
        Some(value) => match parse(value.trim()) {
            Some(parsed) => Ok(Some(parsed)),
            None => Err(BridgeError::BadState { name, value }),
        },
    }
}

/// Logs `text` as a note in the daemon, if one runs; failures are ignored.
async fn tell_daemon(home: &Home, text: String) {
    if let Ok((mut connection, _)) = connect_running(home, "telegram", None).await {
        let _ = link::note(&mut connection, text, &mut |_| {}).await;
        connection.close().await;
    }
}

/// Takes the lock that keeps one bridge per home (two would poll the same
/// bot, which Telegram answers with 409, and deliver every reply twice). The
/// lock dies with the process.
fn lock(path: &Path) -> Result<File, BridgeError> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| BridgeError::Lock {
            path: path.to_path_buf(),
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => {
            Err(BridgeError::AlreadyRunning(path.to_path_buf()))
        }
        Err(std::fs::TryLockError::Error(source)) => Err(BridgeError::Lock {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_bridge_on_the_same_home_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("telegram.lock");
        let _first = lock(&path).unwrap();
        assert!(matches!(lock(&path), Err(BridgeError::AlreadyRunning(_))));
    }
}
