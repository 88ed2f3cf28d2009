//! `[memory]`: which model writes an agent's summaries, and how much it
//! reasons — by default the provider's small model at its least reasoning
//! (`model/small.rs`).

use super::{Config, ConfigError, ModelConfig};
use crate::model::small::{least_effort, small_model};
use serde::Deserialize;
use std::path::Path;

/// `[memory]`: how summaries are written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySettings {
    /// The model that writes summaries, on the same provider, address and
    /// key as `[model]`. When absent: on the provider's own API, its small
    /// model (`gpt-5-nano` for the GPT-5 models, `claude-haiku-4-5` for
    /// Claude); with a `base_url`, or a model the table does not know, the
    /// turns' own.
    #[serde(default)]
    pub model: Option<String>,
    /// The memory model's reasoning effort (the values `model.effort`
    /// takes). When absent: the least the memory model takes on the
    /// provider's own API (`minimal` for `gpt-5-nano`, none sent for
    /// Claude), never the turns' `effort` — except that the turns' own
    /// model keeps it, since its summaries continue the turn's cached
    /// request, whose start a change of reasoning can change.
    #[serde(default)]
    pub effort: Option<String>,
}

/// The model that writes summaries for an agent whose turns run `turn`.
#[derive(Debug, Clone)]
pub struct MemoryModelConfig {
    pub config: ModelConfig,
    /// Whether it is another model than the turns' (by configured name):
    /// its calls cannot be served from the turns' cache.
    pub own: bool,
    /// When the model is the provider's small one by default (no
    /// `[memory] model`): the turns' model in the form `[memory] model`
    /// naming it would give, which writes the summaries instead when the
    /// provider refuses the small one to this key.
    pub fallback: Option<ModelConfig>,
}

impl MemorySettings {
    /// The memory model for turns on `turn` (`[model]`, or a subagent's
    /// model on its provider): its name and effort as the settings say, its
    /// provider, address, key and fallbacks the turn's.
    pub fn model_for(&self, turn: &ModelConfig) -> MemoryModelConfig {
        let own_api = turn.base_url() == turn.provider.default_base_url();
        let name = match &self.model {
            Some(name) => name.clone(),
            None if own_api => small_model(turn.provider, &turn.model)
                .map_or_else(|| turn.model.clone(), str::to_string),
            None => turn.model.clone(),
        };
        let own = name != turn.model;
        let effort = match &self.effort {
            Some(effort) => Some(effort.clone()),
            // The turns' own model continues their chain: the same effort
            // keeps the request's start the turn's (a change of reasoning
            // can change it, and Anthropic drops cached messages for it).
            None if !own => turn.effort.clone(),
            None if own_api => least_effort(turn.provider, &name).map(str::to_string),
            None => None,
        };
        let mut config = turn.clone();
        if own {
            // `thinking` corrects the table for the turns' model, not this one.
            config.thinking = None;
        }
        config.model = name;
        config.effort = effort;
        let fallback = (own && self.model.is_none()).then(|| self.turns_form(turn));
        MemoryModelConfig {
            config,
            own,
            fallback,
        }
    }

    /// The turns' model as the memory model: the same model, so the
    /// turn-end call extends the turn's chain; the settings' effort when
    /// that model takes it, else its own default.
    fn turns_form(&self, turn: &ModelConfig) -> ModelConfig {
        let mut settings = MemorySettings {
            model: Some(turn.model.clone()),
            effort: self.effort.clone(),
        };
        let config = settings.model_for(turn).config;
        let fits = |effort: &String| {
            super::check_effort(
                &config,
                Path::new("config.toml"),
                effort,
                "memory.effort",
                "model",
            )
            .is_ok()
        };
        if settings.effort.as_ref().is_none_or(fits) {
            return config;
        }
        settings.effort = None;
        settings.model_for(turn).config
    }
}

