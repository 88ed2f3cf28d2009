//! `schedule_add`, `schedule_list`, `schedule_cancel`: the agent's reminders.

use super::Outcome;
use crate::log::Log;
use crate::model::ToolSpec;
use crate::schedule::When;
use serde_json::{json, Value};

pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "schedule_add".to_string(),
            description: "Deliver `text` to yourself as a message at `when`: once at a local time \
(`07:30`, `tomorrow 9am`, `monday 8:00`, `in 20 minutes`, `2026-12-24 18:00`), or every time \
a 5-field cron expression (`0 9 * * 1-5`) matches."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "when": {"type": "string"},
                    "text": {"type": "string", "description": "What you will receive then."}
                },
                "required": ["when", "text"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "schedule_list".to_string(),
            description: "Your active schedules, soonest first.".to_string(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        },
        ToolSpec {
            name: "schedule_cancel".to_string(),
            description: "Cancel a schedule by its id.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {"id": {"type": "integer", "minimum": 1}},
                "required": ["id"],
                "additionalProperties": false
            }),
        },
    ]
}

pub fn handles(name: &str) -> bool {
    matches!(name, "schedule_add" | "schedule_list" | "schedule_cancel")
}

/// Runs one call. `tainted`: what tainted the running turn; a schedule it
/// adds keeps it, and fires as an untrusted message.
pub async fn call(
    log: &Log,
    agent: &str,
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
        "schedule_add" => {
            let body = text("text");
            if body.trim().is_empty() {
                return Outcome::error("`text` is empty");
            }
            let when = match When::parse(&text("when"), chrono::Utc::now()) {
                Ok(when) => when,
                Err(err) => return Outcome::error(err.to_string()),
            };
            match log
                .add_schedule(agent, when, &body, tainted.as_deref())
                .await
            {
                Ok(schedule) => Outcome::ok(format!(
                    "schedule #{} added; next at {}{}",
                    schedule.id,
                    schedule.next,
                    if schedule.untrusted.is_some() {
                        " (made in a tainted turn: it fires as untrusted input)"
                    } else {
                        ""
                    }
                )),
                Err(err) => Outcome::error(format!("cannot store the schedule: {err}")),
            }
        }
        "schedule_cancel" => {
            let Some(id) = arguments.get("id").and_then(Value::as_i64) else {
                return Outcome::error("`id` must be an integer");
            };
            match log.cancel_schedule(agent, id).await {
                Ok(true) => Outcome::ok(format!("schedule #{id} cancelled")),
                Ok(false) => Outcome::error(format!("there is no active schedule #{id}")),
                Err(err) => Outcome::error(format!("cannot cancel: {err}")),
            }
        }
        _ => match log.schedules(agent).await {
            Ok(list) if list.is_empty() => Outcome::ok("no schedules"),
            Ok(list) => Outcome::ok(
                list.iter()
                    .map(|s| {
                        let text = crate::provenance::marked(s.text.clone(), s.untrusted.is_some());
                        format!("#{} {} next {}: {text}", s.id, s.when, s.next)
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Err(err) => Outcome::error(format!("cannot read the schedules: {err}")),
        },
    }
}
