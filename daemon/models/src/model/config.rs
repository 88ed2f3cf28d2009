//! A model's configuration (`[model]`, its fallbacks, `[memory]`'s model):
//! which wire protocol, where, which key, how it caches. The model's own
//! vocabulary, so the providers read it without the configuration file's
//! reader; `config.rs` parses it from `config.toml`.

use serde::Deserialize;
use std::path::PathBuf;

/// Which wire protocol a model speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ProviderKind {
    /// The OpenAI Responses API (`POST /responses`).
    #[serde(rename = "openai")]
    OpenAiResponses,
    /// OpenAI-compatible Chat Completions (`POST /chat/completions`): OpenAI,
    /// Ollama, vLLM, llama.cpp, OpenRouter.
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// The Anthropic Messages API (`POST /messages`).
    #[serde(rename = "anthropic")]
    Anthropic,
    /// A ChatGPT plan, signed in with `hearth login chatgpt`: the Responses
    /// API of the Codex backend (`model/chatgpt.rs`).
    #[serde(rename = "chatgpt")]
    ChatGpt,
}

impl ProviderKind {
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAiResponses => "openai",
            ProviderKind::OpenAiChat => "openai-chat",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::ChatGpt => "chatgpt",
        }
    }

    /// The provider's own address, up to and including the version.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
            ProviderKind::ChatGpt => crate::model::chatgpt::BACKEND,
        }
    }

    /// Where the key is looked for when the config names no variable.
    fn default_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
            // No key: the sign-in's tokens, in the home (`model/chatgpt/`).
            ProviderKind::ChatGpt => "",
        }
    }
}

/// One model (`[model]`), and the models that take over when it keeps
/// failing (`[[model.fallback]]`, the same fields, tried in order).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub provider: ProviderKind,
    pub model: String,
    /// Base address up to and including the version, e.g.
    /// `http://127.0.0.1:11434/v1`; the provider's own when absent.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable (or `secrets.env` entry) holding the API key;
    /// when absent `OPENAI_API_KEY` (`ANTHROPIC_API_KEY` for `anthropic`),
    /// and for `openai-chat` at another address `HEARTH_MODEL_API_KEY` (see
    /// [`ModelConfig::key_env`]). A missing key is sent as no key at all,
    /// which local servers accept.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Reasoning effort, when the model takes one; the values depend on the
    /// provider (checked at start, see `model/thinking.rs`). For `anthropic`
    /// it turns thinking on, in the form the model takes.
    #[serde(default)]
    pub effort: Option<String>,
    /// How an Anthropic model thinks (`adaptive` or `enabled`), for a model
    /// hearth's table is wrong about; the table decides when absent.
    #[serde(default)]
    pub thinking: Option<crate::model::ThinkingForm>,
    /// Ask for SSE streaming (the default) or for one JSON response.
    #[serde(default = "yes")]
    pub stream: bool,
    /// Seconds without progress after which a model call fails.
    #[serde(default = "default_model_timeout")]
    pub timeout_secs: u64,
    /// The most output tokens one answer may take. Anthropic requires a
    /// limit and gets 8192 when this is absent; the OpenAI providers send
    /// none.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// The model's context window in tokens, for models hearth does not
    /// know (local ones) or to correct its table. The agent's layout is
    /// checked against it at start.
    #[serde(default)]
    pub context_window: Option<u32>,
    /// Retries of a call that failed for a passing reason (overload, rate
    /// limit, server error, broken connection) before this model counts as
    /// failing.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// The first wait before a retry, doubling with each retry up to 8
    /// seconds; a wait the provider asks for (`retry-after`) wins.
    #[serde(default = "default_retry_delay_ms")]
    pub retry_delay_ms: u64,
    /// How long the provider keeps the cached start of a request (see
    /// [`CacheRetention`]); the provider's best value for hearth when absent.
    #[serde(default)]
    pub cache_retention: Option<CacheRetention>,
    /// Models tried in order when this one keeps failing before it produced
    /// output; a failing model is skipped for a few minutes.
    #[serde(default)]
    pub fallback: Vec<ModelConfig>,
    /// For `chatgpt`: the file of the sign-in's tokens, set from the home
    /// by whoever opens the model (never read from config.toml).
    #[serde(skip)]
    pub tokens_file: Option<PathBuf>,
}

