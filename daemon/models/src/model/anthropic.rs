//! The Anthropic Messages API: `POST {base_url}/messages`.
//!
//! The instructions go in `system`, tools with their `input_schema`, and the
//! items as messages of alternating roles: consecutive user items (the view's
//! blocks, the state, the new messages) merge into one user message of
//! several text blocks, and tool results join the user message after the
//! assistant's `tool_use` blocks. Cache marks (`cache_control`) go on the
//! last tool, the system block and the last block of each item the layout
//! marks, at most four in all. The body is built from structs, so the same
//! request gives the same bytes.
//!
//! Streamed answers arrive as typed SSE events (`message_start`,
//! `content_block_start`/`_delta`/`_stop`, `message_delta`, `message_stop`,
//! `ping`, `error`); tool input arrives as `input_json_delta` fragments.
//! Thinking blocks and their signatures come back as the response's carry,
//! to be re-sent within the chain.

use super::bill::Metering;
use super::error::{classify, Source};
use super::http;
use super::provider::Provider;
use super::thinking::{self, ThinkingForm};
use super::{Carry, Cut, Ending, Item, ModelError, Request, Response, ToolCall, Usage};
use crate::model::ModelConfig;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The most `cache_control` marks one request may carry.
pub(super) const MAX_MARKS: usize = 4;

/// Sends `request`; streamed text goes to `on_text` as it arrives.
pub(super) async fn complete(
    provider: &Provider,
    request: &Request,
    on_text: &mut (dyn FnMut(&str) + Send),
    metering: &mut Metering,
) -> Result<Response, ModelError> {
    let stream = provider.config.stream;
    let label = provider.label();
    let source = provider.source();
    let body = request_body(&provider.config, request, &label, stream);
    let response = http::post_json(provider, "messages", &body).await?;
    metering.accepted = true;
    let reply = if !stream || http::is_json(&response) {
        let value = http::read_json(provider, response, "the message").await?;
        metering.reported = value
            .get("usage")
            .and_then(|usage| WireUsage::deserialize(usage).ok())
            .map(|usage| usage.usage());
        let reply = parse_message(&source, &value, &label)?;
        if stream && !reply.text.is_empty() {
            on_text(&reply.text);
        }
        reply
    } else {
        let mut assembly = stream::StreamAssembly::new(label);
        let read = http::read_events(provider, response, |event| {
            assembly.take(&source, &event, &mut *on_text)
        })
        .await;
        metering.reported = assembly.reported();
        read?;
        assembly.finish()?
    };
    tracing::debug!(usage = ?reply.usage, calls = reply.tool_calls.len(), "anthropic message");
    Ok(reply)
}

// ---- the request ----

#[derive(Debug, Serialize)]
pub(super) struct MessagesBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<Block<'a>>,
    messages: Vec<Message<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    /// Thinking, when the config sets an effort: adaptive or with a
    /// budget, as the model takes it (`thinking.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    /// The effort, for the models that think adaptively.
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig<'a>>,
    stream: bool,
}

#[derive(Debug, Serialize)]
struct Message<'a> {
    role: Role,
    content: Vec<Block<'a>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Role {
    User,
    Assistant,
}

/// A content block: one built here, or one the provider sent that is
/// re-sent as it was (a thinking block with its signature).
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Block<'a> {
    Content(Content<'a>),
    Carried(&'a Value),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    /// An image, inline as base64.
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "str::is_empty")]
        content: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

/// `{"type":"base64","media_type":…,"data":…}`.
#[derive(Debug, Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

/// `{"type":"ephemeral"}`: the default five-minute cache entry; with
/// `"ttl":"1h"`, one that lives an hour (written at twice the input price).
#[derive(Debug, Clone, Copy, Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

const EPHEMERAL: CacheControl = CacheControl {
    kind: "ephemeral",
    ttl: None,
};

const HOUR: CacheControl = CacheControl {
    kind: "ephemeral",
    ttl: Some("1h"),
};

