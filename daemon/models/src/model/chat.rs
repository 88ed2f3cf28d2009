//! OpenAI-compatible Chat Completions: `POST {base_url}/chat/completions`.
//!
//! Spoken by OpenAI, Ollama, vLLM, llama.cpp, OpenRouter and DeepSeek. The
//! instructions go first as the system message, then the items in order; the
//! body is built from structs, so the same request gives the same bytes.
//! Streamed replies arrive as `data: {chunk}` events ending with
//! `data: [DONE]`; tool calls come in fragments keyed by `index`.

use super::bill::Metering;
use super::error::{classify, Source};
use super::http::{self, Flow};
use super::provider::Provider;
use super::{Cut, Ending, Item, ModelError, Request, Response, ToolCall, Usage};
use crate::model::ModelConfig;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Sends `request`; streamed text goes to `on_text` as it arrives.
pub(super) async fn complete(
    provider: &Provider,
    request: &Request,
    on_text: &mut (dyn FnMut(&str) + Send),
    metering: &mut Metering,
) -> Result<Response, ModelError> {
    let stream = provider.config.stream;
    let source = provider.source();
    let body = request_body(&provider.config, request, stream);
    let response = http::post_json(provider, "chat/completions", &body).await?;
    metering.accepted = true;
    let reply = if !stream || http::is_json(&response) {
        let value = http::read_json(provider, response, "the chat completion").await?;
        metering.reported = reported_usage(&value);
        let reply = parse_completion(&source, &value)?;
        if stream && !reply.text.is_empty() {
            on_text(&reply.text);
        }
        reply
    } else {
        let mut assembly = StreamAssembly::default();
        let read = http::read_events(provider, response, |event| {
            assembly.take(&source, &event.data, &mut *on_text)
        })
        .await;
        metering.reported = assembly.reported;
        read?;
        assembly.finish()?
    };
    tracing::debug!(usage = ?reply.usage, calls = reply.tool_calls.len(), "chat completion");
    Ok(reply)
}

// ---- the request ----

#[derive(Debug, Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    /// The output limit on OpenAI's own API, when the config sets one.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    /// The output limit on any other server (llama.cpp, Ollama, vLLM, LM
    /// Studio read `max_tokens`), always sent: a local model left without
    /// one can ramble until the request times out.
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    /// `24h` or `in_memory` (see `config::CacheRetention`).
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_retention: Option<&'static str>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    /// Asks for the final chunk that carries the usage.
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum Message<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<CallOut<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

/// A user message's content: its text alone, or (with images) the text
/// part and then one `image_url` part per image, as a data URL.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    Parts(Vec<Part<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
}

#[derive(Debug, Serialize)]
struct CallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionCallOut<'a>,
}

#[derive(Debug, Serialize)]
struct FunctionCallOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionSpec<'a>,
}

#[derive(Debug, Serialize)]
struct FunctionSpec<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The request body: fields and tools in a fixed order, so a prompt cache
/// sees the same prefix for the same request.
fn request_body<'a>(config: &'a ModelConfig, request: &'a Request, stream: bool) -> ChatBody<'a> {
    let mut messages = Vec::with_capacity(request.items.len() + 1);
    // An empty system message says nothing and some servers refuse it.
    if !request.instructions.is_empty() {
        messages.push(Message::System {
            content: &request.instructions,
        });
    }
    messages.extend(request.items.iter().map(|item| match item {
        Item::User { text, images } if images.is_empty() => Message::User {
            content: UserContent::Text(text),
        },
        Item::User { text, images } => {
            let mut parts = vec![Part::Text { text }];
            parts.extend(images.iter().map(|image| Part::ImageUrl {
                image_url: ImageUrl {
                    url: image.data_url(),
                },
            }));
            Message::User {
                content: UserContent::Parts(parts),
            }
        }
        // Chat Completions has no reasoning to carry.
        Item::Assistant {
            text, tool_calls, ..
        } => {
            let text = text.as_deref().filter(|text| !text.is_empty());
            Message::Assistant {
                // A message with neither content nor calls is refused by
                // strict servers; an empty text keeps its place.
                content: if text.is_none() && tool_calls.is_empty() {
                    Some("")
                } else {
                    text
                },
                tool_calls: tool_calls
                    .iter()
                    .map(|call| CallOut {
                        id: &call.id,
                        kind: "function",
                        function: FunctionCallOut {
                            name: &call.name,
                            arguments: &call.arguments,
                        },
                    })
                    .collect(),
            }
        }
        Item::ToolResult { call_id, output } => Message::Tool {
            tool_call_id: call_id,
            content: output,
        },
    }));
    let on_openai = config.base_url().starts_with("https://api.openai.com");
    ChatBody {
        model: &config.model,
        messages,
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                kind: "function",
                function: FunctionSpec {
                    name: &tool.name,
                    description: &tool.description,
                    parameters: &tool.parameters,
                },
            })
            .collect(),
        max_completion_tokens: config.max_tokens.filter(|_| on_openai),
        // A quarter of a small window at most, as the layout was sized.
        max_tokens: (!on_openai).then(|| super::window::answer_room(config)),
        reasoning_effort: config.effort.as_deref(),
        prompt_cache_key: request.cache_key.as_deref(),
        prompt_cache_retention: config.openai_retention(),
        stream,
        stream_options: stream.then_some(StreamOptions {
            include_usage: true,
        }),
    }
}

