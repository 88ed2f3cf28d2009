//! Approvals by mail: a tool call waiting for approval goes to the allowed
//! people as a mail of its own, and a reply to that mail whose first word
//! is `yes` or `no` answers it. The reply is matched by the request's
//! Message-ID in its In-Reply-To or References, so an answer can only be
//! to a request that person was asked.
//!
//! The requests asked are remembered in this run only: requests are live
//! events, never logged, so a bridge that was down when one was asked
//! misses it, and the timeout denies it.

use hearth_protocol::Event;
use std::sync::{Arc, Mutex, PoisonError};

/// Characters of a call shown in a request.
const SHOWN_CHARS: usize = 4000;

/// The text of a request's mail, for an `approval` event that waits.
pub fn request_text(event: &Event) -> Option<String> {
    crate::bridge::approval::request_text(
        event,
        SHOWN_CHARS,
        "Reply to this mail with yes or no as the first word.",
    )
}

/// The Subject of a request's mail.
pub fn request_subject(event: &Event) -> String {
    let tool = event
        .approval
        .as_deref()
        .map_or("a tool", |approval| approval.tool.as_str());
    format!("{} asks to run {tool}: allow it?", event.agent)
}

/// One request asked of one person.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Asked {
    /// The approval's id in the daemon.
    id: String,
    /// Who was asked.
    to: String,
    /// The Message-ID of the request's mail, without angle brackets.
    message_id: String,
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

    /// Request `id` goes to `to` in the mail `message_id`; remembered
    /// before it is sent, so a quick answer finds it.
    pub fn asking(&self, id: &str, to: &str, message_id: &str) {
        self.lock().push(Asked {
            id: id.to_string(),
            to: to.to_string(),
            message_id: message_id.to_string(),
        });
    }

    /// The request mail `message_id` could not be sent.
    pub fn not_asked(&self, message_id: &str) {
        self.lock().retain(|asked| asked.message_id != message_id);
    }

    /// Forgets request `id` (decided, here or elsewhere).
    pub fn close(&self, id: &str) {
        self.lock().retain(|asked| asked.id != id);
    }

    /// The request a mail from `from` answers: one asked of them whose
    /// mail the reply names (`answers`: its In-Reply-To and References).
    pub fn answered_by(&self, from: &str, answers: &[String]) -> Option<String> {
        let open = self.lock();
        open.iter()
            .filter(|asked| asked.to == from)
            .find(|asked| answers.contains(&asked.message_id))
            .map(|asked| asked.id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_answers_only_the_request_it_names_and_only_for_who_was_asked() {
        let open = Open::default();
        open.asking("aaa111", "ada@example.com", "r1@agent.example");
        open.asking("bbb222", "ada@example.com", "r2@agent.example");
        let names = |ids: &[&str]| ids.iter().map(|id| id.to_string()).collect::<Vec<_>>();
        assert_eq!(
            open.answered_by("ada@example.com", &names(&["r2@agent.example"]))
                .as_deref(),
            Some("bbb222")
        );
        assert_eq!(
            open.answered_by("eve@example.com", &names(&["r2@agent.example"])),
            None
        );
        assert_eq!(
            open.answered_by("ada@example.com", &names(&["other@example"])),
            None
        );
        open.close("bbb222");
        open.not_asked("r1@agent.example");
        assert_eq!(
            open.answered_by(
                "ada@example.com",
                &names(&["r1@agent.example", "r2@agent.example"])
            ),
            None
        );
    }
}