impl Block<'_> {
    /// Puts a cache mark on this block; a carried block takes none.
    fn mark(&mut self, control: CacheControl) -> bool {
        match self {
            Block::Content(
                Content::Text { cache_control, .. }
                | Content::ToolUse { cache_control, .. }
                | Content::Image { cache_control, .. }
                | Content::ToolResult { cache_control, .. },
            ) => {
                *cache_control = Some(control);
                true
            }
            Block::Carried(_) => false,
        }
    }
}

#[derive(Debug, Serialize)]
struct Tool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Debug, Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    /// For `enabled`: at least 1,024 and below `max_tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_tokens: Option<u32>,
}

#[derive(Debug, Serialize)]
struct OutputConfig<'a> {
    effort: &'a str,
}

/// The request body for the model labelled `label` (whose carry it
/// re-sends): fields, messages and tools in a fixed order, so the prompt
/// cache sees the same prefix for the same request.
pub(super) fn request_body<'a>(
    config: &'a ModelConfig,
    request: &'a Request,
    label: &str,
    stream: bool,
) -> MessagesBody<'a> {
    let (messages, ends) = messages(request, label);
    let max_tokens = config.max_tokens_or_default();
    let (mut thinking, output_config) = thinking(config, max_tokens);
    // With manual thinking (`enabled`, a budget) the tool-use step a request
    // continues must come back with its thinking block, or the request is
    // refused ("Expected `thinking` or `redacted_thinking`"; Anthropic's
    // "Preserving thinking blocks"). One can be lost: carries live in
    // memory, so a turn continued after a restart has none, and a fallback
    // model gets none of another model's. Such a step goes on without
    // thinking, as a turn with no thinking blocks at all is one the API
    // takes. (Adaptive thinking may skip thinking at any step, so a step
    // without a block is one it takes as it is.)
    let manual = thinking
        .as_ref()
        .is_some_and(|thinking| thinking.kind == "enabled");
    if manual && continues_without_its_thinking(&messages) {
        thinking = None;
    }
    let mut body = MessagesBody {
        model: &config.model,
        max_tokens,
        system: Vec::new(),
        messages,
        tools: request
            .tools
            .iter()
            .map(|tool| Tool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
                cache_control: None,
            })
            .collect(),
        thinking,
        output_config,
        stream,
    };
    if !request.instructions.trim().is_empty() {
        body.system.push(Block::Content(Content::Text {
            text: &request.instructions,
            cache_control: None,
        }));
    }
    let lasting = if config.anthropic_hour() {
        HOUR
    } else {
        EPHEMERAL
    };
    place_marks(&mut body, &ends, &request.cache_marks, lasting);
    body
}

/// Whether the last assistant message is a tool-use step without the
/// thinking block it was answered with.
fn continues_without_its_thinking(messages: &[Message<'_>]) -> bool {
    let Some(last) = messages.iter().rev().find(|m| m.role == Role::Assistant) else {
        return false;
    };
    let uses_tools = last
        .content
        .iter()
        .any(|block| matches!(block, Block::Content(Content::ToolUse { .. })));
    let thought = last
        .content
        .iter()
        .any(|block| matches!(block, Block::Carried(_)));
    uses_tools && !thought
}

/// The thinking settings for the configured effort, in the form the model
/// takes: adaptive with the effort, or enabled with a budget from it. A
/// budget that cannot fit under `max_tokens` (refused when the config is
/// read) sends no thinking at all.
fn thinking(config: &ModelConfig, max_tokens: u32) -> (Option<Thinking>, Option<OutputConfig<'_>>) {
    let Some(effort) = config.effort.as_deref() else {
        return (None, None);
    };
    match thinking::form(&config.model, config.thinking) {
        ThinkingForm::Adaptive => (
            Some(Thinking {
                kind: "adaptive",
                budget_tokens: None,
            }),
            Some(OutputConfig { effort }),
        ),
        ThinkingForm::Enabled => {
            let thinking = thinking::budget(effort, max_tokens).map(|budget| Thinking {
                kind: "enabled",
                budget_tokens: Some(budget),
            });
            (thinking, None)
        }
    }
}

/// The items as messages of alternating roles, and for each item where its
/// last markable block ended up (message, block), if it has one.
fn messages<'a>(
    request: &'a Request,
    label: &str,
) -> (Vec<Message<'a>>, Vec<Option<(usize, usize)>>) {
    let mut messages: Vec<Message<'a>> = Vec::new();
    let mut ends = Vec::with_capacity(request.items.len());
    for item in &request.items {
        let (role, blocks) = blocks(item, label);
        if blocks.is_empty() {
            ends.push(None);
            continue;
        }
        let markable = blocks
            .iter()
            .rposition(|block| matches!(block, Block::Content(_)));
        let offset = match messages.last_mut() {
            Some(last) if last.role == role => {
                let offset = last.content.len();
                last.content.extend(blocks);
                offset
            }
            _ => {
                messages.push(Message {
                    role,
                    content: blocks,
                });
                0
            }
        };
        let message = messages.len() - 1;
        ends.push(markable.map(|block| (message, offset + block)));
    }
    (messages, ends)
}

