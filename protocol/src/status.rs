//! A message's status: how the tool call or the subagent's run it reports
//! ended, or what a daemon's note records, or that a message was imported
//! from another agent's history. Stored in the log's `status` column and
//! sent in events under the same names; any other message has none.

use serde::{Deserialize, Serialize};
use std::fmt;

/// How the call or run a `tool` or `work` message reports ended, or what a
/// `note` records.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum MessageStatus {
    /// A tool call that succeeded.
    Ok,
    /// A tool call that failed; its output says why.
    Error,
    /// A tool call cut off by an interrupt, a stop or a crash; on a note,
    /// a turn the user interrupted.
    Interrupted,
    /// A subagent's run that ended with its answer.
    Finished,
    /// A subagent's run that its parent stopped (or a stop cut off): its
    /// report joins no turn.
    Stopped,
    /// A subagent's run whose turn failed; on a note, a failed turn (an
    /// error of the model, the budget, or `limits.max_rounds` reached).
    Failed,
    /// A note that records a tool call's approval request.
    Approval,
    /// A reply cut off at its output limit.
    CutMaxTokens,
    /// A reply the provider's content filter stopped.
    CutContentFilter,
    /// A reply cut off by a full context window.
    CutContextWindow,
    /// A reply that is the model's refusal.
    Refused,
    /// A user message or a reply brought in from another agent's history
    /// (`hearth import`): it was answered there, so it starts no turn, and
    /// no bridge sends it again.
    Imported,
    /// A reply that says there is nothing to do (a heartbeat's
    /// `HEARTBEAT_OK`): logged, and sent by no bridge.
    Quiet,
}

impl MessageStatus {
    pub const ALL: [MessageStatus; 13] = [
        MessageStatus::Ok,
        MessageStatus::Error,
        MessageStatus::Interrupted,
        MessageStatus::Finished,
        MessageStatus::Stopped,
        MessageStatus::Failed,
        MessageStatus::Approval,
        MessageStatus::CutMaxTokens,
        MessageStatus::CutContentFilter,
        MessageStatus::CutContextWindow,
        MessageStatus::Refused,
        MessageStatus::Imported,
        MessageStatus::Quiet,
    ];

    /// The stored and wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Ok => "ok",
            MessageStatus::Error => "error",
            MessageStatus::Interrupted => "interrupted",
            MessageStatus::Finished => "finished",
            MessageStatus::Stopped => "stopped",
            MessageStatus::Failed => "failed",
            MessageStatus::Approval => "approval",
            MessageStatus::CutMaxTokens => "cut_max_tokens",
            MessageStatus::CutContentFilter => "cut_content_filter",
            MessageStatus::CutContextWindow => "cut_context_window",
            MessageStatus::Refused => "refused",
            MessageStatus::Imported => "imported",
            MessageStatus::Quiet => "quiet",
        }
    }

    /// The status a stored or received name means; none for a name this
    /// version does not know.
    pub fn parse(text: &str) -> Option<MessageStatus> {
        MessageStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

impl fmt::Display for MessageStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::MessageStatus;

    #[test]
    fn names_are_the_serialized_names_and_read_back() {
        for status in MessageStatus::ALL {
            let serialized = serde_json::to_value(status).unwrap();
            assert_eq!(serialized, serde_json::json!(status.as_str()));
            assert_eq!(MessageStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(MessageStatus::parse("later"), None);
    }
}
