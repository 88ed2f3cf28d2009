//! `date`: the current local date and time, or when message `id` was written.

use super::tool::{Acts, Call, Tool};
use super::Outcome;
use crate::log::Log;
use crate::model::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "date".to_string(),
        description: "The current local date and time (ISO 8601 with offset). \
With `id`, when that message was written instead."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer", "minimum": 0, "description": "A message id from the chat."}
            },
            "required": [],
            "additionalProperties": false
        }),
    }
}

/// `date`: only reads.
pub struct Date;

impl Tool for Date {
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
    match arguments.get("id") {
        None | Some(Value::Null) => Outcome::ok(now()),
        Some(id) => {
            let Some(id) = id.as_u64() else {
                return Outcome::error("`id` must be a non-negative integer");
            };
            match log.range(agent, id, id + 1, 1).await {
                Ok(entries) => match entries.first() {
                    Some(entry) => Outcome::ok(entry.message.at.clone()),
                    None => Outcome::error(format!("there is no message {id}")),
                },
                Err(err) => Outcome::error(format!("cannot read the log: {err}")),
            }
        }
    }
}

/// Now, local, ISO 8601 with the offset and the weekday.
pub fn now() -> String {
    chrono::Local::now()
        .format("%Y-%m-%dT%H:%M:%S%:z (%A)")
        .to_string()
}
