//! What a webhook delivery says (pure): the messages people sent, read from
//! `entry[].changes[].value.messages[]`, and the sends that failed, read
//! from `statuses[]` with `"status": "failed"` (the Cloud API reports the
//! 24-hour window's 131047 there, after it accepted the send). Other
//! statuses (sent, delivered, read) and anything else are left out.
//!
//! Read leniently: a message this bridge cannot read is skipped, never the
//! whole delivery, since Meta would only deliver it again.
//!
//! A sender is named by number (`from`, `contacts[].wa_id`) and by
//! business-scoped user id (`from_user_id`, `contacts[].user_id`); someone
//! who chose a WhatsApp username may come with the user id alone, and is
//! read like anyone else (see [`hearth_protocol::whatsapp`]).

use hearth_protocol::whatsapp::whatsapp_shown;
use serde_json::Value;

/// The words of an image sent without a caption; the image itself goes
/// along as an attachment when it can be fetched (see `media.rs`).
pub const PHOTO: &str = "[photo]";

/// One message someone sent to the business number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// Its id (`wamid.…`): the idempotency key, and what a read mark names.
    pub wamid: String,
    /// The sender's WhatsApp id: their number's digits, or their
    /// business-scoped user id when WhatsApp withholds the number.
    pub from: String,
    /// Their business-scoped user id, when the delivery names it.
    pub user_id: Option<String>,
    /// The sender's profile name, when the delivery names them.
    pub name: Option<String>,
    /// The business phone number's id it was sent to.
    pub phone_number_id: Option<String>,
    /// The words for the agent: the text, a caption, or a placeholder
    /// naming what was sent. `None`: nothing to relay (a removed reaction,
    /// a system notice).
    pub text: Option<String>,
    /// An image, audio, video, document or sticker's media id, to download.
    pub media: Option<MediaRef>,
}

/// An inbound message's media, downloadable for a while by its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaRef {
    /// `image`, `audio`, `video`, `document` or `sticker`.
    pub kind: String,
    pub id: String,
    pub mime_type: Option<String>,
    /// A document's file name.
    pub filename: Option<String>,
    /// Its caption: the words that go with it once it is stored.
    pub caption: Option<String>,
}

/// A message the business number sent that WhatsApp could not deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedSend {
    /// The sent message's id (`wamid.…`).
    pub wamid: String,
    /// The number (or, without one, the business-scoped user id) it was
    /// for, when the status names it.
    pub recipient: Option<String>,
    /// The Graph error code (131047: outside the 24-hour window).
    pub code: Option<i64>,
    /// Why, in Meta's words: the error's details, message or title.
    pub reason: String,
}

impl FailedSend {
    /// The note that tells the owner: which message, to whom, and why.
    pub fn note(&self, source: &str) -> String {
        let to = self
            .recipient
            .as_deref()
            .map(|to| format!(" to {}", whatsapp_shown(to)))
            .unwrap_or_default();
        let code = self
            .code
            .map(|code| format!(" (error {code})"))
            .unwrap_or_default();
        let hint = if self.code == Some(131_047) {
            "; more than 24 hours have passed since they last wrote, so WhatsApp takes \
             only template messages until they write again"
        } else {
            ""
        };
        format!(
            "{source}: message {}{to} was not delivered: {}{code}{hint}",
            self.wamid, self.reason
        )
    }
}

/// The failed sends a delivery's `statuses[]` report, in order.
pub fn failed_sends(body: &[u8]) -> Vec<FailedSend> {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let mut failed = Vec::new();
    for change in items(&value["entry"]).flat_map(|entry| items(&entry["changes"])) {
        for status in items(&change["value"]["statuses"]) {
            if status["status"].as_str() != Some("failed") {
                continue;
            }
            let Some(wamid) = text(&status["id"]) else {
                continue;
            };
            let error = items(&status["errors"]).next();
            let reason = error
                .and_then(|error| {
                    text(&error["error_data"]["details"])
                        .or_else(|| text(&error["message"]))
                        .or_else(|| text(&error["title"]))
                })
                .unwrap_or_else(|| "WhatsApp gave no reason".to_string());
            failed.push(FailedSend {
                wamid,
                recipient: text(&status["recipient_id"])
                    .or_else(|| text(&status["recipient_user_id"])),
                code: error.and_then(|error| error["code"].as_i64()),
                reason,
            });
        }
    }
    failed
}

