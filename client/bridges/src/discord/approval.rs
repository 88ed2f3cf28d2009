//! Approvals on Discord: a tool call waiting for approval goes to the
//! allowed people as a message with an Allow and a Deny button (message
//! components); pressing one is an interaction, answered at once by
//! turning the message into how it went, without its buttons.
//!
//! The buttons carry the approval's id (`hearth-approval:<id>:allow`), so
//! the bridge remembers nothing: a button pressed after a restart still
//! answers, and the daemon says when the request was decided already or
//! is unknown. Only the allowed people's presses count.

use crate::bridge::split::split;
use hearth_protocol::Event;

/// Characters of a call shown in a request: with the rest of the request
/// it stays within Discord's 2,000.
const SHOWN_CHARS: usize = 1500;

/// What every approval button's id starts with.
const PREFIX: &str = "hearth-approval:";

/// The text of a request's message, for an `approval` event that waits.
pub fn request_text(event: &Event) -> Option<String> {
    let text = crate::bridge::approval::request_text(event, SHOWN_CHARS, "")?;
    // Shown as written: the call is not Markdown.
    let text = super::format::escape(&text);
    // Escapes can make it longer: it must still be one message.
    split(&text, super::format::MESSAGE_LIMIT)
        .into_iter()
        .next()
}

/// The id of the button that gives `answer` (`allow` or `deny`) to
/// approval `id`.
pub fn custom_id(id: &str, answer: &str) -> String {
    format!("{PREFIX}{id}:{answer}")
}

/// The approval and the answer a button's id names: `Some((id, true))`
/// allows; `None` for a button that is not an approval's.
pub fn pressed(custom_id: &str) -> Option<(String, bool)> {
    let rest = custom_id.strip_prefix(PREFIX)?;
    let (id, answer) = rest.rsplit_once(':')?;
    let allow = match answer {
        "allow" => true,
        "deny" => false,
        _ => return None,
    };
    (!id.is_empty()).then(|| (id.to_string(), allow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::{Approval, EventKind};

    #[test]
    fn a_button_names_its_approval_and_answer() {
        assert_eq!(
            pressed(&custom_id("abc123", "allow")),
            Some(("abc123".into(), true))
        );
        assert_eq!(
            pressed(&custom_id("abc123", "deny")),
            Some(("abc123".into(), false))
        );
        assert_eq!(pressed("hearth-approval::allow"), None);
        assert_eq!(pressed("other:abc:allow"), None);
        assert_eq!(pressed("hearth-approval:abc:maybe"), None);
    }

    #[test]
    fn a_waiting_request_is_asked_and_a_decided_one_is_not() {
        let mut event = Event::signal(EventKind::Approval, "hearth", Some("shell `ls`".into()));
        event.approval = Some(Box::new(Approval {
            id: "abc123".into(),
            tool: "shell".into(),
            arguments: "{}".into(),
            deadline: String::new(),
            timeout_secs: 300,
            allowed: None,
        }));
        let text = request_text(&event).unwrap();
        assert!(
            text.starts_with("hearth asks to run shell \\`ls\\`\n\nAllow it? (approval abc123"),
            "{text}"
        );
        if let Some(approval) = event.approval.as_mut() {
            approval.allowed = Some(false);
        }
        assert_eq!(request_text(&event), None);
    }
}
