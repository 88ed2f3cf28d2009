//! The bridge's configuration: the `[telegram]` table of the home's
//! `config.toml` (the daemon keeps it opaque and only checks that it is
//! there), and the bot token from the environment or `secrets.env`.

use crate::bridge::config::{self as shared, default_send};
use hearth_protocol::home::Home;
use serde::Deserialize;
use std::path::Path;

pub use crate::bridge::config::{ConfigError, Outgoing};

/// Where the Bot API lives when `api_base` is not set.
pub const DEFAULT_API_BASE: &str = "https://api.telegram.org";

/// The variable (or `secrets.env` entry) holding the token when `token_env`
/// is not set.
pub const DEFAULT_TOKEN_ENV: &str = "TELEGRAM_BOT_TOKEN";

/// The table's name, and what it needs at least.
const TABLE: &str = "telegram";
const EXAMPLE: &str = "allow = [your user id]";

/// How text is marked up for Telegram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum ParseMode {
    /// The agent's Markdown as Telegram HTML (see `format.rs`); a part
    /// Telegram cannot parse is sent again as plain text.
    #[default]
    #[serde(rename = "HTML")]
    Html,
    /// Exactly the agent's text, no markup.
    #[serde(rename = "none")]
    Plain,
}

/// The `[telegram]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    /// The environment variable (or `secrets.env` entry) with the bot token.
    #[serde(default = "default_token_env")]
    pub token_env: String,
    /// The Telegram user ids whose messages reach the agent, and whose
    /// private chats get its replies. Required; empty lets nobody in.
    pub allow: Vec<i64>,
    /// The owner's user id, one of `allow`: the others' words are
    /// untrusted input to the agent. Optional when `allow` has one id.
    #[serde(default)]
    pub owner: Option<i64>,
    /// The Bot API address without `/bot<token>`.
    #[serde(default = "default_api_base")]
    pub api_base: String,
    /// How long one `getUpdates` long poll waits for a message.
    #[serde(default = "default_poll_timeout")]
    pub poll_timeout_secs: u64,
    /// What goes out besides replies.
    #[serde(default = "default_send")]
    pub send: Vec<Outgoing>,
    #[serde(default)]
    pub parse_mode: ParseMode,
    /// Whether the bridge deletes the bot's webhook (at start, and when
    /// Telegram says one is set), since a bot with a webhook cannot poll.
    #[serde(default)]
    pub delete_webhook: bool,
}

fn default_token_env() -> String {
    DEFAULT_TOKEN_ENV.to_string()
}

fn default_api_base() -> String {
    DEFAULT_API_BASE.to_string()
}

fn default_poll_timeout() -> u64 {
    30
}

/// The longest long poll accepted: Telegram's servers end polls themselves
/// after about a minute, so longer would only look like a hang.
const MAX_POLL_TIMEOUT_SECS: u64 = 50;

/// The whole file as the bridge sees it: every other table is the daemon's.
#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    telegram: Option<TelegramConfig>,
}

impl TelegramConfig {
    /// Reads the `[telegram]` table of the home's `config.toml`.
    pub fn load(home: &Home) -> Result<TelegramConfig, ConfigError> {
        let (path, text) = shared::read_config(home, TABLE, EXAMPLE)?;
        TelegramConfig::parse(&path, &text)
    }

