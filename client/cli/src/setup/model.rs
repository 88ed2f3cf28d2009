//! Setup's model step: which provider and model, the key, the layout that
//! fits the model's window, and the one real request that proves it works
//! before anything is saved. The request goes through the daemon's own
//! model client (`hearth_models::model::Model`), so what setup proves is
//! what the daemon will send.

use super::ask::{self, AskError, Asker};
use super::edit::Edit;
use super::SetupOptions;
use hearth_config::layout;
use hearth_models::local;
use hearth_models::model::served::{self, ServerKind};
use hearth_models::model::{Item, Model, Request, ToolSpec};
use hearth_models::model::{ModelConfig, ProviderKind};
use hearth_protocol::home::Home;
use std::time::Duration;

/// How long the test request may go without progress (a local model may
/// first have to load).
const TEST_TIMEOUT_SECS: u64 = 120;

/// The answer to the key variable question that means the server takes no
/// key.
const NO_KEY: &str = "none";

#[derive(Debug, thiserror::Error)]
pub enum ModelStepError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error("unknown provider `{0}`; use ollama, openai, anthropic, chatgpt or openai-chat")]
    UnknownProvider(String),
    #[error("no Ollama answers at {url} ({reason}); start it (`ollama serve`), or give its address with --base-url")]
    NoOllama { url: String, reason: String },
    #[error(
        "the Ollama server at {0} has no chat model; `ollama pull qwen3:8b` (or another) first"
    )]
    NoLocalModel(String),
    #[error("`{model}` has a {window}-token window, too small for hearth's layouts (the small one needs about {small}); choose a model with a larger window")]
    WindowTooSmall {
        model: String,
        window: u32,
        small: u32,
    },
    #[error("the model settings do not make a valid [model] table: {0}")]
    BadSettings(String),
    #[error("signing in with ChatGPT failed: {0}")]
    SignIn(#[from] crate::login::LoginError),
    #[error("the test request to {model} failed, so nothing was written: {reason}")]
    TestFailed { model: String, reason: String },
}

/// The providers setup offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// A local Ollama server, through its Chat Completions endpoint.
    Ollama,
    OpenAi,
    Anthropic,
    /// Another OpenAI-compatible server (vLLM, llama.cpp, OpenRouter, …).
    Compatible,
    /// A ChatGPT plan, signed in with `hearth login chatgpt`'s flow.
    ChatGpt,
}

impl Provider {
    pub fn parse(name: &str) -> Result<Provider, ModelStepError> {
        match name {
            "ollama" => Ok(Provider::Ollama),
            "openai" => Ok(Provider::OpenAi),
            "anthropic" => Ok(Provider::Anthropic),
            "chatgpt" => Ok(Provider::ChatGpt),
            "openai-chat" | "compatible" => Ok(Provider::Compatible),
            other => Err(ModelStepError::UnknownProvider(other.to_string())),
        }
    }

    fn kind(self) -> ProviderKind {
        match self {
            Provider::OpenAi => ProviderKind::OpenAiResponses,
            Provider::Anthropic => ProviderKind::Anthropic,
            Provider::Ollama | Provider::Compatible => ProviderKind::OpenAiChat,
            Provider::ChatGpt => ProviderKind::ChatGpt,
        }
    }

    fn default_model(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi => Some("gpt-5-mini"),
            Provider::Anthropic => Some("claude-sonnet-4-5"),
            Provider::ChatGpt => Some("gpt-5"),
            Provider::Ollama | Provider::Compatible => None,
        }
    }

    fn default_key_env(self) -> &'static str {
        match self {
            Provider::OpenAi => "OPENAI_API_KEY",
            // Never an OpenAI key exported for other programs: it would be
            // sent to whatever server the address names.
            Provider::Compatible => hearth_models::model::COMPATIBLE_KEY_ENV,
            Provider::Anthropic => "ANTHROPIC_API_KEY",
            Provider::Ollama => "OLLAMA_API_KEY",
            // No key: the sign-in's tokens.
            Provider::ChatGpt => "",
        }
    }
}