#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error("the delivery is not JSON: {0}")]
    NotJson(String),
    #[error("the delivery is not a JSON object")]
    NotAnObject,
}

/// The messages of a webhook delivery's body, in order.
pub fn parse(body: &[u8]) -> Result<Vec<Received>, PayloadError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|err| PayloadError::NotJson(err.to_string()))?;
    if !value.is_object() {
        return Err(PayloadError::NotAnObject);
    }
    let mut received = Vec::new();
    for change in items(&value["entry"]).flat_map(|entry| items(&entry["changes"])) {
        let value = &change["value"];
        let phone_number_id = text(&value["metadata"]["phone_number_id"]);
        for status in items(&value["statuses"]) {
            tracing::debug!(
                "whatsapp: message {} is {}",
                status["id"].as_str().unwrap_or("?"),
                status["status"].as_str().unwrap_or("?")
            );
        }
        for message in items(&value["messages"]) {
            let number = text(&message["from"]);
            let user_id = text(&message["from_user_id"]);
            let contact = sender_contact(&value["contacts"], number.as_deref(), user_id.as_deref());
            let number = number.or_else(|| contact.and_then(|c| text(&c["wa_id"])));
            let user_id = user_id.or_else(|| contact.and_then(|c| text(&c["user_id"])));
            let (Some(wamid), Some(from)) = (text(&message["id"]), number.or(user_id.clone()))
            else {
                tracing::warn!("whatsapp: skipping a message without id or sender");
                continue;
            };
            let name = contact.and_then(|contact| text(&contact["profile"]["name"]));
            received.push(Received {
                wamid,
                from,
                user_id,
                name,
                phone_number_id: phone_number_id.clone(),
                text: words(message),
                media: media(message),
            });
        }
    }
    Ok(received)
}

/// The `contacts[]` entry of a message's sender: the one with its number
/// or its user id, or the only one when the message names neither.
fn sender_contact<'v>(
    contacts: &'v Value,
    number: Option<&str>,
    user_id: Option<&str>,
) -> Option<&'v Value> {
    let named = |contact: &&Value| {
        (number.is_some() && contact["wa_id"].as_str() == number)
            || (user_id.is_some() && contact["user_id"].as_str() == user_id)
    };
    if number.is_none() && user_id.is_none() {
        let mut all = items(contacts);
        return all.next().filter(|_| all.next().is_none());
    }
    items(contacts).find(named)
}

