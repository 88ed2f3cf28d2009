//! The bridges' tables of `config.toml` that more than one program reads,
//! defined once: what a bridge sends besides replies ([`Outgoing`], in
//! `[telegram]` and `[whatsapp]`), and the `[whatsapp]` table, read by the
//! WhatsApp bridge (all of it, checked) and by the daemon (who its
//! `whatsapp_send` may write to: `allow` and `contacts`).
//!
//! People are written as numbers (TOML text or integers) or business-scoped
//! user ids; [`WhatsAppTable::allowed`] and [`WhatsAppTable::contacts`] turn
//! them into WhatsApp ids ([`crate::whatsapp`]) the one way both sides use.

use crate::whatsapp::whatsapp_id;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// What goes out to the platform beside the replies, which always do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outgoing {
    /// The agent's answers that end a turn (always sent; naming it is allowed).
    Reply,
    /// What the agent says beside its tool calls.
    Echo,
    /// Subagents' reports.
    Work,
    /// Failed turns (live `error` events; they are not logged, so an error
    /// while the bridge was down is not sent later).
    Error,
    /// The daemon's notes (an interrupt, a restart), except the bridge's own.
    Note,
}

/// `send` when a table does not say: replies, errors and work reports.
pub fn default_send() -> Vec<Outgoing> {
    vec![Outgoing::Reply, Outgoing::Error, Outgoing::Work]
}

/// The Graph API, up to and including the version, when `graph_base` is not set.
pub const DEFAULT_GRAPH_BASE: &str = "https://graph.facebook.com/v23.0";
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8443";
pub const DEFAULT_PATH: &str = "/webhook";
pub const DEFAULT_VERIFY_TOKEN_ENV: &str = "WHATSAPP_VERIFY_TOKEN";
pub const DEFAULT_APP_SECRET_ENV: &str = "WHATSAPP_APP_SECRET";
pub const DEFAULT_ACCESS_TOKEN_ENV: &str = "WHATSAPP_ACCESS_TOKEN";

/// How the bridge reaches WhatsApp.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// The WhatsApp Business Cloud API: a business number, a webhook.
    #[default]
    Cloud,
    /// A personal account, linked as a WhatsApp Web device (`hearth
    /// whatsapp link`); only in a hearth built with `--features whatsapp-web`.
    Web,
}

/// The `[whatsapp]` table as written; every key but `allow` has a default.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhatsAppTable {
    #[serde(default)]
    pub backend: Backend,
    /// Where the webhook listens. Loopback by default: a reverse proxy with
    /// TLS exposes it; every delivery is checked against its signature.
    #[serde(default = "default_listen")]
    pub listen: String,
    /// The webhook's path, as given to Meta in the callback URL.
    #[serde(default = "default_path")]
    pub path: String,
    /// The variable with the token Meta echoes when it verifies the webhook.
    #[serde(default = "default_verify_token_env")]
    pub verify_token_env: String,
    /// The variable with the app secret that signs Meta's deliveries.
    #[serde(default = "default_app_secret_env")]
    pub app_secret_env: String,
    /// The variable with the access token the bridge sends with.
    #[serde(default = "default_access_token_env")]
    pub access_token_env: String,
    /// The business phone number's id (not the number itself): messages go
    /// out from it, and only messages to it are relayed. Required with the
    /// Cloud API; not read with the linked device.
    #[serde(default)]
    pub phone_number_id: Option<NumberText>,
    #[serde(default = "default_graph_base")]
    pub graph_base: String,
    /// The people whose messages reach the agent and that get its replies,
    /// and whom `whatsapp_send` may write to: numbers with country code
    /// or business-scoped user ids (`US.1349…`, for someone whose number
    /// WhatsApp withholds). The bridge requires it; empty lets nobody in.
    #[serde(default)]
    pub allow: Option<Vec<NumberText>>,
    /// The owner's number, one of `allow`: the others' words are untrusted
    /// input to the agent. Optional when `allow` has one number.
    #[serde(default)]
    pub owner: Option<NumberText>,
    /// What goes out besides replies.
    #[serde(default = "default_send")]
    pub send: Vec<Outgoing>,
    /// Named numbers the agent's `whatsapp_send` may also write to.
    #[serde(default)]
    pub contacts: BTreeMap<String, NumberText>,
}