/// What the model step decided.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub config: ModelConfig,
    /// The key, when there is one; sent only in the test request's header.
    pub key: Option<String>,
    /// Whether the key is new here and goes into `secrets.env`.
    pub store_key: bool,
    /// The layout the window calls for, when the window is known.
    pub layout: Option<&'static str>,
}

impl Chosen {
    /// `provider/model`, as status shows it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.config.provider.name(), self.config.model)
    }

    /// The `[model]` (and `[agent] layout`) edits; `current` is the
    /// `[model]` the file has now, whose effort and thinking settings go
    /// when the model changes (they are the old model's).
    pub fn edits(&self, current: Option<&toml::Table>, current_layout: Option<&str>) -> Vec<Edit> {
        let config = &self.config;
        let mut edits = vec![
            Edit::set("model", "provider", config.provider.name()),
            Edit::set("model", "model", config.model.as_str()),
        ];
        edits.push(match &config.base_url {
            Some(url) => Edit::set("model", "base_url", url.as_str()),
            None => Edit::remove("model", "base_url"),
        });
        edits.push(match config.provider {
            ProviderKind::ChatGpt => Edit::remove("model", "api_key_env"),
            _ => Edit::set("model", "api_key_env", config.key_env()),
        });
        edits.push(match config.context_window {
            Some(window) => Edit::set("model", "context_window", i64::from(window)),
            None => Edit::remove("model", "context_window"),
        });
        let same = |key: &str, value: &str| {
            current
                .and_then(|table| table.get(key))
                .and_then(toml::Value::as_str)
                == Some(value)
        };
        if !(same("provider", config.provider.name()) && same("model", &config.model)) {
            edits.push(Edit::remove("model", "effort"));
            edits.push(Edit::remove("model", "thinking"));
        }
        // A layout file of one's own is kept; the built-in ones follow the window.
        let built_in = matches!(current_layout, None | Some("default" | "small"));
        match self.layout {
            Some("small") if built_in => edits.push(Edit::set("agent", "layout", "small")),
            Some(_) if built_in && current_layout.is_some() => {
                edits.push(Edit::remove("agent", "layout"))
            }
            _ => {}
        }
        edits
    }
}

