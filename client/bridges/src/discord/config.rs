//! The bridge's configuration: the `[discord]` table of the home's
//! `config.toml` (the daemon keeps it opaque and only checks that it is
//! there), and the bot token from the environment or `secrets.env`.

use crate::bridge::config::{self as shared, default_send};
use hearth_protocol::home::Home;
use serde::Deserialize;
use std::path::Path;

pub use crate::bridge::config::{ConfigError, Outgoing};

/// Where Discord's REST API lives when `api_base` is not set.
pub const DEFAULT_API_BASE: &str = "https://discord.com";

/// The variable (or `secrets.env` entry) holding the token when `token_env`
/// is not set.
pub const DEFAULT_TOKEN_ENV: &str = "DISCORD_BOT_TOKEN";

/// The table's name, and what it needs at least.
const TABLE: &str = "discord";
const EXAMPLE: &str = "allow = [your user id]";

/// A Discord id as written: a number, or the same digits in quotes (what
/// Discord's "Copy ID" gives, and what JSON tools write).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
enum Written {
    Number(i64),
    Text(String),
}

/// The `[discord]` table as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct DiscordTable {
    #[serde(default = "default_token_env")]
    token_env: String,
    allow: Vec<Written>,
    #[serde(default)]
    owner: Option<Written>,
    #[serde(default)]
    channel: Option<Written>,
    #[serde(default)]
    api_base: Option<String>,
    #[serde(default = "default_send")]
    send: Vec<Outgoing>,
}

fn default_token_env() -> String {
    DEFAULT_TOKEN_ENV.to_string()
}

/// The `[discord]` table, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscordConfig {
    /// The environment variable (or `secrets.env` entry) with the bot token.
    pub token_env: String,
    /// The Discord user ids whose messages reach the agent and who get its
    /// replies in their direct messages. Required; empty lets nobody in.
    pub allow: Vec<u64>,
    /// The owner's user id, one of `allow`: the others' words are
    /// untrusted input to the agent. Optional when `allow` has one id.
    pub owner: Option<u64>,
    /// One server channel the bot also reads and answers in, besides direct
    /// messages; only the allowed people's messages there reach the agent.
    pub channel: Option<u64>,
    /// Where the REST API is (`https://discord.com`); the Gateway's address
    /// is asked of it.
    pub api_base: String,
    /// What goes out besides replies.
    pub send: Vec<Outgoing>,
}

/// The whole file as the bridge sees it: every other table is the daemon's.
#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    discord: Option<DiscordTable>,
}

/// A Discord id (a snowflake: a positive number) from its written form.
pub fn snowflake(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok().filter(|&id| id > 0)
}

impl DiscordConfig {
    /// Reads the `[discord]` table of the home's `config.toml`.
    pub fn load(home: &Home) -> Result<DiscordConfig, ConfigError> {
        let (path, text) = shared::read_config(home, TABLE, EXAMPLE)?;
        DiscordConfig::parse(&path, &text)
    }

    /// Reads the `[discord]` table of a config file's text.
    pub fn parse(path: &Path, text: &str) -> Result<DiscordConfig, ConfigError> {
        let table =
            shared::parse_table(path, text, TABLE, EXAMPLE, |file: ConfigFile| file.discord)?;
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            table: TABLE,
            message,
        };
        let id = |key: &str, written: &Written| {
            let read = match written {
                Written::Number(n) => u64::try_from(*n).ok().filter(|&id| id > 0),
                Written::Text(text) => snowflake(text),
            };
            read.ok_or_else(|| {
                let shown = match written {
                    Written::Number(n) => n.to_string(),
                    Written::Text(text) => format!("\"{text}\""),
                };
                invalid(format!(
                    "{key}: {shown} is not a Discord id (a number like 123456789012345678; \
                     `hearth setup` finds yours by a code you send the bot)"
                ))
            })
        };
        let allow = table
            .allow
            .iter()
            .map(|entry| id("allow", entry))
            .collect::<Result<Vec<_>, _>>()?;
        let owner = table
            .owner
            .as_ref()
            .map(|owner| id("owner", owner))
            .transpose()?;
        if let Some(owner) = owner.filter(|owner| !allow.contains(owner)) {
            return Err(invalid(format!("owner {owner} is not one of allow")));
        }
        let channel = table
            .channel
            .as_ref()
            .map(|channel| id("channel", channel))
            .transpose()?;
        let api_base = match table.api_base {
            None => DEFAULT_API_BASE.to_string(),
            Some(written) => shared::http_base(&written).ok_or_else(|| {
                invalid(format!(
                    "api_base `{written}` is not an http:// or https:// address"
                ))
            })?,
        };
        if table.token_env.trim().is_empty() {
            return Err(invalid("token_env must name a variable".into()));
        }
        Ok(DiscordConfig {
            token_env: table.token_env,
            allow,
            owner,
            channel,
            api_base,
            send: table.send,
        })
    }

    /// The bot token, from the environment or `secrets.env`.
    pub fn token(&self, home: &Home) -> Result<String, ConfigError> {
        shared::secret(
            home,
            &self.token_env,
            "Discord bot token",
            "create a bot at https://discord.com/developers/applications (Bot → Reset Token) and run `hearth setup`",
        )
    }

    /// Whether user `who` may talk to the agent.
    pub fn allows(&self, who: u64) -> bool {
        self.allow.contains(&who)
    }

    /// Whether `who` is the owner: `owner`, or the one entry of `allow`.
    /// With several entries and no `owner`, nobody is.
    pub fn is_owner(&self, who: u64) -> bool {
        match self.owner {
            Some(owner) => owner == who,
            None => self.allow == [who],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<DiscordConfig, ConfigError> {
        DiscordConfig::parse(Path::new("config.toml"), text)
    }

    #[test]
    fn a_minimal_table_reads_ids_as_numbers_or_text() {
        let config =
            parse("[discord]\nallow = [123456789012345678, \"223456789012345678\"]\n").unwrap();
        assert_eq!(config.allow, vec![123456789012345678, 223456789012345678]);
        assert_eq!(config.token_env, "DISCORD_BOT_TOKEN");
        assert_eq!(config.api_base, "https://discord.com");
        assert_eq!(config.channel, None);
        assert!(config.allows(123456789012345678) && !config.allows(1));
        assert!(!config.is_owner(123456789012345678), "two people, no owner");

        let config = parse("[discord]\nallow = [7]\nchannel = \"99\"\n").unwrap();
        assert!(config.is_owner(7));
        assert_eq!(config.channel, Some(99));
    }

    #[test]
    fn mistakes_say_what_is_wrong() {
        let said = parse("[discord]\nallow = [\"@ada\"]\n")
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("allow: \"@ada\" is not a Discord id"),
            "{said}"
        );
        let said = parse("[discord]\nallow = [-4]\n").unwrap_err().to_string();
        assert!(said.contains("allow: -4 is not a Discord id"), "{said}");
        let said = parse("[discord]\nallow = [1]\nowner = 2\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("owner 2 is not one of allow"), "{said}");
        let said = parse("[discord]\nallow = []\napi_base = \"discord.com\"\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("api_base `discord.com`"), "{said}");
        let said = parse("[discord]\nallow = []\nguild = 1\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("line 3"), "{said}");
        let err = parse("[model]\nprovider = \"openai\"\n").unwrap_err();
        assert!(matches!(err, ConfigError::Missing { .. }));
    }
}
