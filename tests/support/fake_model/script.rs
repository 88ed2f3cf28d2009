//! What a test can script the fake model to do with one request.

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::watch;

/// The fake model's answer to one request. Replies are consumed in FIFO
/// order by requests to either model endpoint; the same reply renders in
/// whichever format (Chat Completions or Responses, whole or streamed) the
/// request asked for.
#[derive(Clone, Debug)]
pub enum Reply {
    /// An assistant message with this text; `finish_reason` `stop`.
    Text(String),
    /// Optional text followed by function calls, each `(name, arguments)`
    /// where `arguments` is the JSON string the model "wrote". Call ids are
    /// `call_<n>`, counted per server from 1.
    ToolCalls {
        text: Option<String>,
        calls: Vec<(String, String)>,
    },
    /// An HTTP error with this status and JSON body, e.g.
    /// `{"error":{"message":..,"type":..,"code":..}}` (see [`Reply::error`]).
    Error { status: u16, body: Value },
    /// HTTP 200 with this raw body, whatever the request asked for: a test
    /// of how the client copes with output that is not the format.
    Garbage(String),
    /// Streamed: sends `text_before` as text deltas, then keeps the
    /// connection open without finishing until the client disconnects or
    /// the server is dropped. Not streamed: never answers at all. For
    /// interrupt and timeout tests.
    Hang { text_before: String },
    /// Reads the request and closes the connection at once without a byte
    /// of answer (a TCP reset): a server that dropped the connection.
    Reset,
    /// Holds the request until `gate` is opened, then sends `reply`, so a
    /// test can act while the model is "thinking". If the client disconnects
    /// first, nothing is sent.
    Gate { reply: Box<Reply>, gate: Gate },
    /// `reply`, reporting `usage` instead of the rough counts (input: body
    /// bytes / 4, nothing cached), in whichever format the request takes.
    WithUsage { reply: Box<Reply>, usage: Usage },
    /// Streamed: sends the deltas of `text` that cover its first `first`
    /// bytes (rounded up to a whole delta), waits until `gate` opens, then
    /// sends the rest and finishes, so a test sees a reply half written.
    /// Not streamed: answers `text` whole once the gate opens.
    Paused {
        text: String,
        first: usize,
        gate: Gate,
    },
    /// An answer of `text` that ended as `finish` says, as each API
    /// documents it: cut at the output limit or by the content filter, or
    /// a refusal (see [`Finish`]).
    Ended { text: String, finish: Finish },
    /// Streamed: sends `text_before` as text deltas, then closes the
    /// connection without the stream's end (no usage, no terminator): a
    /// stream cut off mid-answer. Not streamed: closes without a byte.
    Dropped { text_before: String },
    /// Streamed: sends `text_before` as text deltas, then resets the
    /// connection mid-answer. Not streamed: resets without a byte.
    Broken { text_before: String },
    /// `reply` preceded by the model's reasoning, in each API's form:
    /// Anthropic `thinking` blocks with their signatures (streamed as
    /// `thinking_delta` and `signature_delta`) and `redacted_thinking`;
    /// Responses `reasoning` items with their summary and encrypted
    /// content. Chat Completions shows none.
    Thinking {
        thoughts: Vec<Thought>,
        reply: Box<Reply>,
    },
}

/// One piece of a model's reasoning (see [`Reply::Thinking`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Thought {
    /// Reasoning the model shows: an Anthropic `thinking` block of `text`
    /// signed `sealed`, or a Responses `reasoning` item summarised as
    /// `text` with `sealed` as its encrypted content.
    Shown { text: String, sealed: String },
    /// Reasoning the model hides: an Anthropic `redacted_thinking` block
    /// of `sealed`, or a Responses `reasoning` item with an empty summary.
    Hidden { sealed: String },
}

/// How an [`Reply::Ended`] answer ends on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// Cut at the output limit: Chat Completions `finish_reason: "length"`,
    /// Responses `status: "incomplete"` with `max_output_tokens`,
    /// Anthropic `stop_reason: "max_tokens"`.
    Length,
    /// Cut by the content filter: `finish_reason: "content_filter"`,
    /// `incomplete_details.reason: "content_filter"` (Anthropic has none;
    /// it answers `stop_reason: "refusal"`).
    ContentFilter,
    /// A refusal: Chat Completions `message.refusal` / `delta.refusal` with
    /// no content, a Responses `refusal` content part, Anthropic
    /// `stop_reason: "refusal"` (the text, if any, before it).
    Refusal,
}

