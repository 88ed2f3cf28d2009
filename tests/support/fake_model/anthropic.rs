//! The Anthropic Messages wire format (`POST /v1/messages`): a finished
//! `message` object, or the SSE events of a streamed one, each
//! `event: <type>` + `data: <json>` with the same `type`: `message_start`,
//! `ping`, per block `content_block_start`, its deltas (`thinking_delta`
//! and `signature_delta`, `text_delta`, `input_json_delta`) and
//! `content_block_stop`, then `message_delta` with the stop reason and
//! usage, and `message_stop` (no `[DONE]`). Reasoning comes first, as
//! `thinking` blocks with their signatures and `redacted_thinking`.

use serde_json::{json, Value};

use super::answer::{pieces, Answer, Call, Exchange, StreamEnd};
use super::script::{Finish, Reply, Thought};

/// An HTTP error in Anthropic's envelope:
/// `{"type":"error","error":{"type":error_type,"message":message},"request_id":..}`,
/// e.g. `error(529, "overloaded_error", "Overloaded")`.
pub fn error(status: u16, error_type: &str, message: &str) -> Reply {
    Reply::Error {
        status,
        body: json!({
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": "req_fake",
        }),
    }
}

/// The largest request body the Messages API takes: 32 MB (the vision
/// guide's "request size limits (32 MB for standard endpoints ...)").
pub(crate) const MAX_REQUEST_BYTES: usize = 32_000_000;

/// The 413 of a request over [`MAX_REQUEST_BYTES`], as the API's errors
/// page gives it.
pub(crate) fn too_large() -> Value {
    json!({
        "type": "error",
        "error": {"type": "request_too_large",
                  "message": "Request exceeds the maximum allowed number of bytes."},
        "request_id": "req_fake",
    })
}

/// The 400 the Messages API answers a request with manual thinking
/// (`thinking.type: "enabled"`) whose last assistant message calls tools
/// without starting with its thinking block (the thinking guide's
/// "Preserving thinking blocks", read 2026-12-01). Adaptive thinking may
/// skip a step's thinking, so it is not refused there.
pub(crate) fn thinking_refusal(body: &Value) -> Option<Value> {
    if body["thinking"]["type"] != "enabled" {
        return None;
    }
    let messages = body["messages"].as_array()?;
    let (m, last) = messages
        .iter()
        .enumerate()
        .rev()
        .find(|(_, message)| message["role"] == "assistant")?;
    let blocks = last["content"].as_array()?;
    let calls_tools = blocks.iter().any(|block| block["type"] == "tool_use");
    let first = blocks.first()?["type"].as_str().unwrap_or_default();
    if !calls_tools || first == "thinking" || first == "redacted_thinking" {
        return None;
    }
    Some(json!({
        "type": "error",
        "error": {"type": "invalid_request_error", "message": format!(
            "messages.{m}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block."
        )},
        "request_id": "req_fake",
    }))
}

