//! One bridge of a kind per home: two Telegram bridges would poll the same
//! bot (which Telegram answers with 409), two WhatsApp bridges would fight
//! over the webhook's port, and both would deliver every reply twice.

use hearth_protocol::lock::{self as home_lock, Lock, Refused};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another {bridge} bridge is already running for this home ({path} is locked); hearthd starts one itself when config.toml has a [{table}] table")]
    AlreadyRunning {
        bridge: &'static str,
        table: &'static str,
        path: PathBuf,
    },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The held lock (the kind the daemon holds on its home, from
/// `hearth_protocol::lock`); it is released when dropped, or when the
/// process dies.
pub type BridgeLock = Lock;

/// Takes the lock at `path` (`Home::bridge_lock`) for the bridge named
/// `bridge` (as users read it: `Telegram`) whose config table is `table`.
pub fn lock(
    path: &Path,
    bridge: &'static str,
    table: &'static str,
) -> Result<BridgeLock, LockError> {
    home_lock::take(path).map_err(|refused| match refused {
        Refused::Held { .. } => LockError::AlreadyRunning {
            bridge,
            table,
            path: path.to_path_buf(),
        },
        Refused::Io { source, .. } => LockError::Io {
            path: path.to_path_buf(),
            source,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_bridge_on_the_same_home_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("telegram.lock");
        let first = lock(&path, "Telegram", "telegram").unwrap();
        let said = lock(&path, "Telegram", "telegram").unwrap_err().to_string();
        assert!(said.starts_with("another Telegram bridge"), "{said}");
        drop(first);
        assert!(lock(&path, "Telegram", "telegram").is_ok());
    }
}
