//! `zoom(id, n)`: how the agent walks its memory. Line `id+n` opens into the
//! two lines it was made from; `zoom(id, 1)` gives message `id` whole,
//! with its images: the result says how many, and the images themselves go
//! back to the model after the step's results (see `request.rs`). A message
//! longer than a page comes a page at a time: `zoom(id, 1, offset, length)`
//! reads `length` bytes (a page at most) from byte `offset` of its text.

use super::tool::{Acts, Call, Tool};
use super::Outcome;
use crate::log::Log;
use crate::memory::MemoryLog;
use crate::memory::Node;
use crate::model::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

/// The most bytes of a message one zoom returns: as much as a huge
/// message's head and tail in a request (the default layout's limit).
pub const PAGE_BYTES: usize = 8_000;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "zoom".to_string(),
        description: "Open a line of your memory. `zoom(id, n)` on line `id+n` gives the two \
lines it summarizes; `zoom(id, 1)` gives message `id` whole, with its images. A message longer than a page (8,000 bytes) comes a page at a time: `offset` and `length` say which bytes of its text."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 0, "description": "The line's first message id."},
                "n": {"type": "integer", "minimum": 1, "description": "How many messages the line covers (the n of id+n)."},
                "offset": {"type": "integer", "minimum": 0, "description": "For a message (n = 1): the first byte of its text to read (0 when not given)."},
                "length": {"type": "integer", "minimum": 1, "maximum": PAGE_BYTES, "description": "For a message: how many bytes to read (a page when not given)."}
            },
            "required": ["id", "n"],
            "additionalProperties": false
        }),
    }
}

/// `zoom`: only reads.
pub struct Zoom;

impl Tool for Zoom {
    fn spec(&self) -> ToolSpec {
        spec()
    }

    fn acts(&self) -> Acts {
        Acts::Never
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { self::call(call.log, call.agent, &call.arguments).await })
    }
}

pub async fn call(log: &Log, agent: &str, arguments: &Value) -> Outcome {
    let number = |key: &str| arguments.get(key).and_then(Value::as_u64);
    let (Some(id), Some(n)) = (number("id"), number("n")) else {
        return Outcome::error("`id` and `n` must be non-negative integers");
    };
    let Some(node) = Node::named(id, n) else {
        return Outcome::error(format!(
            "no line {id}+{n}; lines are id+n with n a power of two and id a multiple of n"
        ));
    };
    let total = match log.next_id(agent).await {
        Ok(total) => total,
        Err(err) => return Outcome::error(format!("cannot read the log: {err}")),
    };
    if node.end() > total {
        return Outcome::error(format!(
            "no line {node}: the log has {total} messages (ids 0 to {})",
            total.saturating_sub(1)
        ));
    }
    if n == 1 {
        return match log.range(agent, id, id + 1, 1).await {
            Ok(entries) => match entries.first() {
                Some(entry) => {
                    let message = &entry.message;
                    let count = message.images.len();
                    let offset = number("offset").unwrap_or(0) as usize;
                    let length = number("length").map_or(PAGE_BYTES, |l| l as usize);
                    let text = match page(&message.text, id, offset, length) {
                        Ok(text) => text,
                        Err(why) => return Outcome::error(why),
                    };
                    let mut outcome = Outcome::ok(format!(
                        "{id}+0|{}: {}",
                        message.kind,
                        crate::images::labelled(&text, count)
                    ));
                    if count > 0 {
                        outcome.output.push_str(&format!(
                            "\n(the message's {} follow{})",
                            crate::images::labelled("", count)
                                .trim()
                                .trim_matches(['[', ']']),
                            if count == 1 { "s" } else { "" }
                        ));
                        outcome.recalled = message.images.clone();
                    }
                    outcome
                }
                None => Outcome::error(format!("there is no message {id}")),
            },
            Err(err) => Outcome::error(format!("cannot read the log: {err}")),
        };
    }
    let Some((left, right)) = node.children() else {
        return Outcome::error(format!("no line {node}"));
    };
    let mut lines = Vec::new();
    for child in [left, right] {
        match log.node_text(agent, child).await {
            Ok(Some(text)) => lines.push(format!("{child}|{}", text.replace(['\n', '\r'], " "))),
            Ok(None) => lines.push(format!("{child}|(not summarized yet; zoom further in)")),
            Err(err) => return Outcome::error(format!("cannot read the memory: {err}")),
        }
    }
    Outcome::ok(lines.join("\n"))
}

/// The bytes of `text` that a zoom reads: all of it when it fits a page
/// and no offset is asked; otherwise the page from `offset` (both ends moved
/// to char boundaries) and a line that says where it lies and what is next.
fn page(text: &str, id: u64, offset: usize, length: usize) -> Result<String, String> {
    let length = length.clamp(1, PAGE_BYTES);
    if offset == 0 && text.len() <= length {
        return Ok(text.to_string());
    }
    if offset >= text.len() {
        return Err(format!(
            "message {id} is {} bytes: offset {offset} is past its end",
            text.len()
        ));
    }
    let start = crate::memory::floor_boundary(text, offset);
    let end = crate::memory::floor_boundary(text, start + length).max(
        // A page holds at least one character.
        crate::memory::ceil_boundary(text, start + 1),
    );
    let next = if end < text.len() {
        format!("; zoom(id={id}, n=1, offset={end}) reads on")
    } else {
        "; that is the end".to_string()
    };
    Ok(format!(
        "{}\n[bytes {start} to {end} of {}{next}]",
        &text[start..end],
        text.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_comes_a_page_at_a_time() {
        assert_eq!(page("short", 4, 0, PAGE_BYTES).unwrap(), "short");
        let text = "x".repeat(20_000);
        let first = page(&text, 4, 0, PAGE_BYTES).unwrap();
        assert!(
            first.ends_with("[bytes 0 to 8000 of 20000; zoom(id=4, n=1, offset=8000) reads on]")
        );
        let last = page(&text, 4, 16_000, 100_000).unwrap();
        assert!(last.ends_with("[bytes 16000 to 20000 of 20000; that is the end]"));
        assert!(page(&text, 4, 20_000, 10).is_err());
        let text = "é".repeat(10);
        let middle = page(&text, 1, 3, 3).unwrap();
        assert!(middle.starts_with("é\n[bytes 2 to 4 of 20"), "{middle}");
    }
}