/// Token counts a reply reports, as hearth counts them: `input` includes
/// the cached and the cache-written tokens. Each format reports them its
/// own way: Chat Completions and Responses as `cached_tokens` (and
/// `cache_write_tokens`) within the input, Anthropic with `input_tokens`
/// counting only what is neither read from nor written to the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub cached_input: u64,
    pub cache_write: u64,
    pub output: u64,
}

impl Reply {
    /// An answer with this text.
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Text(text.into())
    }

    /// An answer that is a single function call and no text.
    pub fn tool_call(name: impl Into<String>, arguments: impl Into<String>) -> Reply {
        Reply::ToolCalls {
            text: None,
            calls: vec![(name.into(), arguments.into())],
        }
    }

    /// An HTTP error with OpenAI's error envelope:
    /// `{"error":{"message":message,"type":error_type,"param":null,"code":null}}`.
    pub fn error(status: u16, error_type: &str, message: &str) -> Reply {
        Reply::Error {
            status,
            body: json!({
                "error": {"message": message, "type": error_type, "param": null, "code": null}
            }),
        }
    }

    /// A stream that sends `text_before` and then never finishes.
    pub fn hang(text_before: impl Into<String>) -> Reply {
        Reply::Hang {
            text_before: text_before.into(),
        }
    }

    /// `reply`, reporting `usage`.
    pub fn with_usage(reply: Reply, usage: Usage) -> Reply {
        Reply::WithUsage {
            reply: Box::new(reply),
            usage,
        }
    }

    /// `text`, streamed as far as its first `first` bytes, the rest once
    /// `gate` opens.
    pub fn paused(text: impl Into<String>, first: usize, gate: &Gate) -> Reply {
        Reply::Paused {
            text: text.into(),
            first,
            gate: gate.clone(),
        }
    }

    /// An answer of `text` ending as `finish` says.
    pub fn ended(text: impl Into<String>, finish: Finish) -> Reply {
        Reply::Ended {
            text: text.into(),
            finish,
        }
    }

    /// `reply`, preceded by `thoughts`.
    pub fn thinking(thoughts: Vec<Thought>, reply: Reply) -> Reply {
        Reply::Thinking {
            thoughts,
            reply: Box::new(reply),
        }
    }

    /// A stream that sends `text_before` and is then cut off.
    pub fn dropped(text_before: impl Into<String>) -> Reply {
        Reply::Dropped {
            text_before: text_before.into(),
        }
    }

    /// A stream that sends `text_before` and is then reset.
    pub fn broken(text_before: impl Into<String>) -> Reply {
        Reply::Broken {
            text_before: text_before.into(),
        }
    }

    /// `reply`, held back until `gate` opens.
    pub fn gated(reply: Reply, gate: &Gate) -> Reply {
        Reply::Gate {
            reply: Box::new(reply),
            gate: gate.clone(),
        }
    }
}

/// A one-way latch a test opens to release a [`Reply::Gate`]. Clones share
/// the same latch; once open it stays open, so opening before the request
/// arrives releases the reply at once.
#[derive(Clone, Debug)]
pub struct Gate {
    /// `true` once opened. Held in an `Arc` so every clone, and every waiter,
    /// keeps the sender alive: waiting can then only end by opening.
    open: Arc<watch::Sender<bool>>,
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        let (open, _) = watch::channel(false);
        Gate {
            open: Arc::new(open),
        }
    }

    /// Opens the gate, releasing every reply waiting on it now or later.
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    /// Whether [`Gate::open`] has been called.
    pub fn is_open(&self) -> bool {
        *self.open.borrow()
    }

    /// Resolves once the gate is open.
    pub(crate) async fn opened(&self) {
        let mut open = self.open.subscribe();
        // Errs only if the sender is dropped, which `self` prevents.
        let _ = open.wait_for(|open| *open).await;
    }
}

impl Default for Gate {
    fn default() -> Gate {
        Gate::new()
    }
}
