//! `remember(fact)` and `forget(fact)`: the agent's pinned facts, a small
//! block it keeps in view for good (see `memory/facts.rs`). The tool's own
//! message logs the change; a change takes effect in the next turn's state.

use super::tool::{Call, Tool};
use super::Outcome;
use crate::log::Log;
use crate::memory::FactsLog;
use crate::memory::{FactChange, FACTS_LIMIT, FACT_LIMIT};
use crate::model::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

/// `remember`: acts (what it pins shows in every later turn, and keeps
/// the turn's taint).
pub struct Remember;

/// `forget`: acts (it changes what every later turn shows).
pub struct Forget;

impl Tool for Remember {
    fn spec(&self) -> ToolSpec {
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
        }
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        // A fact pinned in a tainted turn keeps its taint (untrusted, and
        // tainting the turns that show it).
        let fact = fact_of(&call.arguments);
        let change = FactChange::Remember(fact, call.tainted);
        Box::pin(change_facts(call.log, call.agent, change, "pinned"))
    }
}

impl Tool for Forget {
    fn spec(&self) -> ToolSpec {
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
        }
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        let change = FactChange::Forget(fact_of(&call.arguments));
        Box::pin(change_facts(call.log, call.agent, change, "unpinned"))
    }
}

fn fact_of(arguments: &Value) -> String {
    arguments
        .get("fact")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Makes the change; `verb` says what it did (`pinned`, `unpinned`).
async fn change_facts(log: &Log, agent: &str, change: FactChange, verb: &str) -> Outcome {
    match log.change_facts(agent, change, None).await {
        Ok(Ok((pinned, touched))) => Outcome::ok(format!(
            "{verb}: {touched}\n({} facts, {} of {FACTS_LIMIT} bytes; the next turn shows them)",
            pinned.0.len(),
            pinned.bytes()
        )),
        Ok(Err(refused)) => Outcome::error(refused.to_string()),
        Err(err) => Outcome::error(format!("cannot write the facts: {err}")),
    }
}