/// One item's role and blocks; blank text makes no block (Anthropic refuses
/// empty text blocks).
fn blocks<'a>(item: &'a Item, label: &str) -> (Role, Vec<Block<'a>>) {
    match item {
        Item::User { text, images } => {
            let mut blocks = Vec::new();
            if !text.trim().is_empty() {
                blocks.push(Block::Content(Content::Text {
                    text,
                    cache_control: None,
                }));
            }
            blocks.extend(images.iter().map(|image| {
                Block::Content(Content::Image {
                    source: ImageSource {
                        kind: "base64",
                        media_type: &image.media_type,
                        data: &image.data_base64,
                    },
                    cache_control: None,
                })
            }));
            (Role::User, blocks)
        }
        Item::Assistant {
            text,
            tool_calls,
            carry,
        } => {
            let mut blocks: Vec<Block<'a>> =
                carry.for_model(label).iter().map(Block::Carried).collect();
            if let Some(text) = text.as_deref().filter(|text| !text.trim().is_empty()) {
                blocks.push(Block::Content(Content::Text {
                    text,
                    cache_control: None,
                }));
            }
            blocks.extend(tool_calls.iter().map(|call| {
                Block::Content(Content::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: tool_input(&call.arguments),
                    cache_control: None,
                })
            }));
            (Role::Assistant, blocks)
        }
        Item::ToolResult { call_id, output } => (
            Role::User,
            vec![Block::Content(Content::ToolResult {
                tool_use_id: call_id,
                content: output,
                cache_control: None,
            })],
        ),
    }
}

/// A call's arguments as the object Anthropic wants; arguments that are not
/// a JSON object (the model wrote nonsense, which the tool already refused)
/// are sent as no arguments.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => Value::Object(Map::new()),
    }
}

/// Marks the last tool, the system block, and the ends of the marked items,
/// keeping the latest item marks when there are more than [`MAX_MARKS`].
/// Every mark but one at the request's end takes `lasting` (their
/// prefixes outlive five minutes: the tools, the instructions, the view's
/// settled blocks, a compaction call's context); a mark at the request's
/// end, which the next request of the chain extends within minutes, the
/// default five minutes.
/// Anthropic wants longer entries before shorter ones, as they are here.
fn place_marks(
    body: &mut MessagesBody,
    ends: &[Option<(usize, usize)>],
    cache_marks: &[usize],
    lasting: CacheControl,
) {
    let mut budget = MAX_MARKS;
    if let Some(tool) = body.tools.last_mut() {
        tool.cache_control = Some(lasting);
        budget -= 1;
    }
    if let Some(system) = body.system.last_mut() {
        if system.mark(lasting) {
            budget -= 1;
        }
    }
    let mut marks: Vec<(usize, usize)> = cache_marks
        .iter()
        .filter_map(|&item| ends.get(item).copied().flatten())
        .collect();
    marks.sort_unstable();
    marks.dedup();
    let dropped = marks.len().saturating_sub(budget);
    let kept = &marks[dropped..];
    let end = body
        .messages
        .len()
        .checked_sub(1)
        .map(|last| (last, body.messages[last].content.len().saturating_sub(1)));
    for &(message, block) in kept {
        let control = if Some((message, block)) == end {
            EPHEMERAL
        } else {
            lasting
        };
        if let Some(block) = body
            .messages
            .get_mut(message)
            .and_then(|message| message.content.get_mut(block))
        {
            block.mark(control);
        }
    }
}

