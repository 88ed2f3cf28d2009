//! The home's lock: one daemon per home.

use super::error::{io, StartError};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Takes the home's lock for the daemon's lifetime (hold the file); the lock
/// dies with the process, so a crashed daemon never blocks the next one.
/// The file says the holder's pid.
pub fn take(path: &Path) -> Result<File, StartError> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(io("cannot open", path))?;
    match file.try_lock() {
        Ok(()) => {
            let _ = file.set_len(0);
            let _ = writeln!(&file, "{}", std::process::id());
            Ok(file)
        }
        Err(fs::TryLockError::WouldBlock) => Err(StartError::AlreadyRunning {
            lock: path.to_path_buf(),
            pid: fs::read_to_string(path)
                .ok()
                .and_then(|text| text.trim().parse().ok()),
        }),
        Err(fs::TryLockError::Error(source)) => Err(StartError::Io {
            what: "cannot lock",
            path: path.to_path_buf(),
            source,
        }),
    }
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
