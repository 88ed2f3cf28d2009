//! The OpenAI Chat Completions wire format (`POST /v1/chat/completions`):
//! a finished `chat.completion` object, or the `chat.completion.chunk` SSE
//! frames of a streamed one ending in `data: [DONE]`.

use serde_json::{json, Value};

use super::answer::{pieces, Answer, Exchange, StreamEnd};

/// The non-streamed response body.
pub(crate) fn completion(answer: &Answer, exchange: &Exchange) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": answer.text(),
        "refusal": null,
    });
    if !answer.calls.is_empty() {
        message["tool_calls"] = answer
            .calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })
            })
            .collect();
    }
    json!({
        "id": exchange.chat_id(),
        "object": "chat.completion",
        "created": exchange.created,
        "model": exchange.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason(answer),
        }],
        "usage": usage(answer, exchange),
    })
}

/// The SSE frames of a streamed response, each `data: <json>\n\n`: a role
/// chunk, the text in several content deltas, each call as `tool_calls`
/// deltas (id, type and name on the first fragment only, arguments spread
/// over the rest), a chunk with the finish reason, the usage chunk
/// (`"choices":[]`) when the request asked for it, then `data: [DONE]`.
/// With [`StreamEnd::Hold`] the frames stop after the text.
pub(crate) fn stream(answer: &Answer, exchange: &Exchange, end: StreamEnd) -> Vec<String> {
    let chunk = |choices: Value| {
        let mut chunk = json!({
            "id": exchange.chat_id(),
            "object": "chat.completion.chunk",
            "created": exchange.created,
            "model": exchange.model,
            "choices": choices,
        });
        if exchange.include_usage {
            // "all other chunks will also include a usage field, but with a
            // null value" (openai-python, chat_completion_stream_options_param.py)
            chunk["usage"] = Value::Null;
        }
        chunk
    };
    let delta = |delta: Value, finish_reason: Value| {
        frame(&chunk(json!([{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason,
        }])))
    };

    let mut frames = vec![delta(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in pieces(&answer.text) {
        frames.push(delta(json!({"content": piece}), Value::Null));
    }
    if end == StreamEnd::Hold {
        return frames;
    }
    for (index, call) in answer.calls.iter().enumerate() {
        frames.push(delta(
            json!({"tool_calls": [{
                "index": index,
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }]}),
            Value::Null,
        ));
        for piece in pieces(&call.arguments) {
            frames.push(delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    frames.push(delta(json!({}), json!(finish_reason(answer))));
    if exchange.include_usage {
        let mut last = chunk(json!([]));
        last["usage"] = usage(answer, exchange);
        frames.push(frame(&last));
    }
    frames.push("data: [DONE]\n\n".to_string());
    frames
}

fn finish_reason(answer: &Answer) -> &'static str {
    if answer.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

fn usage(answer: &Answer, exchange: &Exchange) -> Value {
    let usage = answer.usage(exchange);
    let (prompt, completion) = (usage.input, usage.output);
    let mut details = json!({"cached_tokens": usage.cached_input});
    if usage.cache_write > 0 {
        // Not OpenAI's; some compatible servers report it here.
        details["cache_write_tokens"] = json!(usage.cache_write);
    }
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": details,
        "completion_tokens_details": {"reasoning_tokens": 0},
    })
}

fn frame(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}
