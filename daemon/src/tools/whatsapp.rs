//! `whatsapp_send(to, text)`: the top agent writes to a person on WhatsApp.
//!
//! Only people the config names can be written to: the numbers and user ids of
//! `[whatsapp] allow` and the named numbers of `[whatsapp] contacts`. The
//! tool does not talk to WhatsApp itself: its tool message carries the
//! message as an outbox, and the WhatsApp bridge, which follows the log from
//! its stored cursor, sends it once (with either backend), as it sends
//! replies. So a message the agent sent while the bridge was restarting goes
//! out when it is back, and none goes out twice. Subagents never get the
//! tool.

use super::tool::{Call, Tool};
use super::Outcome;
use crate::model::ToolSpec;
use futures_util::future::BoxFuture;
use hearth_protocol::bridge_tables::{BadNumber, WhatsAppTable};
use hearth_protocol::whatsapp::{whatsapp_id, whatsapp_shown};
use hearth_protocol::Outbox;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The outbox's `via`: the WhatsApp bridge's source name.
pub const VIA: &str = "whatsapp";

/// The longest text one call sends; the bridge splits it into WhatsApp's
/// parts. Longer text is refused, so the model says it shorter.
const MAX_TEXT_CHARS: usize = 16_000;

/// Who `whatsapp_send` may write to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Contacts {
    /// Names (`contacts`), to numbers (digits only).
    named: BTreeMap<String, String>,
    /// Every number that may be written to, named or allowed.
    numbers: Vec<String>,
}

/// A `[whatsapp]` table the daemon cannot read people from.
#[derive(Debug, thiserror::Error)]
pub enum ContactsError {
    /// The table does not read as the `[whatsapp]` table (a key that is
    /// not one, a value of the wrong kind); the bridge names the line.
    #[error("[whatsapp] {0}")]
    Table(String),
    /// A number in `allow` or `contacts` is not a phone number.
    #[error("[whatsapp] {0}")]
    Number(#[from] BadNumber),
}

impl Contacts {
    /// Reads `allow` and `contacts` of the `[whatsapp]` table (defined once,
    /// [`WhatsAppTable`]); the bridge checks the rest.
    pub fn from_table(table: &toml::Table) -> Result<Contacts, ContactsError> {
        let table: WhatsAppTable = toml::Value::Table(table.clone())
            .try_into()
            .map_err(|err: toml::de::Error| ContactsError::Table(err.message().to_string()))?;
        let mut contacts = Contacts::default();
        for number in table.allowed()? {
            contacts.add(number);
        }
        for (name, number) in table.contacts()? {
            contacts.named.insert(name, number.clone());
            contacts.add(number);
        }
        Ok(contacts)
    }

    fn add(&mut self, number: String) {
        if !self.numbers.contains(&number) {
            self.numbers.push(number);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty()
    }

    /// The number `to` names: a contact's name (any case) or a number that
    /// may be written to.
    fn resolve(&self, to: &str) -> Result<String, String> {
        let to = to.trim();
        if let Some((_, number)) = self
            .named
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(to))
        {
            return Ok(number.clone());
        }
        match whatsapp_id(to) {
            Some(number) if self.numbers.contains(&number) => Ok(number),
            _ => Err(format!(
                "`{to}` is not someone you may write to on WhatsApp; you may write to: {}",
                self.listing()
            )),
        }
    }

    /// The names and numbers, as the tool's description and errors list them.
    fn listing(&self) -> String {
        let mut entries: Vec<String> = self
            .named
            .iter()
            .map(|(name, number)| format!("{name} ({})", whatsapp_shown(number)))
            .collect();
        let unnamed = self
            .numbers
            .iter()
            .filter(|number| !self.named.values().any(|named| named == *number));
        entries.extend(unnamed.map(|number| whatsapp_shown(number)));
        entries.join(", ")
    }
}

pub fn spec(contacts: &Contacts) -> ToolSpec {
    ToolSpec {
        name: "whatsapp_send".to_string(),
        description: format!(
            "Sends a WhatsApp message to one person, by name or number. The WhatsApp bridge \
             delivers it; a failure to deliver shows up later as a note. You may write to: {}.",
            contacts.listing()
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "to": {"type": "string", "description": "A contact's name or number."},
                "text": {"type": "string", "description": "The message."}
            },
            "required": ["to", "text"],
            "additionalProperties": false
        }),
    }
}

