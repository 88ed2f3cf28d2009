//! What signal-cli says arrived (a `receive` notification's `envelope`),
//! read into what the bridge acts on (pure): a person's words and files, a
//! reaction, or something to pass over.

use super::config::{address, SignalConfig};
use serde::Deserialize;
use serde_json::Value;

/// An envelope as signal-cli writes it (the fields the bridge reads).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Envelope {
    pub source_number: Option<String>,
    pub source_uuid: Option<String>,
    pub source_name: Option<String>,
    pub timestamp: u64,
    pub data_message: Option<DataMessage>,
}

/// A message someone sent (not a receipt, a typing sign or a sync).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DataMessage {
    pub timestamp: u64,
    pub message: Option<String>,
    pub attachments: Option<Vec<AttachmentRef>>,
    pub reaction: Option<Reaction>,
    pub quote: Option<Quote>,
    pub group_info: Option<Value>,
    pub sticker: Option<Value>,
    pub remote_delete: Option<Value>,
}

/// A file that came with a message: signal-cli has it, under its id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AttachmentRef {
    pub id: Option<String>,
    pub content_type: Option<String>,
    pub filename: Option<String>,
    pub size: Option<u64>,
}

/// An emoji put on (or taken off) a message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Reaction {
    pub emoji: String,
    pub target_sent_timestamp: u64,
    pub is_remove: bool,
}

/// The message a reply quotes, by its timestamp.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Quote {
    pub id: u64,
}

/// Reads a `receive` notification's object; `None` when it has no envelope.
pub fn parse(received: &Value) -> Option<Envelope> {
    serde_json::from_value(received.get("envelope")?.clone()).ok()
}

/// What to do with one envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// An allowed person's words (and files) for the agent.
    Relay {
        from: String,
        key: String,
        text: Option<String>,
        attachments: Vec<AttachmentRef>,
        /// The timestamp of the message this one quotes.
        quote: Option<u64>,
    },
    /// An allowed person's reaction to message `target`.
    React {
        from: String,
        emoji: String,
        target: u64,
    },
    /// Someone not on the allowlist, named as a note shows them.
    Refuse { from: String, who: String },
    /// Nothing to do, and why.
    Ignore(&'static str),
}

/// The sender as the allowlist names people: the number when signal-cli
/// knows it, else the account id.
pub fn sender(envelope: &Envelope) -> Option<String> {
    envelope
        .source_number
        .as_deref()
        .and_then(address)
        .or_else(|| envelope.source_uuid.as_deref().and_then(address))
}

/// Decides what to do with an envelope. Only direct messages count: in a
/// group the agent's replies would reach people nobody allowed, and
/// strangers there are not answered either.
pub fn classify(envelope: &Envelope, config: &SignalConfig) -> Incoming {
    let Some(data) = &envelope.data_message else {
        return Incoming::Ignore("not a message (a receipt, typing, a sync)");
    };
    if data.group_info.is_some() {
        return Incoming::Ignore("a group message");
    }
    let Some(from) = sender(envelope) else {
        return Incoming::Ignore("a message without a sender");
    };
    if from == config.account {
        return Incoming::Ignore("a message from the account itself");
    }
    // Both the number and the account id may be on the allowlist.
    let uuid = envelope.source_uuid.as_deref().and_then(address);
    let allowed = config.allows(&from) || uuid.as_deref().is_some_and(|id| config.allows(id));
    if !allowed {
        let who = match &envelope.source_name {
            Some(name) if !name.trim().is_empty() => format!("{from} ({})", name.trim()),
            _ => from.clone(),
        };
        return Incoming::Refuse { from, who };
    }
    if let Some(reaction) = &data.reaction {
        if reaction.is_remove {
            return Incoming::Ignore("a reaction taken back");
        }
        return Incoming::React {
            from,
            emoji: reaction.emoji.clone(),
            target: reaction.target_sent_timestamp,
        };
    }
    if data.remote_delete.is_some() {
        return Incoming::Ignore("a message deleted");
    }
    let text = data
        .message
        .as_deref()
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map(str::to_string);
    let attachments = data.attachments.clone().unwrap_or_default();
    if text.is_none() && attachments.is_empty() {
        return match data.sticker {
            Some(_) => Incoming::Relay {
                key: key(&from, envelope, data),
                from,
                text: Some("[sticker]".into()),
                attachments,
                quote: None,
            },
            None => Incoming::Ignore("nothing to relay"),
        };
    }
    Incoming::Relay {
        key: key(&from, envelope, data),
        from,
        text,
        attachments,
        quote: data.quote.as_ref().map(|quote| quote.id),
    }
}