impl Config {
    /// `[model]` for turns on the model `name` (a subagent's), or as it is.
    pub fn turn_model(&self, name: Option<&str>) -> Option<ModelConfig> {
        let mut config = self.model.clone()?;
        if let Some(name) = name {
            config.model = name.to_string();
        }
        Some(config)
    }

    /// Refuses a `[memory] effort` that a memory model (the top agent's,
    /// or a subagent's) does not take, naming `memory.effort`.
    pub(super) fn check_memory(&self, path: &Path) -> Result<(), ConfigError> {
        let Some(effort) = &self.memory.effort else {
            return Ok(());
        };
        let names = std::iter::once(None).chain(self.agents.iter().map(|a| a.model.as_deref()));
        for name in names {
            let Some(turn) = self.turn_model(name) else {
                return Ok(());
            };
            // Its `max_tokens` is `[model]`'s.
            let memory = self.memory.model_for(&turn).config;
            super::check_effort(&memory, path, effort, "memory.effort", "model")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Config {
        match Config::parse(Path::new("config.toml"), text) {
            Ok(config) => config,
            Err(err) => panic!("{err}"),
        }
    }

    fn memory_of(text: &str) -> MemoryModelConfig {
        let config = parse(text);
        let turn = config.turn_model(None).unwrap();
        config.memory.model_for(&turn)
    }

    #[test]
    fn the_providers_own_api_gets_its_small_model_at_its_least_effort() {
        let memory = memory_of(
            "[model]\nprovider = \"openai\"\nmodel = \"gpt-5-mini\"\neffort = \"high\"\n",
        );
        assert_eq!(memory.config.model, "gpt-5-nano");
        assert_eq!(memory.config.effort.as_deref(), Some("minimal"));
        assert!(memory.own);
        let memory = memory_of(
            "[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\neffort = \"low\"\n\
             thinking = \"adaptive\"\n",
        );
        assert_eq!(memory.config.model, "claude-haiku-4-5");
        assert_eq!(memory.config.effort, None);
        assert_eq!(memory.config.thinking, None);
        assert!(memory.own);
    }

    #[test]
    fn a_default_small_model_falls_back_to_the_turns_own() {
        let memory = memory_of(
            "[model]\nprovider = \"openai\"\nmodel = \"gpt-5-mini\"\neffort = \"high\"\n",
        );
        let fallback = memory.fallback.unwrap();
        assert_eq!(fallback.model, "gpt-5-mini");
        // The form `[memory] model = "gpt-5-mini"` gives: the turns' effort.
        assert_eq!(fallback.effort.as_deref(), Some("high"));
        let memory = memory_of(
            "[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\neffort = \"low\"\n",
        );
        let fallback = memory.fallback.unwrap();
        assert_eq!(fallback.model, "claude-sonnet-4-5");
        assert_eq!(fallback.effort.as_deref(), Some("low"));
        // The settings' effort goes with it.
        let memory = memory_of(
            "[model]\nprovider = \"openai\"\nmodel = \"gpt-5-mini\"\n\n[memory]\neffort = \"low\"\n",
        );
        assert_eq!(memory.fallback.unwrap().effort.as_deref(), Some("low"));
        // A model the user chose is never replaced; the turns' own needs no
        // fallback.
        let chosen = memory_of(
            "[model]\nprovider = \"openai\"\nmodel = \"gpt-5-mini\"\n\n[memory]\nmodel = \"gpt-5-nano\"\n",
        );
        assert!(chosen.own && chosen.fallback.is_none());
        let local = memory_of(
            "[model]\nprovider = \"openai-chat\"\nmodel = \"gpt-5-mini\"\n\
             base_url = \"http://127.0.0.1:11434/v1\"\n",
        );
        assert!(local.fallback.is_none());
    }

    #[test]
    fn a_base_url_keeps_the_turns_model_and_its_effort() {
        let memory = memory_of(
            "[model]\nprovider = \"openai-chat\"\nmodel = \"gpt-5-mini\"\n\
             base_url = \"http://127.0.0.1:11434/v1\"\neffort = \"high\"\n",
        );
        assert_eq!(memory.config.model, "gpt-5-mini");
        assert_eq!(memory.config.effort.as_deref(), Some("high"));
        assert!(!memory.own);
        assert_eq!(memory.config.base_url(), "http://127.0.0.1:11434/v1");
    }

    #[test]
    fn the_settings_choose_the_model_and_its_effort() {
        let text = "[model]\nprovider = \"openai\"\nmodel = \"gpt-5-mini\"\neffort = \"high\"\n\
                    [[model.fallback]]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
                    [memory]\nmodel = \"gpt-5-mini\"\n";
        let memory = memory_of(text);
        assert_eq!(memory.config.model, "gpt-5-mini");
        assert_eq!(memory.config.effort.as_deref(), Some("high"));
        assert!(!memory.own);
        // The fallbacks are the turns'.
        assert_eq!(memory.config.fallback.len(), 1);
        let memory = memory_of(&format!("{text}effort = \"low\"\n"));
        assert_eq!(memory.config.effort.as_deref(), Some("low"));
        // The turns' own model keeps their reasoning, Anthropic's too.
        let memory = memory_of(
            "[model]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\neffort = \"low\"\n",
        );
        assert!(!memory.own);
        assert_eq!(memory.config.effort.as_deref(), Some("low"));
    }

    #[test]
    fn a_subagents_memory_model_follows_its_own_model() {
        let config = parse(
            "[model]\nprovider = \"openai\"\nmodel = \"gpt-4.1-mini\"\n\
             [[agents]]\nname = \"c\"\nresponsibility = \"r\"\nmodel = \"gpt-4o\"\n",
        );
        let turn = config.turn_model(Some("gpt-4o")).unwrap();
        let memory = config.memory.model_for(&turn);
        assert_eq!(memory.config.model, "gpt-4o-mini");
        assert_eq!(memory.config.effort, None);
        let top = config.turn_model(None).unwrap();
        assert_eq!(config.memory.model_for(&top).config.model, "gpt-4.1-nano");
    }

    #[test]
    fn an_effort_the_memory_model_does_not_take_names_memory_effort() {
        let text = "[model]\nprovider = \"openai\"\nmodel = \"gpt-5.1\"\n\n\
                    [memory]\neffort = \"hard\"\n";
        let said = Config::parse(Path::new("config.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(said.starts_with("config.toml: `memory.effort`"), "{said}");
        assert!(said.contains("`gpt-5-nano`"), "{said}");
        assert!(said.contains("none, minimal, low"), "{said}");
        // Claude takes no `minimal`, Haiku included.
        let text = "[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-6\"\n\n\
                    [memory]\neffort = \"minimal\"\n";
        let said = Config::parse(Path::new("c"), text).unwrap_err().to_string();
        assert!(said.contains("`memory.effort`"), "{said}");
        assert!(said.contains("`claude-haiku-4-5`"), "{said}");
        // A subagent's memory model is checked too.
        let text = "[model]\nprovider = \"openai-chat\"\nmodel = \"q\"\n\
                    base_url = \"http://127.0.0.1:1/v1\"\n\n[memory]\neffort = \"low\"\n\n\
                    [[agents]]\nname = \"c\"\nresponsibility = \"r\"\n";
        assert!(Config::parse(Path::new("c"), text).is_ok());
        let text =
            "[model]\nprovider = \"openai\"\nmodel = \"gpt-5\"\n\n[memory]\neffort = \"minimal\"\n";
        assert!(Config::parse(Path::new("c"), text).is_ok());
    }

    #[test]
    fn budgeted_thinking_of_the_memory_model_needs_room_under_max_tokens() {
        let text = "[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
                    max_tokens = 1000\n\n[memory]\neffort = \"low\"\n";
        let said = Config::parse(Path::new("c"), text).unwrap_err().to_string();
        assert!(said.contains("`model.max_tokens`"), "{said}");
        assert!(said.contains("`claude-haiku-4-5`"), "{said}");
    }
}