// ---- the answer ----

/// Usage as Anthropic reports it: `input_tokens` counts only what follows
/// the last cache mark.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    /// The writes by entry lifetime.
    cache_creation: Option<CacheCreation>,
    cache_read_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
}

impl WireUsage {
    /// Takes the fields `later` reports; a stream's `message_delta` repeats
    /// or updates what `message_start` said.
    fn update(&mut self, later: WireUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.cache_creation = later.cache_creation.or(self.cache_creation);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
    }

    /// Hearth's usage: input counts every input token, cached or written.
    fn usage(&self) -> Usage {
        let read = self.cache_read_input_tokens.unwrap_or(0);
        let written = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input: self.input_tokens.unwrap_or(0) + read + written,
            cached_input: read,
            cache_write: written,
            cache_write_long: self
                .cache_creation
                .and_then(|c| c.ephemeral_1h_input_tokens)
                .unwrap_or(0),
            output: self.output_tokens.unwrap_or(0),
        }
    }
}

/// `usage.cache_creation`: the tokens written to each kind of entry.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct CacheCreation {
    ephemeral_1h_input_tokens: Option<u64>,
}

/// A finished message; blocks are read one by one, so a thinking block is
/// kept exactly as sent.
#[derive(Debug, Deserialize)]
struct MessageObject {
    content: Vec<Value>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

/// The failure an `error` object reports, if it is one.
fn failure(source: &Source, value: &Value) -> Option<ModelError> {
    if value.get("type").and_then(Value::as_str) != Some("error") {
        return None;
    }
    let error = http::wire_error(value).unwrap_or_default();
    Some(classify(source, None, &error, None))
}

/// Reads a whole (non-streamed) message from the model labelled `label`.
pub(super) fn parse_message(
    source: &Source,
    value: &Value,
    label: &str,
) -> Result<Response, ModelError> {
    if let Some(err) = failure(source, value) {
        return Err(err);
    }
    let object = MessageObject::deserialize(value)
        .map_err(|err| http::garbage("the message", err, &value.to_string()))?;
    let mut reply = Response::default();
    let mut carried = Vec::new();
    for block in object.content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => reply.text.push_str(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => {
                let field =
                    |name: &str| block.get(name).and_then(Value::as_str).map(str::to_string);
                let (Some(id), Some(name)) = (field("id"), field("name")) else {
                    return Err(http::garbage(
                        "a tool_use block",
                        "no id or name",
                        &block.to_string(),
                    ));
                };
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                reply.tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: input.to_string(),
                });
            }
            Some("thinking" | "redacted_thinking") => carried.push(block),
            _ => {}
        }
    }
    reply.ending = ending_of(object.stop_reason.as_deref(), &mut reply.text);
    reply.usage = object.usage.unwrap_or_default().usage();
    reply.carry = carry(label, carried);
    Ok(reply)
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

/// How an answer that stopped for `stop_reason` ended. A refusal with no
/// text of its own says so, so it never reads as an empty answer.
fn ending_of(stop_reason: Option<&str>, text: &mut String) -> Ending {
    match stop_reason {
        Some("max_tokens") => Ending::Cut(Cut::MaxTokens),
        Some("model_context_window_exceeded") => Ending::Cut(Cut::ContextWindow),
        Some("refusal") => {
            if text.trim().is_empty() {
                *text = REFUSAL_TEXT.to_string();
            }
            Ending::Refused
        }
        _ => Ending::Whole,
    }
}

/// The reply of a refusal that came without words (`stop_reason:
/// "refusal"` and no text).
pub(super) const REFUSAL_TEXT: &str = "The model declined to answer this request.";

mod stream;

#[cfg(test)]
mod tests;
