//! What can go wrong with a model call, sorted by what can be done about it.
//!
//! A provider's error (an HTTP error body, or an error event inside a
//! stream) is read into a [`WireError`] and sorted by [`classify`] into one
//! [`ModelError`] variant: failures that may pass by themselves (overload,
//! rate limits, server errors, broken connections) are *transient* and worth
//! a retry and a fallback; the others need the user to change something (the
//! key, the billing, the layout or model) and say what. Callers tell them
//! apart by variant, never by message.

use std::time::Duration;

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The provider refused the key, or the key may not use this model.
    #[error("{provider} refused the API key ({status}: {message}); {hint}")]
    Auth {
        provider: &'static str,
        status: u16,
        message: String,
        /// What to check: which variable the key comes from, or that none
        /// was found.
        hint: String,
    },
    /// The account is out of credit or over its spend limit: no retry helps.
    #[error(
        "{provider} refuses work until its billing is fixed ({message}); \
         add credit or raise the spend limit in the provider's console"
    )]
    Quota {
        provider: &'static str,
        message: String,
    },
    /// The request does not fit the model's context window.
    #[error(
        "the request is too long for {model} ({message}); {}: \
         set `layout = \"small\"` in [agent] or use a model with a larger context window",
        window_text(*.window)
    )]
    ContextLength {
        model: String,
        message: String,
        /// The model's window in tokens, when configured or well known.
        window: Option<u32>,
    },
    /// The provider does not know the model, or does not let this key use
    /// it: OpenAI's `model_not_found` (404, or 403 for a project without
    /// access), Anthropic's 404 `not_found_error`, any other 404.
    #[error(
        "{provider} does not offer {model} to this key ({status}: {message}); check the \
         model's name, and that the key's account or project may use it"
    )]
    UnknownModel {
        provider: &'static str,
        model: String,
        status: u16,
        message: String,
    },
    /// The server takes no tools: llama.cpp's without `--jinja` (a 500,
    /// "tools param requires --jinja flag"), or a model Ollama says does
    /// not support them. Every turn sends tools, so no retry helps.
    #[error(
        "{provider} refuses requests with tools ({message}); hearth's turns need tool calls: \
         start llama-server with `--jinja`, or choose a model whose template supports tools"
    )]
    NoTools {
        provider: &'static str,
        message: String,
    },
    /// Any other HTTP error. 408, 409, 429 and 5xx are transient.
    #[error("{provider} answered {status}: {message}")]
    Status {
        provider: &'static str,
        status: u16,
        message: String,
        /// The wait the provider asked for (`retry-after-ms`, `retry-after`).
        retry_after: Option<Duration>,
    },
    /// The provider reported a passing failure inside an answer (an
    /// `overloaded_error` event, a server error in a stream).
    #[error("{provider} is unavailable: {message}")]
    Unavailable {
        provider: &'static str,
        message: String,
    },
    /// No connection, or it broke.
    #[error("cannot reach {url}: {message}")]
    Network { url: String, message: String },
    #[error("no progress from the model for {0} seconds")]
    Timeout(u64),
    /// The answer's stream ended before the provider said it was whole.
    #[error("the answer's stream ended before it was complete")]
    Cut,
    /// The provider answered something this daemon cannot read.
    #[error("unreadable answer from the model: {0}")]
    Garbage(String),
    /// The provider reported a failure that is none of the above.
    #[error("the model failed: {0}")]
    Failed(String),
    /// The ChatGPT sign-in is missing or must be renewed; the message says
    /// how (`model/chatgpt.rs`).
    #[error("{0}")]
    SignIn(String),
    /// A ChatGPT plan refused the request at its usage limit; the message
    /// names when it resets.
    #[error("{0}")]
    PlanLimit(String),
}

impl ModelError {
    /// Whether the failure may pass by itself, so the same call is worth
    /// another try, and another model after the retries.
    pub fn is_transient(&self) -> bool {
        match self {
            ModelError::Status { status, .. } => is_transient_status(*status),
            ModelError::Unavailable { .. }
            | ModelError::Network { .. }
            | ModelError::Timeout(_)
            | ModelError::Cut => true,
            ModelError::Auth { .. }
            | ModelError::UnknownModel { .. }
            | ModelError::Quota { .. }
            | ModelError::ContextLength { .. }
            | ModelError::NoTools { .. }
            | ModelError::Garbage(_)
            | ModelError::Failed(_)
            | ModelError::SignIn(_)
            | ModelError::PlanLimit(_) => false,
        }
    }

