//! Approvals on Matrix: a tool call waiting for approval goes to the
//! allowed people's rooms as a message, and a person answers with a
//! reaction to it (👍 allows, 👎 denies) or a reply `yes` or `no` (a reply
//! to the request answers that one; else the newest open request in the
//! room). The requests are remembered in this run only, by the event id
//! of each message (see `bridge::approval::Open`).

use hearth_protocol::Event;

pub use crate::bridge::approval::{reaction_answer, text_answer};

/// The requests asked, by room, by the event id of each message.
pub type Open = crate::bridge::approval::Open<String>;

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
