//! The models the agents use: `[model]`, a local Ollama server's when none
//! is configured, and the per-agent model names on `[model]`'s provider.

use super::error::StartError;
use super::secrets;
use crate::config::{Config, MemorySettings};
use crate::log::{Log, NewMessage};
use crate::memory::MemoryModel;
use crate::model::Model;
use crate::model::ModelConfig;
use hearth_protocol::home::Home;
use std::path::PathBuf;

/// With no `[model]`, uses a local Ollama server's model when one answers,
/// and notes so in the top agent's log.
pub async fn use_local_when_none(config: &mut Config, log: &Log) -> Result<(), StartError> {
    if config.model.is_some() {
        return Ok(());
    }
    let Some(local) = crate::local::detect().await else {
        return Ok(());
    };
    let mut model = local.config;
    let mut said = local.note;
    // The window and layout `hearth setup` would write for this model.
    let url = crate::model::served::server_root(model.base_url());
    if let Ok(Some(window)) = crate::local::context_length(&url, &model.model).await {
        model.context_window = Some(window);
        let fixed = crate::layout::FIXED_ESTIMATE;
        let layout = crate::layout::pick_layout(&model, window, fixed);
        if config.agent.layout == "default" && layout == Ok("small") {
            config.agent.layout = "small".to_string();
            said.push_str(&format!(
                "; its {window}-token window takes the `small` layout, as `hearth setup` would pick"
            ));
        }
    }
    config.model = Some(model);
    tracing::info!("{said}");
    let note = NewMessage::daemon_note(said);
    log.append(&config.agent.name, note).await?;
    Ok(())
}

/// Asks a local model server which window it serves `[model]` with (see
/// `model/served.rs`): when that is smaller than the configured window, or
/// none is configured, `context_window` becomes the served one, so the
/// layout is sized and checked against what the server takes instead of
/// having the start of long prompts cut. A smaller window than configured
/// is warned of in the daemon's log and kept for `hearth status`.
pub async fn learn_served_window(config: &mut Config) {
    crate::model::served::remember_warning(None);
    let Some(model) = config.model.as_mut() else {
        return;
    };
    let Some(served) = crate::model::served::window(model).await else {
        return;
    };
    let configured = crate::model::window::of(model);
    if configured.is_some_and(|window| window <= served.window) {
        return;
    }
    model.context_window = Some(served.window);
    let label = format!("{}/{}", model.provider.name(), model.model);
    let Some(configured) = configured else {
        tracing::info!(
            "{label}: the {} server serves a {}-token window; requests are sized to it",
            served.server.name(),
            served.window
        );
        return;
    };
    let warning = format!(
        "{label}: the {} server serves a {}-token window, smaller than the {configured}-token \
         `context_window`; hearth sizes requests to {} tokens. To serve the whole window, {}",
        served.server.name(),
        served.window,
        served.window,
        served.server.how_to_raise(configured)
    );
    tracing::warn!("{warning}");
    crate::model::served::remember_warning(Some(warning));
}

/// A digest of the keys `[model]` and its fallbacks read now (from the
/// environment, else `secrets.env`): a reload compares it with the one the
/// models run with, so a key fixed in `secrets.env` applies without a change
/// to `config.toml`. Only the digest is kept, never the keys.
pub fn key_digest(config: &Config, home: &Home) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    let file = home.secrets_file();
    for model in config.model.iter().flat_map(ModelConfig::chain) {
        let env = model.key_env();
        digest.update(env.as_bytes());
        digest.update([0]);
        match secrets::find(&file, env) {
            Some(key) => {
                digest.update([1]);
                digest.update(key.as_bytes());
            }
            None => digest.update([0]),
        }
        digest.update([0]);
    }
    digest.finalize().into()
}

/// Opens models on `[model]`'s provider, address and key.
pub struct Models {
    /// `[model]`, or none.
    config: Option<ModelConfig>,
    /// Where keys not in the environment are found.
    secrets_file: PathBuf,
    /// Where a ChatGPT plan's sign-in is kept (`model/chatgpt/tokens.rs`).
    tokens_file: PathBuf,
    /// The variables already said to hold no key: each is said once.
    said: std::sync::Mutex<std::collections::BTreeSet<String>>,
}

impl Models {
    pub fn new(config: &Config, home: &Home) -> Models {
        Models {
            config: config.model.clone(),
            secrets_file: home.secrets_file(),
            tokens_file: crate::model::chatgpt::tokens_file(home),
            said: Default::default(),
        }
    }

    /// The model named `name` on `[model]`'s provider, or `[model]`'s own
    /// when no name is given; none when no model is configured.
    pub fn named(&self, name: Option<&String>) -> Option<Model> {
        let mut config = self.config.clone()?;
        if let Some(name) = name {
            config.model = name.clone();
        }
        Some(self.open(config))
    }

    /// The memory model of an agent whose turns run the model named `turn`
    /// (or `[model]`'s own): `[memory] model`, or the provider's small one
    /// (`config/memory.rs`); none when no model is configured.
    pub fn memory(&self, settings: &MemorySettings, turn: Option<&String>) -> Option<MemoryModel> {
        let mut config = self.config.clone()?;
        if let Some(name) = turn {
            config.model = name.clone();
        }
        let memory = settings.model_for(&config);
        Some(MemoryModel {
            model: self.open(memory.config),
            own: memory.own,
            turns: memory.fallback.map(|config| self.open(config)),
        })
    }

    /// A model of `config`, its key looked up in the environment or
    /// secrets.env.
    fn open(&self, mut config: ModelConfig) -> Model {
        config.tokens_file = Some(self.tokens_file.clone());
        Model::new(config, |env: &str| {
            let key = secrets::find(&self.secrets_file, env);
            let mut said = self
                .said
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if key.is_none() && said.insert(env.to_string()) {
                tracing::info!("no API key in ${env} or secrets.env; sending requests without one");
            }
            key
        })
    }

    /// `[model]`'s own, logged at start.
    pub fn top(&self, home: &Home) -> Option<Model> {
        let model = self.named(None);
        match &model {
            Some(model) => tracing::info!("model: {}", model.labels().join(", then ")),
            None => tracing::warn!(
                "no model is configured: add a [model] section to {} (see docs/models.md)",
                home.config_file().display()
            ),
        }
        model
    }
}
