//! Setup's email step: the agent's address and mailbox (the IMAP and SMTP
//! servers, the login, the password in `secrets.env`), who may write to
//! it, and the authserv-id of the user's provider, whose verdict on a
//! sender the bridge believes. The login is proved on the IMAP server
//! before anything is written.

use super::ask::{self, AskError, Asker};
use super::edit::Edit;
use super::SetupOptions;
use hearth_bridges::email::config::{address, EmailConfig, DEFAULT_PASSWORD_ENV};
use hearth_bridges::email::imap::{ImapError, Mailbox};
use hearth_protocol::home::Home;

#[derive(Debug, thiserror::Error)]
pub enum EmailStepError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error("`{0}` is not an email address like you@example.com")]
    BadAddress(String),
    #[error("`{0}` is not a port number")]
    BadPort(String),
    #[error("{0} (nothing about email was written)")]
    Login(#[from] ImapError),
}

/// What the email step decided.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub address: String,
    pub imap_host: String,
    pub imap_port: u16,
    pub smtp_host: String,
    pub smtp_port: u16,
    pub user: String,
    pub password_env: String,
    /// The password, when it was typed here and must be stored.
    pub new_password: Option<String>,
    /// The password, to prove the login with.
    pub password: String,
    pub allow: Vec<String>,
    pub authserv_id: String,
}

impl Chosen {
    pub fn edits(&self) -> Vec<Edit> {
        let allow: Vec<toml::Value> = self
            .allow
            .iter()
            .map(|who| toml::Value::from(who.as_str()))
            .collect();
        vec![
            Edit::set("email", "address", self.address.as_str()),
            Edit::set("email", "imap_host", self.imap_host.as_str()),
            Edit::set("email", "imap_port", i64::from(self.imap_port)),
            Edit::set("email", "smtp_host", self.smtp_host.as_str()),
            Edit::set("email", "smtp_port", i64::from(self.smtp_port)),
            Edit::set("email", "user", self.user.as_str()),
            Edit::set("email", "password_env", self.password_env.as_str()),
            Edit::set("email", "allow", allow),
            Edit::set("email", "trusted_authserv_id", self.authserv_id.as_str()),
        ]
    }
}

/// Whether to set up email at all: an email flag says yes; else a person
/// is asked.
pub fn wanted(asker: &mut Asker<'_>, options: &SetupOptions) -> Result<bool, AskError> {
    let email = &options.email;
    if email.address.is_some()
        || email.imap_host.is_some()
        || email.smtp_host.is_some()
        || !email.allow.is_empty()
    {
        return Ok(true);
    }
    asker.confirm(
        "Talk to the agent by email too (a mailbox of its own, read over IMAP)?",
        false,
    )
}

/// Asks what the flags and the current `[email]` table do not say, then
/// proves the login on the IMAP server.
pub async fn run(
    asker: &mut Asker<'_>,
    options: &SetupOptions,
    home: &Home,
    current: Option<&toml::Table>,
) -> Result<Chosen, EmailStepError> {
    let given = &options.email;
    let text = |key: &str| {
        current
            .and_then(|table| table.get(key))
            .and_then(toml::Value::as_str)
            .map(str::to_string)
    };
    let port = |key: &str| {
        current
            .and_then(|table| table.get(key))
            .and_then(toml::Value::as_integer)
            .map(|port| port.to_string())
    };
    let mut ask = |given: &Option<String>,
                   key: &str,
                   question: &str,
                   default: Option<String>,
                   flag: &'static str|
     -> Result<String, AskError> {
        match given.clone().or_else(|| text(key)) {
            Some(value) => Ok(value),
            None => asker.text(question, default.as_deref(), flag),
        }
    };
    let own = ask(
        &given.address,
        "address",
        "The agent's email address (its own mailbox, not yours)",
        None,
        "--email-address ADDRESS",
    )?;
    let own = address(&own).ok_or(EmailStepError::BadAddress(own))?;
    let domain = own
        .rsplit_once('@')
        .map_or("", |(_, domain)| domain)
        .to_string();
    let imap_host = ask(
        &given.imap_host,
        "imap_host",
        "Its IMAP server",
        Some(format!("imap.{domain}")),
        "--email-imap-host HOST",
    )?;
    let smtp_host = ask(
        &given.smtp_host,
        "smtp_host",
        "Its SMTP server",
        Some(format!("smtp.{domain}")),
        "--email-smtp-host HOST",
    )?;
    let user = ask(
        &given.user,
        "user",
        "The mailbox's login",
        Some(own.clone()),
        "--email-user NAME",
    )?;
    let authserv_id = ask(
        &given.authserv_id,
        "trusted_authserv_id",
        "Your provider's authserv-id: the first word of the Authentication-Results header in a mail the agent's mailbox received (show the mail's source)",
        None,
        "--email-authserv-id ID",
    )?;
    let imap_port = given
        .imap_port
        .map(|port| port.to_string())
        .or_else(|| port("imap_port"));
    let imap_port = parse_port(imap_port.as_deref().unwrap_or("993"))?;
    let smtp_port = given
        .smtp_port
        .map(|port| port.to_string())
        .or_else(|| port("smtp_port"));
    let smtp_port = parse_port(smtp_port.as_deref().unwrap_or("587"))?;

    let mut allow: Vec<String> = current
        .and_then(|table| table.get("allow"))
        .and_then(toml::Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter_map(toml::Value::as_str)
                .filter_map(address)
                .collect()
        })
        .unwrap_or_default();
    for entry in &given.allow {
        let entry = address(entry).ok_or_else(|| EmailStepError::BadAddress(entry.clone()))?;
        if !allow.contains(&entry) {
            allow.push(entry);
        }
    }
    if allow.is_empty() {
        let yours = asker.text(
            "Your own email address (the one allowed to write to the agent)",
            None,
            "--email-allow ADDRESS",
        )?;
        allow.push(address(&yours).ok_or(EmailStepError::BadAddress(yours))?);
    }

    let password_env = given
        .password_env
        .clone()
        .or_else(|| text("password_env"))
        .unwrap_or_else(|| DEFAULT_PASSWORD_ENV.to_string());
    let (password, new_password) = ask::secret_or_ask(
        asker,
        home,
        &password_env,
        "The mailbox's password (or an app password your provider made for it)",
        "--email-password-env NAME (a variable holding the password)",
        "A password is needed to read the mailbox.",
    )?;
    let chosen = Chosen {
        address: own,
        imap_host,
        imap_port,
        smtp_host,
        smtp_port,
        user,
        password_env,
        new_password,
        password,
        allow,
        authserv_id,
    };
    Ok(chosen)
}

/// Proves the login of `config` on its IMAP server.
pub async fn prove(
    asker: &mut Asker<'_>,
    config: &EmailConfig,
    password: &str,
) -> Result<(), EmailStepError> {
    asker.say(&format!("Logging in to {}…", config.imap.host));
    let mailbox = Mailbox::open(config, password).await?;
    drop(mailbox);
    asker.say(&format!(
        "✓ {} took the login of {}",
        config.imap.host, config.user
    ));
    Ok(())
}

fn parse_port(text: &str) -> Result<u16, EmailStepError> {
    text.trim()
        .parse()
        .map_err(|_| EmailStepError::BadPort(text.to_string()))
}
