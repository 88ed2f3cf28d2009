//! The bridge's configuration: the `[matrix]` table of the home's
//! `config.toml` (the daemon keeps it opaque and only checks that it is
//! there), and the account's password or access token from the
//! environment or `secrets.env`.

use crate::bridge::config::{self as shared, default_send};
use hearth_protocol::home::Home;
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub use crate::bridge::config::{ConfigError, Outgoing};

/// The program started when `command` is not given.
pub const DEFAULT_COMMAND: &str = "hearth-matrix";

/// The variable (or `secrets.env` entry) holding the password when neither
/// `password_env` nor `access_token_env` is given.
pub const DEFAULT_PASSWORD_ENV: &str = "MATRIX_PASSWORD";

const TABLE: &str = "matrix";
const EXAMPLE: &str = "homeserver = \"https://matrix.example.org\", user = \"@hearth:example.org\" and allow = [\"@you:example.org\"]";

/// The `[matrix]` table as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixTable {
    homeserver: String,
    user: String,
    #[serde(default)]
    password_env: Option<String>,
    #[serde(default)]
    access_token_env: Option<String>,
    allow: Vec<String>,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    store: Option<PathBuf>,
    #[serde(default = "default_send")]
    send: Vec<Outgoing>,
}

/// How the account logs in: the name of the variable that holds the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    Password(String),
    AccessToken(String),
}

/// The `[matrix]` table, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixConfig {
    /// The homeserver's client address, `http(s)://…` without a trailing `/`.
    pub homeserver: String,
    /// The agent's own account, `@name:server`.
    pub user: String,
    pub login: Login,
    /// Whose messages and invites reach the agent, as `@name:server`.
    /// Required; empty lets nobody in.
    pub allow: Vec<String>,
    /// The owner, one of `allow`: the others' words are untrusted input to
    /// the agent. Optional when `allow` has one entry.
    pub owner: Option<String>,
    /// The hearth-matrix program.
    pub command: String,
    /// The account's store (its encryption keys), when not the home's.
    pub store: Option<PathBuf>,
    /// What goes out besides replies.
    pub send: Vec<Outgoing>,
}

#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    matrix: Option<MatrixTable>,
}

/// A Matrix user id as both sides compare it: `@localpart:server`, the
/// local part in lower case (servers keep user ids lower case); `None` for
/// anything else.
pub fn user_id(text: &str) -> Option<String> {
    let text = text.trim();
    let (local, server) = text.strip_prefix('@')?.split_once(':')?;
    let local_ok = !local.is_empty()
        && local
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._=-/+".contains(c));
    let server_ok = !server.is_empty()
        && server
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-:[]".contains(c));
    (local_ok && server_ok).then(|| format!("@{}:{server}", local.to_ascii_lowercase()))
}

impl MatrixConfig {
    /// Reads the `[matrix]` table of the home's `config.toml`.
    pub fn load(home: &Home) -> Result<MatrixConfig, ConfigError> {
        let (path, text) = shared::read_config(home, TABLE, EXAMPLE)?;
        MatrixConfig::parse(&path, &text)
    }