/// `whatsapp_send` to these contacts: acts (it sends).
pub struct WhatsAppSend(pub Arc<Contacts>);

impl Tool for WhatsAppSend {
    fn spec(&self) -> ToolSpec {
        spec(&self.0)
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { self::call(&self.0, &call.arguments) })
    }
}

pub fn call(contacts: &Contacts, arguments: &Value) -> Outcome {
    let to = arguments["to"].as_str().unwrap_or_default();
    let text = arguments["text"].as_str().unwrap_or_default().trim();
    if text.is_empty() {
        return Outcome::error("`text` is empty: there is nothing to send");
    }
    let chars = text.chars().count();
    if chars > MAX_TEXT_CHARS {
        return Outcome::error(format!(
            "`text` has {chars} characters; send at most {MAX_TEXT_CHARS}"
        ));
    }
    match contacts.resolve(to) {
        Ok(number) => Outcome {
            outbox: Some(Outbox {
                via: VIA.to_string(),
                to: number.clone(),
                text: text.to_string(),
            }),
            ..Outcome::ok(format!(
                "queued for {}; the WhatsApp bridge sends it",
                whatsapp_shown(&number)
            ))
        },
        Err(why) => Outcome::error(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contacts(text: &str) -> Contacts {
        let table: toml::Table = toml::from_str(text).unwrap();
        Contacts::from_table(&table).unwrap()
    }

    #[test]
    fn allowed_and_named_numbers_may_be_written_to() {
        let c = contacts(
            "allow = [\"+49 151 1234-5678\", 15551234567]\ncontacts = { Anna = \"+44 7700 900123\" }",
        );
        assert_eq!(c.resolve("anna"), Ok("447700900123".to_string()));
        assert_eq!(c.resolve("+4915112345678"), Ok("4915112345678".to_string()));
        assert_eq!(c.resolve("15551234567"), Ok("15551234567".to_string()));
        let with_id = contacts("allow = [\"us.13491208655302741918\"]");
        assert_eq!(
            with_id.resolve("US.13491208655302741918"),
            Ok("US.13491208655302741918".to_string())
        );
        assert_eq!(with_id.listing(), "US.13491208655302741918");
        let refused = c.resolve("+15550000000").unwrap_err();
        assert!(
            refused.contains("Anna (+447700900123), +4915112345678, +15551234567"),
            "{refused}"
        );
    }

    #[test]
    fn a_call_leaves_an_outbox_and_bad_calls_leave_none() {
        let c = contacts("allow = [\"+4915112345678\"]");
        let sent = call(
            &c,
            &json!({"to": "+49 151 12345678", "text": " see you at 8 "}),
        );
        assert_eq!(sent.status, hearth_protocol::MessageStatus::Ok);
        assert_eq!(
            sent.outbox,
            Some(Outbox {
                via: "whatsapp".into(),
                to: "4915112345678".into(),
                text: "see you at 8".into()
            })
        );
        for arguments in [
            json!({"to": "+4915112345678", "text": "  "}),
            json!({"to": "mallory", "text": "hi"}),
            json!({"to": "+4915112345678", "text": "x".repeat(MAX_TEXT_CHARS + 1)}),
        ] {
            let refused = call(&c, &arguments);
            assert_eq!(
                refused.status,
                hearth_protocol::MessageStatus::Error,
                "{arguments}"
            );
            assert_eq!(refused.outbox, None);
        }
    }

    #[test]
    fn a_number_that_is_not_one_is_an_error_naming_the_key() {
        let table: toml::Table = toml::from_str("contacts = { bob = \"call me\" }").unwrap();
        let err = Contacts::from_table(&table).unwrap_err().to_string();
        assert!(err.starts_with("[whatsapp] contacts.bob:"), "{err}");
        let table: toml::Table = toml::from_str("contacts = [\"+4915112345678\"]").unwrap();
        assert!(Contacts::from_table(&table).is_err());
    }
}
