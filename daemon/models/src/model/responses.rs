//! The OpenAI Responses API: `POST {base_url}/responses`.
//!
//! Stateless (`store: false`): every request carries the instructions, the
//! tools and the whole conversation as input items, built from structs so the
//! same request gives the same bytes. Streamed replies arrive as typed SSE
//! events: text from `response.output_text.delta`, tool calls from
//! `response.output_item.done`, usage from `response.completed`. OpenAI ends
//! the stream after the terminal event; servers that follow the OpenResponses
//! spec add `data: [DONE]`. Both are read.
//!
//! With a reasoning effort set, the request asks for the reasoning items'
//! encrypted content; those items come back as the response's carry and
//! are re-sent (without their ids, which `store: false` leaves unresolvable)
//! before the assistant's output in the next request of the chain.

use super::bill::Metering;
use super::error::{classify, Source, WireError};
use super::http::{self, Flow};
use super::provider::Provider;
use super::sse::SseEvent;
use super::{Carry, Cut, Ending, Item, ModelError, Request, Response, ToolCall, Usage};
use crate::model::{ModelConfig, ProviderKind};
use reqwest::header::HeaderMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Sends `request`; streamed text goes to `on_text` as it arrives.
pub(super) async fn complete(
    provider: &Provider,
    request: &Request,
    on_text: &mut (dyn FnMut(&str) + Send),
    metering: &mut Metering,
) -> Result<Response, ModelError> {
    complete_with(provider, request, on_text, metering, HeaderMap::new(), None).await
}

