//! Models: one file per wire protocol, behind one provider-neutral request.
//!
//! A [`Request`] is built by the turn loop (instructions, tools, the view as
//! user messages, the state, the new messages); [`Model::complete`] sends it
//! in its provider's wire format and returns the assistant's text and tool
//! calls. Reply text is passed to `on_text` as it arrives when streaming.
//!
//! - `chat.rs`: OpenAI-compatible Chat Completions.
//! - `responses.rs`: the OpenAI Responses API.
//! - `sse.rs`: server-sent events, split on blank lines.
//! - `http.rs`: what both share: the POST, error mapping, reading bodies and
//!   streams.

mod chat;
mod http;
mod responses;
mod sse;

use crate::config::{ModelConfig, ProviderKind};
use serde_json::Value;
use std::time::Duration;

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON schema object.
    pub parameters: Value,
}

/// One tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The provider's call id (`call_…`); synthesized when a server sends none.
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model wrote them (a JSON string).
    pub arguments: String,
}

/// One entry of a request's conversation, after the instructions.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    User {
        text: String,
    },
    Assistant {
        text: Option<String>,
        tool_calls: Vec<ToolCall>,
    },
    ToolResult {
        call_id: String,
        output: String,
    },
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
    pub output: u64,
}

/// What the model answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The provider answered with an HTTP error.
    #[error("{provider} answered {status}: {message}")]
    Status {
        provider: &'static str,
        status: u16,
        message: String,
    },
    /// No connection, or it broke.
    #[error("cannot reach {url}: {message}")]
    Network { url: String, message: String },
    #[error("no progress from the model for {0} seconds")]
    Timeout(u64),
    /// The provider answered something this daemon cannot read.
    #[error("unreadable answer from the model: {0}")]
    Garbage(String),
    /// The provider reported a failure inside a stream or response body.
    #[error("the model failed: {0}")]
    Failed(String),
}

/// A configured model: its wire protocol, address, key and HTTP client.
/// `Debug` (in `http.rs`) hides the key.
#[derive(Clone)]
pub struct Model {
    pub config: ModelConfig,
    /// The API key, when one was found; sent as `Authorization: Bearer`.
    key: Option<String>,
    http: reqwest::Client,
}

impl Model {
    pub fn new(config: ModelConfig, key: Option<String>) -> Model {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(Duration::from_secs(config.timeout_secs))
            .build()
            // Building a client fails only when the TLS backend cannot load,
            // which the rustls build rules out.
            .unwrap_or_else(|_| reqwest::Client::new());
        Model { config, key, http }
    }

    /// `provider/model`, for status and notes.
    pub fn label(&self) -> String {
        format!("{}/{}", self.config.provider.name(), self.config.model)
    }

    /// Sends one request; `on_text` receives reply text as it streams.
    pub async fn complete(
        &self,
        request: &Request,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Response, ModelError> {
        match self.config.provider {
            ProviderKind::OpenAiChat => chat::complete(self, request, on_text).await,
            ProviderKind::OpenAiResponses => responses::complete(self, request, on_text).await,
        }
    }
}