/// Asks (or reads from the flags) which model to use and its key.
pub async fn choose(
    asker: &mut Asker<'_>,
    options: &SetupOptions,
    home: &Home,
) -> Result<Chosen, ModelStepError> {
    let given = options
        .provider
        .as_deref()
        .map(Provider::parse)
        .transpose()?;
    let ollama_url = match (given, &options.base_url) {
        (Some(Provider::Ollama), Some(url)) => Some(ollama_address(url)),
        _ => local::probe_url(),
    };
    let detected = match &ollama_url {
        Some(url) => local::list(url).await.ok(),
        None => None,
    };
    let provider = match given {
        Some(provider) => provider,
        None => ask_provider(asker, ollama_url.as_deref(), detected.as_deref())?,
    };
    let mut table = toml::Table::new();
    table.insert("provider".into(), provider.kind().name().into());
    let (model, window) = match provider {
        Provider::Ollama => {
            let url = ollama_url
                .clone()
                .unwrap_or_else(|| local::DEFAULT_OLLAMA_URL.to_string());
            let models = match detected {
                Some(models) => models,
                None => local::list(&url)
                    .await
                    .map_err(|err| ModelStepError::NoOllama {
                        url: url.clone(),
                        reason: err.to_string(),
                    })?,
            };
            let model = match &options.model {
                Some(model) => model.clone(),
                None if models.is_empty() => return Err(ModelStepError::NoLocalModel(url)),
                None => {
                    let at = asker.choose("Which model?", &models, Some(0), "--model")?;
                    models[at].clone()
                }
            };
            table.insert("base_url".into(), format!("{url}/v1").into());
            let window = local::context_length(&url, &model).await.ok().flatten();
            if let Some(window) = window {
                asker.say(&format!("{model} was made for a {window}-token context."));
            }
            (model, window)
        }
        other => {
            if let Some(url) = &options.base_url {
                table.insert("base_url".into(), url.trim_end_matches('/').into());
            } else if other == Provider::Compatible {
                let url = asker.text(
                    "The server's address, up to and including /v1",
                    None,
                    "--base-url",
                )?;
                table.insert("base_url".into(), url.trim_end_matches('/').into());
            }
            let model = match &options.model {
                Some(model) => model.clone(),
                None => asker.text("Which model?", other.default_model(), "--model")?,
            };
            (model, None)
        }
    };
    table.insert("model".into(), model.clone().into());
    let key_env = match (&options.key_env, provider) {
        (Some(env), _) => Some(env.clone()),
        // Another server's key has no name hearth could guess, and an
        // exported OpenAI key must not go to it: asked, none by default.
        (None, Provider::Compatible) if asker.interactive => {
            let name = asker.text(
                "The variable that holds the server's API key, if it needs one",
                Some(NO_KEY),
                "--key-env",
            )?;
            (name != NO_KEY).then_some(name)
        }
        (None, provider) => Some(provider.default_key_env().to_string()),
    };
    if provider != Provider::ChatGpt {
        let env = key_env.as_deref().unwrap_or(provider.default_key_env());
        table.insert("api_key_env".into(), env.into());
    }
    if let Some(window) = window {
        table.insert("context_window".into(), i64::from(window).into());
    }
    let mut config: ModelConfig = table
        .try_into()
        .map_err(|err: toml::de::Error| ModelStepError::BadSettings(err.message().to_string()))?;
    let (key, store_key) = match provider {
        Provider::ChatGpt => {
            sign_in(asker, options, home).await?;
            config.tokens_file = Some(hearth_models::model::chatgpt::tokens_file(home));
            (None, false)
        }
        _ => match &key_env {
            Some(key_env) => find_key(asker, options, home, provider, key_env)?,
            None => (None, false),
        },
    };
    let window = served_window(asker, provider, &mut config, window).await;
    let layout = match window {
        Some(window) => Some(pick_layout(&config, window)?),
        None => None,
    };
    Ok(Chosen {
        config,
        key,
        store_key,
        layout,
    })
}

/// The window to size the layout for: what the model was made for (Ollama
/// says), else what a local server serves it with (llama.cpp's `/props`),
/// said with how to make the server serve it: a server serving less than
/// the configured window has the start of long prompts cut, or refused.
async fn served_window(
    asker: &mut Asker<'_>,
    provider: Provider,
    config: &mut ModelConfig,
    made_for: Option<u32>,
) -> Option<u32> {
    let served = served::window(config).await;
    match (made_for, served) {
        (Some(made_for), served) => {
            if let Some(served) = served.filter(|served| served.window < made_for) {
                asker.say(&format!(
                    "{} serves it with {} tokens now; hearth sizes its requests to that until it \
                     serves more.",
                    served.server.name(),
                    served.window
                ));
            }
            let server = served.map_or(ServerKind::Ollama, |served| served.server);
            if provider == Provider::Ollama || served.is_some() {
                asker.say(&format!(
                    "For the whole window, {}.",
                    server.how_to_raise(made_for)
                ));
            }
            Some(made_for)
        }
        (None, Some(served)) => {
            asker.say(&format!(
                "The {} server serves {} tokens a request; for more, {}.",
                served.server.name(),
                served.window,
                served.server.how_to_raise(served.window.saturating_mul(2))
            ));
            config.context_window = Some(served.window);
            Some(served.window)
        }
        (None, None) => None,
    }
}