/// The 400 the Messages API answers a request whose images it refuses, as
/// its vision guide documents the limits (platform.claude.com/docs/en/
/// build-with-claude/vision, "General limits", read 2026-12-01): base64
/// over 5 MB, a side over 8000 px, or over 2000 px in a request of more
/// than 20 images. The messages are the API's own.
pub(crate) fn image_refusal(body: &Value) -> Option<Value> {
    use base64::Engine;
    const MAX_BASE64: usize = 5 * 1024 * 1024;
    let mut images = Vec::new();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    for (m, message) in messages.iter().enumerate() {
        let blocks = message["content"].as_array().cloned().unwrap_or_default();
        for (b, block) in blocks.iter().enumerate() {
            if block["type"] == "image" && block["source"]["type"] == "base64" {
                let data = block["source"]["data"].as_str().unwrap_or_default();
                images.push((
                    format!("messages.{m}.content.{b}.image.source.base64"),
                    data.to_string(),
                ));
            }
        }
    }
    let many = images.len() > 20;
    let refuse = |message: String| {
        json!({
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
            "request_id": "req_fake",
        })
    };
    for (path, data) in &images {
        if data.len() > MAX_BASE64 {
            return Some(refuse(format!(
                "{path}: image exceeds 5 MB maximum: {} bytes > {MAX_BASE64} bytes",
                data.len()
            )));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap_or_default();
        // What it cannot measure, it lets through: the tests' own images.
        let Some((width, height)) = hearth_protocol::image::dimensions(&bytes) else {
            continue;
        };
        let side = width.max(height);
        if side > 8000 {
            return Some(refuse(format!(
                "{path}.data: At least one of the image dimensions exceed max allowed size: 8000 pixels"
            )));
        }
        if many && side > 2000 {
            return Some(refuse(format!(
                "{path}.data: At least one of the image dimensions exceed max allowed size for many-image requests: 2000 pixels"
            )));
        }
    }
    None
}

/// The non-streamed response body.
pub(crate) fn message(answer: &Answer, exchange: &Exchange) -> Value {
    let mut content: Vec<Value> = answer.thoughts.iter().map(thought_block).collect();
    if let Some(text) = answer.text() {
        content.push(json!({"type": "text", "text": text}));
    }
    content.extend(answer.calls.iter().map(|call| {
        json!({"type": "tool_use", "id": tool_use_id(call), "name": call.name, "input": input(call)})
    }));
    json!({
        "id": exchange.message_id(),
        "type": "message",
        "role": "assistant",
        "model": exchange.model,
        "content": content,
        "stop_reason": stop_reason(answer),
        "stop_sequence": null,
        "usage": usage(answer, exchange, answer.output_tokens()),
    })
}

/// The SSE frames of a streamed response: `message_start` (empty content,
/// the input usage), a `ping`, the text as a text block in several
/// `text_delta`s, each call as a `tool_use` block whose input arrives in
/// `input_json_delta` fragments (the first one empty, as the real API
/// sends), then `message_delta` and `message_stop`. With
/// [`StreamEnd::Hold`] the frames stop after the text deltas.
pub(crate) fn stream(answer: &Answer, exchange: &Exchange, end: StreamEnd) -> Vec<String> {
    let mut frames = Vec::new();
    let mut push = |data: Value| {
        let kind = data["type"].as_str().unwrap_or_default().to_string();
        frames.push(format!("event: {kind}\ndata: {data}\n\n"));
    };
    push(json!({
        "type": "message_start",
        "message": {
            "id": exchange.message_id(),
            "type": "message",
            "role": "assistant",
            "model": exchange.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage(answer, exchange, 1),
        },
    }));
    push(json!({"type": "ping"}));

    let mut index = 0;
    for thought in &answer.thoughts {
        match thought {
            Thought::Shown { text, sealed } => {
                push(json!({
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                }));
                for piece in pieces(text) {
                    push(json!({
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    }));
                }
                push(json!({
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": sealed},
                }));
            }
            Thought::Hidden { .. } => push(json!({
                "type": "content_block_start",
                "index": index,
                "content_block": thought_block(thought),
            })),
        }
        push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if let Some(text) = answer.text() {
        push(json!({
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "text", "text": ""},
        }));
        for piece in pieces(text) {
            push(json!({
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": piece},
            }));
        }
        if end.stops_after_text() {
            return frames;
        }
        push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if end.stops_after_text() {
        return frames;
    }
    for call in &answer.calls {
        push(json!({
            "type": "content_block_start",
            "index": index,
            "content_block": {"type": "tool_use", "id": tool_use_id(call), "name": call.name, "input": {}},
        }));
        let fragments = std::iter::once("").chain(pieces(&call.arguments));
        for fragment in fragments {
            push(json!({
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": fragment},
            }));
        }
        push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    push(json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(answer), "stop_sequence": null},
        "usage": {"output_tokens": answer.output_tokens()},
    }));
    push(json!({"type": "message_stop"}));
    frames
}

/// A thought as the content block the Messages API gives it.
fn thought_block(thought: &Thought) -> Value {
    match thought {
        Thought::Shown { text, sealed } => {
            json!({"type": "thinking", "thinking": text, "signature": sealed})
        }
        Thought::Hidden { sealed } => json!({"type": "redacted_thinking", "data": sealed}),
    }
}

/// `toolu_<n>` for the server's `call_<n>`.
fn tool_use_id(call: &Call) -> String {
    call.call_id.replacen("call_", "toolu_", 1)
}

/// The call's arguments as the object the API sends; arguments that are
/// not a JSON object become an empty one.
fn input(call: &Call) -> Value {
    match serde_json::from_str::<Value>(&call.arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => json!({}),
    }
}

fn stop_reason(answer: &Answer) -> &'static str {
    match answer.finish {
        Some(Finish::Length) => "max_tokens",
        // The Messages API has no content filter finish: its streaming
        // classifiers end the answer with `refusal`.
        Some(Finish::ContentFilter | Finish::Refusal) => "refusal",
        None if answer.calls.is_empty() => "end_turn",
        None => "tool_use",
    }
}

/// Usage as Anthropic reports it: `input_tokens` counts only what is
/// neither read from nor written to the cache. Unscripted, the whole prompt
/// is uncached: the fake keeps no cache.
fn usage(answer: &Answer, exchange: &Exchange, output_tokens: u64) -> Value {
    let usage = answer.usage(exchange);
    let special = usage.cached_input + usage.cache_write;
    json!({
        "input_tokens": usage.input.saturating_sub(special),
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cached_input,
        "output_tokens": output_tokens,
    })
}
