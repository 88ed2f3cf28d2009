//! The daemon's Unix socket, kept where clients look for it.
//!
//! The socket is bound in a 0700 folder under the daemon's umask 077, so it
//! is private from the moment it exists (never made private afterwards,
//! which would leave a moment when anyone could connect). A socket file that
//! disappears (a cleaned runtime folder) or is replaced would leave a daemon
//! that runs but that nobody can reach: the socket is checked every
//! [`CHECK_EVERY`], and whenever [`SocketCheck::now`] asks (`hearth reload`,
//! SIGHUP), and bound again with a note in the daemon's log.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;

/// How often the socket file is looked at.
pub const CHECK_EVERY: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("cannot remove the stale socket {path}: {source}")]
    Remove {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot listen on {path}: {source}")]
    Bind {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} was created with mode {mode:o}, which others could use; is the umask 077?")]
    NotPrivate { path: PathBuf, mode: u32 },
}

/// Asks the socket to be checked now rather than at the next tick.
#[derive(Clone, Default)]
pub struct SocketCheck(Arc<Notify>);

impl SocketCheck {
    pub fn now(&self) {
        self.0.notify_one();
    }
}

/// The listening socket and the file it is bound to.
pub struct WatchedSocket {
    path: PathBuf,
    listener: UnixListener,
    /// The socket file's inode when it was bound: another one at the path
    /// is not ours.
    inode: u64,
    every: Duration,
    /// Started at the first `accept`, kept across them.
    ticks: Option<tokio::time::Interval>,
    check: SocketCheck,
}

impl WatchedSocket {
    /// Binds the socket at `path`, replacing a stale one (the home's lock
    /// proves no daemon owns it).
    pub fn bind(path: &Path, check: SocketCheck) -> Result<WatchedSocket, SocketError> {
        let (listener, inode) = bind(path)?;
        Ok(WatchedSocket {
            path: path.to_path_buf(),
            listener,
            inode,
            every: CHECK_EVERY,
            ticks: None,
            check,
        })
    }

    /// Checks every `every` instead of [`CHECK_EVERY`] (tests).
    pub fn checking_every(mut self, every: Duration) -> WatchedSocket {
        self.every = every;
        self
    }

    /// The next client. Between clients the socket file is checked and,
    /// when it is gone or not ours, bound again.
    pub async fn accept(&mut self) -> std::io::Result<UnixStream> {
        let every = self.every;
        let mut ticks = self.ticks.take().unwrap_or_else(|| {
            let start = tokio::time::Instant::now() + every;
            let mut ticks = tokio::time::interval_at(start, every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks
        });
        let accepted = loop {
            tokio::select! {
                accepted = self.listener.accept() => break accepted.map(|(stream, _)| stream),
                _ = ticks.tick() => self.keep(),
                () = self.check.0.notified() => self.keep(),
            }
        };
        self.ticks = Some(ticks);
        accepted
    }

    /// Binds the socket again when its file is gone or replaced.
    fn keep(&mut self) {
        let ours = std::fs::symlink_metadata(&self.path).is_ok_and(|meta| meta.ino() == self.inode);
        if ours {
            return;
        }
        match bind(&self.path) {
            Ok((listener, inode)) => {
                tracing::warn!(
                    "the socket {} was removed or replaced; listening on a new one",
                    self.path.display()
                );
                self.listener = listener;
                self.inode = inode;
            }
            Err(err) => tracing::warn!("the socket is gone and cannot be made again: {err}"),
        }
    }

    /// Removes the socket file if it is still ours.
    pub fn remove(&self) {
        let ours = std::fs::symlink_metadata(&self.path).is_ok_and(|meta| meta.ino() == self.inode);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn bind(path: &Path) -> Result<(UnixListener, u64), SocketError> {
    if std::fs::symlink_metadata(path).is_ok() {
        std::fs::remove_file(path).map_err(|source| SocketError::Remove {
            path: path.to_path_buf(),
            source,
        })?;
    }
    let bind_error = |source| SocketError::Bind {
        path: path.to_path_buf(),
        source,
    };
    let listener = UnixListener::bind(path).map_err(bind_error)?;
    let meta = std::fs::symlink_metadata(path).map_err(bind_error)?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        let _ = std::fs::remove_file(path);
        return Err(SocketError::NotPrivate {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok((listener, meta.ino()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_removed_socket_is_bound_again_when_checked() {
        crate::private::restrict_umask();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.sock");
        let check = SocketCheck::default();
        let mut socket = WatchedSocket::bind(&path, check.clone())
            .unwrap()
            .checking_every(Duration::from_secs(3600));
        std::fs::remove_file(&path).unwrap();
        check.now();
        let accepting = tokio::spawn(async move {
            let stream = socket.accept().await.unwrap();
            drop(stream);
            socket
        });
        // The client's connect succeeds only once the socket is back.
        loop {
            if UnixStream::connect(&path).await.is_ok() {
                break;
            }
            tokio::task::yield_now().await;
        }
        let socket = accepting.await.unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "mode {mode:o}");
        socket.remove();
        assert!(!path.exists());
    }
}
