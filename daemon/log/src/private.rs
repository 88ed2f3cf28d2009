//! A home private from the first byte: the daemon's umask, and a home that
//! an older hearth (or a permissive umask) left readable tightened at start.
//!
//! `hearthd` sets its umask to 077 before it creates anything, so every file
//! it or SQLite creates (the database, its `-wal` and `-shm`, the log file,
//! images, backups, the socket) is private to its user whatever umask it was
//! started with; the folders are also created with mode 0700 explicitly.
//! What already exists with looser modes is tightened once at start, each
//! change said in one note.

use hearth_protocol::home::Home;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Makes everything this process creates from now on private to its user
/// (umask 077). Call first, before any thread starts.
pub fn restrict_umask() {
    // SAFETY: `umask` only sets the process's file mode mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
}

/// One mode that was too loose and was tightened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tightened {
    pub path: PathBuf,
    /// The mode it had (permission bits only).
    pub was: u32,
    pub now: u32,
}

impl std::fmt::Display for Tightened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} was {:o}, now {:o}",
            self.path.display(),
            self.was,
            self.now
        )
    }
}

/// Tightens the home's folders to 0700 and its files to 0600 where others
/// could read or write them: the home's own folders, `agents/` and each
/// agent's folder and prompt, the images, the database and its companions,
/// the log, the lock and `config.toml`. `secrets.env` is not touched: one
/// that others can read is refused at start instead (its keys may have been
/// read already), and an agent's working folder is the user's own business.
/// Returns what changed; a file that cannot be changed is left as it is
/// (the start fails later where it matters).
pub fn tighten(home: &Home) -> Vec<Tightened> {
    let mut folders = vec![
        home.config_dir.clone(),
        home.data_dir.clone(),
        home.runtime_dir.clone(),
        home.data_dir.join("images"),
        home.config_dir.join("agents"),
    ];
    let mut files = vec![
        home.database(),
        home.data_dir.join("hearth.db-wal"),
        home.data_dir.join("hearth.db-shm"),
        home.daemon_log(),
        home.lock_file(),
        home.config_file(),
    ];
    for entry in entries(&home.config_dir.join("agents")) {
        files.push(entry.join("prompt.md"));
        folders.push(entry);
    }
    files.extend(entries(&home.data_dir.join("images")));
    folders.sort();
    folders.dedup();
    let mut changed = Vec::new();
    for folder in folders {
        changed.extend(restrict(&folder, 0o700, true));
    }
    for file in files {
        changed.extend(restrict(&file, 0o600, false));
    }
    changed
}

/// What a folder holds (nothing when it is not there).
fn entries(folder: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(folder) else {
        return Vec::new();
    };
    read.filter_map(Result::ok).map(|e| e.path()).collect()
}

/// Sets `path` to `mode` when it is a folder (or a file, as `folder` says)
/// that grants anything to group or others. A symlink is never followed.
fn restrict(path: &Path, mode: u32, folder: bool) -> Option<Tightened> {
    let meta = fs::symlink_metadata(path).ok()?;
    if meta.is_dir() != folder || !(meta.is_dir() || meta.is_file()) {
        return None;
    }
    let was = meta.permissions().mode() & 0o777;
    if was & 0o077 == 0 {
        return None;
    }
    let now = was & 0o700 | mode & 0o700;
    fs::set_permissions(path, fs::Permissions::from_mode(now)).ok()?;
    Some(Tightened {
        path: path.to_path_buf(),
        was,
        now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_readable_home_is_tightened_and_a_private_one_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(&dir.path().join("home"));
        fs::create_dir_all(home.agent_dir("hearth").join("work")).unwrap();
        fs::write(home.database(), "").unwrap();
        fs::write(home.daemon_log(), "").unwrap();
        fs::write(home.agent_dir("hearth").join("prompt.md"), "").unwrap();
        fs::write(home.agent_dir("hearth").join("work/notes.txt"), "").unwrap();
        for path in [
            home.config_dir.clone(),
            home.agent_dir("hearth"),
            home.agent_dir("hearth").join("work"),
        ] {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        }
        for path in [home.database(), home.daemon_log()] {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        }
        let notes = tighten(&home);
        assert_eq!(mode(&home.config_dir), 0o700);
        assert_eq!(mode(&home.agent_dir("hearth")), 0o700);
        assert_eq!(mode(&home.database()), 0o600);
        assert_eq!(mode(&home.daemon_log()), 0o600);
        // The agent's working folder is the user's: left as it was.
        assert_eq!(mode(&home.agent_dir("hearth").join("work")), 0o755);
        assert!(notes
            .iter()
            .any(|t| t.path == home.database() && t.was == 0o644 && t.now == 0o600));
        assert!(tighten(&home).is_empty(), "a private home is left alone");
    }
}
