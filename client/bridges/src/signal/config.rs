//! The bridge's configuration: the `[signal]` table of the home's
//! `config.toml` (the daemon keeps it opaque and only checks that it is
//! there). Signal needs no secret of hearth's: signal-cli keeps the
//! account's keys in its own data folder.

use crate::bridge::config::{self as shared, default_send};
use hearth_protocol::home::Home;
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub use crate::bridge::config::{ConfigError, Outgoing};

/// The program started when neither `socket` nor `tcp` is given.
pub const DEFAULT_COMMAND: &str = "signal-cli";

/// The table's name, and what it needs at least.
const TABLE: &str = "signal";
const EXAMPLE: &str = "account = \"+15550001111\" and allow = [\"+15551234567\"]";

/// The `[signal]` table as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignalTable {
    account: String,
    allow: Vec<String>,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    socket: Option<PathBuf>,
    #[serde(default)]
    tcp: Option<String>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default = "default_send")]
    send: Vec<Outgoing>,
}

/// How the bridge reaches signal-cli's JSON-RPC interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    /// A `signal-cli daemon --socket PATH` someone else runs.
    Socket(PathBuf),
    /// A `signal-cli daemon --tcp HOST:PORT` someone else runs.
    Tcp(String),
    /// The program the bridge starts itself, as `PROGRAM -a ACCOUNT daemon
    /// --socket PATH --receive-mode manual`, and stops with it.
    Command(String),
}

/// The `[signal]` table, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalConfig {
    /// The number signal-cli is registered (or linked) as, `+` and digits:
    /// the agent's own Signal account.
    pub account: String,
    /// Whose messages reach the agent and who gets its replies: numbers
    /// (`+…`) or Signal account ids (UUIDs, for people who hide their
    /// number). Required; empty lets nobody in.
    pub allow: Vec<String>,
    /// The owner, one of `allow`: the others' words are untrusted input to
    /// the agent. Optional when `allow` has one entry.
    pub owner: Option<String>,
    pub reach: Reach,
    /// What goes out besides replies.
    pub send: Vec<Outgoing>,
}

/// The whole file as the bridge sees it: every other table is the daemon's.
#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    signal: Option<SignalTable>,
}

