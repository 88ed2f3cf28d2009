//! Where a hearth home keeps its files. Shared by the daemon and its clients
//! so that both find the same socket.
//!
//! With `--home DIR` (or `HEARTH_HOME`) everything lives in DIR. Without it
//! the XDG folders are used: configuration and prompts in
//! `$XDG_CONFIG_HOME/hearth`, the database in `$XDG_DATA_HOME/hearth`, and the
//! socket in `$XDG_RUNTIME_DIR/hearth` when there is one.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    /// `config.toml`, `secrets.env` and `agents/NAME/prompt.md`.
    pub config_dir: PathBuf,
    /// `hearth.db`, its lock, the owner key and stored images.
    pub data_dir: PathBuf,
    /// The folder of `hearth.sock`.
    pub runtime_dir: PathBuf,
}

impl Home {
    /// One folder for everything.
    pub fn at(dir: &Path) -> Home {
        Home {
            config_dir: dir.to_path_buf(),
            data_dir: dir.to_path_buf(),
            runtime_dir: dir.to_path_buf(),
        }
    }

    /// `--home` when given, else `HEARTH_HOME`, else the XDG folders.
    pub fn resolve(explicit: Option<&Path>) -> Home {
        if let Some(dir) = explicit {
            return Home::at(dir);
        }
        if let Some(dir) = std::env::var_os("HEARTH_HOME").filter(|v| !v.is_empty()) {
            return Home::at(Path::new(&dir));
        }
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        let xdg = |var: &str, fallback: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(fallback))
                .join("hearth")
        };
        let data_dir = xdg("XDG_DATA_HOME", ".local/share");
        let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR")
            .filter(|v| !v.is_empty())
            .map(|dir| PathBuf::from(dir).join("hearth"))
            .unwrap_or_else(|| data_dir.clone());
        Home {
            config_dir: xdg("XDG_CONFIG_HOME", ".config"),
            data_dir,
            runtime_dir,
        }
    }

    pub fn config_file(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    pub fn secrets_file(&self) -> PathBuf {
        self.config_dir.join("secrets.env")
    }

    pub fn database(&self) -> PathBuf {
        self.data_dir.join("hearth.db")
    }

    /// Held locked by the running daemon, so a second one refuses to start.
    pub fn lock_file(&self) -> PathBuf {
        self.data_dir.join("hearth.lock")
    }

    pub fn socket(&self) -> PathBuf {
        self.runtime_dir.join("hearth.sock")
    }

    /// The running daemon's owner key ([`crate::owner_key`]): beside the
    /// database, as private as it, and kept when a runtime folder is cleaned.
    pub fn owner_key(&self) -> PathBuf {
        self.data_dir.join(crate::owner_key::FILE)
    }

    /// Where the daemon started in the background writes its output.
    pub fn daemon_log(&self) -> PathBuf {
        self.data_dir.join("hearthd.log")
    }

    pub fn agent_dir(&self, agent: &str) -> PathBuf {
        self.config_dir.join("agents").join(agent)
    }

    /// The lock a bridge of a kind holds (`telegram`, `whatsapp`), so that
    /// one runs per home; `hearth whatsapp link` takes WhatsApp's too.
    pub fn bridge_lock(&self, bridge: &str) -> PathBuf {
        self.data_dir.join(format!("{bridge}.lock"))
    }

    /// The folder, when the home is one (`--home` or `HEARTH_HOME`); `None`
    /// for the XDG folders. A home in one folder is named by it (in messages,
    /// as the `--home` of the bridges hearthd starts); an XDG home is found
    /// again from the environment.
    pub fn folder(&self) -> Option<&Path> {
        (self.config_dir == self.data_dir && self.data_dir == self.runtime_dir)
            .then_some(self.data_dir.as_path())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_home_in_one_folder_is_named_by_it() {
        assert_eq!(Home::at(Path::new("/h")).folder(), Some(Path::new("/h")));
        let xdg = Home {
            config_dir: "/c".into(),
            data_dir: "/d".into(),
            runtime_dir: "/d".into(),
        };
        assert_eq!(xdg.folder(), None);
        assert_eq!(
            Home::at(Path::new("/h")).bridge_lock("telegram"),
            Path::new("/h/telegram.lock")
        );
    }
}
