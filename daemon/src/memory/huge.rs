//! Huge messages stay out of requests: a text longer than the layout's
//! limit (`huge_message`, by default an eighth of the view's low budget) is
//! sent as its head and its tail around a marker that names its size and
//! how `zoom` pages through the rest. Pure.
//!
//! This holds wherever a message goes whole — a turn's taken messages, its
//! tool results, a compress call's task — so no request grows with one
//! message, and a 1 MB paste costs a request no more than the limit.

use std::borrow::Cow;

/// The head's share of what is kept; the tail gets the rest.
const HEAD_SHARE: usize = 3;
const PARTS: usize = 4;

/// `text`, or its head and tail with a marker when it is over `limit`
/// bytes. `id` is the message that holds it, and `base` where `text` starts
/// in that message's text, so the marker's offsets are the ones `zoom`
/// takes.
pub fn head_and_tail(text: &str, limit: usize, id: u64, base: usize) -> Cow<'_, str> {
    if text.len() <= limit {
        return Cow::Borrowed(text);
    }
    let head_end = floor_boundary(text, limit * HEAD_SHARE / PARTS);
    let tail_start = ceil_boundary(
        text,
        text.len() - (limit / PARTS).min(text.len() - head_end),
    );
    let marker = format!(
        "\n[… message {id} is {} bytes; bytes {} to {} are left out here: zoom(id={id}, n=1, \
         offset={}) reads on from there, a page at a time …]\n",
        base + text.len(),
        base + head_end,
        base + tail_start,
        base + head_end,
    );
    Cow::Owned(format!(
        "{}{marker}{}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

/// A message's line as a compress call is given it: `kind: text`, a huge
/// text as its head and tail, images counted (`[2 images] caption`).
pub fn task_line(message: &hearth_protocol::Message, limit: usize) -> String {
    let text = head_and_tail(&message.text, limit, message.id, 0);
    super::tree::message_line(
        message.kind.as_str(),
        &crate::images::labelled(&text, message.images.len()),
    )
}

/// The largest char boundary at or before `at`.
pub fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest char boundary at or after `at`.
pub fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_texts_go_whole() {
        assert!(matches!(
            head_and_tail("short", 10, 3, 0),
            Cow::Borrowed("short")
        ));
    }

    #[test]
    fn a_huge_text_is_its_head_and_tail_with_a_marker_naming_its_size() {
        let text = format!(
            "{}{}{}",
            "h".repeat(5_000),
            "m".repeat(1_000_000),
            "t".repeat(5_000)
        );
        let sent = head_and_tail(&text, 8_000, 42, 0);
        assert!(sent.len() < 8_200, "{} bytes", sent.len());
        assert!(sent.starts_with(&"h".repeat(5_000)));
        assert!(sent.ends_with(&"t".repeat(2_000)));
        assert!(sent.contains("message 42 is 1010000 bytes"), "{sent:.200}");
        assert!(sent.contains("zoom(id=42, n=1, offset=6000)"));
        // Offsets count from where the text starts in its message.
        let sent = head_and_tail(&text, 8_000, 42, 10);
        assert!(sent.contains("message 42 is 1010010 bytes; bytes 6010 to 1008010"));
    }

    #[test]
    fn cuts_fall_on_char_boundaries() {
        let text = "é".repeat(10_000);
        let sent = head_and_tail(&text, 1_001, 1, 0);
        assert!(sent.len() < 1_200);
        assert!(sent.starts_with('é') && sent.ends_with('é'));
    }
}
