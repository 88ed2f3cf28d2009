//! `search(query, before?, after?, kind?, source?)`: the agent finds
//! messages and summary lines of its memory by their words (see
//! `memory/search.rs`); each hit names the node that `zoom` opens.

use super::tool::{Acts, Call, Tool};
use super::Outcome;
use crate::log::Log;
use crate::memory::search::Query;
use crate::memory::SearchLog;
use crate::model::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};

/// The most hits one call returns: the agent narrows with words and filters.
const MAX_HITS: u64 = 20;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "search".to_string(),
        description: "Search your whole memory — every message and every summary line, however \
old — by words. Returns the best hits as `id+n kind, date: snippet`; `zoom(id, n)` opens one. \
Use it before saying you do not know or do not remember something."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for; \"a phrase\" in double quotes matches as a phrase."},
                "before": {"type": "string", "description": "Only what was written before this local date or time (2026-11-30, 2026-11-30 18:00)."},
                "after": {"type": "string", "description": "Only what was written at or after this local date or time."},
                "kind": {"type": "string", "enum": ["user", "reply", "echo", "tool", "note", "work", "line"], "description": "Only messages of this kind, or only summary lines (`line`)."},
                "source": {"type": "string", "description": "Only messages from this source (terminal, telegram, whatsapp, schedule, …)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HITS, "description": "At most this many hits (10 when not given)."}
            },
            "required": ["query"],
            "additionalProperties": false
        }),
    }
}

/// `search`: only reads.
pub struct Search;

impl Tool for Search {
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
    let text = |key: &str| arguments.get(key).and_then(Value::as_str);
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map(|limit| limit.min(MAX_HITS) as u32);
    let query = match Query::read(
        text("query").unwrap_or_default(),
        text("before"),
        text("after"),
        text("kind"),
        text("source"),
        limit,
    ) {
        Ok(query) => query,
        Err(err) => return Outcome::error(err.to_string()),
    };
    match log.search(agent, query).await {
        Ok(hits) => Outcome::ok(crate::memory::hits_text(&hits)),
        Err(crate::memory::search::SearchError::Log(err)) => {
            Outcome::error(format!("cannot read the memory: {err}"))
        }
        Err(err) => Outcome::error(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_huge_query_is_refused_in_words_the_agent_can_act_on() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = tokio::sync::broadcast::channel(4);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        let huge = json!({ "query": "alpha ".repeat(4_000) });
        let outcome = call(&log, "a", &huge).await;
        assert_eq!(outcome.status, hearth_protocol::MessageStatus::Error);
        assert!(
            outcome.output.contains("at most 1000"),
            "{}",
            outcome.output
        );
    }
}
