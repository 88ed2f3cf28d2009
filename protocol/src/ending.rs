//! How a reply ended when it is not a whole answer: the statuses a `reply`
//! message may carry, and the line every client shows with it, so a cut or
//! refused answer never passes for a complete one.

/// The answer reached its output limit before the model finished.
pub const CUT_MAX_TOKENS: &str = crate::MessageStatus::CutMaxTokens.as_str();
/// The provider's content filter stopped the answer.
pub const CUT_CONTENT_FILTER: &str = crate::MessageStatus::CutContentFilter.as_str();
/// The model's context window filled up before it finished.
pub const CUT_CONTEXT_WINDOW: &str = crate::MessageStatus::CutContextWindow.as_str();
/// The model declined to answer; the text is its refusal.
pub const REFUSED: &str = crate::MessageStatus::Refused.as_str();

/// The line a client shows after a reply with `status`, saying what
/// happened and what to change; none for a whole answer.
pub fn reply_note(status: Option<&str>) -> Option<&'static str> {
    match status? {
        CUT_MAX_TOKENS => Some(
            "[cut off: the answer reached its output limit; \
             raise max_tokens in [model] of config.toml]",
        ),
        CUT_CONTENT_FILTER => Some("[cut off by the provider's content filter]"),
        CUT_CONTEXT_WINDOW => Some(
            "[cut off: the model's context window is full; use a model with a larger \
             window, or layout = \"small\" in [agent]]",
        ),
        REFUSED => Some("[the model refused to answer]"),
        _ => None,
    }
}

/// A reply's text as a client shows it: the text, and the note of its
/// status on a line of its own (the note alone when the text is empty).
pub fn shown(text: &str, status: Option<&str>) -> String {
    match reply_note(status) {
        None => text.to_string(),
        Some(note) if text.trim().is_empty() => note.to_string(),
        Some(note) => format!("{}\n{note}", text.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ending_has_a_note_and_a_whole_answer_none() {
        for status in [
            CUT_MAX_TOKENS,
            CUT_CONTENT_FILTER,
            CUT_CONTEXT_WINDOW,
            REFUSED,
        ] {
            assert!(reply_note(Some(status)).is_some(), "{status}");
        }
        assert_eq!(reply_note(None), None);
        assert_eq!(reply_note(Some("ok")), None);
    }

    #[test]
    fn a_cut_reply_is_shown_with_its_note() {
        assert_eq!(shown("Half", None), "Half");
        let cut = shown("Half", Some(CUT_MAX_TOKENS));
        assert!(cut.starts_with("Half\n[cut off"), "{cut}");
        assert!(cut.contains("max_tokens"), "{cut}");
        assert_eq!(shown(" ", Some(REFUSED)), "[the model refused to answer]");
    }
}