    /// Reads the `[telegram]` table of a config file's text.
    pub fn parse(path: &Path, text: &str) -> Result<TelegramConfig, ConfigError> {
        let mut config =
            shared::parse_table(path, text, TABLE, EXAMPLE, |file: ConfigFile| file.telegram)?;
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            table: TABLE,
            message,
        };
        config.api_base = shared::http_base(&config.api_base).ok_or_else(|| {
            invalid(format!(
                "api_base `{}` is not an http(s) address; the default is {DEFAULT_API_BASE}",
                config.api_base
            ))
        })?;
        if !(1..=MAX_POLL_TIMEOUT_SECS).contains(&config.poll_timeout_secs) {
            return Err(invalid(format!(
                "poll_timeout_secs must be 1 to {MAX_POLL_TIMEOUT_SECS}, not {}",
                config.poll_timeout_secs
            )));
        }
        if config.token_env.trim().is_empty() {
            return Err(invalid("token_env must name a variable".to_string()));
        }
        if let Some(owner) = config.owner.filter(|owner| !config.allow.contains(owner)) {
            return Err(invalid(format!("owner {owner} is not one of allow")));
        }
        Ok(config)
    }

    /// Whether `kind` goes out (replies always do).
    pub fn sends(&self, kind: Outgoing) -> bool {
        kind == Outgoing::Reply || self.send.contains(&kind)
    }

    /// Whether `user` may talk to the agent.
    pub fn allows(&self, user: i64) -> bool {
        self.allow.contains(&user)
    }

    /// Whether `user` is the owner: `owner`, or the one id of `allow`.
    /// With several ids and no `owner`, nobody is.
    pub fn is_owner(&self, user: i64) -> bool {
        match self.owner {
            Some(owner) => owner == user,
            None => self.allow == [user],
        }
    }

    /// The bot token: from the variable `token_env` names, else from the
    /// home's `secrets.env`.
    pub fn token(&self, home: &Home) -> Result<String, ConfigError> {
        shared::secret(
            home,
            &self.token_env,
            "Telegram bot token",
            "@BotFather gives the token when you create the bot",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn parse(text: &str) -> Result<TelegramConfig, ConfigError> {
        TelegramConfig::parse(Path::new("config.toml"), text)
    }

    #[test]
    fn the_owner_is_named_or_the_only_allowed_user() {
        let alone = parse("[telegram]\nallow = [42]\n").unwrap();
        assert!(alone.is_owner(42) && !alone.is_owner(7));
        let several = parse("[telegram]\nallow = [42, 7]\n").unwrap();
        assert!(!several.is_owner(42) && !several.is_owner(7));
        let named = parse("[telegram]\nallow = [42, 7]\nowner = 7\n").unwrap();
        assert!(named.is_owner(7) && !named.is_owner(42));
        let said = parse("[telegram]\nallow = [42]\nowner = 7\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("owner 7 is not one of allow"), "{said}");
    }

    #[test]
    fn a_minimal_table_takes_the_defaults() {
        let config = parse("[model]\nprovider = \"x\"\n\n[telegram]\nallow = [42]\n").unwrap();
        assert_eq!(config.allow, vec![42]);
        assert_eq!(config.token_env, "TELEGRAM_BOT_TOKEN");
        assert_eq!(config.api_base, "https://api.telegram.org");
        assert_eq!(config.poll_timeout_secs, 30);
        assert_eq!(config.parse_mode, ParseMode::Html);
        assert!(!config.delete_webhook);
        assert!(config.sends(Outgoing::Reply));
        assert!(config.sends(Outgoing::Error));
        assert!(config.sends(Outgoing::Work));
        assert!(!config.sends(Outgoing::Echo));
        assert!(!config.sends(Outgoing::Note));
        assert!(config.allows(42) && !config.allows(43));
    }

    #[test]
    fn every_setting_reads() {
        let text = "[telegram]\ntoken_env = \"MY_BOT\"\nallow = []\napi_base = \"http://127.0.0.1:8081/\"\npoll_timeout_secs = 5\nsend = [\"echo\", \"note\"]\nparse_mode = \"none\"\ndelete_webhook = true\n";
        let config = parse(text).unwrap();
        assert_eq!(config.token_env, "MY_BOT");
        assert!(config.allow.is_empty());
        assert_eq!(config.api_base, "http://127.0.0.1:8081");
        assert_eq!(config.poll_timeout_secs, 5);
        assert!(config.sends(Outgoing::Reply), "replies always go out");
        assert!(config.sends(Outgoing::Echo) && config.sends(Outgoing::Note));
        assert!(!config.sends(Outgoing::Error));
        assert_eq!(config.parse_mode, ParseMode::Plain);
        assert!(config.delete_webhook);
    }

    #[test]
    fn mistakes_name_the_line_and_what_is_wrong() {
        let err = parse("[telegram]\nallow = [1]\ntokn_env = \"X\"\n").unwrap_err();
        let said = err.to_string();
        assert!(said.starts_with("config.toml line 3:"), "{said}");
        assert!(said.contains("tokn_env"), "{said}");

        let said = parse("[telegram]\ntoken_env = \"X\"\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("allow"), "allow is required: {said}");

        let said = parse("[telegram]\nallow = [1]\nsend = [\"everything\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("line 3") && said.contains("everything"),
            "{said}"
        );

        let said = parse("[telegram]\nallow = [1]\npoll_timeout_secs = 0\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("poll_timeout_secs must be 1 to 50"), "{said}");

        let said = parse("[telegram]\nallow = [1]\napi_base = \"api.telegram.org\"\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("not an http(s) address"), "{said}");
    }

    #[test]
    fn a_file_without_the_table_says_how_to_add_it() {
        let err = parse("[model]\nprovider = \"openai\"\n").unwrap_err();
        assert!(matches!(err, ConfigError::Missing { .. }));
        assert!(err.to_string().contains("allow = [your user id]"));
    }

    #[test]
    fn the_token_comes_from_secrets_env_and_its_absence_says_where_to_put_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let config =
            parse("[telegram]\ntoken_env = \"HEARTH_UNIT_TEST_NO_SUCH_VAR\"\nallow = []\n")
                .unwrap();
        let said = config.token(&home).unwrap_err().to_string();
        assert!(said.contains("$HEARTH_UNIT_TEST_NO_SUCH_VAR"), "{said}");
        assert!(
            said.contains("secrets.env") && said.contains("@BotFather"),
            "{said}"
        );

        let secrets = home.secrets_file();
        std::fs::write(&secrets, "HEARTH_UNIT_TEST_NO_SUCH_VAR=42:token\n").unwrap();
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o644)).unwrap();
        let said = config.token(&home).unwrap_err().to_string();
        assert!(said.contains("readable by other users"), "{said}");
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(config.token(&home).unwrap(), "42:token");
    }
}