// ---- the answer ----

#[derive(Debug, Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        let details = self.prompt_tokens_details.as_ref();
        Usage {
            input: self.prompt_tokens.unwrap_or(0),
            cached_input: details.and_then(|d| d.cached_tokens).unwrap_or(0),
            cache_write: details.and_then(|d| d.cache_write_tokens).unwrap_or(0),
            cache_write_long: 0,
            output: self.completion_tokens.unwrap_or(0),
        }
    }
}

#[derive(Debug, Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: ChoiceMessage,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
    /// The model's refusal, in place of content.
    refusal: Option<String>,
    tool_calls: Option<Vec<MessageCall>>,
}

#[derive(Debug, Deserialize)]
struct MessageCall {
    id: Option<String>,
    function: MessageFunction,
}

#[derive(Debug, Deserialize)]
struct MessageFunction {
    name: String,
    arguments: Option<Value>,
}

/// The usage a completion or chunk reports, if it reports any.
fn reported_usage(value: &Value) -> Option<Usage> {
    let usage = value.get("usage").filter(|usage| usage.is_object())?;
    WireUsage::deserialize(usage)
        .ok()
        .map(|usage| usage.usage())
}

/// How a choice that finished for `reason` ended: `length` and
/// `content_filter` cut it.
fn ending_of(reason: Option<&str>) -> Ending {
    match reason {
        Some("length") => Ending::Cut(Cut::MaxTokens),
        Some("content_filter") => Ending::Cut(Cut::ContentFilter),
        _ => Ending::Whole,
    }
}

/// The failure an `error` field inside a 200 answer reports, if any.
fn failure(source: &Source, value: &Value) -> Option<ModelError> {
    let error = http::wire_error(value)?;
    Some(classify(source, None, &error, None))
}

/// Reads a whole (non-streamed) chat completion.
fn parse_completion(source: &Source, value: &Value) -> Result<Response, ModelError> {
    if let Some(err) = failure(source, value) {
        return Err(err);
    }
    let completion = Completion::deserialize(value)
        .map_err(|err| http::garbage("the chat completion", err, &value.to_string()))?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(ModelError::Garbage(
            "the chat completion has no choices".into(),
        ));
    };
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(position, call)| ToolCall {
            id: call_id(call.id, position),
            name: call.function.name,
            arguments: arguments_text(call.function.arguments),
        })
        .collect();
    let mut ending = ending_of(choice.finish_reason.as_deref());
    let mut text = choice.message.content.unwrap_or_default();
    if let Some(refusal) = choice.message.refusal.filter(|refusal| !refusal.is_empty()) {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&refusal);
        ending = Ending::Refused;
    }
    Ok(Response {
        text,
        tool_calls,
        usage: completion.usage.map(|u| u.usage()).unwrap_or_default(),
        ending,
        ..Response::default()
    })
}

/// The server's call id, or `call_N` when it sent none (Ollama).
fn call_id(id: Option<String>, position: usize) -> String {
    id.filter(|id| !id.is_empty())
        .unwrap_or_else(|| format!("call_{position}"))
}

/// Arguments as a JSON string. OpenAI sends a string; a server that sends
/// the object itself gets it written back as JSON text.
fn arguments_text(arguments: Option<Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text,
        Some(other) => other.to_string(),
    }
}

#[derive(Debug, Deserialize)]
struct Chunk {
    choices: Option<Vec<ChunkChoice>>,
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    content: Option<String>,
    /// A piece of the model's refusal.
    refusal: Option<String>,
    tool_calls: Option<Vec<DeltaCall>>,
}

