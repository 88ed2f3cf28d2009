//! The OpenAI Responses API: `POST {base_url}/responses`.
//!
//! Stateless (`store: false`): every request carries the instructions, the
//! tools and the whole conversation as input items, built from structs so the
//! same request gives the same bytes. Streamed replies arrive as typed SSE
//! events: text from `response.output_text.delta`, tool calls from
//! `response.output_item.done`, usage from `response.completed`. OpenAI ends
//! the stream after the terminal event; servers that follow the OpenResponses
//! spec add `data: [DONE]`. Both are read.

use super::http::{self, Flow};
use super::sse::SseEvent;
use super::{Item, Model, ModelError, Request, Response, ToolCall, Usage};
use crate::config::ModelConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Sends `request`; streamed text goes to `on_text` as it arrives.
pub(super) async fn complete(
    model: &Model,
    request: &Request,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<Response, ModelError> {
    let stream = model.config.stream;
    let body = request_body(&model.config, request, stream);
    let response = http::post_json(model, "responses", &body).await?;
    let reply = if !stream || http::is_json(&response) {
        let value = http::read_json(model, response, "the response").await?;
        let reply = parse_response(&value)?;
        if stream && !reply.text.is_empty() {
            on_text(&reply.text);
        }
        reply
    } else {
        let mut assembly = StreamAssembly::default();
        http::read_events(model, response, |event| {
            assembly.take(&event, &mut *on_text)
        })
        .await?;
        assembly.finish()?
    };
    tracing::debug!(usage = ?reply.usage, calls = reply.tool_calls.len(), "response");
    Ok(reply)
}

// ---- the request ----

#[derive(Debug, Serialize)]
struct ResponsesBody<'a> {
    model: &'a str,
    instructions: &'a str,
    input: Vec<InputItem<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning<'a>>,
    /// Always false: the daemon's log is the conversation, and nothing is
    /// left on the provider's side.
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    stream: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: Vec<ContentPart<'a>>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    InputText { text: &'a str },
    OutputText { text: &'a str },
}

/// A function tool; flat, unlike Chat Completions' nested `function`.
#[derive(Debug, Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    /// Arguments are validated by the daemon, which can tell the model what
    /// it got wrong; strict mode would also demand schemas it cannot check.
    strict: bool,
}

#[derive(Debug, Serialize)]
struct Reasoning<'a> {
    effort: &'a str,
}

/// The request body: fields, items and tools in a fixed order, so a prompt
/// cache sees the same prefix for the same request.
fn request_body<'a>(
    config: &'a ModelConfig,
    request: &'a Request,
    stream: bool,
) -> ResponsesBody<'a> {
    let mut input = Vec::with_capacity(request.items.len());
    for item in &request.items {
        match item {
            Item::User { text } => input.push(InputItem::Message {
                role: "user",
                content: vec![ContentPart::InputText { text }],
            }),
            Item::Assistant { text, tool_calls } => {
                if let Some(text) = text.as_deref().filter(|text| !text.is_empty()) {
                    input.push(InputItem::Message {
                        role: "assistant",
                        content: vec![ContentPart::OutputText { text }],
                    });
                }
                input.extend(tool_calls.iter().map(|call| InputItem::FunctionCall {
                    call_id: &call.id,
                    name: &call.name,
                    arguments: &call.arguments,
                }));
            }
            Item::ToolResult { call_id, output } => {
                input.push(InputItem::FunctionCallOutput { call_id, output })
            }
        }
    }
    ResponsesBody {
        model: &config.model,
        instructions: &request.instructions,
        input,
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                kind: "function",
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
                strict: false,
            })
            .collect(),
        reasoning: config.effort.as_deref().map(|effort| Reasoning { effort }),
        store: false,
        prompt_cache_key: request.cache_key.as_deref(),
        stream,
    }
}

// ---- the answer ----

#[derive(Debug, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    input_tokens_details: Option<InputDetails>,
    output_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        let details = self.input_tokens_details.as_ref();
        Usage {
            input: self.input_tokens.unwrap_or(0),
            cached_input: details.and_then(|d| d.cached_tokens).unwrap_or(0),
            cache_write: details.and_then(|d| d.cache_write_tokens).unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
        }
    }
}

/// The response object, as far as the daemon reads it; its status and
/// error are judged on the raw JSON by [`failure`].
#[derive(Debug, Deserialize)]
struct ResponseObject {
    output: Option<Vec<OutputItem>>,
    usage: Option<WireUsage>,
}

