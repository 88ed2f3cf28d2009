//! `hearth reload` and SIGHUP: what a changed `config.toml` changes in a
//! running daemon.
//!
//! The file is read and checked whole, as at start; one that cannot be read
//! or does not parse is refused with its file and line, and the daemon keeps
//! the configuration it runs. Otherwise its tables are compared with the
//! ones the daemon runs: those that can change live apply at once (the
//! model and its fallbacks for the next request, the memory model for the
//! next summary, budgets and prices, which
//! calls need approval, the limits, a bridge's table — that bridge is
//! started again — and the `[[mcp]]` servers: new ones start, removed ones
//! stop, changed ones restart), the others are named as waiting for a restart. The
//! comparison is a pure function of the two files' tables.

use crate::config::{Config, ConfigError};
use std::path::Path;

/// Tables that apply while the daemon runs.
pub const LIVE_TABLES: [&str; 13] = [
    "model",
    "memory",
    "budget",
    "prices",
    "approvals",
    "limits",
    "telegram",
    "whatsapp",
    "signal",
    "email",
    "discord",
    "matrix",
    "mcp",
];

/// A configuration read again, and how it differs from the running one.
#[derive(Debug)]
pub struct Reread {
    pub config: Config,
    /// The file's tables, to compare the next reload with.
    pub tables: toml::Table,
    /// Changed tables that apply now, in the file's words.
    pub applied: Vec<String>,
    /// Changed tables that apply after a restart.
    pub needs_restart: Vec<String>,
}

impl Reread {
    /// Whether the table `name` changed and applies now.
    pub fn changed(&self, name: &str) -> bool {
        self.applied.iter().any(|table| table == name)
    }
}

/// Reads `path` again and compares it with `running` (the tables of the
/// file the daemon runs). A missing file is an empty configuration, as at
/// start.
pub fn reread(path: &Path, running: &toml::Table) -> Result<Reread, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let config = Config::parse(path, &text)?;
    // It parsed as a Config, so it parses as a table.
    let tables: toml::Table = text.parse().unwrap_or_default();
    let (applied, needs_restart) = compare(running, &tables);
    Ok(Reread {
        config,
        tables,
        applied,
        needs_restart,
    })
}

/// The tables of a configuration file's text (empty when it does not parse:
/// then the daemon did not start with it either).
pub fn tables_of(path: &Path) -> toml::Table {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_default()
}

/// The top-level keys whose value differs, split into those that apply
/// live and the others, each sorted.
pub fn compare(running: &toml::Table, new: &toml::Table) -> (Vec<String>, Vec<String>) {
    let mut keys: Vec<&String> = running.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    let (mut applied, mut needs_restart) = (Vec::new(), Vec::new());
    for key in keys {
        if running.get(key) == new.get(key) {
            continue;
        }
        if LIVE_TABLES.contains(&key.as_str()) {
            applied.push(key.clone());
        } else {
            needs_restart.push(key.clone());
        }
    }
    (applied, needs_restart)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn changed_tables_are_split_into_live_and_restart() {
        let old = table(
            "[model]\nprovider = \"openai\"\nmodel = \"a\"\n\n[budget]\ndaily_usd = 1.0\n\n[listen]\ntcp = \"127.0.0.1:1\"\n",
        );
        let new = table(
            "[model]\nprovider = \"openai\"\nmodel = \"a\"\n\n[budget]\ndaily_usd = 2.0\n\n[listen]\ntcp = \"127.0.0.1:2\"\n\n[telegram]\nallow = [1]\n",
        );
        let (applied, needs_restart) = compare(&old, &new);
        assert_eq!(applied, vec!["budget", "telegram"]);
        assert_eq!(needs_restart, vec!["listen"]);
        assert_eq!(compare(&new, &new), (vec![], vec![]));
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[budget]\ndaily_usd = 1.0\n\n[model\n").unwrap();
        let err = reread(&path, &toml::Table::new()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("config.toml line 4"), "{text}");
        // A removed file is an empty configuration: every table it had changed.
        std::fs::remove_file(&path).unwrap();
        let reread = reread(&path, &table("[budget]\ndaily_usd = 1.0\n")).unwrap();
        assert_eq!(reread.applied, vec!["budget"]);
    }
}