fn ask_provider(
    asker: &mut Asker<'_>,
    ollama_url: Option<&str>,
    detected: Option<&[String]>,
) -> Result<Provider, ModelStepError> {
    let local = match (ollama_url, detected) {
        (Some(url), Some(models)) if !models.is_empty() => {
            format!(
                "Ollama on this machine (found at {url}: {})",
                models.join(", ")
            )
        }
        (Some(url), Some(_)) => format!("Ollama (at {url}, no model pulled yet)"),
        (Some(url), None) => format!("Ollama (none answers at {url} now)"),
        (None, _) => format!("Ollama (not looked for: {} is off)", local::OLLAMA_URL_ENV),
    };
    let options = [
        local,
        "OpenAI".to_string(),
        "Anthropic".to_string(),
        "Another OpenAI-compatible server (vLLM, llama.cpp, OpenRouter, …)".to_string(),
        "Sign in with ChatGPT (your ChatGPT plan; no API key)".to_string(),
    ];
    let default = detected
        .is_some_and(|models| !models.is_empty())
        .then_some(0);
    let at = asker.choose("Which model provider?", &options, default, "--provider")?;
    Ok([
        Provider::Ollama,
        Provider::OpenAi,
        Provider::Anthropic,
        Provider::Compatible,
        Provider::ChatGpt,
    ][at])
}

/// The ChatGPT sign-in, unless the home has one: the same flow as
/// `hearth login chatgpt` (a browser, or a device code with `--device`).
async fn sign_in(
    asker: &mut Asker<'_>,
    options: &SetupOptions,
    home: &Home,
) -> Result<(), ModelStepError> {
    use hearth_models::model::chatgpt::{tokens, tokens_file};
    if let Ok(Some(signed_in)) = tokens::load(&tokens_file(home)) {
        let who = signed_in
            .identity()
            .email
            .map(|email| format!(" as {email}"))
            .unwrap_or_default();
        asker.say(&format!(
            "Signed in with ChatGPT already{who}; `hearth login chatgpt` signs in again."
        ));
        return Ok(());
    }
    let login = crate::login::LoginOptions {
        device: options.device,
        open_browser: true,
        port: None,
    };
    crate::login::login(home, &login, asker.out()).await?;
    Ok(())
}

/// An Ollama address as given: the server's root, without `/v1`.
fn ollama_address(url: &str) -> String {
    let url = url.trim_end_matches('/');
    url.strip_suffix("/v1").unwrap_or(url).to_string()
}

/// The key and whether it is new here: `--key-stdin`, else pasted on the
/// terminal, else what the variable or `secrets.env` already holds.
fn find_key(
    asker: &mut Asker<'_>,
    options: &SetupOptions,
    home: &Home,
    provider: Provider,
    key_env: &str,
) -> Result<(Option<String>, bool), ModelStepError> {
    if options.key_stdin {
        return Ok((Some(ask::read_stdin_secret("the key")?), true));
    }
    let existing = ask::known_secret(home, key_env);
    if provider == Provider::Ollama {
        return Ok((existing, false));
    }
    if asker.interactive {
        let question = match (&existing, provider) {
            (Some(_), _) => {
                format!("Paste the API key for ${key_env} (Enter keeps the one it has)")
            }
            (None, Provider::Compatible) => {
                format!("Paste the API key for ${key_env} (Enter for none)")
            }
            (None, _) => format!("Paste the API key for ${key_env}"),
        };
        loop {
            let pasted = asker.secret(&question, "--key-stdin")?;
            if !pasted.is_empty() {
                return Ok((Some(pasted), true));
            }
            if existing.is_some() || provider == Provider::Compatible {
                return Ok((existing, false));
            }
            asker.say("A key is needed for this provider.");
        }
    }
    match existing {
        Some(key) => Ok((Some(key), false)),
        None if provider == Provider::Compatible => Ok((None, false)),
        None => Err(AskError::NeedsFlag {
            question: format!("no key in ${key_env} or secrets.env"),
            flag: "--key-stdin (or --key-env NAME of a variable that holds it)",
        }
        .into()),
    }
}

