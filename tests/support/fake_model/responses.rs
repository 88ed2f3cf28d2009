//! The OpenAI Responses API wire format (`POST /v1/responses`): a finished
//! `response` object, or the SSE events of a streamed one, each
//! `event: <type>` + `data: <json>` with the same `type` and an increasing
//! `sequence_number`, ending with `response.completed` (no `[DONE]`).
//! Reasoning comes first, as `reasoning` items (`rs_<n>_<i>`) with their
//! summary and encrypted content.

use serde_json::{json, Value};

use super::answer::{pieces, Answer, Call, Exchange, StreamEnd};
use super::script::{Finish, Thought};

/// The non-streamed response body; also the `response` carried by the
/// `response.completed` event.
pub(crate) fn response(answer: &Answer, exchange: &Exchange) -> Value {
    let mut output: Vec<Value> = (0..answer.thoughts.len())
        .map(|at| reasoning_item(answer, exchange, at))
        .collect();
    if let Some(text) = answer.text() {
        output.push(message_item(answer, exchange, text, "completed"));
    }
    output.extend(
        answer
            .calls
            .iter()
            .map(|call| call_item(call, &call.arguments, "completed")),
    );
    let mut response = envelope(exchange, status(answer), output, usage(answer, exchange));
    if let Some(reason) = incomplete_reason(answer) {
        response["incomplete_details"] = json!({ "reason": reason });
    }
    response
}

/// The response's `status`: `incomplete` for a cut answer.
fn status(answer: &Answer) -> &'static str {
    match incomplete_reason(answer) {
        Some(_) => "incomplete",
        None => "completed",
    }
}

/// `incomplete_details.reason` (`max_output_tokens`, `content_filter`).
fn incomplete_reason(answer: &Answer) -> Option<&'static str> {
    match answer.finish {
        Some(Finish::Length) => Some("max_output_tokens"),
        Some(Finish::ContentFilter) => Some("content_filter"),
        Some(Finish::Refusal) | None => None,
    }
}

