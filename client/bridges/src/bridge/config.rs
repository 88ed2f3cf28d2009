//! What every bridge's configuration has in common: its table of the home's
//! `config.toml` (the daemon keeps it opaque and only checks that it is
//! there), its secrets from the environment or `secrets.env`, and what goes
//! out besides the agent's replies.

use hearth_protocol::home::Home;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} has no [{table}] table; add one with at least `{example}` (see docs/ for the channel)")]
    Missing {
        path: PathBuf,
        table: &'static str,
        example: &'static str,
    },
    #[error("{path} line {line}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}: [{table}] {message}")]
    Invalid {
        path: PathBuf,
        table: &'static str,
        message: String,
    },
    #[error(transparent)]
    OpenSecrets(#[from] hearth_protocol::secrets::OpenSecrets),
    #[error("no {what}: set ${env}, or add a line `{env}=…` to {secrets} (chmod 600); {hint}")]
    MissingSecret {
        what: &'static str,
        env: String,
        secrets: PathBuf,
        hint: &'static str,
    },
}

pub use hearth_protocol::bridge_tables::{default_send, Outgoing};

/// The text of the home's `config.toml`, or [`ConfigError::Missing`] (for
/// `table`) when there is none.
pub fn read_config(
    home: &Home,
    table: &'static str,
    example: &'static str,
) -> Result<(PathBuf, String), ConfigError> {
    let path = home.config_file();
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((path, text)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(ConfigError::Missing {
            path,
            table,
            example,
        }),
        Err(source) => Err(ConfigError::Read { path, source }),
    }
}

/// Reads config text as `File` (a struct with the bridge's table as an
/// optional field and no other, so every other table is left to the
/// daemon) and takes the table out with `pick`. Mistakes name the line.
pub fn parse_table<File: DeserializeOwned, T>(
    path: &Path,
    text: &str,
    table: &'static str,
    example: &'static str,
    pick: impl FnOnce(File) -> Option<T>,
) -> Result<T, ConfigError> {
    let file: File = toml::from_str(text).map_err(|err| ConfigError::Parse {
        path: path.to_path_buf(),
        line: err.span().map_or(1, |span| line_of(text, span.start)),
        message: err.message().trim().to_string(),
    })?;
    pick(file).ok_or_else(|| ConfigError::Missing {
        path: path.to_path_buf(),
        table,
        example,
    })
}

/// The 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    text.as_bytes()[..offset]
        .iter()
        .filter(|&&byte| byte == b'\n')
        .count()
        + 1
}

/// Checks an API address: `http(s)://…`, returned without a trailing `/`.
pub fn http_base(value: &str) -> Option<String> {
    let value = value.trim().trim_end_matches('/');
    (value.starts_with("http://") || value.starts_with("https://")).then(|| value.to_string())
}

/// A secret (what users know it as: `what`): from the variable `env`, else
/// from the home's `secrets.env`; `hint` says where to get one.
pub fn secret(
    home: &Home,
    env: &str,
    what: &'static str,
    hint: &'static str,
) -> Result<String, ConfigError> {
    let secrets = home.secrets_file();
    // The daemon's rule: the environment, else a private `secrets.env`.
    match hearth_protocol::secrets::find(&secrets, env) {
        Ok(Some(value)) => Ok(value),
        Ok(None) => Err(ConfigError::MissingSecret {
            what,
            env: env.to_string(),
            secrets,
            hint,
        }),
        Err(open) => Err(open.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_secret_comes_from_secrets_env_and_its_absence_says_where_to_put_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let env = "HEARTH_UNIT_TEST_NO_SUCH_SECRET";
        let said = secret(&home, env, "Example secret", "ask Example")
            .unwrap_err()
            .to_string();
        assert!(
            said.starts_with(
                "no Example secret: set $HEARTH_UNIT_TEST_NO_SUCH_SECRET, or add a line"
            ),
            "{said}"
        );
        assert!(
            said.contains("secrets.env") && said.ends_with("ask Example"),
            "{said}"
        );

        let secrets = home.secrets_file();
        std::fs::write(&secrets, format!("{env}=s3cret\n")).unwrap();
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o644)).unwrap();
        let said = secret(&home, env, "x", "y").unwrap_err().to_string();
        assert!(said.contains("readable by other users"), "{said}");
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(secret(&home, env, "x", "y").unwrap(), "s3cret");
    }

    #[test]
    fn addresses_must_be_http() {
        assert_eq!(
            http_base(" https://a.b/v1/ ").as_deref(),
            Some("https://a.b/v1")
        );
        assert_eq!(http_base("a.b"), None);
    }
}
