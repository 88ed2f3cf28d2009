//! The home's lock: one daemon per home (`hearth_protocol::lock`, the kind
//! the bridges take too).

use super::error::StartError;
use hearth_protocol::lock::{self, Lock, Refused};
use std::path::Path;

/// Takes the home's lock for the daemon's lifetime (hold it); the lock
/// dies with the process, so a crashed daemon never blocks the next one.
/// The file says the holder's pid.
pub fn take(path: &Path) -> Result<Lock, StartError> {
    lock::take(path).map_err(|refused| match refused {
        Refused::Held { pid } => StartError::AlreadyRunning {
            lock: path.to_path_buf(),
            pid,
        },
        Refused::Io { what, source } => StartError::Io {
            what,
            path: path.to_path_buf(),
            source,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_home_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.lock");
        let _first = take(&path).unwrap();
        let refused = take(&path).unwrap_err();
        let me = std::process::id();
        assert!(matches!(refused, StartError::AlreadyRunning { pid: Some(pid), .. } if pid == me));
        assert!(refused.to_string().contains(&format!("(pid {me})")));
    }
}