/// [`complete`] with more headers: the Codex backend's sign-in
/// (`chatgpt.rs`), whose answers also report the plan's limits; `plan`
/// names the plan they are recorded under.
pub(super) async fn complete_with(
    provider: &Provider,
    request: &Request,
    on_text: &mut (dyn FnMut(&str) + Send),
    metering: &mut Metering,
    headers: HeaderMap,
    plan: Option<&str>,
) -> Result<Response, ModelError> {
    let codex = provider.config.provider == ProviderKind::ChatGpt;
    // The Codex backend answers only streams.
    let stream = provider.config.stream || codex;
    let label = provider.label();
    let source = provider.source();
    let body = request_body(&provider.config, request, &label, stream);
    let response = http::post_json_with(provider, "responses", &body, headers).await?;
    if codex {
        super::chatgpt::limits::record_headers(response.headers(), plan, true);
    }
    metering.accepted = true;
    let reply = if !stream || http::is_json(&response) {
        let value = http::read_json(provider, response, "the response").await?;
        metering.reported = reported_usage(&value);
        let reply = parse_response(&source, &value, &label)?;
        if stream && !reply.text.is_empty() {
            on_text(&reply.text);
        }
        reply
    } else {
        let mut assembly = StreamAssembly::new(label);
        let read = http::read_events(provider, response, |event| {
            assembly.take(&source, &event, &mut *on_text)
        })
        .await;
        metering.reported = assembly.reported;
        read?;
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
    input: Vec<Input<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    /// `auto`, as the Codex backend is sent it; absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    /// False, as the Codex backend is sent it; absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    /// The output limit, when the config sets one (reasoning included).
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning<'a>>,
    /// Always false: the daemon's log is the conversation, and nothing is
    /// left on the provider's side.
    store: bool,
    /// `reasoning.encrypted_content` when reasoning: what makes reasoning
    /// items re-sendable without `store`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    /// `24h` or `in_memory` (see `config::CacheRetention`).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_retention: Option<&'static str>,
    stream: bool,
}

/// An input item: one built here, or a reasoning item re-sent as it came.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Item(InputItem<'a>),
    Carried(&'a Value),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InputItem<'a> {
    Message {
        role: &'static str,
        content: MessageContent<'a>,
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

/// A message's content. The spec's easy input message takes a string or a
/// list of input parts; an assistant message is re-sent as its text, the
/// one form the spec allows without the output message's `id` and
/// `status` (which `store: false` leaves nothing to refer to).
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum MessageContent<'a> {
    Text(&'a str),
    Parts(Vec<ContentPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    InputText {
        text: &'a str,
    },
    /// An image as a data URL; `detail` is required by the spec, and
    /// `auto` is the service's default.
    InputImage {
        image_url: String,
        detail: &'static str,
    },
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
    label: &str,
    stream: bool,
) -> ResponsesBody<'a> {
    let codex = config.provider == ProviderKind::ChatGpt;
    let mut input = Vec::with_capacity(request.items.len());
    for item in &request.items {
        match item {
            Item::User { text, images } => {
                let mut content = vec![ContentPart::InputText { text }];
                content.extend(images.iter().map(|image| ContentPart::InputImage {
                    image_url: image.data_url(),
                    detail: "auto",
                }));
                input.push(Input::Item(InputItem::Message {
                    role: "user",
                    content: MessageContent::Parts(content),
                }))
            }
            Item::Assistant {
                text,
                tool_calls,
                carry,
            } => {
                input.extend(carry.for_model(label).iter().map(Input::Carried));
                if let Some(text) = text.as_deref().filter(|text| !text.is_empty()) {
                    input.push(Input::Item(InputItem::Message {
                        role: "assistant",
                        content: MessageContent::Text(text),
                    }));
                }
                input.extend(tool_calls.iter().map(|call| {
                    Input::Item(InputItem::FunctionCall {
                        call_id: &call.id,
                        name: &call.name,
                        arguments: &call.arguments,
                    })
                }));
            }
            Item::ToolResult { call_id, output } => {
                input.push(Input::Item(InputItem::FunctionCallOutput {
                    call_id,
                    output,
                }))
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
        tool_choice: codex.then_some("auto"),
        parallel_tool_calls: codex.then_some(false),
        // The Codex backend refuses an output limit and a retention: a
        // plan's requests take the backend's own.
        max_output_tokens: config.max_tokens.filter(|_| !codex),
        reasoning: config.effort.as_deref().map(|effort| Reasoning { effort }),
        store: false,
        include: match config.effort {
            Some(_) => vec!["reasoning.encrypted_content"],
            None => Vec::new(),
        },
        prompt_cache_key: request.cache_key.as_deref(),
        prompt_cache_retention: config.openai_retention().filter(|_| !codex),
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
            cache_write_long: 0,
            output: self.output_tokens.unwrap_or(0),
        }
    }
}

/// The response object, as far as the daemon reads it; its status and
/// error are judged on the raw JSON by [`failure`].
#[derive(Debug, Deserialize)]
struct ResponseObject {
    /// Read item by item, so a reasoning item is kept exactly as sent.
    output: Option<Vec<Value>>,
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

/// What an answer's output items say.
#[derive(Debug, Default)]
struct Output {
    /// Message items' text, joined by a blank line.
    text: String,
    /// A message held a refusal part.
    refused: bool,
    tool_calls: Vec<ToolCall>,
    /// Reasoning items to re-send, without their ids.
    reasoning: Vec<Value>,
}

/// A reasoning item as it can be re-sent with `store: false`: without its
/// id, and only when it carries its encrypted content (a bare id would
/// refer to nothing the provider kept).
fn resendable(item: &Value) -> Option<Value> {
    item.get("encrypted_content")?.as_str()?;
    let mut item = item.clone();
    if let Some(fields) = item.as_object_mut() {
        fields.remove("id");
        fields.remove("status");
    }
    Some(item)
}

impl ResponseObject {
    /// The reply text (message items joined by a blank line), tool calls
    /// and reasoning.
    fn reply(self) -> Result<Output, ModelError> {
        let mut texts = Vec::new();
        let mut calls = Vec::new();
        let mut reasoning = Vec::new();
        let mut refused = false;
        for raw in self.output.unwrap_or_default() {
            if raw.get("type").and_then(Value::as_str) == Some("reasoning") {
                reasoning.extend(resendable(&raw));
                continue;
            }
            let item = OutputItem::deserialize(&raw)
                .map_err(|err| http::garbage("an output item", err, &raw.to_string()))?;
            match item {
                OutputItem::Message { content } => {
                    let text: String = content
                        .unwrap_or_default()
                        .into_iter()
                        .map(|part| match part {
                            OutputPart::OutputText { text } => text,
                            OutputPart::Refusal { refusal } => {
                                refused = true;
                                refusal
                            }
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
        Ok(Output {
            text: texts.join("\n\n"),
            refused,
            tool_calls: calls,
            reasoning,
        })
    }
}

/// The failure a failed response reports, if it is one. An incomplete
/// response is no failure: it is an answer that was cut ([`ending_of`]).
fn failure(source: &Source, response: &Value) -> Option<ModelError> {
    let reported =
        |error: Option<WireError>| error.map(|error| classify(source, None, &error, None));
    match response.get("status").and_then(Value::as_str) {
        Some("failed") => Some(
            reported(http::wire_error(response))
                .unwrap_or_else(|| ModelError::Failed("the response failed".into())),
        ),
        Some("incomplete") => None,
        _ => reported(http::wire_error(response)),
    }
}

/// How a response ended: `incomplete` for `max_output_tokens` or
/// `content_filter` is cut; a refusal part makes it a refusal.
fn ending_of(response: &Value, refused: bool) -> Ending {
    if response.get("status").and_then(Value::as_str) == Some("incomplete") {
        return match response
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
        {
            Some("content_filter") => Ending::Cut(Cut::ContentFilter),
            _ => Ending::Cut(Cut::MaxTokens),
        };
    }
    if refused {
        Ending::Refused
    } else {
        Ending::Whole
    }
}

/// The usage a response object reports, if it reports any.
fn reported_usage(response: &Value) -> Option<Usage> {
    let usage = response.get("usage").filter(|usage| usage.is_object())?;
    WireUsage::deserialize(usage)
        .ok()
        .map(|usage| usage.usage())
}

/// Reads a whole (non-streamed) response from the model labelled `label`.
fn parse_response(source: &Source, value: &Value, label: &str) -> Result<Response, ModelError> {
    if let Some(err) = failure(source, value) {
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
    let output = object.reply()?;
    Ok(Response {
        ending: ending_of(value, output.refused),
        text: output.text,
        tool_calls: output.tool_calls,
        usage,
        carry: carry(label, output.reasoning),
        model: String::new(),
    })
}

fn carry(label: &str, items: Vec<Value>) -> Carry {
    if items.is_empty() {
        return Carry::default();
    }
    Carry {
        origin: label.to_string(),
        items,
    }
}

/// A streamed reply put together event by event.
#[derive(Debug, Default)]
struct StreamAssembly {
    /// The model's label, the origin of its carry.
    label: String,
    text: String,
    /// The item the last text delta belonged to; text of a new item starts
    /// after a blank line, as in a whole response.
    text_item: Option<String>,
    tool_calls: Vec<ToolCall>,
    reasoning: Vec<Value>,
    usage: Usage,
    /// The usage the terminal event reported, for the bill of any ending.
    reported: Option<Usage>,
    /// A refusal part streamed.
    refused: bool,
    /// How the answer ended, once the terminal event came.
    ending: Ending,
    /// `response.completed` (or `response.incomplete`) arrived: the reply
    /// is all there will be.
    completed: bool,
}

impl StreamAssembly {
    fn new(label: String) -> StreamAssembly {
        StreamAssembly {
            label,
            ..StreamAssembly::default()
        }
    }

    /// Takes one event.
    fn take(
        &mut self,
        source: &Source,
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
                if kind == "response.refusal.delta" {
                    self.refused = true;
                }
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
                if item.get("type").and_then(Value::as_str) == Some("reasoning") {
                    self.reasoning.extend(resendable(item));
                    return Ok(Flow::More);
                }
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
            "response.completed" | "response.incomplete" => {
                let response = value.get("response").unwrap_or(&Value::Null);
                self.reported = reported_usage(response);
                let object = ResponseObject::deserialize(response)
                    .map_err(|err| http::garbage("the completed response", err, &event.data))?;
                if let Some(usage) = &object.usage {
                    self.usage = usage.usage();
                }
                let mut refused = self.refused;
                // A server that sent no deltas still sends the output whole.
                let events_empty = self.text.is_empty() && self.tool_calls.is_empty();
                if events_empty || self.reasoning.is_empty() {
                    let output = object.reply()?;
                    refused |= output.refused;
                    if events_empty {
                        if !output.text.is_empty() {
                            on_text(&output.text);
                        }
                        self.text = output.text;
                        self.tool_calls = output.tool_calls;
                    }
                    if self.reasoning.is_empty() {
                        self.reasoning = output.reasoning;
                    }
                }
                self.ending = ending_of(response, refused);
                self.completed = true;
                return Ok(Flow::Stop);
            }
            // The Codex backend's report of the plan's limits.
            "codex.rate_limits" => super::chatgpt::limits::record_event(&value),
            "response.failed" => {
                let response = value.get("response").unwrap_or(&Value::Null);
                self.reported = reported_usage(response);
                return Err(failure(source, response)
                    .unwrap_or_else(|| ModelError::Failed(format!("the model sent {kind}"))));
            }
            "error" => {
                let error = http::wire_error(&value).unwrap_or_else(|| WireError {
                    message: "the stream reported an error".into(),
                    ..Default::default()
                });
                return Err(classify(source, None, &error, None));
            }
            _ => {}
        }
        Ok(Flow::More)
    }

    /// The whole reply, once the stream has ended; a stream that ended
    /// before `response.completed` was cut off.
    fn finish(self) -> Result<Response, ModelError> {
        if !self.completed {
            return Err(ModelError::Cut);
        }
        Ok(Response {
            text: self.text,
            tool_calls: self.tool_calls,
            usage: self.usage,
            carry: carry(&self.label, self.reasoning),
            model: String::new(),
            ending: self.ending,
        })
    }
}

#[cfg(test)]
mod tests;
