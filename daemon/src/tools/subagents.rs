//! `subagent_start`, `subagent_stop`, `subagent_list`: the top agent's way to
//! delegate. Subagents never get these tools.

use super::Outcome;
use crate::model::ToolSpec;
use crate::subagents::Subagents;
use serde_json::{json, Value};

pub fn specs() -> Vec<ToolSpec> {
    vec![
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
        },
        ToolSpec {
            name: "subagent_stop".to_string(),
            description: "Stop a subagent's running task.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "subagent_list".to_string(),
            description: "Your subagents, what each is for, and which are running.".to_string(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        },
    ]
}

pub fn handles(name: &str) -> bool {
    matches!(name, "subagent_start" | "subagent_stop" | "subagent_list")
}

/// Runs one call. `tainted`: what tainted the running turn; a task given
/// in it keeps it, and the subagent's turn is tainted from its start.
pub async fn call(
    subagents: &Subagents,
    name: &str,
    arguments: &Value,
    tainted: Option<String>,
) -> Outcome {
    let text = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match name {
        "subagent_start" => match subagents
            .start(&text("name"), &text("task"), tainted.as_deref())
            .await
        {
            Ok(run) => Outcome::ok(format!(
                "{} started (run {}); its report will arrive as a work message",
                run.child, run.id
            )),
            Err(err) => Outcome::error(err.to_string()),
        },
        "subagent_stop" => match subagents.stop(&text("name")).await {
            Ok(report) => Outcome::ok(format!("stopped; report #{} logged", report.id)),
            Err(err) => Outcome::error(err.to_string()),
        },
        _ => match subagents.describe().await {
            Ok(text) => Outcome::ok(text),
            Err(err) => Outcome::error(format!("cannot read the runs: {err}")),
        },
    }
}