    /// The wait the provider asked for before the next try, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// HTTP statuses worth another try: timeout, conflict, rate limit, and every
/// server error (529 is Anthropic's overload).
pub fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

/// A provider's error as it was sent: `error.type`, `error.code` (or
/// Anthropic's `error.details.error_code`) and the message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireError {
    pub kind: Option<String>,
    pub code: Option<String>,
    pub message: String,
}

/// Names for the messages of a failure of one configured model.
#[derive(Debug, Clone)]
pub struct Source<'a> {
    pub provider: &'static str,
    pub model: &'a str,
    /// The model's context window in tokens, when known.
    pub window: Option<u32>,
    /// What to check when the key is refused.
    pub key_hint: String,
}

/// How a context-length error names the model's window.
fn window_text(window: Option<u32>) -> String {
    match window {
        Some(window) => format!(
            "its window is {window} tokens, and hearth refuses to start with a layout too big \
             for it, so the turn's own messages or tool results were too long"
        ),
        None => "hearth does not know its window: set `context_window` in [model] so the \
                 layout is checked against it at start"
            .to_string(),
    }
}

/// Error types and codes that mean the account cannot pay.
const QUOTA_MARKS: &[&str] = &[
    "insufficient_quota",
    "billing_error",
    "enforced_spend_limit_reached",
    "billing_hard_limit_reached",
    "billing_not_active",
];

/// Error types and codes that mean the request is too long (llama.cpp's
/// server says `exceed_context_size_error`).
const CONTEXT_MARKS: &[&str] = &[
    "context_length_exceeded",
    "request_too_large",
    "exceed_context_size_error",
];

/// llama.cpp's server's words for a conversation past its slot's window:
/// a 400 before the answer ("request (N tokens) exceeds the available
/// context size (M tokens)"), or a server error inside the stream when
/// the answer itself runs out of room ("Context size has been exceeded.").
/// Said with any status, they mean the window, never an outage.
const WINDOW_FULL_PROSE: &[&str] = &[
    "exceeds the available context size",
    "context size has been exceeded",
];

/// Local servers' words for a request with tools they cannot take:
/// llama.cpp's server started without `--jinja`, Ollama's for a model
/// without tool support.
const NO_TOOLS_PROSE: &[&str] = &["tools param requires --jinja", "does not support tools"];

/// Error types and codes that mean the model is unknown or not this key's.
const UNKNOWN_MODEL_MARKS: &[&str] = &["model_not_found", "not_found_error"];

/// Error types and codes of passing failures reported inside an answer.
const TRANSIENT_MARKS: &[&str] = &[
    "overloaded_error",
    "api_error",
    "rate_limit_error",
    "timeout_error",
    "server_error",
    "rate_limit_exceeded",
    "overloaded",
];

/// Sorts a provider's error into a [`ModelError`]. `status` is the HTTP
/// status, or `None` for an error reported inside a streamed answer.
///
/// Billing and context-length errors are recognised by their type or code,
/// and, where providers send only prose (Anthropic's low credit balance and
/// its `prompt is too long`, compatible servers' `maximum context length`),
/// by the provider's own wording.
pub fn classify(
    source: &Source,
    status: Option<u16>,
    error: &WireError,
    retry_after: Option<Duration>,
) -> ModelError {
    let marks = [error.kind.as_deref(), error.code.as_deref()];
    let marked = |list: &[&str]| marks.iter().flatten().any(|mark| list.contains(mark));
    let prose = error.message.to_lowercase();
    let message = if error.message.trim().is_empty() {
        status
            .and_then(|status| reqwest::StatusCode::from_u16(status).ok())
            .and_then(|status| status.canonical_reason())
            .unwrap_or("no message")
            .to_string()
    } else {
        error.message.clone()
    };

    let quota_prose = [
        "credit balance",
        "spend limit",
        "exceeded your current quota",
    ];
    if marked(QUOTA_MARKS)
        || status == Some(402)
        || quota_prose.iter().any(|phrase| prose.contains(phrase))
    {
        return ModelError::Quota {
            provider: source.provider,
            message,
        };
    }
    // Rate limits speak of tokens too; only a refused request is too long.
    let refused = matches!(status, None | Some(400) | Some(413));
    let context_prose = [
        "prompt is too long",
        "maximum context length",
        "context window",
        "exceed context limit",
        "context_length_exceeded",
    ];
    let window_full = WINDOW_FULL_PROSE
        .iter()
        .any(|phrase| prose.contains(phrase));
    if window_full
        || (refused
            && (marked(CONTEXT_MARKS)
                || status == Some(413)
                || context_prose.iter().any(|phrase| prose.contains(phrase))))
    {
        return ModelError::ContextLength {
            model: source.model.to_string(),
            message,
            window: source.window,
        };
    }
    if NO_TOOLS_PROSE.iter().any(|phrase| prose.contains(phrase)) {
        return ModelError::NoTools {
            provider: source.provider,
            message,
        };
    }
    // A request to a model endpoint finds nothing only when the model is
    // not there (or not there for this key).
    if status == Some(404)
        || (matches!(status, None | Some(400) | Some(403)) && marked(UNKNOWN_MODEL_MARKS))
    {
        return ModelError::UnknownModel {
            provider: source.provider,
            model: source.model.to_string(),
            status: status.unwrap_or(404),
            message,
        };
    }
    let auth_marks = [
        "authentication_error",
        "permission_error",
        "invalid_api_key",
    ];
    if matches!(status, Some(401) | Some(403)) || marked(&auth_marks) {
        return ModelError::Auth {
            provider: source.provider,
            status: status.unwrap_or(401),
            message,
            hint: source.key_hint.clone(),
        };
    }
    match status {
        Some(status) => ModelError::Status {
            provider: source.provider,
            status,
            message,
            retry_after: retry_after.filter(|_| is_transient_status(status)),
        },
        None if marked(TRANSIENT_MARKS) || error.code.as_deref().is_some_and(is_server_code) => {
            ModelError::Unavailable {
                provider: source.provider,
                message,
            }
        }
        None => ModelError::Failed(message),
    }
}

