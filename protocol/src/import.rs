//! History brought in from another agent (`hearth import`): the messages
//! an `import` frame carries, and the bounds the daemon holds them to.
//!
//! The client reads the other agent's store and sends its conversation,
//! oldest first, in frames of at most [`crate::MAX_FRAME_BYTES`]; the
//! daemon logs each message once (by its [`ImportMessage::key`]) with its
//! original time, as a `user` message or a `reply` whose status is
//! [`crate::MessageStatus::Imported`], so it starts no turn and no bridge
//! sends it.

use crate::Kind;
use serde::{Deserialize, Serialize};

/// The agents whose stores `hearth import` reads; an imported message's
/// source is one of these names.
pub const SOURCES: [&str; 2] = ["openclaw", "hermes"];

/// The longest text one imported message keeps, in bytes: a longer one is
/// cut (head kept, with a marker that says how long it was) so that one
/// message always fits a frame.
pub const MAX_TEXT_BYTES: usize = 256 * 1024;

/// The longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 200;

/// One message of another agent's history.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ImportMessage {
    /// `user` for the person's words, `reply` for the agent's; no other
    /// kind is imported.
    pub kind: Kind,
    pub text: String,
    /// When it was written there, RFC 3339.
    pub at: String,
    /// Names the source message for good (its session, its id there and a
    /// digest of its words): a key imported before is skipped, so running
    /// an import twice logs nothing twice.
    pub key: String,
    /// The session it belonged to there, kept in the message's data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// Cuts `text` to at most [`MAX_TEXT_BYTES`] on a character boundary,
/// saying how long it was.
pub fn bounded_text(text: &str) -> String {
    if text.len() <= MAX_TEXT_BYTES {
        return text.to_string();
    }
    let mut end = MAX_TEXT_BYTES - 100;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[cut at import: the message had {} bytes]",
        &text[..end],
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_on_a_character_boundary_and_says_so() {
        let long = "é".repeat(MAX_TEXT_BYTES);
        let cut = bounded_text(&long);
        assert!(cut.len() <= MAX_TEXT_BYTES);
        assert!(cut.ends_with(&format!("had {} bytes]", long.len())));
        assert_eq!(bounded_text("short"), "short");
    }
}