/// An output item; reasoning, searches and other built-ins are skipped.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutputItem {
    Message {
        content: Option<Vec<OutputPart>>,
    },
    FunctionCall {
        call_id: String,
        name: String,
        arguments: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutputPart {
    OutputText {
        text: String,
    },
    /// Shown as the reply, so a refusal is not an empty answer.
    Refusal {
        refusal: String,
    },
    #[serde(other)]
    Other,
}

impl ResponseObject {
    /// The reply text (message items joined by a blank line) and tool calls.
    fn reply(self) -> (String, Vec<ToolCall>) {
        let mut texts = Vec::new();
        let mut calls = Vec::new();
        for item in self.output.unwrap_or_default() {
            match item {
                OutputItem::Message { content } => {
                    let text: String = content
                        .unwrap_or_default()
                        .into_iter()
                        .map(|part| match part {
                            OutputPart::OutputText { text } => text,
                            OutputPart::Refusal { refusal } => refusal,
                            OutputPart::Other => String::new(),
                        })
                        .collect();
                    if !text.is_empty() {
                        texts.push(text);
                    }
                }
                OutputItem::FunctionCall {
                    call_id,
                    name,
                    arguments,
                } => calls.push(ToolCall {
                    id: call_id,
                    name,
                    arguments,
                }),
                OutputItem::Other => {}
            }
        }
        (texts.join("\n\n"), calls)
    }
}

/// The failure a failed or incomplete response reports, if it is one.
fn failure(response: &Value) -> Option<ModelError> {
    match response.get("status").and_then(Value::as_str) {
        Some("failed") => Some(ModelError::Failed(
            http::error_in(response).unwrap_or_else(|| "the response failed".into()),
        )),
        Some("incomplete") => {
            let reason = response
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            Some(ModelError::Failed(format!(
                "the response is incomplete: {reason}"
            )))
        }
        _ => http::error_in(response).map(ModelError::Failed),
    }
}

/// Reads a whole (non-streamed) response.
fn parse_response(value: &Value) -> Result<Response, ModelError> {
    if let Some(err) = failure(value) {
        return Err(err);
    }
    let object = ResponseObject::deserialize(value)
        .map_err(|err| http::garbage("the response", err, &value.to_string()))?;
    if object.output.is_none() {
        return Err(ModelError::Garbage("the response has no output".into()));
    }
    let usage = object
        .usage
        .as_ref()
        .map(WireUsage::usage)
        .unwrap_or_default();
    let (text, tool_calls) = object.reply();
    Ok(Response {
        text,
        tool_calls,
        usage,
    })
}

/// A streamed reply put together event by event.
#[derive(Debug, Default)]
struct StreamAssembly {
    text: String,
    /// The item the last text delta belonged to; text of a new item starts
    /// after a blank line, as in a whole response.
    text_item: Option<String>,
    tool_calls: Vec<ToolCall>,
    usage: Usage,
    /// `response.completed` arrived: the reply is whole.
    completed: bool,
}

impl StreamAssembly {
    /// Takes one event.
    fn take(
        &mut self,
        event: &SseEvent,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Flow, ModelError> {
        if event.data.trim() == "[DONE]" {
            return Ok(Flow::Stop);
        }
        let value: Value = serde_json::from_str(&event.data)
            .map_err(|err| http::garbage("a response event", err, &event.data))?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta = value
                    .get("delta")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if delta.is_empty() {
                    return Ok(Flow::More);
                }
                let item = value.get("item_id").and_then(Value::as_str);
                if item.is_some() && self.text_item.as_deref() != item {
                    if !self.text.is_empty() {
                        on_text("\n\n");
                        self.text.push_str("\n\n");
                    }
                    self.text_item = item.map(str::to_string);
                }
                on_text(delta);
                self.text.push_str(delta);
            }
            "response.output_item.done" => {
                let item = value.get("item").unwrap_or(&Value::Null);
                let item = OutputItem::deserialize(item)
                    .map_err(|err| http::garbage("an output item", err, &event.data))?;
                if let OutputItem::FunctionCall {
                    call_id,
                    name,
                    arguments,
                } = item
                {
                    self.tool_calls.push(ToolCall {
                        id: call_id,
                        name,
                        arguments,
                    });
                }
            }
            "response.completed" => {
                let response = value.get("response").unwrap_or(&Value::Null);
                let object = ResponseObject::deserialize(response)
                    .map_err(|err| http::garbage("the completed response", err, &event.data))?;
                if let Some(usage) = &object.usage {
                    self.usage = usage.usage();
                }
                // A server that sent no deltas still sends the output whole.
                if self.text.is_empty() && self.tool_calls.is_empty() {
                    let (text, tool_calls) = object.reply();
                    if !text.is_empty() {
                        on_text(&text);
                    }
                    self.text = text;
                    self.tool_calls = tool_calls;
                }
                self.completed = true;
                return Ok(Flow::Stop);
            }
            "response.failed" | "response.incomplete" => {
                let response = value.get("response").unwrap_or(&Value::Null);
                return Err(failure(response)
                    .unwrap_or_else(|| ModelError::Failed(format!("the model sent {kind}"))));
            }
            "error" => {
                let message = value
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| http::error_in(&value))
                    .unwrap_or_else(|| "the stream reported an error".into());
                return Err(ModelError::Failed(message));
            }
            _ => {}
        }
        Ok(Flow::More)
    }

    /// The whole reply, once the stream has ended; a stream that ended
    /// before `response.completed` was cut off.
    fn finish(self) -> Result<Response, ModelError> {
        if !self.completed {
            return Err(ModelError::Failed("the stream ended early".into()));
        }
        Ok(Response {
            text: self.text,
            tool_calls: self.tool_calls,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests;
