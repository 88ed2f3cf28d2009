//! `subagent_start`, `subagent_stop`, `subagent_list`: the top agent's way to
//! delegate. Subagents never get these tools.

use super::tool::{text_of, Acts, Call, Tool};
use super::Outcome;
use crate::model::ToolSpec;
use crate::subagents::Subagents;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::Arc;

/// `subagent_start` for these subagents: acts (the task it gives keeps the
/// turn's taint, and the subagent's turn is tainted from its start).
pub struct SubagentStart(pub Arc<Subagents>);

/// `subagent_stop`: acts.
pub struct SubagentStop(pub Arc<Subagents>);

/// `subagent_list`: only reads.
pub struct SubagentList(pub Arc<Subagents>);

impl Tool for SubagentStart {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "subagent_start".to_string(),
            description: "Give a subagent a task. It works on its own and its report arrives \
later as a `work` message; do not wait for it."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The subagent's name."},
                    "task": {"type": "string", "description": "What it should do, with everything it needs to know."}
                },
                "required": ["name", "task"],
                "additionalProperties": false
            }),
        }
    }

    fn detail(&self, arguments: &Value) -> Option<String> {
        text_of(arguments, "name")
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let text = |key: &str| text_of(&call.arguments, key).unwrap_or_default();
            match self
                .0
                .start(&text("name"), &text("task"), call.tainted.as_deref())
                .await
            {
                Ok(run) => Outcome::ok(format!(
                    "{} started (run {}); its report will arrive as a work message",
                    run.child, run.id
                )),
                Err(err) => Outcome::error(err.to_string()),
            }
        })
    }
}

impl Tool for SubagentStop {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "subagent_stop".to_string(),
            description: "Stop a subagent's running task.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": false
            }),
        }
    }

    fn detail(&self, arguments: &Value) -> Option<String> {
        text_of(arguments, "name")
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let name = text_of(&call.arguments, "name").unwrap_or_default();
            match self.0.stop(&name).await {
                Ok(report) => Outcome::ok(format!("stopped; report #{} logged", report.id)),
                Err(err) => Outcome::error(err.to_string()),
            }
        })
    }
}

impl Tool for SubagentList {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "subagent_list".to_string(),
            description: "Your subagents, what each is for, and which are running.".to_string(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    fn acts(&self) -> Acts {
        Acts::Never
    }

    fn call<'a>(&'a self, _call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            match self.0.describe().await {
                Ok(text) => Outcome::ok(text),
                Err(err) => Outcome::error(format!("cannot read the runs: {err}")),
            }
        })
    }
}