    /// Reads the `[matrix]` table of a config file's text.
    pub fn parse(path: &Path, text: &str) -> Result<MatrixConfig, ConfigError> {
        let table =
            shared::parse_table(path, text, TABLE, EXAMPLE, |file: ConfigFile| file.matrix)?;
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            table: TABLE,
            message,
        };
        let person = |key: &str, text: &str| {
            user_id(text).ok_or_else(|| {
                invalid(format!(
                    "{key}: `{text}` is not a Matrix user id; write it as \"@name:example.org\""
                ))
            })
        };
        let homeserver = shared::http_base(&table.homeserver).ok_or_else(|| {
            invalid(format!(
                "homeserver `{}` is not an address; write it as \"https://matrix.example.org\"",
                table.homeserver
            ))
        })?;
        let user = person("user", &table.user)?;
        let login = match (table.password_env, table.access_token_env) {
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "give one of password_env or access_token_env, not both".into(),
                ))
            }
            (None, Some(env)) if !env.trim().is_empty() => Login::AccessToken(env),
            (Some(env), None) if !env.trim().is_empty() => Login::Password(env),
            (None, None) => Login::Password(DEFAULT_PASSWORD_ENV.into()),
            _ => {
                return Err(invalid(
                    "password_env or access_token_env must name a variable".into(),
                ))
            }
        };
        let allow = table
            .allow
            .iter()
            .map(|entry| person("allow", entry))
            .collect::<Result<Vec<_>, _>>()?;
        let owner = table
            .owner
            .as_deref()
            .map(|owner| person("owner", owner))
            .transpose()?;
        if let Some(owner) = owner.as_ref().filter(|owner| !allow.contains(owner)) {
            return Err(invalid(format!("owner {owner} is not one of allow")));
        }
        let command = match table.command {
            Some(command) if command.trim().is_empty() => {
                return Err(invalid("command must name a program".into()))
            }
            Some(command) => command,
            None => DEFAULT_COMMAND.to_string(),
        };
        Ok(MatrixConfig {
            homeserver,
            user,
            login,
            allow,
            owner,
            command,
            store: table.store,
            send: table.send,
        })
    }

    /// Whether `who` (a [`user_id`]) may talk to the agent.
    pub fn allows(&self, who: &str) -> bool {
        user_id(who).is_some_and(|who| self.allow.contains(&who))
    }

    /// Whether `who` is the owner: `owner`, or the one entry of `allow`.
    pub fn is_owner(&self, who: &str) -> bool {
        let Some(who) = user_id(who) else {
            return false;
        };
        match &self.owner {
            Some(owner) => *owner == who,
            None => self.allow.len() == 1 && self.allow[0] == who,
        }
    }

    /// The account's store folder: `store`, else `matrix/` in the home's
    /// state folder.
    pub fn store_dir(&self, home: &Home) -> PathBuf {
        self.store
            .clone()
            .unwrap_or_else(|| home.data_dir.join("matrix"))
    }

    /// The password or access token, with the variable it came from.
    pub fn secret(&self, home: &Home) -> Result<(&'static str, String), ConfigError> {
        match &self.login {
            Login::Password(env) => {
                let hint = "the Matrix account's password (or set access_token_env instead)";
                let value = shared::secret(home, env, "Matrix password", hint)?;
                Ok(("password", value))
            }
            Login::AccessToken(env) => {
                let hint =
                    "an access token of the Matrix account (Element: Settings, Help & About)";
                let value = shared::secret(home, env, "Matrix access token", hint)?;
                Ok(("access_token", value))
            }
        }
    }

    /// The program to start: `command` as written when it names a path or
    /// is not the default; the default is looked for beside the running
    /// `hearth` first, then on `PATH`.
    pub fn program(&self) -> String {
        if self.command != DEFAULT_COMMAND {
            return self.command.clone();
        }
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join(DEFAULT_COMMAND)))
            .filter(|path| path.is_file())
            .map(|path| path.display().to_string())
            .unwrap_or_else(|| DEFAULT_COMMAND.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<MatrixConfig, ConfigError> {
        MatrixConfig::parse(Path::new("config.toml"), text)
    }

    const BASE: &str =
        "[matrix]\nhomeserver = \"https://matrix.example.org/\"\nuser = \"@hearth:example.org\"\n";

    #[test]
    fn a_minimal_table_logs_in_with_the_password_in_matrix_password() {
        let config = parse(&format!("{BASE}allow = [\"@You:example.org\"]\n")).unwrap();
        assert_eq!(config.homeserver, "https://matrix.example.org");
        assert_eq!(config.login, Login::Password("MATRIX_PASSWORD".into()));
        assert_eq!(config.allow, vec!["@you:example.org"]);
        assert_eq!(config.command, "hearth-matrix");
        assert!(config.allows("@you:example.org") && !config.allows("@eve:example.org"));
        assert!(config.is_owner("@you:example.org"));
        let home = Home::at(Path::new("/h"));
        assert_eq!(config.store_dir(&home), home.data_dir.join("matrix"));
    }

    #[test]
    fn an_access_token_is_the_other_way_in() {
        let config = parse(&format!(
            "{BASE}access_token_env = \"HEARTH_MATRIX_TOKEN\"\nallow = []\n"
        ))
        .unwrap();
        assert_eq!(
            config.login,
            Login::AccessToken("HEARTH_MATRIX_TOKEN".into())
        );
        let said = parse(&format!(
            "{BASE}access_token_env = \"A\"\npassword_env = \"B\"\nallow = []\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(said.contains("not both"), "{said}");
    }

    #[test]
    fn mistakes_say_what_is_wrong() {
        let said = parse("[matrix]\nhomeserver = \"matrix.org\"\nuser = \"@a:b\"\nallow = []\n")
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("homeserver `matrix.org` is not an address"),
            "{said}"
        );
        let said = parse(&format!("{BASE}allow = [\"bob\"]\n"))
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("allow: `bob` is not a Matrix user id"),
            "{said}"
        );
        let said = parse(&format!(
            "{BASE}allow = [\"@a:example.org\"]\nowner = \"@b:example.org\"\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(
            said.contains("owner @b:example.org is not one of allow"),
            "{said}"
        );
        let err = parse("[model]\nprovider = \"openai\"\n").unwrap_err();
        assert!(matches!(err, ConfigError::Missing { .. }));
    }
}
