//! The locks that keep one process of a kind per home: the daemon's
//! (`hearth.lock`) and each bridge's (`telegram.lock`, `whatsapp.lock`).
//!
//! A lock is an advisory lock on a file, held as long as the file is open:
//! it dies with its process, so a crash never blocks the next start. The
//! file says its holder's pid, for messages like "already running (pid 42)".

use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// A held lock; dropping it (or exiting) releases it.
#[derive(Debug)]
pub struct Lock {
    _file: File,
}

/// Why a lock was not taken.
#[derive(Debug)]
pub enum Refused {
    /// Another process holds it; `pid` is the one its file names.
    Held { pid: Option<u32> },
    /// The file could not be opened (`what` is "cannot open") or locked.
    Io {
        what: &'static str,
        source: std::io::Error,
    },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::Held { pid: Some(pid) } => write!(f, "held by pid {pid}"),
            Refused::Held { pid: None } => f.write_str("held by another process"),
            Refused::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for Refused {}

/// Takes the lock at `path` (creating its file, mode 0600) and writes this
/// process's pid into it.
pub fn take(path: &Path) -> Result<Lock, Refused> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| Refused::Io {
            what: "cannot open",
            source,
        })?;
    match file.try_lock() {
        Ok(()) => {
            // The pid is for messages only: a lock without it still holds.
            let _ = file.set_len(0);
            let _ = writeln!(&file, "{}", std::process::id());
            Ok(Lock { _file: file })
        }
        Err(TryLockError::WouldBlock) => Err(Refused::Held { pid: pid_in(path) }),
        Err(TryLockError::Error(source)) => Err(Refused::Io {
            what: "cannot lock",
            source,
        }),
    }
}

/// Whether a process holds the lock at `path` (it runs, or is stopping).
pub fn held(path: &Path) -> bool {
    let Ok(file) = OpenOptions::new().write(true).open(path) else {
        return false;
    };
    matches!(file.try_lock(), Err(TryLockError::WouldBlock))
}

/// The pid of the process that holds the lock at `path`, if one does.
pub fn holder(path: &Path) -> Option<u32> {
    held(path).then(|| pid_in(path)).flatten()
}

fn pid_in(path: &Path) -> Option<u32> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = std::env::temp_dir().join(format!("hearth-lock-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("hearth.lock");
        assert!(!held(&path) && holder(&path).is_none());
        let first = take(&path).unwrap();
        let me = std::process::id();
        assert!(matches!(take(&path), Err(Refused::Held { pid: Some(pid) }) if pid == me));
        assert!(held(&path));
        assert_eq!(holder(&path), Some(me));
        drop(first);
        assert!(!held(&path));
        assert!(take(&path).is_ok());
        fs::remove_dir_all(&dir).unwrap();
    }
}
