//! A streamed Messages API answer, put together event by event: text from
//! `text_delta`, tool input from `input_json_delta` fragments, thinking and
//! its signature from `thinking_delta` and `signature_delta`, usage from
//! `message_start` and `message_delta`; `ping` is skipped and an `error`
//! event fails the answer. The answer is whole only at `message_stop`.

use super::{carry, ending_of, WireUsage};
use crate::model::error::{classify, Source};
use crate::model::http::{self, Flow};
use crate::model::sse::SseEvent;
use crate::model::{ModelError, Response, ToolCall, Usage};
use serde::Deserialize;
use serde_json::{json, Value};

/// A content block whose deltas are still arriving.
#[derive(Debug)]
enum Partial {
    Text,
    ToolUse {
        id: String,
        name: String,
        /// The `input_json_delta` fragments, joined.
        json: String,
        /// The input the start event carried, used when no fragment came.
        start: Value,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Re-sent as it came (`redacted_thinking`).
    Whole(Value),
    Other,
}

/// A streamed message put together event by event.
#[derive(Debug)]
pub(super) struct StreamAssembly {
    label: String,
    text: String,
    /// The blocks by their stream `index`, in the order they started.
    blocks: Vec<(u64, Partial)>,
    usage: WireUsage,
    /// Some event reported usage.
    usage_seen: bool,
    stop_reason: Option<String>,
    /// `message_stop` arrived: the answer is whole.
    stopped: bool,
}

impl StreamAssembly {
    pub(super) fn new(label: String) -> StreamAssembly {
        StreamAssembly {
            label,
            text: String::new(),
            blocks: Vec::new(),
            usage: WireUsage::default(),
            usage_seen: false,
            stop_reason: None,
            stopped: false,
        }
    }

    /// Takes one event.
    pub(super) fn take(
        &mut self,
        source: &Source,
        event: &SseEvent,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Flow, ModelError> {
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|err| http::garbage("a message event", err, &event.data))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        let wrong =
            |err: &dyn std::fmt::Display| http::garbage("a message event", err, &event.data);
        match kind {
            "message_start" => {
                if let Some(usage) = value.pointer("/message/usage") {
                    self.usage
                        .update(WireUsage::deserialize(usage).map_err(|err| wrong(&err))?);
                    self.usage_seen = true;
                }
            }
            "content_block_start" => {
                let index = index_of(&value).ok_or_else(|| wrong(&"no index"))?;
                let block = value.get("content_block").unwrap_or(&Value::Null);
                let partial = self.start_block(block, on_text);
                self.blocks.push((index, partial));
            }
            "content_block_delta" => {
                let index = index_of(&value).ok_or_else(|| wrong(&"no index"))?;
                let delta = value.get("delta").unwrap_or(&Value::Null);
                let Some(position) = self.blocks.iter().rposition(|(i, _)| *i == index) else {
                    return Err(wrong(&format!(
                        "a delta for block {index}, which never started"
                    )));
                };
                let text = |name: &str| delta.get(name).and_then(Value::as_str).unwrap_or_default();
                match (
                    delta.get("type").and_then(Value::as_str),
                    &mut self.blocks[position].1,
                ) {
                    (Some("text_delta"), Partial::Text) => {
                        let piece = text("text");
                        if !piece.is_empty() {
                            on_text(piece);
                            self.text.push_str(piece);
                        }
                    }
                    (Some("input_json_delta"), Partial::ToolUse { json, .. }) => {
                        json.push_str(text("partial_json"))
                    }
                    (Some("thinking_delta"), Partial::Thinking { thinking, .. }) => {
                        thinking.push_str(text("thinking"))
                    }
                    (Some("signature_delta"), Partial::Thinking { signature, .. }) => {
                        signature.push_str(text("signature"))
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = value.get("usage") {
                    self.usage
                        .update(WireUsage::deserialize(usage).map_err(|err| wrong(&err))?);
                    self.usage_seen = true;
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(Flow::Stop);
            }
            "error" => {
                let error = http::wire_error(&value).unwrap_or_default();
                return Err(classify(source, None, &error, None));
            }
            // `ping`, `content_block_stop`, and events added later.
            _ => {}
        }
        Ok(Flow::More)
    }

    /// The partial block a `content_block_start` opens; text it already
    /// carries is streamed at once.
    fn start_block(&mut self, block: &Value, on_text: &mut (dyn FnMut(&str) + Send)) -> Partial {
        let text = |name: &str| {
            block
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let initial = text("text");
                if !initial.is_empty() {
                    on_text(&initial);
                    self.text.push_str(&initial);
                }
                Partial::Text
            }
            Some("tool_use") => Partial::ToolUse {
                id: text("id"),
                name: text("name"),
                json: String::new(),
                start: block.get("input").cloned().unwrap_or_else(|| json!({})),
            },
            Some("thinking") => Partial::Thinking {
                thinking: text("thinking"),
                signature: text("signature"),
            },
            Some("redacted_thinking") => Partial::Whole(block.clone()),
            _ => Partial::Other,
        }
    }

    /// The whole answer, once the stream has ended; one that ended before
    /// `message_stop` was cut off.
    /// The usage reported so far, if any was.
    pub(super) fn reported(&self) -> Option<Usage> {
        self.usage_seen.then(|| self.usage.usage())
    }

    pub(super) fn finish(mut self) -> Result<Response, ModelError> {
        if !self.stopped {
            return Err(ModelError::Cut);
        }
        let ending = ending_of(self.stop_reason.as_deref(), &mut self.text);
        let mut tool_calls = Vec::new();
        let mut carried = Vec::new();
        for (_, block) in self.blocks {
            match block {
                Partial::ToolUse {
                    id,
                    name,
                    json,
                    start,
                } => tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: if json.trim().is_empty() {
                        start.to_string()
                    } else {
                        json
                    },
                }),
                Partial::Thinking {
                    thinking,
                    signature,
                } => carried.push(json!({
                    "type": "thinking",
                    "thinking": thinking,
                    "signature": signature,
                })),
                Partial::Whole(block) => carried.push(block),
                Partial::Text | Partial::Other => {}
            }
        }
        Ok(Response {
            text: self.text,
            tool_calls,
            usage: self.usage.usage(),
            carry: carry(&self.label, carried),
            model: String::new(),
            ending,
        })
    }
}

/// The `index` of a block event.
fn index_of(value: &Value) -> Option<u64> {
    value.get("index").and_then(Value::as_u64)
}
