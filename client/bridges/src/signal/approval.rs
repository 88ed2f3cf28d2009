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
use std::sync::{Arc, Mutex, PoisonError};

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

/// What a reaction's emoji answers: `Some(true)` allows, `Some(false)`
/// denies; skin tones and presentation marks do not matter.
pub fn reaction_answer(emoji: &str) -> Option<bool> {
    let bare: String = emoji
        .chars()
        .filter(|c| !matches!(*c as u32, 0x1F3FB..=0x1F3FF | 0xFE0F))
        .collect();
    match bare.as_str() {
        "👍" | "✅" | "👌" => Some(true),
        "👎" | "❌" | "🚫" => Some(false),
        _ => None,
    }
}

/// What a reply's words answer, when they are only a yes or a no.
pub fn text_answer(text: &str) -> Option<bool> {
    let word = text.trim().trim_end_matches(['.', '!']).to_lowercase();
    match word.as_str() {
        "yes" | "y" | "allow" | "ok" | "👍" => Some(true),
        "no" | "n" | "deny" | "👎" => Some(false),
        _ => None,
    }
}

/// One request asked of one person.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Asked {
    /// The approval's id in the daemon.
    id: String,
    /// Who was asked.
    to: String,
    /// The timestamp Signal gave the request's message; `None` while it
    /// is being sent.
    sent: Option<u64>,
}

/// The requests asked and not answered yet, shared by the outbound half
/// (which asks) and the inbound half (which takes the answers).
#[derive(Debug, Clone, Default)]
pub struct Open(Arc<Mutex<Vec<Asked>>>);

impl Open {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Asked>> {
        // A plain list: a panic while it was written leaves it usable.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers that request `id` is being asked of `to`.
    pub fn asking(&self, id: &str, to: &str) {
        self.lock().push(Asked {
            id: id.to_string(),
            to: to.to_string(),
            sent: None,
        });
    }

    /// Request `id` went to `to` in the message sent at `sent`.
    pub fn asked(&self, id: &str, to: &str, sent: u64) {
        let mut open = self.lock();
        let asked = open.iter_mut().find(|a| a.id == id && a.to == to);
        if let Some(asked) = asked {
            asked.sent = Some(sent);
        }
    }

    /// Request `id` could not be asked of `to`.
    pub fn not_asked(&self, id: &str, to: &str) {
        self.lock()
            .retain(|asked| !(asked.id == id && asked.to == to));
    }

    /// Forgets request `id` (decided, here or elsewhere).
    pub fn close(&self, id: &str) {
        self.lock().retain(|asked| asked.id != id);
    }

    /// The request whose message `from` reacted to (sent at `target`), or
    /// one still being sent to them.
    pub fn reacted_to(&self, from: &str, target: u64) -> Option<String> {
        self.find(from, Some(target))
    }

    /// The request a reply from `from` answers: the one it quotes (or one
    /// still being sent to them), else the newest asked of them.
    pub fn replied_to(&self, from: &str, quote: Option<u64>) -> Option<String> {
        match quote {
            Some(_) => self.find(from, quote),
            None => {
                let open = self.lock();
                let mine = open.iter().filter(|asked| asked.to == from);
                mine.map(|asked| asked.id.clone()).next_back()
            }
        }
    }

    /// The request asked of `from` in the message sent at `sent`, else the
    /// newest one still being sent to them.
    fn find(&self, from: &str, sent: Option<u64>) -> Option<String> {
        let open = self.lock();
        let mine = || open.iter().filter(|asked| asked.to == from);
        mine()
            .find(|asked| asked.sent == sent)
            .or_else(|| mine().rfind(|asked| asked.sent.is_none()))
            .map(|asked| asked.id.clone())
    }
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
