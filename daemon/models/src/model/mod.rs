//! Models: one file per wire protocol, behind one provider-neutral request.
//!
//! A [`Request`] is built by the turn loop (instructions, tools, the view as
//! user messages, the state, the new messages); [`Model::complete`] sends it
//! in its provider's wire format and returns the assistant's text and tool
//! calls. Reply text is passed to `on_text` as it arrives when streaming;
//! what the turn loop should log about the call (a switch to a fallback
//! model) is passed to `on_note`.
//!
//! - `chat.rs`: OpenAI-compatible Chat Completions.
//! - `responses.rs`: the OpenAI Responses API.
//! - `anthropic.rs`: the Anthropic Messages API.
//! - `chatgpt.rs`: a ChatGPT plan: signing in, its tokens, and the Codex
//!   backend's Responses requests and usage limits.
//! - `provider.rs`: one configured model: its address, key and HTTP client.
//! - `fallback.rs`: [`Model`], the configured model and its fallbacks, with
//!   retries and cool-downs.
//! - `retry.rs`: when a failed call is tried again, and after how long.
//! - `error.rs`: [`ModelError`], and how providers' errors sort into it.
//! - `sse.rs`: server-sent events, split on blank lines.
//! - `window.rs`: context windows, and whether a layout fits one.
//! - `served.rs`: the window a local server actually serves, asked of it.
//! - `bill.rs`: [`Bill`], what one try cost, reported or estimated.
//! - `thinking.rs`: the effort values each provider takes, and how each
//!   Anthropic model is asked to think.
//! - `small.rs`: the memory model's defaults: each provider's small model,
//!   and the least reasoning a model takes.
//! - `http.rs`: what the providers share: the POST, reading bodies and
//!   streams, reading error bodies.

mod anthropic;
pub mod bill;
mod chat;
pub mod chatgpt;
pub(crate) mod config;
mod error;
mod fallback;
mod http;
mod provider;
mod responses;
mod retry;
pub mod served;
pub mod small;
mod sse;
pub mod thinking;
pub mod window;

pub use bill::Bill;
pub use config::{
    extended_retention, CacheRetention, ModelConfig, ProviderKind, COMPATIBLE_KEY_ENV,
};
pub use error::ModelError;
pub use fallback::{CallNews, Model};
pub use thinking::ThinkingForm;

use serde_json::Value;

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON schema object.
    pub parameters: Value,
}

/// One tool call the model asked for (the log keeps it, so it lives there).
pub use crate::log::ToolCall;

/// Provider-specific state an answer hands to the next request of its
/// chain: the Responses API's encrypted reasoning items, Anthropic's signed
/// thinking blocks. Opaque to everything but the provider that made it;
/// never logged or shown. Kept in memory for the rest of the chain only: a
/// restart loses it, and the model then reasons afresh.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Carry {
    /// The `provider/model` that produced it; any other model ignores it,
    /// since one provider cannot read another's reasoning.
    pub origin: String,
    /// The items as the provider sent them (ids it cannot resolve removed).
    pub items: Vec<Value>,
}

impl Carry {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items, when they are for the model labelled `label`.
    pub fn for_model(&self, label: &str) -> &[Value] {
        if self.origin == label {
            &self.items
        } else {
            &[]
        }
    }
}

/// An image a request carries, read from the image store when the request
/// is built. Each provider sends it inline as base64 after the item's text.
#[derive(Clone, PartialEq)]
pub struct Image {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    pub data_base64: String,
}

impl Image {
    /// `data:<media type>;base64,<data>`, as the OpenAI APIs take an image.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.media_type, self.data_base64)
    }
}

impl std::fmt::Debug for Image {
    /// The media type and size only: a request's debug form never holds
    /// megabytes of base64.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Image({}, {} base64 bytes)",
            self.media_type,
            self.data_base64.len()
        )
    }
}

/// One entry of a request's conversation, after the instructions.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// Text, with images after it (none for most items).
    User {
        text: String,
        images: Vec<Image>,
    },
    Assistant {
        text: Option<String>,
        tool_calls: Vec<ToolCall>,
        /// The [`Response::carry`] of the answer this item repeats, re-sent
        /// before its text and calls; empty when unknown.
        carry: Carry,
    },
    ToolResult {
        call_id: String,
        output: String,
    },
}

impl Item {
    /// A user item of text alone.
    pub fn user(text: impl Into<String>) -> Item {
        Item::User {
            text: text.into(),
            images: Vec::new(),
        }
    }
}

/// A provider-neutral request. Serialized deterministically by each provider:
/// fields in declaration order, tools in the order given.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub instructions: String,
    pub tools: Vec<ToolSpec>,
    pub items: Vec<Item>,
    /// Routes requests of one agent to the same cache (`prompt_cache_key`).
    pub cache_key: Option<String>,
    /// Indexes into `items` whose end is a cache mark, for providers that take
    /// explicit marks (Anthropic's `cache_control`): the layout puts them on
    /// the view's last whole block and on the request's last item. Providers
    /// that cache by prefix alone ignore them.
    pub cache_marks: Vec<usize>,
}

/// Token counts of one request, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// All input tokens, cached or not.
    pub input: u64,
    /// Input tokens served from the prompt cache.
    pub cached_input: u64,
    /// Input tokens written to the cache, where reported.
    pub cache_write: u64,
    /// Of those, the ones written to entries that live an hour (Anthropic's
    /// `ttl: "1h"`), which cost more to write.
    pub cache_write_long: u64,
    pub output: u64,
}

/// What the model answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// Reasoning state to hand back within the chain: put it in the
    /// [`Item::Assistant`] that repeats this answer in the next request.
    pub carry: Carry,
    /// `provider/model` of the model that answered: the configured one, or
    /// a fallback. Usage is priced by it.
    pub model: String,
    /// Whether the answer is whole, was cut, or is a refusal.
    pub ending: Ending,
}

/// How an answer ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ending {
    /// The model finished its answer.
    #[default]
    Whole,
    /// The answer stopped before the model finished it; its text so far is
    /// all there is.
    Cut(Cut),
    /// The model declined to answer; the text is its refusal.
    Refused,
}

/// Why an answer was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// It reached the output limit (`max_tokens`, `max_output_tokens`, a
    /// `length` finish).
    MaxTokens,
    /// The provider's content filter stopped it.
    ContentFilter,
    /// The model's context window filled up.
    ContextWindow,
}

impl Ending {
    /// The status a reply with this ending is logged with (see
    /// `hearth_protocol::ending`); none for a whole answer.
    pub fn status(self) -> Option<hearth_protocol::MessageStatus> {
        use hearth_protocol::MessageStatus;
        match self {
            Ending::Whole => None,
            Ending::Cut(Cut::MaxTokens) => Some(MessageStatus::CutMaxTokens),
            Ending::Cut(Cut::ContentFilter) => Some(MessageStatus::CutContentFilter),
            Ending::Cut(Cut::ContextWindow) => Some(MessageStatus::CutContextWindow),
            Ending::Refused => Some(MessageStatus::Refused),
        }
    }
}