/// A numeric code of a server error, as OpenRouter puts in stream errors.
fn is_server_code(code: &str) -> bool {
    code.parse::<u16>().is_ok_and(is_transient_status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Source<'static> {
        Source {
            provider: "anthropic",
            model: "claude-test",
            window: Some(200_000),
            key_hint: "check $ANTHROPIC_API_KEY".into(),
        }
    }

    fn wire(kind: Option<&str>, code: Option<&str>, message: &str) -> WireError {
        WireError {
            kind: kind.map(str::to_string),
            code: code.map(str::to_string),
            message: message.to_string(),
        }
    }

    #[test]
    fn openai_insufficient_quota_is_quota_even_on_429() {
        let error = wire(
            Some("insufficient_quota"),
            Some("insufficient_quota"),
            "You exceeded your current quota, please check your plan and billing details.",
        );
        let err = classify(&source(), Some(429), &error, Some(Duration::from_secs(1)));
        assert!(matches!(err, ModelError::Quota { .. }), "{err:?}");
        assert!(!err.is_transient());
        assert!(err.to_string().contains("add credit"), "{err}");
    }

    #[test]
    fn anthropic_spend_limit_and_low_credit_are_quota() {
        let limit = wire(
            Some("rate_limit_error"),
            Some("enforced_spend_limit_reached"),
            "spend limit reached",
        );
        let err = classify(&source(), Some(429), &limit, None);
        assert!(matches!(err, ModelError::Quota { .. }), "{err:?}");
        let credit = wire(
            Some("invalid_request_error"),
            None,
            "Your credit balance is too low to access the Anthropic API.",
        );
        let err = classify(&source(), Some(400), &credit, None);
        assert!(matches!(err, ModelError::Quota { .. }), "{err:?}");
        let billing = wire(Some("billing_error"), None, "billing");
        assert!(matches!(
            classify(&source(), Some(402), &billing, None),
            ModelError::Quota { .. }
        ));
    }

    #[test]
    fn too_long_prompts_name_the_model_and_the_small_layout() {
        let anthropic = wire(
            Some("invalid_request_error"),
            None,
            "prompt is too long: 208310 tokens > 200000 maximum",
        );
        let err = classify(&source(), Some(400), &anthropic, None);
        assert!(matches!(err, ModelError::ContextLength { .. }), "{err:?}");
        let said = err.to_string();
        assert!(said.contains("claude-test"), "{said}");
        assert!(said.contains("layout = \"small\""), "{said}");
        let openai = wire(
            Some("invalid_request_error"),
            Some("context_length_exceeded"),
            "Your input exceeds the context window of this model.",
        );
        assert!(matches!(
            classify(&source(), Some(400), &openai, None),
            ModelError::ContextLength { .. }
        ));
        assert!(matches!(
            classify(
                &source(),
                Some(413),
                &wire(Some("request_too_large"), None, ""),
                None
            ),
            ModelError::ContextLength { .. }
        ));
        // A rate limit on tokens per minute is not a long prompt.
        let rate = wire(
            Some("rate_limit_error"),
            None,
            "exceeds the maximum context length rate limit of 30000 input tokens per minute",
        );
        assert!(matches!(
            classify(&source(), Some(429), &rate, None),
            ModelError::Status { status: 429, .. }
        ));
    }

    #[test]
    fn a_server_that_takes_no_tools_is_said_so_never_retried() {
        // llama-server without --jinja answers a 500 server_error.
        let jinja = wire(
            Some("server_error"),
            None,
            "tools param requires --jinja flag",
        );
        let err = classify(&source(), Some(500), &jinja, None);
        assert!(matches!(err, ModelError::NoTools { .. }), "{err:?}");
        assert!(!err.is_transient());
        assert!(err.to_string().contains("--jinja"), "{err}");
        let ollama = wire(
            None,
            None,
            "registry.ollama.ai/library/gemma3:1b does not support tools",
        );
        let err = classify(&source(), Some(400), &ollama, None);
        assert!(matches!(err, ModelError::NoTools { .. }), "{err:?}");
    }

    #[test]
    fn llama_cpp_servers_window_errors_are_too_long_requests_not_outages() {
        let before = wire(
            Some("exceed_context_size_error"),
            None,
            "request (9120 tokens) exceeds the available context size (8192 tokens), try increasing it",
        );
        let err = classify(&source(), Some(400), &before, None);
        assert!(matches!(err, ModelError::ContextLength { .. }), "{err:?}");
        assert!(err.to_string().contains("layout = \"small\""), "{err}");
        // Inside the stream, as a server error: still the window.
        let during = wire(
            Some("server_error"),
            None,
            "Context size has been exceeded.",
        );
        for status in [None, Some(500)] {
            let err = classify(&source(), status, &during, None);
            assert!(matches!(err, ModelError::ContextLength { .. }), "{err:?}");
            assert!(!err.is_transient());
        }
    }

    #[test]
    fn a_model_the_key_cannot_use_is_an_unknown_model() {
        let openai = wire(
            Some("invalid_request_error"),
            Some("model_not_found"),
            "The model `gpt-5-nano` does not exist or you do not have access to it.",
        );
        for status in [404, 403, 400] {
            let err = classify(&source(), Some(status), &openai, None);
            assert!(
                matches!(err, ModelError::UnknownModel { status: s, .. } if s == status),
                "{err:?}"
            );
            assert!(!err.is_transient());
            assert!(err.to_string().contains("claude-test"), "{err}");
        }
        let anthropic = wire(Some("not_found_error"), None, "model: claude-haiku-4-5");
        let err = classify(&source(), Some(404), &anthropic, None);
        assert!(
            matches!(err, ModelError::UnknownModel { status: 404, .. }),
            "{err:?}"
        );
        // A 403 that says nothing of the model is a refused key.
        let denied = wire(Some("permission_error"), None, "not allowed");
        assert!(matches!(
            classify(&source(), Some(403), &denied, None),
            ModelError::Auth { status: 403, .. }
        ));
    }

    #[test]
    fn refused_keys_say_what_to_check() {
        let err = classify(
            &source(),
            Some(401),
            &wire(Some("authentication_error"), None, "invalid x-api-key"),
            None,
        );
        assert!(
            matches!(err, ModelError::Auth { status: 401, .. }),
            "{err:?}"
        );
        assert!(!err.is_transient());
        assert!(err.to_string().contains("$ANTHROPIC_API_KEY"), "{err}");
    }

    #[test]
    fn statuses_keep_the_wait_only_when_transient() {
        let wait = Some(Duration::from_secs(2));
        let overloaded = classify(
            &source(),
            Some(529),
            &wire(Some("overloaded_error"), None, "Overloaded"),
            wait,
        );
        assert!(overloaded.is_transient());
        assert_eq!(overloaded.retry_after(), wait);
        let bad = classify(&source(), Some(400), &wire(None, None, "bad"), wait);
        assert!(!bad.is_transient());
        assert_eq!(bad.retry_after(), None);
        let empty = classify(&source(), Some(503), &WireError::default(), None);
        assert_eq!(
            empty.to_string(),
            "anthropic answered 503: Service Unavailable"
        );
    }

    #[test]
    fn stream_errors_are_transient_only_when_they_say_so() {
        let overloaded = classify(
            &source(),
            None,
            &wire(Some("overloaded_error"), None, "Overloaded"),
            None,
        );
        assert!(matches!(overloaded, ModelError::Unavailable { .. }));
        assert!(overloaded.is_transient());
        let numeric = classify(
            &source(),
            None,
            &wire(None, Some("502"), "bad gateway"),
            None,
        );
        assert!(numeric.is_transient());
        let other = classify(
            &source(),
            None,
            &wire(Some("invalid_request_error"), None, "no"),
            None,
        );
        assert!(matches!(other, ModelError::Failed(ref m) if m == "no"));
    }

    #[test]
    fn transient_statuses() {
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(is_transient_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!is_transient_status(status), "{status}");
        }
    }
}
