//! `remember(fact)` and `forget(fact)`: the agent's pinned facts, a small
//! block it keeps in view for good (see `memory/facts.rs`). The tool's own
//! message logs the change; a change takes effect in the next turn's state.

use super::Outcome;
use crate::log::Log;
use crate::memory::{FactChange, FACTS_LIMIT, FACT_LIMIT};
use crate::model::ToolSpec;
use serde_json::{json, Value};

pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "remember".to_string(),
            description: format!(
                "Pin a fact you must keep in view for good — the person's name, a preference, a \
standing commitment — one short line (at most {FACT_LIMIT} bytes). Pinned facts are shown in \
every turn's state, {FACTS_LIMIT} bytes in all: keep them few and lasting; everything else stays \
findable with search."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "fact": {"type": "string", "description": "The fact, one line."}
                },
                "required": ["fact"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "forget".to_string(),
            description: "Unpin a fact that is wrong or no longer holds: its text, words found \
in it alone, or its number in the list."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "fact": {"type": "string", "description": "The fact, some of its words, or its number."}
                },
                "required": ["fact"],
                "additionalProperties": false
            }),
        },
    ]
}

pub fn handles(name: &str) -> bool {
    matches!(name, "remember" | "forget")
}

/// Runs one call. `tainted`: what tainted the running turn; a fact it
/// pins keeps it (untrusted, and tainting the turns that show it).
pub async fn call(
    log: &Log,
    agent: &str,
    name: &str,
    arguments: &Value,
    tainted: Option<String>,
) -> Outcome {
    let fact = arguments
        .get("fact")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let change = if name == "remember" {
        FactChange::Remember(fact, tainted)
    } else {
        FactChange::Forget(fact)
    };
    match log.change_facts(agent, change, None).await {
        Ok(Ok((pinned, touched))) => {
            let verb = if name == "remember" {
                "pinned"
            } else {
                "unpinned"
            };
            Outcome::ok(format!(
                "{verb}: {touched}\n({} facts, {} of {FACTS_LIMIT} bytes; the next turn shows them)",
                pinned.0.len(),
                pinned.bytes()
            ))
        }
        Ok(Err(refused)) => Outcome::error(refused.to_string()),
        Err(err) => Outcome::error(format!("cannot write the facts: {err}")),
    }
}
