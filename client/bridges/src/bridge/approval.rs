//! An approval request as a bridge's message: the call, cut to what the
//! platform shows, and how to answer there; the requests asked, and the
//! reactions and replies that answer them.

use hearth_protocol::Event;
use std::sync::{Arc, Mutex, PoisonError};

/// The text of a request's message for an `approval` event that waits
/// (none once it is answered): the call, at most `shown_chars` of it, and
/// `how` to answer on the platform (empty: the platform shows buttons).
pub fn request_text(event: &Event, shown_chars: usize, how: &str) -> Option<String> {
    let approval = event.approval.as_deref()?;
    if approval.allowed.is_some() {
        return None;
    }
    let call = event.text.as_deref().unwrap_or(&approval.tool);
    let call = match call.char_indices().nth(shown_chars) {
        Some((at, _)) => format!("{}…", &call[..at]),
        None => call.to_string(),
    };
    let how = if how.is_empty() {
        String::new()
    } else {
        format!(" {how}")
    };
    Some(format!(
        "{} asks to run {call}\n\nAllow it?{how} (approval {}; denied in {} s without an answer)",
        event.agent, approval.id, approval.timeout_secs
    ))
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
struct Asked<M> {
    /// The approval's id in the daemon.
    id: String,
    /// Who was asked.
    to: String,
    /// The platform's id of the request's message (Signal's timestamp, a
    /// Matrix event id); `None` while it is being sent.
    sent: Option<M>,
}

/// The requests asked and not answered yet, shared by the outbound half
/// (which asks) and the inbound half (which takes the answers); `M` is how
/// the platform names a message. Kept in this run only: requests are live
/// events, never logged, so a bridge that was down when one was asked
/// misses it, and the timeout denies it. A request is remembered from
/// before its message goes, so an answer that arrives before the platform
/// said the message's id still finds it.
#[derive(Debug, Clone)]
pub struct Open<M>(Arc<Mutex<Vec<Asked<M>>>>);

impl<M> Default for Open<M> {
    fn default() -> Self {
        Open(Arc::default())
    }
}

impl<M: Clone + PartialEq> Open<M> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Asked<M>>> {
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

    /// Request `id` went to `to` in message `sent`.
    pub fn asked(&self, id: &str, to: &str, sent: M) {
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

    /// The request whose message `from` reacted to (`target`), or
    /// one still being sent to them.
    pub fn reacted_to(&self, from: &str, target: M) -> Option<String> {
        self.find(from, Some(target))
    }

    /// The request a reply from `from` answers: the one it quotes (or one
    /// still being sent to them), else the newest asked of them.
    pub fn replied_to(&self, from: &str, quote: Option<M>) -> Option<String> {
        match quote {
            Some(_) => self.find(from, quote),
            None => {
                let open = self.lock();
                let mine = open.iter().filter(|asked| asked.to == from);
                mine.map(|asked| asked.id.clone()).next_back()
            }
        }
    }

    /// The request asked of `from` in message `sent`, else the
    /// newest one still being sent to them.
    fn find(&self, from: &str, sent: Option<M>) -> Option<String> {
        let open = self.lock();
        let mine = || open.iter().filter(|asked| asked.to == from);
        mine()
            .find(|asked| asked.sent == sent)
            .or_else(|| mine().rfind(|asked| asked.sent.is_none()))
            .map(|asked| asked.id.clone())
    }
}