/// The idempotency key: the sender and the message's timestamp, which
/// Signal uses as the message's id.
fn key(from: &str, envelope: &Envelope, data: &DataMessage) -> String {
    let sent = if data.timestamp > 0 {
        data.timestamp
    } else {
        envelope.timestamp
    };
    format!("signal:{from}:{sent}")
}

/// What stands for a file in the words when it could not be attached.
pub fn placeholder(attachment: &AttachmentRef) -> String {
    let kind = attachment.content_type.as_deref().unwrap_or_default();
    if kind.starts_with("image/") {
        "[photo]".to_string()
    } else if kind.starts_with("audio/") {
        "[voice message]".to_string()
    } else if kind.starts_with("video/") {
        "[video]".to_string()
    } else {
        match &attachment.filename {
            Some(name) => format!("[file: {}]", hearth_protocol::media::quoted_file_name(name)),
            None => "[file]".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn config() -> SignalConfig {
        SignalConfig::parse(
            Path::new("c"),
            "[signal]\naccount = \"+15550001111\"\nallow = [\"+15551234567\"]\n",
        )
        .unwrap()
    }

    fn envelope(from: &str, data: Value) -> Envelope {
        let received = json!({"envelope": {
            "source": from, "sourceNumber": from, "sourceUuid": "0a1b2c3d-0000-4000-8000-00000000abcd",
            "sourceName": "Eve", "sourceDevice": 1, "timestamp": 1700000000000u64,
            "dataMessage": data,
        }, "account": "+15550001111"});
        parse(&received).unwrap()
    }

    #[test]
    fn an_allowed_persons_text_is_relayed_with_its_key() {
        let message = envelope(
            "+15551234567",
            json!({"timestamp": 1700000000000u64, "message": " hello ", "expiresInSeconds": 0,
                   "viewOnce": false, "quote": {"id": 1699999999000u64, "author": "+15550001111"}}),
        );
        assert_eq!(
            classify(&message, &config()),
            Incoming::Relay {
                from: "+15551234567".into(),
                key: "signal:+15551234567:1700000000000".into(),
                text: Some("hello".into()),
                attachments: vec![],
                quote: Some(1699999999000),
            }
        );
    }

    #[test]
    fn strangers_are_refused_and_groups_receipts_and_removals_passed_over() {
        assert_eq!(
            classify(
                &envelope("+15559999999", json!({"message": "hi"})),
                &config()
            ),
            Incoming::Refuse {
                from: "+15559999999".into(),
                who: "+15559999999 (Eve)".into()
            }
        );
        let group = json!({"message": "hi", "groupInfo": {"groupId": "g", "type": "DELIVER"}});
        assert_eq!(
            classify(&envelope("+15551234567", group), &config()),
            Incoming::Ignore("a group message")
        );
        let receipt = parse(
            &json!({"envelope": {"sourceNumber": "+15551234567", "timestamp": 1,
            "receiptMessage": {"when": 1, "isDelivery": true, "timestamps": [1]}}}),
        )
        .unwrap();
        assert!(matches!(classify(&receipt, &config()), Incoming::Ignore(_)));
        let removed =
            json!({"reaction": {"emoji": "👍", "targetSentTimestamp": 5, "isRemove": true}});
        assert!(matches!(
            classify(&envelope("+15551234567", removed), &config()),
            Incoming::Ignore(_)
        ));
    }

    #[test]
    fn reactions_and_files_are_read() {
        let reaction = json!({"reaction": {"emoji": "👍", "targetAuthorNumber": "+15550001111",
            "targetSentTimestamp": 1700000000123u64, "isRemove": false}});
        assert_eq!(
            classify(&envelope("+15551234567", reaction), &config()),
            Incoming::React {
                from: "+15551234567".into(),
                emoji: "👍".into(),
                target: 1700000000123
            }
        );
        let voice = json!({"attachments": [{"contentType": "audio/aac", "filename": null,
            "id": "abc.aac", "size": 4000}]});
        let Incoming::Relay {
            text, attachments, ..
        } = classify(&envelope("+15551234567", voice), &config())
        else {
            panic!("relayed");
        };
        assert_eq!(text, None);
        assert_eq!(attachments[0].id.as_deref(), Some("abc.aac"));
        assert_eq!(placeholder(&attachments[0]), "[voice message]");
        let pdf = AttachmentRef {
            content_type: Some("application/pdf".into()),
            filename: Some("lease.pdf".into()),
            ..AttachmentRef::default()
        };
        assert_eq!(placeholder(&pdf), "[file: \"lease.pdf\"]");
    }
}
