//! Approvals on Signal: a tool call waiting for approval goes to the
//! allowed people as a message, and the person answers with a reaction to
//! it (👍 allows, 👎 denies) or a reply `yes` or `no` (a reply that quotes
//! the request answers that one; else the newest open request to them).
//!
//! The requests asked are remembered in this run only, by the timestamp
//! Signal gave each message: requests are live events, never logged, so a
//! bridge that was down when one was asked misses it, and the timeout
//! denies it. A request is remembered from before its message goes, so an
//! answer that arrives before signal-cli said the message's timestamp
//! still finds it.

use hearth_protocol::Event;

pub use crate::bridge::approval::{reaction_answer, text_answer};

/// The requests asked, by the timestamp Signal gave each message.
pub type Open = crate::bridge::approval::Open<u64>;

/// Characters of a call shown in a request.
const SHOWN_CHARS: usize = 1500;

/// The text of a request's message, for an `approval` event that waits.
pub fn request_text(event: &Event) -> Option<String> {
    crate::bridge::approval::request_text(
        event,
        SHOWN_CHARS,
        "React 👍 to allow or 👎 to deny, or reply yes or no.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::{Approval, EventKind};

    #[test]
    fn emoji_and_words_answer() {
        assert_eq!(reaction_answer("👍"), Some(true));
        assert_eq!(reaction_answer("👍🏽"), Some(true));
        assert_eq!(reaction_answer("👎"), Some(false));
        assert_eq!(reaction_answer("❤️"), None);
        assert_eq!(text_answer(" Yes! "), Some(true));
        assert_eq!(text_answer("no."), Some(false));
        assert_eq!(text_answer("yes, and then delete it"), None);
    }

    #[test]
    fn a_reaction_answers_the_request_it_is_on_and_a_reply_the_newest() {
        let open = Open::default();
        for (id, to, sent) in [
            ("aaa111", "+1555", 10),
            ("bbb222", "+1555", 20),
            ("ccc333", "+1666", 30),
        ] {
            open.asking(id, to);
            open.asked(id, to, sent);
        }
        assert_eq!(open.reacted_to("+1555", 10).as_deref(), Some("aaa111"));
        assert_eq!(open.reacted_to("+1555", 30), None, "asked of someone else");
        assert_eq!(open.replied_to("+1555", None).as_deref(), Some("bbb222"));
        assert_eq!(
            open.replied_to("+1555", Some(10)).as_deref(),
            Some("aaa111")
        );
        assert_eq!(open.replied_to("+1555", Some(99)), None);
        open.close("bbb222");
        assert_eq!(open.replied_to("+1555", None).as_deref(), Some("aaa111"));
        assert_eq!(open.replied_to("+1777", None), None);

        // An answer that comes before the send's timestamp finds the request.
        open.asking("ddd444", "+1777");
        assert_eq!(open.reacted_to("+1777", 40).as_deref(), Some("ddd444"));
        open.not_asked("ddd444", "+1777");
        assert_eq!(open.reacted_to("+1777", 40), None);
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
            text.starts_with("hearth asks to run shell `ls`\n\nAllow it? React 👍"),
            "{text}"
        );
        assert!(text.ends_with("(approval abc123; denied in 300 s without an answer)"));
        if let Some(approval) = event.approval.as_mut() {
            approval.allowed = Some(false);
        }
        assert_eq!(request_text(&event), None);
    }
}
