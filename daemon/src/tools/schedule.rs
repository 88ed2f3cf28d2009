//! `schedule_add`, `schedule_list`, `schedule_cancel`: the agent's reminders.

use super::tool::{text_of, Acts, Call, Tool};
use super::Outcome;
use crate::model::ToolSpec;
use crate::schedule::When;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

/// `schedule_add`: acts (what it stores comes back later, keeping the
/// turn's taint).
pub struct ScheduleAdd;

/// `schedule_list`: only reads.
pub struct ScheduleList;

/// `schedule_cancel`: acts.
pub struct ScheduleCancel;

impl Tool for ScheduleAdd {
    fn spec(&self) -> ToolSpec {
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
        }
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(add(call))
    }
}

impl Tool for ScheduleList {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "schedule_list".to_string(),
            description: "Your active schedules, soonest first.".to_string(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    fn acts(&self) -> Acts {
        Acts::Never
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(list(call))
    }
}

impl Tool for ScheduleCancel {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "schedule_cancel".to_string(),
            description: "Cancel a schedule by its id.".to_string(),
            parameters: json!({
                "type": "object",
                "properties": {"id": {"type": "integer", "minimum": 1}},
                "required": ["id"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(cancel(call))
    }
}

/// Adds a schedule. One added in a tainted turn keeps the taint, and
/// fires as an untrusted message.
async fn add(call: Call<'_>) -> Outcome {
    let text = |key: &str| text_of(&call.arguments, key).unwrap_or_default();
    let body = text("text");
    if body.trim().is_empty() {
        return Outcome::error("`text` is empty");
    }
    let when = match When::parse(&text("when"), chrono::Utc::now()) {
        Ok(when) => when,
        Err(err) => return Outcome::error(err.to_string()),
    };
    match call
        .log
        .add_schedule(call.agent, when, &body, call.tainted.as_deref())
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

async fn cancel(call: Call<'_>) -> Outcome {
    let Some(id) = call.arguments.get("id").and_then(Value::as_i64) else {
        return Outcome::error("`id` must be an integer");
    };
    match call.log.cancel_schedule(call.agent, id).await {
        Ok(true) => Outcome::ok(format!("schedule #{id} cancelled")),
        Ok(false) => Outcome::error(format!("there is no active schedule #{id}")),
        Err(err) => Outcome::error(format!("cannot cancel: {err}")),
    }
}

async fn list(call: Call<'_>) -> Outcome {
    match call.log.schedules(call.agent).await {
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
    }
}