/// The SSE frames of a streamed response: `response.created`,
/// `response.in_progress`; for the text `output_item.added`,
/// `content_part.added`, several `output_text.delta`, `output_text.done`,
/// `content_part.done`, `output_item.done`; for each call
/// `output_item.added`, several `function_call_arguments.delta`,
/// `function_call_arguments.done`, `output_item.done`; then
/// `response.completed`. With [`StreamEnd::Hold`] the frames stop after the
/// text deltas.
pub(crate) fn stream(answer: &Answer, exchange: &Exchange, end: StreamEnd) -> Vec<String> {
    let mut events = Events::default();
    let in_progress = envelope(exchange, "in_progress", Vec::new(), Value::Null);
    events.push("response.created", json!({"response": in_progress}));
    events.push("response.in_progress", json!({"response": in_progress}));

    let mut output_index = 0;
    for at in 0..answer.thoughts.len() {
        let item = reasoning_item(answer, exchange, at);
        let item_id = item["id"].clone();
        events.push(
            "response.output_item.added",
            json!({"output_index": output_index,
                   "item": {"type": "reasoning", "id": item_id, "summary": []}}),
        );
        for (summary_index, part) in item["summary"].as_array().into_iter().flatten().enumerate() {
            let at = json!({"item_id": item_id, "output_index": output_index,
                            "summary_index": summary_index});
            let text = part["text"].as_str().unwrap_or_default();
            for piece in pieces(text) {
                events.push(
                    "response.reasoning_summary_text.delta",
                    with(&at, json!({"delta": piece})),
                );
            }
            events.push(
                "response.reasoning_summary_text.done",
                with(&at, json!({"text": text})),
            );
        }
        events.push(
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
        output_index += 1;
    }
    if let Some(text) = answer.text() {
        let item_id = exchange.message_id();
        let at = json!({"item_id": item_id, "output_index": output_index, "content_index": 0});
        events.push(
            "response.output_item.added",
            json!({
                "output_index": output_index,
                "item": {"type": "message", "id": item_id, "role": "assistant",
                         "status": "in_progress", "content": []},
            }),
        );
        let refused = answer.finish == Some(Finish::Refusal);
        let empty = if refused {
            refusal("")
        } else {
            output_text("")
        };
        events.push(
            "response.content_part.added",
            with(&at, json!({ "part": empty })),
        );
        for piece in pieces(text) {
            if refused {
                events.push("response.refusal.delta", with(&at, json!({"delta": piece})));
            } else {
                events.push(
                    "response.output_text.delta",
                    with(&at, json!({"delta": piece, "logprobs": []})),
                );
            }
        }
        if end.stops_after_text() {
            return events.frames;
        }
        if refused {
            events.push("response.refusal.done", with(&at, json!({"refusal": text})));
        } else {
            events.push(
                "response.output_text.done",
                with(&at, json!({"text": text, "logprobs": []})),
            );
        }
        let part = if refused {
            refusal(text)
        } else {
            output_text(text)
        };
        events.push(
            "response.content_part.done",
            with(&at, json!({ "part": part })),
        );
        events.push(
            "response.output_item.done",
            json!({"output_index": output_index,
                   "item": message_item(answer, exchange, text, "completed")}),
        );
        output_index += 1;
    }
    if end.stops_after_text() {
        return events.frames;
    }

    for call in &answer.calls {
        let at = json!({"item_id": call.item_id, "output_index": output_index});
        events.push(
            "response.output_item.added",
            json!({"output_index": output_index, "item": call_item(call, "", "in_progress")}),
        );
        for piece in pieces(&call.arguments) {
            events.push(
                "response.function_call_arguments.delta",
                with(&at, json!({"delta": piece})),
            );
        }
        events.push(
            "response.function_call_arguments.done",
            with(&at, json!({"name": call.name, "arguments": call.arguments})),
        );
        events.push(
            "response.output_item.done",
            json!({"output_index": output_index,
                   "item": call_item(call, &call.arguments, "completed")}),
        );
        output_index += 1;
    }

    // A cut answer ends with `response.incomplete` instead.
    let terminal = match status(answer) {
        "incomplete" => "response.incomplete",
        _ => "response.completed",
    };
    events.push(terminal, json!({"response": response(answer, exchange)}));
    events.frames
}

/// The SSE frames written so far and the next sequence number.
#[derive(Default)]
struct Events {
    frames: Vec<String>,
    next_sequence_number: u64,
}

impl Events {
    /// Adds the event `kind` with these fields plus `type` and
    /// `sequence_number`.
    fn push(&mut self, kind: &str, mut fields: Value) {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(self.next_sequence_number);
        self.next_sequence_number += 1;
        self.frames
            .push(format!("event: {kind}\ndata: {fields}\n\n"));
    }
}

/// The object `base` with the fields of `extra` added.
fn with(base: &Value, extra: Value) -> Value {
    let mut merged = base.clone();
    if let (Some(merged), Value::Object(extra)) = (merged.as_object_mut(), extra) {
        merged.extend(extra);
    }
    merged
}

fn envelope(exchange: &Exchange, status: &str, output: Vec<Value>, usage: Value) -> Value {
    json!({
        "id": exchange.response_id(),
        "object": "response",
        "created_at": exchange.created,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "model": exchange.model,
        "output": output,
        "previous_response_id": exchange.previous_response_id,
        "usage": usage,
    })
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": []})
}

fn refusal(text: &str) -> Value {
    json!({"type": "refusal", "refusal": text})
}

fn message_item(answer: &Answer, exchange: &Exchange, text: &str, status: &str) -> Value {
    let part = match answer.finish {
        Some(Finish::Refusal) => refusal(text),
        _ => output_text(text),
    };
    json!({
        "type": "message",
        "id": exchange.message_id(),
        "role": "assistant",
        "status": status,
        "content": [part],
    })
}

/// The answer's `at`th thought as a reasoning item: a shown one with its
/// summary, a hidden one with none; each with its encrypted content.
fn reasoning_item(answer: &Answer, exchange: &Exchange, at: usize) -> Value {
    let (summary, sealed) = match &answer.thoughts[at] {
        Thought::Shown { text, sealed } => {
            (json!([{"type": "summary_text", "text": text}]), sealed)
        }
        Thought::Hidden { sealed } => (json!([]), sealed),
    };
    json!({
        "type": "reasoning",
        "id": format!("rs_{}_{at}", exchange.number),
        "summary": summary,
        "encrypted_content": sealed,
    })
}

fn call_item(call: &Call, arguments: &str, status: &str) -> Value {
    json!({
        "type": "function_call",
        "id": call.item_id,
        "call_id": call.call_id,
        "name": call.name,
        "arguments": arguments,
        "status": status,
    })
}

fn usage(answer: &Answer, exchange: &Exchange) -> Value {
    let usage = answer.usage(exchange);
    let (input, output) = (usage.input, usage.output);
    let mut details = json!({"cached_tokens": usage.cached_input});
    if usage.cache_write > 0 {
        details["cache_write_tokens"] = json!(usage.cache_write);
    }
    json!({
        "input_tokens": input,
        "input_tokens_details": details,
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output,
    })
}