/// The built-in layout whose largest request fits `window`, as the
/// daemon's no-configuration path picks it: `default` when it fits, else
/// `small`.
fn pick_layout(config: &ModelConfig, window: u32) -> Result<&'static str, ModelStepError> {
    layout::pick_layout(config, window, layout::FIXED_ESTIMATE).map_err(|small| {
        ModelStepError::WindowTooSmall {
            model: config.model.clone(),
            window,
            small,
        }
    })
}

/// One real request through the daemon's own client: it must answer.
/// Returns what the model said.
pub async fn test(chosen: &Chosen) -> Result<String, ModelStepError> {
    let mut config = chosen.config.clone();
    // One try, so a refusal is said at once; a slow first load may take long.
    config.max_retries = 0;
    config.timeout_secs = TEST_TIMEOUT_SECS;
    config.fallback.clear();
    let key = chosen.key.clone();
    let model = Model::new(config, move |_| key.clone());
    let request = Request {
        instructions:
            "hearth setup is checking that this model answers. Answer with one word: ready"
                .to_string(),
        // A tool, as every turn carries them: a server that cannot take
        // tools (llama.cpp without `--jinja`) fails here, not at each turn.
        tools: vec![ToolSpec {
            name: "ready".to_string(),
            description: "Says that the model is ready. Not needed to answer.".to_string(),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        }],
        items: vec![Item::user("Are you there?")],
        cache_key: None,
        cache_marks: Vec::new(),
    };
    let mut bills = Vec::new();
    let answer = tokio::time::timeout(
        Duration::from_secs(TEST_TIMEOUT_SECS + 30),
        model.complete(&request, &mut |_| {}, &mut |_| {}, &mut bills),
    )
    .await;
    let failed = |reason: String| ModelStepError::TestFailed {
        model: chosen.label(),
        reason,
    };
    match answer {
        Ok(Ok(response)) => Ok(response.text),
        Ok(Err(err)) => Err(failed(err.to_string())),
        Err(_) => Err(failed(format!(
            "no answer within {} s",
            TEST_TIMEOUT_SECS + 30
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(model: &str) -> ModelConfig {
        let text = format!("provider = \"openai-chat\"\nmodel = \"{model}\"");
        toml::from_str(&text).unwrap()
    }

    #[test]
    fn a_small_window_picks_the_small_layout() {
        assert_eq!(pick_layout(&chat("m"), 131_072).unwrap(), "default");
        assert_eq!(pick_layout(&chat("m"), 32_768).unwrap(), "small");
        // The small layout shrinks to an 8k window, as the daemon does.
        assert_eq!(pick_layout(&chat("m"), 8_192).unwrap(), "small");
        let err = pick_layout(&chat("m"), 4_096).unwrap_err();
        assert!(err.to_string().contains("4096-token window"), "{err}");
    }

    #[test]
    fn an_ollama_address_loses_its_v1() {
        assert_eq!(
            ollama_address("http://127.0.0.1:11434/v1/"),
            "http://127.0.0.1:11434"
        );
        assert_eq!(ollama_address("http://h:1"), "http://h:1");
    }

    #[test]
    fn a_new_model_drops_the_old_ones_effort_and_a_small_window_sets_the_layout() {
        let mut config = chat("qwen3:8b");
        config.context_window = Some(32_768);
        let chosen = Chosen {
            config,
            key: None,
            store_key: false,
            layout: Some("small"),
        };
        let current: toml::Table =
            toml::from_str("provider = \"openai\"\nmodel = \"gpt-5\"\neffort = \"low\"").unwrap();
        let edits = chosen.edits(Some(&current), None);
        assert!(edits.contains(&Edit::remove("model", "effort")));
        assert!(edits.contains(&Edit::set("agent", "layout", "small")));
        assert!(edits.contains(&Edit::set("model", "context_window", 32_768i64)));
        let mine = chosen.edits(Some(&current), Some("/home/me/layout.toml"));
        assert!(!mine.iter().any(|edit| edit.table == "agent"));
    }
}