/// A person as the table writes them, the one way both sides compare:
/// a number as `+` and its digits (spaces, dashes, dots and brackets
/// dropped), an account id (a UUID) in lower case; `None` for anything else.
pub fn address(text: &str) -> Option<String> {
    let text = text.trim();
    let digits: String = text
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '.' | '(' | ')' | '+'))
        .collect();
    let numeric = text.starts_with('+') || text.starts_with(|c: char| c.is_ascii_digit());
    if numeric && (7..=15).contains(&digits.len()) && digits.chars().all(|c| c.is_ascii_digit()) {
        return Some(format!("+{digits}"));
    }
    let uuid = text.to_ascii_lowercase();
    let shape = uuid.len() == 36
        && uuid.char_indices().all(|(at, c)| match at {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
    shape.then_some(uuid)
}

impl SignalConfig {
    /// Reads the `[signal]` table of the home's `config.toml`.
    pub fn load(home: &Home) -> Result<SignalConfig, ConfigError> {
        let (path, text) = shared::read_config(home, TABLE, EXAMPLE)?;
        SignalConfig::parse(&path, &text)
    }

    /// Reads the `[signal]` table of a config file's text.
    pub fn parse(path: &Path, text: &str) -> Result<SignalConfig, ConfigError> {
        let table =
            shared::parse_table(path, text, TABLE, EXAMPLE, |file: ConfigFile| file.signal)?;
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            table: TABLE,
            message,
        };
        let person = |key: &str, text: &str| {
            address(text).ok_or_else(|| {
                invalid(format!(
                    "{key}: `{text}` is neither a phone number with its country code (\"+15551234567\") nor a Signal account id (a UUID)"
                ))
            })
        };
        let account = match address(&table.account) {
            Some(account) if account.starts_with('+') => account,
            _ => {
                return Err(invalid(format!(
                    "account `{}` is not a phone number; write the number signal-cli is registered as, like \"+15550001111\"",
                    table.account
                )))
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
        let reach = match (table.socket, table.tcp, table.command) {
            (Some(socket), None, None) => Reach::Socket(socket),
            (None, Some(tcp), None) if tcp.contains(':') => Reach::Tcp(tcp),
            (None, Some(tcp), None) => {
                return Err(invalid(format!(
                    "tcp `{tcp}` is not HOST:PORT, like \"127.0.0.1:7583\""
                )))
            }
            (None, None, Some(command)) if !command.trim().is_empty() => Reach::Command(command),
            (None, None, None) => Reach::Command(DEFAULT_COMMAND.to_string()),
            (None, None, Some(_)) => return Err(invalid("command must name a program".into())),
            _ => {
                return Err(invalid(
                    "give one of socket, tcp or command: how the bridge reaches signal-cli".into(),
                ))
            }
        };
        Ok(SignalConfig {
            account,
            allow,
            owner,
            reach,
            send: table.send,
        })
    }

    /// Whether `who` (an [`address`]) may talk to the agent.
    pub fn allows(&self, who: &str) -> bool {
        self.allow.iter().any(|allowed| allowed == who)
    }

    /// Whether `who` is the owner: `owner`, or the one entry of `allow`.
    /// With several entries and no `owner`, nobody is.
    pub fn is_owner(&self, who: &str) -> bool {
        match &self.owner {
            Some(owner) => owner == who,
            None => self.allow.len() == 1 && self.allow[0] == who,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SignalConfig, ConfigError> {
        SignalConfig::parse(Path::new("config.toml"), text)
    }

    #[test]
    fn numbers_and_account_ids_are_read_one_way() {
        assert_eq!(
            address("+1 (555) 123-4567").as_deref(),
            Some("+15551234567")
        );
        assert_eq!(address("4915112345678").as_deref(), Some("+4915112345678"));
        assert_eq!(
            address("0A1B2C3D-0000-4000-8000-00000000ABCD").as_deref(),
            Some("0a1b2c3d-0000-4000-8000-00000000abcd")
        );
        assert_eq!(address("call me"), None);
        assert_eq!(address("+12"), None);
    }

    #[test]
    fn a_minimal_table_starts_signal_cli_itself() {
        let config =
            parse("[signal]\naccount = \"+15550001111\"\nallow = [\"+1 555 123 4567\"]\n").unwrap();
        assert_eq!(config.account, "+15550001111");
        assert_eq!(config.allow, vec!["+15551234567"]);
        assert_eq!(config.reach, Reach::Command("signal-cli".into()));
        assert_eq!(config.send, default_send());
        assert!(config.allows("+15551234567") && !config.allows("+15550000000"));
        assert!(config.is_owner("+15551234567"));
    }

    #[test]
    fn the_way_to_signal_cli_is_one_of_socket_tcp_or_command() {
        let base = "[signal]\naccount = \"+15550001111\"\nallow = []\n";
        let socket = parse(&format!("{base}socket = \"/run/s.sock\"\n")).unwrap();
        assert_eq!(socket.reach, Reach::Socket("/run/s.sock".into()));
        let tcp = parse(&format!("{base}tcp = \"127.0.0.1:7583\"\n")).unwrap();
        assert_eq!(tcp.reach, Reach::Tcp("127.0.0.1:7583".into()));
        let said = parse(&format!("{base}tcp = \"a:1\"\nsocket = \"/s\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("give one of socket, tcp or command"),
            "{said}"
        );
        let said = parse(&format!("{base}tcp = \"7583\"\n"))
            .unwrap_err()
            .to_string();
        assert!(said.contains("not HOST:PORT"), "{said}");
    }

    #[test]
    fn mistakes_say_what_is_wrong() {
        let said = parse("[signal]\naccount = \"me\"\nallow = []\n")
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("account `me` is not a phone number"),
            "{said}"
        );
        let said = parse("[signal]\naccount = \"+15550001111\"\nallow = [\"bob\"]\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("allow: `bob` is neither"), "{said}");
        let said = parse(
            "[signal]\naccount = \"+15550001111\"\nallow = [\"+15551234567\"]\nowner = \"+15557654321\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            said.contains("owner +15557654321 is not one of allow"),
            "{said}"
        );
        let said = parse("[signal]\naccount = \"+15550001111\"\n")
            .unwrap_err()
            .to_string();
        assert!(said.contains("allow"), "{said}");
        let err = parse("[model]\nprovider = \"openai\"\n").unwrap_err();
        assert!(matches!(err, ConfigError::Missing { .. }));
    }
}
