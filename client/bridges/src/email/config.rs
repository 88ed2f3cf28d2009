//! The bridge's configuration: the `[email]` table of the home's
//! `config.toml` (the daemon keeps it opaque and only checks that it is
//! there), and the mailbox password from `secrets.env`.

use crate::bridge::config::{self as shared, default_send};
use hearth_protocol::home::Home;
use serde::Deserialize;
use std::path::Path;

pub use crate::bridge::config::{ConfigError, Outgoing};

/// The variable that holds the mailbox password unless `password_env` names another.
pub const DEFAULT_PASSWORD_ENV: &str = "HEARTH_EMAIL_PASSWORD";

const TABLE: &str = "email";
const EXAMPLE: &str =
    "imap_host, smtp_host, user, address, allow = [\"you@example.com\"] and trusted_authserv_id";

/// The `[email]` table as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct EmailTable {
    imap_host: String,
    #[serde(default)]
    imap_port: Option<u16>,
    smtp_host: String,
    #[serde(default)]
    smtp_port: Option<u16>,
    #[serde(default)]
    smtp_security: Option<Security>,
    user: String,
    #[serde(default)]
    password_env: Option<String>,
    address: String,
    allow: Vec<String>,
    #[serde(default)]
    owner: Option<String>,
    trusted_authserv_id: String,
    #[serde(default)]
    mailbox: Option<String>,
    #[serde(default = "default_send")]
    send: Vec<Outgoing>,
}

/// How a connection to a mail server is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    /// TLS from the first byte (IMAP 993, SMTP 465).
    Tls,
    /// Plain first, then STARTTLS before anything is said (SMTP 587).
    Starttls,
    /// No protection at all: only to a server on 127.0.0.1 (a test's, or a
    /// local relay), never across a network.
    Plain,
}

/// One mail server: where it is and how the connection is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub host: String,
    pub port: u16,
    pub security: Security,
}

/// The `[email]` table, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct EmailConfig {
    /// Where mail is read: IMAP over TLS (port 993 unless given), or plain
    /// to 127.0.0.1.
    pub imap: Server,
    /// Where mail is sent: SMTP with STARTTLS on 587 unless given
    /// (implicit TLS on 465).
    pub smtp: Server,
    /// The login of both servers.
    pub user: String,
    /// The variable (or `secrets.env` line) that holds the password.
    pub password_env: String,
    /// The agent's own address, the `From` of what it sends.
    pub address: String,
    /// Whose mail reaches the agent and who gets its replies, lower case.
    /// Required; empty lets nobody in.
    pub allow: Vec<String>,
    /// The owner, one of `allow`: the others' words are untrusted input.
    /// Optional when `allow` has one entry.
    pub owner: Option<String>,
    /// The authserv-id of the user's receiving server (their provider),
    /// whose `Authentication-Results` header is the only one believed.
    pub trusted_authserv_id: String,
    /// The IMAP folder read, `INBOX` unless given.
    pub mailbox: String,
    /// What goes out besides replies.
    pub send: Vec<Outgoing>,
}

/// The whole file as the bridge sees it: every other table is the daemon's.
#[derive(Deserialize)]
struct ConfigFile {
    #[serde(default)]
    email: Option<EmailTable>,
}

/// An address as both sides compare it: trimmed, lower case; `None` when
/// it is not `local@domain`.
pub fn address(text: &str) -> Option<String> {
    let text = text.trim().to_lowercase();
    let (local, domain) = text.split_once('@')?;
    let valid = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !text
            .chars()
            .any(|c| c.is_whitespace() || "<>,;\"".contains(c))
        && !domain.contains('@');
    valid.then_some(text)
}

/// Whether `host` is this machine's loopback, the only place plain text may go.
fn is_loopback(host: &str) -> bool {
    host == "127.0.0.1" || host == "::1" || host == "localhost"
}

impl EmailConfig {
    /// Reads the `[email]` table of the home's `config.toml`.
    pub fn load(home: &Home) -> Result<EmailConfig, ConfigError> {
        let (path, text) = shared::read_config(home, TABLE, EXAMPLE)?;
        EmailConfig::parse(&path, &text)
    }

