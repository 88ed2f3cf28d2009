//! Where the agents' tools can read, for what hearthd must never put
//! there (a backup of the log): every agent's working folder, and the
//! folders the shell's confinement opens to it (the system's folders, the
//! `PATH`, `/tmp`, `/dev/shm`: [`Confinement::rules`]) outside the home's
//! own folders, which the confinement never opens.
//!
//! The same user runs hearthd and the tools, so a file's mode does not
//! keep them out: only where it lies does.

use super::confine::Confinement;
use std::path::{Path, PathBuf};

/// The agents' working folders and the home's folders, resolved.
#[derive(Debug, Clone, Default)]
pub struct ToolReach {
    workdirs: Vec<PathBuf>,
    home: Vec<PathBuf>,
}

/// How the tools reach a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reached {
    /// It is inside this agent's working folder.
    Workdir(PathBuf),
    /// The shell may read this folder, which holds it.
    Readable(PathBuf),
}

impl ToolReach {
    pub fn new(workdirs: &[PathBuf], home: &[&Path]) -> ToolReach {
        let resolve = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        ToolReach {
            workdirs: workdirs.iter().map(|dir| resolve(dir)).collect(),
            home: home.iter().map(|dir| resolve(dir)).collect(),
        }
    }

    /// How the tools could read `path` (resolved), if they could.
    pub fn reaches(&self, path: &Path) -> Option<Reached> {
        if let Some(dir) = self.workdirs.iter().find(|dir| path.starts_with(dir)) {
            return Some(Reached::Workdir(dir.clone()));
        }
        if self.home.iter().any(|home| path.starts_with(home)) {
            return None;
        }
        // The shell's rules for a working folder with no home around it:
        // each folder it opens, whole.
        let workdir = self.workdirs.first()?;
        Confinement::new(workdir, &[])
            .rules(None)
            .into_iter()
            .map(|rule| rule.path)
            .find(|folder| path.starts_with(folder))
            .map(Reached::Readable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn working_folders_and_what_the_shell_reads_are_reached_the_home_is_not() {
        let home = tempfile::tempdir().unwrap();
        let work = home.path().join("agents/hearth/work");
        let other = home.path().join("agents/helper/work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let home_dir = home.path().canonicalize().unwrap();
        let reach = ToolReach::new(&[work.clone(), other.clone()], &[home.path()]);
        let other = other.canonicalize().unwrap();
        assert_eq!(
            reach.reaches(&other.join("backup.db")),
            Some(Reached::Workdir(other))
        );
        assert_eq!(reach.reaches(&home_dir.join("backup.db")), None);
        let tmp = Path::new("/tmp").canonicalize().unwrap();
        assert_eq!(
            reach.reaches(&tmp.join("elsewhere/backup.db")),
            Some(Reached::Readable(tmp))
        );
        assert!(reach.reaches(Path::new("/etc/backup.db")).is_some());
        assert_eq!(
            reach.reaches(Path::new("/nonexistent-place/backup.db")),
            None
        );
    }
}
