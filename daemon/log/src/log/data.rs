//! A message's machine details: what the log keeps beside its text in the
//! `data` column, as one typed struct. serde's names are the stored names
//! (the column holds this struct as JSON), and every field is optional, so
//! a message that has none stores nothing and an older row reads as it was
//! written. A field a newer daemon added is ignored here, never rewritten:
//! the log is append-only.

use hearth_protocol::{ImageRef, MediaRef, Outbox};
use serde::{Deserialize, Serialize};

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The provider's call id (`call_…`, `toolu_…`); synthesized when a
    /// server sends none.
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model wrote them (a JSON string).
    pub arguments: String,
}

/// The details of one message; each kind uses the fields that concern it.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq)]
pub struct MessageData {
    /// A reply: the ids of the messages its turn answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<u64>,
    /// A user message: the client that submitted it, as it named itself in
    /// `hello` (`terminal@laptop`), so clients tell another's words apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// An echo or a tool message: the step of its turn's chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// A tool message: the provider's id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// A tool message: the tool called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A tool message: the arguments exactly as the model wrote them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// A tool message: the output the model was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The images the message carries (a user's attachments, an image a
    /// tool showed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRef>,
    /// A tool message: the images its call brought back to the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recalled: Vec<ImageRef>,
    /// A tool message: what the tool left for a bridge to send
    /// (`whatsapp_send`), delivered once by the bridge it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox: Option<Outbox>,
    /// A subagent's report: the run it reports on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<i64>,
    /// Where the text came from when that is not the owner or hearth
    /// itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// A user message: the audio and documents it carries (`media.rs`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<MediaRef>,
    /// A voice note whose transcript is to follow: `pending`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcription: Option<String>,
    /// A transcript (or a failure to make one): the voice note's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_of: Option<u64>,
    /// A user message whose attachments are someone else's words
    /// (`document`): reading them taints the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<String>,
    /// A tool message whose text is `name(arguments) → output`: the
    /// arguments' length in bytes. The arguments and the output are then
    /// read from the text rather than stored a second time here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments_in_text: Option<usize>,
    /// A message brought in from another agent's history (`hearth
    /// import`): where from. Its words are the owner's and that agent's,
    /// which may have carried pages it read: they are marked, never
    /// passed off as said here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
}

/// Where an imported message came from.
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct Imported {
    /// The agent whose store it was read from (`openclaw`, `hermes`).
    pub from: String,
    /// Its session there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// Where a message's text came from, when it came from outside: one of the
/// origins is named (see `provenance.rs`).
#[derive(Serialize, Deserialize, Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    /// The MCP server whose tool answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp: Option<String>,
    /// The source of an event another program sent (`hearth notify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<String>,
    /// Who wrote a bridge's message, when not the owner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The document the text was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    /// The page (its URL) `web_fetch` read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web: Option<String>,
    /// A shell command that could reach the network: its output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// A file of the working folder changed while a call that could bring
    /// outside words into it ran (`after` says which): its text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The skill (its name), not installed by the owner, whose text this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    /// The schedule (its id) whose text this is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<i64>,
    /// The agent that wrote these words in a tainted turn (a subagent's
    /// task or report, a schedule's text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Why that turn was tainted, in words that follow "made" (`after
    /// reading https://…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Whether the text is untrusted input (see `tools/taint.rs`).
    #[serde(default)]
    pub untrusted: bool,
}

/// The bytes of `(`, `) → ` around a tool message's arguments.
const TOOL_GLUE: usize = "(".len() + ") → ".len();

impl MessageData {
    /// A reply's details: the messages its turn answered.
    pub fn answering(answers: Vec<u64>) -> MessageData {
        MessageData {
            answers,
            ..MessageData::default()
        }
    }

    /// An echo's details: its step.
    pub fn at_step(step: u32) -> MessageData {
        MessageData {
            step: Some(step),
            ..MessageData::default()
        }
    }

    /// A tool message's details: the call, its step and the output given.
    pub fn call(call: &ToolCall, step: u32, output: &str) -> MessageData {
        MessageData {
            step: Some(step),
            call_id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: Some(call.arguments.clone()),
            output: Some(output.to_string()),
            ..MessageData::default()
        }
    }

    /// The logged call and its output, for a tool message that has them.
    pub fn logged_call(&self) -> Option<(ToolCall, String)> {
        Some((
            ToolCall {
                id: self.call_id.clone()?,
                name: self.name.clone()?,
                arguments: self.arguments.clone().unwrap_or_else(|| "{}".to_string()),
            },
            self.output.clone().unwrap_or_default(),
        ))
    }

    /// Whether the message has no details at all (nothing is stored).
    pub fn is_empty(&self) -> bool {
        self == &MessageData::default()
    }