    /// Reads the `[email]` table of a config file's text.
    pub fn parse(path: &Path, text: &str) -> Result<EmailConfig, ConfigError> {
        let table = shared::parse_table(path, text, TABLE, EXAMPLE, |file: ConfigFile| file.email)?;
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            table: TABLE,
            message,
        };
        let person = |key: &str, text: &str| {
            address(text).ok_or_else(|| {
                invalid(format!(
                    "{key}: `{text}` is not an email address like \"you@example.com\""
                ))
            })
        };
        let own = person("address", &table.address)?;
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
        if allow.contains(&own) {
            return Err(invalid(format!(
                "allow names the agent's own address {own}: it would answer itself"
            )));
        }
        let authserv = table.trusted_authserv_id.trim().to_string();
        if authserv.is_empty() || authserv.contains(char::is_whitespace) {
            return Err(invalid(
                "trusted_authserv_id must be your provider's authserv-id, the first word of the Authentication-Results headers its server adds (like \"mx.google.com\")".into(),
            ));
        }
        let imap_host = table.imap_host.trim().to_string();
        let smtp_host = table.smtp_host.trim().to_string();
        // IMAP is TLS from the first byte, except to a server on this machine.
        let imap = Server {
            security: if is_loopback(&imap_host) {
                Security::Plain
            } else {
                Security::Tls
            },
            port: table.imap_port.unwrap_or(993),
            host: imap_host,
        };
        let smtp_security = match (table.smtp_security, table.smtp_port) {
            (Some(security), _) => security,
            (None, Some(465)) => Security::Tls,
            (None, _) if is_loopback(&smtp_host) => Security::Plain,
            (None, _) => Security::Starttls,
        };
        if smtp_security == Security::Plain && !is_loopback(&smtp_host) {
            return Err(invalid(format!(
                "smtp_security = \"plain\" would send the password unprotected to {smtp_host}; plain is only for a server on 127.0.0.1"
            )));
        }
        let smtp = Server {
            port: table.smtp_port.unwrap_or(match smtp_security {
                Security::Tls => 465,
                _ => 587,
            }),
            security: smtp_security,
            host: smtp_host,
        };
        for (key, host) in [("imap_host", &imap.host), ("smtp_host", &smtp.host)] {
            if host.is_empty() {
                return Err(invalid(format!("{key} must name the mail server")));
            }
        }
        Ok(EmailConfig {
            imap,
            smtp,
            user: table.user,
            password_env: table
                .password_env
                .unwrap_or_else(|| DEFAULT_PASSWORD_ENV.to_string()),
            address: own,
            allow,
            owner,
            trusted_authserv_id: authserv,
            mailbox: table.mailbox.unwrap_or_else(|| "INBOX".to_string()),
            send: table.send,
        })
    }

    /// The mailbox password, from the environment or `secrets.env`.
    pub fn password(&self, home: &Home) -> Result<String, ConfigError> {
        shared::secret(
            home,
            &self.password_env,
            "email password",
            "use the mailbox's password, or an app password your provider makes for it",
        )
    }

    /// Whether `who` (an [`address`]) may talk to the agent.
    pub fn allows(&self, who: &str) -> bool {
        self.allow.iter().any(|allowed| allowed == who)
    }

    /// Whether `who` is the owner: `owner`, or the one entry of `allow`.
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

    const BASE: &str =
        "[email]\nimap_host = \"imap.example.com\"\nsmtp_host = \"smtp.example.com\"\n\
        user = \"agent\"\naddress = \"agent@example.com\"\nallow = [\" Ada@Example.com \"]\n\
        trusted_authserv_id = \"mx.example.com\"\n";

    fn parse(text: &str) -> Result<EmailConfig, ConfigError> {
        EmailConfig::parse(Path::new("config.toml"), text)
    }

    #[test]
    fn a_minimal_table_uses_tls_everywhere() {
        let config = parse(BASE).unwrap();
        assert_eq!(
            config.imap,
            Server {
                host: "imap.example.com".into(),
                port: 993,
                security: Security::Tls
            }
        );
        assert_eq!(config.smtp.port, 587);
        assert_eq!(config.smtp.security, Security::Starttls);
        assert_eq!(config.allow, vec!["ada@example.com"]);
        assert!(config.is_owner("ada@example.com"));
        assert_eq!(config.password_env, DEFAULT_PASSWORD_ENV);
        assert_eq!(config.mailbox, "INBOX");
        let implicit = parse(&format!("{BASE}smtp_port = 465\n")).unwrap();
        assert_eq!(implicit.smtp.security, Security::Tls);
    }

    #[test]
    fn plain_text_goes_only_to_this_machine() {
        let said = parse(&format!("{BASE}smtp_security = \"plain\"\n"))
            .unwrap_err()
            .to_string();
        assert!(said.contains("only for a server on 127.0.0.1"), "{said}");
        let local = BASE
            .replace("imap.example.com", "127.0.0.1")
            .replace("smtp.example.com", "127.0.0.1");
        let config = parse(&local).unwrap();
        assert_eq!(config.imap.security, Security::Plain);
        assert_eq!(config.smtp.security, Security::Plain);
    }

    #[test]
    fn mistakes_say_what_is_wrong() {
        let said = parse(&BASE.replace("\" Ada@Example.com \"", "\"ada\""))
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("allow: `ada` is not an email address"),
            "{said}"
        );
        let said = parse(&format!("{BASE}owner = \"bob@example.com\"\n"))
            .unwrap_err()
            .to_string();
        assert!(
            said.contains("owner bob@example.com is not one of allow"),
            "{said}"
        );
        let said = parse(&BASE.replace("\"mx.example.com\"", "\"\""))
            .unwrap_err()
            .to_string();
        assert!(said.contains("trusted_authserv_id must be"), "{said}");
        let said = parse(&BASE.replace("trusted_authserv_id = \"mx.example.com\"\n", ""))
            .unwrap_err()
            .to_string();
        assert!(said.contains("trusted_authserv_id"), "{said}");
        let said = parse(&BASE.replace("Ada@Example.com", "agent@example.com"))
            .unwrap_err()
            .to_string();
        assert!(said.contains("own address"), "{said}");
    }
}
