//! The agent's tools, one file per family, behind one registry.
//!
//! - `config.rs`: `[tools]`, what the tools may do.
//! - `date.rs`: `date` — now, or when a message was written.

mod config;
mod date;

pub use config::ToolsConfig;

pub use date::now as date_now;

use crate::log::Log;
use crate::model::{ToolCall, ToolSpec};
use serde_json::Value;

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub output: String,
    /// `ok` or `error`.
    pub status: &'static str,
}

impl Outcome {
    pub fn ok(output: impl Into<String>) -> Outcome {
        Outcome {
            output: output.into(),
            status: "ok",
        }
    }

    pub fn error(output: impl Into<String>) -> Outcome {
        Outcome {
            output: output.into(),
            status: "error",
        }
    }
}

/// The tools of one agent.
#[derive(Clone)]
pub struct Tools {
    agent: String,
    log: Log,
}

impl Tools {
    pub fn new(agent: &str, log: Log) -> Tools {
        Tools {
            agent: agent.to_string(),
            log,
        }
    }

    /// The tools as the model sees them, always in the same order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        vec![date::spec()]
    }

    /// Runs one call. Bad arguments are an error outcome the model can
    /// correct, never a failure of the turn.
    pub async fn call(&self, call: &ToolCall) -> Outcome {
        let arguments = if call.arguments.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            match serde_json::from_str::<Value>(&call.arguments) {
                Ok(value @ Value::Object(_)) => value,
                Ok(_) => return Outcome::error("arguments must be a JSON object"),
                Err(err) => return Outcome::error(format!("arguments are not valid JSON: {err}")),
            }
        };
        match call.name.as_str() {
            "date" => date::call(&self.log, &self.agent, &arguments).await,
            other => Outcome::error(format!(
                "there is no tool `{other}`; the tools are: {}",
                self.specs()
                    .iter()
                    .map(|spec| spec.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}