/// `cache_retention` in `[model]`: how long a cached prefix is kept.
///
/// OpenAI (`prompt_cache_retention`): `24h`, extended retention, up to a
/// day at no extra cost — the default on OpenAI's own API for the models
/// that offer it (GPT-5 and its point releases and codex models, GPT-4.1;
/// not the mini and nano ones) — or `in_memory`, minutes (and eligible for
/// zero data retention). Anthropic (`cache_control.ttl`): `1h` on the marks
/// whose prefix outlives five minutes (the tools, the instructions, the
/// view's settled blocks), written at twice the input price instead of 1.25
/// times — the default, cheaper on the memory benchmark's idle gaps — or
/// `5m` for every mark. `off`: the request names no retention (a server that
/// refuses the field).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum CacheRetention {
    #[serde(rename = "24h")]
    Day,
    #[serde(rename = "in_memory")]
    InMemory,
    #[serde(rename = "1h")]
    Hour,
    #[serde(rename = "5m")]
    FiveMinutes,
    #[serde(rename = "off")]
    Off,
}

/// Whether OpenAI offers extended (24-hour) prompt-cache retention on
/// `model`.
pub fn extended_retention(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let family = ["gpt-5.", "gpt-5-codex", "gpt-4.1"]
        .iter()
        .any(|prefix| model.starts_with(prefix))
        || model == "gpt-5"
        || model.starts_with("gpt-5-20");
    let small =
        (model.contains("-mini") && !model.contains("codex-mini")) || model.contains("-nano");
    family && !small
}

fn yes() -> bool {
    true
}

fn default_model_timeout() -> u64 {
    300
}

fn default_max_retries() -> u32 {
    3
}

fn default_retry_delay_ms() -> u64 {
    500
}

/// Where an `openai-chat` model at another address than OpenAI's finds its
/// key when the config names no variable (a local server needs none).
pub const COMPATIBLE_KEY_ENV: &str = "HEARTH_MODEL_API_KEY";

/// Anthropic's `max_tokens` when the config sets none.
const ANTHROPIC_MAX_TOKENS: u32 = 8192;

impl ModelConfig {
    pub fn base_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or(self.provider.default_base_url())
            .trim_end_matches('/')
    }

    /// The `prompt_cache_retention` an OpenAI request names: the configured
    /// one, or `24h` on OpenAI's own API for a model that offers it.
    pub fn openai_retention(&self) -> Option<&'static str> {
        match self.cache_retention {
            Some(CacheRetention::Day) => Some("24h"),
            Some(CacheRetention::InMemory) => Some("in_memory"),
            Some(_) => None,
            None => (self.base_url().starts_with("https://api.openai.com")
                && extended_retention(&self.model))
            .then_some("24h"),
        }
    }

    /// Whether Anthropic's marks on lasting prefixes ask for an hour.
    pub fn anthropic_hour(&self) -> bool {
        !matches!(
            self.cache_retention,
            Some(CacheRetention::FiveMinutes | CacheRetention::Off)
        )
    }

    /// The variable (or `secrets.env` entry) the key is read from: the one
    /// the config names; else the provider's own (`OPENAI_API_KEY`,
    /// `ANTHROPIC_API_KEY`); else, for `openai-chat` at another address than
    /// OpenAI's, [`COMPATIBLE_KEY_ENV`], so that an OpenAI key exported for
    /// other programs is never sent to whatever server the address names.
    pub fn key_env(&self) -> &str {
        if let Some(env) = self.api_key_env.as_deref() {
            return env;
        }
        if self.provider == ProviderKind::OpenAiChat
            && !self.base_url().starts_with("https://api.openai.com")
        {
            return COMPATIBLE_KEY_ENV;
        }
        self.provider.default_key_env()
    }

    /// The output limit sent to providers that require one (Anthropic), and
    /// to compatible servers that otherwise let a model run on.
    pub fn max_tokens_or_default(&self) -> u32 {
        self.max_tokens.unwrap_or(ANTHROPIC_MAX_TOKENS)
    }

    /// This model and its fallbacks, in the order they are tried, each
    /// without fallbacks of its own. A fallback's own `fallback` list is
    /// tried right after it.
    pub fn chain(&self) -> Vec<ModelConfig> {
        let mut chain = Vec::new();
        let mut head = self.clone();
        let fallbacks = std::mem::take(&mut head.fallback);
        chain.push(head);
        for fallback in &fallbacks {
            chain.extend(fallback.chain());
        }
        chain
    }
}

/// A config file read for its `[model]` table alone, as the providers'
/// tests write one (the whole file is `config.rs`'s, a layer above).
#[cfg(test)]
pub(crate) mod test_file {
    use serde::Deserialize;

    #[derive(Deserialize)]
    pub struct Config {
        pub model: Option<super::ModelConfig>,
    }

    impl Config {
        pub fn parse(_path: &std::path::Path, text: &str) -> Result<Config, toml::de::Error> {
            toml::from_str(text)
        }
    }
}