    /// The stored form: `None` when there is nothing to keep.
    pub fn stored(&self) -> Option<String> {
        // Plain data with string keys: serializing cannot fail.
        (!self.is_empty()).then(|| serde_json::to_string(self).unwrap_or_default())
    }

    /// The stored form beside a message's `text`: a tool message's
    /// arguments and output are left out when the text holds them as
    /// `name(arguments) → output` (they are most of a tool message, and
    /// were stored twice).
    pub fn stored_beside(&self, text: &str) -> Option<String> {
        if let (Some(name), Some(arguments), Some(output)) =
            (&self.name, &self.arguments, &self.output)
        {
            if text.len() == name.len() + arguments.len() + output.len() + TOOL_GLUE
                && *text == format!("{name}({arguments}) → {output}")
            {
                let lean = MessageData {
                    arguments: None,
                    output: None,
                    arguments_in_text: Some(arguments.len()),
                    ..self.clone()
                };
                return lean.stored();
            }
        }
        self.stored()
    }

    /// Reads the stored form beside its message's `text`: what
    /// [`MessageData::stored_beside`] left out is read from the text.
    pub fn read_beside(stored: Option<&str>, text: &str) -> MessageData {
        let mut data = MessageData::read(stored);
        if let (Some(bytes), Some(name)) = (data.arguments_in_text.take(), &data.name) {
            let start = name.len() + 1;
            let arguments = text.get(start..start.saturating_add(bytes));
            let output = text
                .get(start.saturating_add(bytes)..)
                .and_then(|rest| rest.strip_prefix(") → "));
            if let (Some(arguments), Some(output)) = (arguments, output) {
                data.arguments = Some(arguments.to_string());
                data.output = Some(output.to_string());
            }
        }
        data
    }

    /// Reads the stored form; a row that does not parse (written by hand,
    /// or damaged) reads as having no details rather than failing the read.
    pub fn read(stored: Option<&str>) -> MessageData {
        stored
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_names_are_those_older_rows_have() {
        let old = r#"{"call_id":"call_1","name":"shell","arguments":"{\"command\":\"ls\"}","output":"a.txt","step":2,"recalled":[]}"#;
        let data = MessageData::read(Some(old));
        let (call, output) = data.logged_call().unwrap();
        assert_eq!((call.id.as_str(), call.name.as_str()), ("call_1", "shell"));
        assert_eq!(output, "a.txt");
        assert_eq!(data.step, Some(2));
        let reply = MessageData::read(Some(r#"{"answers":[3,4],"client":"terminal@h"}"#));
        assert_eq!(reply.answers, vec![3, 4]);
        assert_eq!(reply.client.as_deref(), Some("terminal@h"));
        let report = MessageData::read(Some(r#"{"run":7}"#));
        assert_eq!(report.run, Some(7));
        let marked = MessageData::read(Some(r#"{"provenance":{"mcp":"fs","untrusted":true}}"#));
        assert_eq!(marked.provenance.unwrap().mcp.as_deref(), Some("fs"));
    }

    #[test]
    fn a_round_trip_keeps_every_field_and_nothing_is_stored_for_none() {
        let data = MessageData {
            answers: vec![1],
            client: Some("c".into()),
            step: Some(0),
            run: Some(2),
            ..MessageData::default()
        };
        let stored = data.stored().unwrap();
        assert_eq!(MessageData::read(Some(&stored)), data);
        assert_eq!(MessageData::default().stored(), None);
    }

    #[test]
    fn a_tool_messages_arguments_and_output_are_stored_once() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "shell".into(),
            arguments: r#"{"command":"echo → ) done"}"#.into(),
        };
        let output = "one ) → two\nthree";
        let data = MessageData::call(&call, 2, output);
        let text = format!("shell({}) → {output}", call.arguments);
        let stored = data.stored_beside(&text).unwrap();
        assert!(!stored.contains("three"), "{stored}");
        assert!(!stored.contains("command"), "{stored}");
        assert_eq!(MessageData::read_beside(Some(&stored), &text), data);
        // A text that is not the call and its output keeps them stored.
        let other = data.stored_beside("something else").unwrap();
        assert!(other.contains("three"), "{other}");
        assert_eq!(
            MessageData::read_beside(Some(&other), "something else"),
            data
        );
    }

    #[test]
    fn damaged_or_unknown_details_read_as_what_is_known() {
        assert!(MessageData::read(Some("not json")).is_empty());
        assert!(MessageData::read(None).is_empty());
        let newer = MessageData::read(Some(r#"{"answers":[1],"from_the_future":{"x":1}}"#));
        assert_eq!(newer.answers, vec![1]);
        // A field of the wrong shape makes the whole row unreadable as
        // details, as before: nothing is guessed.
        assert!(MessageData::read(Some(r#"{"answers":"nope"}"#)).is_empty());
    }
}