#[derive(Debug, Deserialize)]
struct DeltaCall {
    index: Option<u64>,
    id: Option<String>,
    function: Option<DeltaFunction>,
}

#[derive(Debug, Deserialize)]
struct DeltaFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

/// A tool call whose fragments are still arriving.
#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// A streamed reply put together chunk by chunk.
#[derive(Debug, Default)]
struct StreamAssembly {
    text: String,
    /// Calls in the order their first fragment arrived.
    calls: Vec<PartialCall>,
    /// Each wire `index` and the position in `calls` of its latest call.
    slots: Vec<(u64, usize)>,
    usage: Usage,
    /// The usage a chunk reported, for the bill of a stream that fails.
    reported: Option<Usage>,
    /// How the choice ended: its `finish_reason`, or a refusal.
    ending: Ending,
    /// A choice reported a `finish_reason`: the reply is whole even if
    /// `[DONE]` never comes.
    finished: bool,
    /// `data: [DONE]` arrived.
    done: bool,
}

impl StreamAssembly {
    /// Takes the data of one event.
    fn take(
        &mut self,
        source: &Source,
        data: &str,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Flow, ModelError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Flow::Stop);
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|err| http::garbage("a chat completion chunk", err, data))?;
        if let Some(err) = failure(source, &value) {
            return Err(err);
        }
        let chunk = Chunk::deserialize(&value)
            .map_err(|err| http::garbage("a chat completion chunk", err, data))?;
        if let Some(usage) = &chunk.usage {
            self.usage = usage.usage();
            self.reported = Some(self.usage);
        }
        // Only one choice is asked for; a server that sends more is read
        // for its first.
        let Some(choice) = chunk.choices.and_then(|choices| choices.into_iter().next()) else {
            return Ok(Flow::More);
        };
        if let Some(reason) = &choice.finish_reason {
            self.finished = true;
            if self.ending != Ending::Refused {
                self.ending = ending_of(Some(reason));
            }
        }
        let Some(delta) = choice.delta else {
            return Ok(Flow::More);
        };
        if let Some(content) = delta.content.filter(|content| !content.is_empty()) {
            on_text(&content);
            self.text.push_str(&content);
        }
        if let Some(refusal) = delta.refusal.filter(|refusal| !refusal.is_empty()) {
            if self.ending != Ending::Refused && !self.text.is_empty() {
                on_text("\n\n");
                self.text.push_str("\n\n");
            }
            self.ending = Ending::Refused;
            on_text(&refusal);
            self.text.push_str(&refusal);
        }
        for fragment in delta.tool_calls.unwrap_or_default() {
            self.take_call_fragment(fragment);
        }
        Ok(Flow::More)
    }

    /// Adds one tool-call fragment: a new call when its index is new, or
    /// when it carries an id other than the call at its index (some servers
    /// send every call as index 0); otherwise more of that call.
    fn take_call_fragment(&mut self, fragment: DeltaCall) {
        let id = fragment.id.filter(|id| !id.is_empty());
        let index = fragment
            .index
            .unwrap_or_else(|| self.slots.last().map_or(0, |&(index, _)| index));
        let slot = self.slots.iter().position(|&(i, _)| i == index);
        let existing = slot.map(|slot| self.slots[slot].1).filter(|&position| {
            match (&id, &self.calls[position].id) {
                (Some(new), Some(old)) => new == old,
                _ => true,
            }
        });
        let position = match existing {
            Some(position) => position,
            None => {
                self.calls.push(PartialCall::default());
                let position = self.calls.len() - 1;
                match slot {
                    Some(slot) => self.slots[slot].1 = position,
                    None => self.slots.push((index, position)),
                }
                position
            }
        };
        let call = &mut self.calls[position];
        if call.id.is_none() {
            call.id = id;
        }
        if let Some(function) = fragment.function {
            if let Some(name) = function.name {
                if call.name.is_empty() {
                    call.name = name;
                }
            }
            call.arguments.push_str(&arguments_text(function.arguments));
        }
    }

    /// The whole reply, once the stream has ended. A stream that stopped
    /// before any choice finished and without `[DONE]` was cut off.
    fn finish(self) -> Result<Response, ModelError> {
        if !self.done && !self.finished {
            return Err(ModelError::Cut);
        }
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(position, call)| ToolCall {
                id: call_id(call.id, position),
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        Ok(Response {
            text: self.text,
            tool_calls,
            usage: self.usage,
            ending: self.ending,
            ..Response::default()
        })
    }
}

#[cfg(test)]
mod tests;