impl WhatsAppTable {
    /// The variables that hold the table's secrets.
    pub fn secret_names(&self) -> [&str; 3] {
        [
            &self.verify_token_env,
            &self.app_secret_env,
            &self.access_token_env,
        ]
    }

    /// `allow` as WhatsApp ids (none when it is not given).
    pub fn allowed(&self) -> Result<Vec<String>, BadNumber> {
        let allow = self.allow.as_deref().unwrap_or_default();
        allow
            .iter()
            .map(|number| number.wa_id("allow".to_string()))
            .collect()
    }

    /// `owner` as a WhatsApp id (none when it is not given), or what is
    /// wrong with it.
    pub fn owner_id(&self) -> Result<Option<String>, BadNumber> {
        self.owner
            .as_ref()
            .map(|owner| owner.wa_id("owner".to_string()))
            .transpose()
    }

    /// `contacts`, each name with its WhatsApp id.
    pub fn contacts(&self) -> Result<BTreeMap<String, String>, BadNumber> {
        self.contacts
            .iter()
            .map(|(name, number)| Ok((name.clone(), number.wa_id(format!("contacts.{name}"))?)))
            .collect()
    }
}

/// A number that may be written as TOML text or as an integer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum NumberText {
    Text(String),
    Number(u64),
}

impl NumberText {
    /// As written, integers in decimal.
    pub fn as_text(&self) -> String {
        match self {
            NumberText::Text(text) => text.clone(),
            NumberText::Number(number) => number.to_string(),
        }
    }

    /// The WhatsApp id, or what is wrong with the entry under `key`.
    fn wa_id(&self, key: String) -> Result<String, BadNumber> {
        let text = self.as_text();
        whatsapp_id(&text).ok_or(BadNumber { key, text })
    }
}

/// An entry in the table that is neither a phone number nor a user id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadNumber {
    /// Where it is written: `allow`, `contacts.NAME`.
    pub key: String,
    pub text: String,
}

impl fmt::Display for BadNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: `{}` is neither a phone number nor a WhatsApp user id; write a number with its country code, like \"+15551234567\", or a user id as WhatsApp gives it, like \"US.13491208655302741918\"",
            self.key, self.text
        )
    }
}

impl std::error::Error for BadNumber {}

fn default_listen() -> String {
    DEFAULT_LISTEN.to_string()
}
fn default_path() -> String {
    DEFAULT_PATH.to_string()
}
fn default_verify_token_env() -> String {
    DEFAULT_VERIFY_TOKEN_ENV.to_string()
}
fn default_app_secret_env() -> String {
    DEFAULT_APP_SECRET_ENV.to_string()
}
fn default_access_token_env() -> String {
    DEFAULT_ACCESS_TOKEN_ENV.to_string()
}
fn default_graph_base() -> String {
    DEFAULT_GRAPH_BASE.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(json: serde_json::Value) -> WhatsAppTable {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn numbers_read_as_text_or_integers_and_a_bad_one_names_its_key() {
        let read = table(serde_json::json!({
            "allow": ["+1 555 123-4567", 442079460958u64],
            "contacts": {"anna": "+49 151 1234 5678"},
        }));
        assert_eq!(read.allowed().unwrap(), ["15551234567", "442079460958"]);
        assert_eq!(read.contacts().unwrap()["anna"], "4915112345678");
        assert_eq!(read.backend, Backend::Cloud);
        assert_eq!(read.send, default_send());

        let bad = table(serde_json::json!({"contacts": {"bob": "call me"}}));
        let said = bad.contacts().unwrap_err().to_string();
        assert!(
            said.starts_with("contacts.bob: `call me` is neither"),
            "{said}"
        );
        assert_eq!(bad.allowed().unwrap(), Vec::<String>::new());
    }
}