/// The elements of a JSON list; none when it is anything else.
fn items(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

/// A non-empty string, trimmed.
fn text(value: &Value) -> Option<String> {
    let text = value.as_str()?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// What a message says to the agent: a caption stands for media, else a
/// placeholder. An image, a voice note, audio or a document itself goes
/// along when it can be fetched (see `media.rs`); the placeholder stays only
/// when it could not be.
fn words(message: &Value) -> Option<String> {
    let kind = message["type"].as_str().unwrap_or_default();
    let body = &message[kind];
    let caption = text(&body["caption"]);
    let said = match kind {
        "text" => text(&body["body"])?,
        "image" => caption.unwrap_or_else(|| PHOTO.to_string()),
        "video" => caption.unwrap_or_else(|| "[video]".to_string()),
        "audio" if body["voice"].as_bool() == Some(true) => "[voice message]".to_string(),
        "audio" => "[audio]".to_string(),
        "document" => match (caption, text(&body["filename"])) {
            (Some(caption), _) => caption,
            (None, Some(name)) => format!(
                "[file: {}]",
                hearth_protocol::media::quoted_file_name(&name)
            ),
            (None, None) => "[file]".to_string(),
        },
        "sticker" => "[sticker]".to_string(),
        "location" => {
            let place = [text(&body["name"]), text(&body["address"])]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join(", ");
            match (body["latitude"].as_f64(), body["longitude"].as_f64()) {
                (Some(lat), Some(lon)) if place.is_empty() => format!("[location: {lat}, {lon}]"),
                (Some(lat), Some(lon)) => format!("[location: {place} ({lat}, {lon})]"),
                _ => "[location]".to_string(),
            }
        }
        "contacts" => "[contact card]".to_string(),
        "interactive" => {
            let reply = &body[body["type"].as_str().unwrap_or_default()];
            text(&reply["title"]).unwrap_or_else(|| "[interactive reply]".to_string())
        }
        "button" => text(&body["text"]).unwrap_or_else(|| "[button]".to_string()),
        // An empty emoji removes a reaction: nothing to say.
        "reaction" => format!("[reaction {}]", text(&body["emoji"])?),
        // Number changes and the like are WhatsApp's, not the person's words.
        "system" => return None,
        "" => return None,
        other => format!("[{other} message]"),
    };
    Some(said)
}

fn media(message: &Value) -> Option<MediaRef> {
    let kind = message["type"].as_str()?;
    if !matches!(kind, "image" | "audio" | "video" | "document" | "sticker") {
        return None;
    }
    Some(MediaRef {
        kind: kind.to_string(),
        id: text(&message[kind]["id"])?,
        mime_type: text(&message[kind]["mime_type"]),
        filename: text(&message[kind]["filename"]),
        caption: text(&message[kind]["caption"]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delivery(messages: Value) -> Vec<u8> {
        json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"display_phone_number": "15550001111", "phone_number_id": "1098765"},
            "contacts": [{"profile": {"name": "Ada"}, "wa_id": "16505551234"}],
            "messages": messages,
        }}]}]})
        .to_string()
        .into_bytes()
    }

    fn message(id: &str, fields: Value) -> Value {
        let mut message = json!({"from": "16505551234", "id": id, "timestamp": "1700000000"});
        for (key, value) in fields.as_object().unwrap() {
            message[key] = value.clone();
        }
        message
    }

    fn said(fields: Value) -> Option<String> {
        parse(&delivery(json!([message("w", fields)])))
            .unwrap()
            .remove(0)
            .text
    }

    #[test]
    fn a_text_message_reads_with_its_sender() {
        let body = delivery(json!([message(
            "wamid.A",
            json!({"type": "text", "text": {"body": " Hi "}, "context": {"from": "x", "id": "wamid.0"}})
        )]));
        assert_eq!(
            parse(&body).unwrap(),
            vec![Received {
                wamid: "wamid.A".into(),
                from: "16505551234".into(),
                user_id: None,
                name: Some("Ada".into()),
                phone_number_id: Some("1098765".into()),
                text: Some("Hi".into()),
                media: None,
            }]
        );
    }

    #[test]
    fn media_give_a_caption_or_a_placeholder_and_their_id() {
        let image = json!({"type": "image", "image": {"id": "MEDIA1", "mime_type": "image/jpeg", "sha256": "x", "caption": "my cat"}});
        let received = parse(&delivery(json!([message("w", image)])))
            .unwrap()
            .remove(0);
        assert_eq!(received.text.as_deref(), Some("my cat"));
        assert_eq!(
            received.media,
            Some(MediaRef {
                kind: "image".into(),
                id: "MEDIA1".into(),
                mime_type: Some("image/jpeg".into()),
                filename: None,
                caption: Some("my cat".into()),
            })
        );
        assert_eq!(
            said(json!({"type": "image", "image": {"id": "M"}})).as_deref(),
            Some("[photo]")
        );
        assert_eq!(
            said(json!({"type": "audio", "audio": {"id": "M", "voice": true}})).as_deref(),
            Some("[voice message]")
        );
        assert_eq!(
            said(json!({"type": "document", "document": {"id": "M", "filename": "a.pdf"}}))
                .as_deref(),
            Some("[file: \"a.pdf\"]")
        );
        assert_eq!(
            said(json!({"type": "location", "location": {"latitude": 52.5, "longitude": 13.4, "name": "Home"}}))
                .as_deref(),
            Some("[location: Home (52.5, 13.4)]")
        );
        assert_eq!(
            said(json!({"type": "interactive", "interactive": {"type": "button_reply", "button_reply": {"id": "b", "title": "Yes"}}}))
                .as_deref(),
            Some("Yes")
        );
        assert_eq!(
            said(json!({"type": "reaction", "reaction": {"message_id": "m", "emoji": "👍"}}))
                .as_deref(),
            Some("[reaction 👍]")
        );
        assert_eq!(
            said(json!({"type": "reaction", "reaction": {"message_id": "m", "emoji": ""}})),
            None
        );
        assert_eq!(
            said(json!({"type": "system", "system": {"body": "changed number"}})),
            None
        );
        assert_eq!(
            said(json!({"type": "unsupported", "errors": []})).as_deref(),
            Some("[unsupported message]")
        );
    }

    #[test]
    fn a_failed_status_names_the_message_the_number_and_the_reason() {
        let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "W", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "statuses": [
                {"id": "wamid.OK", "status": "delivered", "timestamp": "1", "recipient_id": "16505551234"},
                {"id": "wamid.F", "status": "failed", "timestamp": "2", "recipient_id": "16505551234",
                 "errors": [{"code": 131047, "title": "Re-engagement message", "message": "Re-engagement message",
                             "error_data": {"details": "Message failed to send because more than 24 hours have passed since the customer last replied to this number."}}]}
            ]
        }}]}]});
        let failed = failed_sends(body.to_string().as_bytes());
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].wamid, "wamid.F");
        assert_eq!(failed[0].code, Some(131_047));
        let note = failed[0].note("whatsapp");
        assert!(
            note.starts_with(
                "whatsapp: message wamid.F to +16505551234 was not delivered: Message failed"
            ),
            "{note}"
        );
        assert!(
            note.contains("(error 131047)") && note.contains("24 hours"),
            "{note}"
        );
        assert!(failed_sends(b"not json").is_empty());
    }

    #[test]
    fn statuses_and_other_changes_give_no_messages() {
        let statuses = json!({"object": "whatsapp_business_account", "entry": [{"id": "W", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"phone_number_id": "1098765"},
            "statuses": [{"id": "wamid.S", "status": "delivered", "timestamp": "1", "recipient_id": "16505551234"}]
        }}]}]});
        assert!(parse(statuses.to_string().as_bytes()).unwrap().is_empty());
        assert!(
            parse(br#"{"object":"page","entry":[{"changes":[{"value":{}}]}]}"#)
                .unwrap()
                .is_empty()
        );
        assert!(parse(br#"{}"#).unwrap().is_empty());
        let skipped = delivery(
            json!([{"type": "text", "text": {"body": "no id"}}, message("wamid.B", json!({"type": "text", "text": {"body": "b"}}))]),
        );
        let read = parse(&skipped).unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].wamid, "wamid.B");
    }

    #[test]
    fn a_sender_without_a_number_is_read_by_their_user_id() {
        let body = json!({"object": "whatsapp_business_account", "entry": [{"id": "W", "changes": [{"field": "messages", "value": {
            "messaging_product": "whatsapp",
            "metadata": {"phone_number_id": "1098765"},
            "contacts": [{"profile": {"name": "Bo", "username": "@bo"}, "user_id": "US.13491208655302741918"}],
            "messages": [{"from_user_id": "US.13491208655302741918", "id": "wamid.U", "timestamp": "1", "type": "text", "text": {"body": "hi"}}],
        }}]}]});
        let read = parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(read[0].from, "US.13491208655302741918");
        assert_eq!(read[0].user_id.as_deref(), Some("US.13491208655302741918"));
        assert_eq!(read[0].name.as_deref(), Some("Bo"));

        // Both names: the number is the sender, the user id goes along.
        let both = json!({"object": "whatsapp_business_account", "entry": [{"id": "W", "changes": [{"field": "messages", "value": {
            "contacts": [{"profile": {"name": "Ada"}, "wa_id": "16505551234", "user_id": "US.77"}],
            "messages": [{"from": "16505551234", "from_user_id": "US.77", "id": "wamid.B", "timestamp": "1", "type": "text", "text": {"body": "hi"}}],
        }}]}]});
        let read = parse(both.to_string().as_bytes()).unwrap();
        assert_eq!(
            (
                read[0].from.as_str(),
                read[0].user_id.as_deref(),
                read[0].name.as_deref()
            ),
            ("16505551234", Some("US.77"), Some("Ada"))
        );

        // A failed send to a user id names it.
        let failed = json!({"entry": [{"changes": [{"value": {"statuses": [
            {"id": "wamid.F", "status": "failed", "recipient_user_id": "US.77", "errors": [{"code": 131026, "title": "Message undeliverable"}]}
        ]}}]}]});
        let failed = failed_sends(failed.to_string().as_bytes());
        assert!(
            failed[0]
                .note("whatsapp")
                .starts_with("whatsapp: message wamid.F to US.77 was not delivered"),
            "{:?}",
            failed[0]
        );
    }

    #[test]
    fn bodies_that_are_not_deliveries_are_errors() {
        assert!(matches!(parse(b"not json"), Err(PayloadError::NotJson(_))));
        assert!(matches!(parse(b"[1]"), Err(PayloadError::NotAnObject)));
    }
}
