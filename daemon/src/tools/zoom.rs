//! `zoom(id, n)`: how the agent walks its memory. Line `id+n` opens into the
//! two lines it was made from; `zoom(id, 1)` gives message `id` whole,
//! with its images: the result says how many, and the images themselves go
//! back to the model after the step's results (see `request.rs`).

use super::Outcome;
use crate::log::Log;
use crate::memory::Node;
use crate::model::ToolSpec;
use serde_json::{json, Value};

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "zoom".to_string(),
        description: "Open a line of your memory. `zoom(id, n)` on line `id+n` gives the two \
lines it summarizes; `zoom(id, 1)` gives message `id` whole, with its images."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 0, "description": "The line's first message id."},
                "n": {"type": "integer", "minimum": 1, "description": "How many messages the line covers (the n of id+n)."}
            },
            "required": ["id", "n"],
            "additionalProperties": false
        }),
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
                    let mut outcome = Outcome::ok(format!(
                        "{id}+0|{}: {}",
                        message.kind,
                        crate::images::labelled(&message.text, count)
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
