//! An approval request as a bridge's message: the call, cut to what the
//! platform shows, and how to answer there.

use hearth_protocol::Event;

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
