//! The daemon's configuration: `config.toml` in the home folder.
//!
//! A file that does not parse, or names an unknown provider, is an error at
//! start that names the file, the line and what is wrong. A missing file, or a
//! file without `[model]`, is fine: the daemon starts and each turn says how
//! to configure a model.

use serde::Deserialize;
use std::path::{Path, PathBuf};

pub mod mcp;
mod memory;
pub mod search;
pub mod tools;
mod transcription;
mod web;

use crate::model::{ModelConfig, ProviderKind};
pub use memory::MemorySettings;
pub use transcription::TranscriptionConfig;
pub use web::WebConfig;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} line {line}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A value that parses but that the service it is for would refuse.
    #[error("{path}: `{key}` {message}")]
    Invalid {
        path: PathBuf,
        /// Where the value is, as a TOML path (`model.fallback[0].effort`).
        key: String,
        message: String,
    },
}

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The model that runs turns; none configured means every turn fails with
    /// an `error` event saying how to configure one.
    #[serde(default)]
    pub model: Option<ModelConfig>,
    #[serde(default)]
    pub agent: AgentConfig,
    #[serde(default)]
    pub limits: Limits,
    /// Spending limits over all requests (`[budget] daily_usd`, `monthly_usd`).
    #[serde(default)]
    pub budget: crate::usage::Budget,
    /// Prices per model (`[prices."model-name"]`, USD per million tokens),
    /// over the built-in table.
    #[serde(default)]
    pub prices: std::collections::BTreeMap<String, crate::usage::PriceConfig>,
    /// What the tools may do (`[tools]`).
    #[serde(default)]
    pub tools: tools::ToolsConfig,
    /// Which tool calls wait for a person's approval (`[approvals]`).
    #[serde(default)]
    pub approvals: crate::approvals::ApprovalsConfig,
    /// The Telegram bridge's table, read by the bridge itself; when present
    /// the daemon starts the bridge.
    #[serde(default)]
    pub telegram: Option<toml::Table>,
    /// The WhatsApp bridge's table, likewise.
    #[serde(default)]
    pub whatsapp: Option<toml::Table>,
    /// The Signal bridge's table, likewise.
    #[serde(default)]
    pub signal: Option<toml::Table>,
    /// The email bridge's table, likewise.
    #[serde(default)]
    pub email: Option<toml::Table>,
    /// The Discord bridge's table, likewise.
    #[serde(default)]
    pub discord: Option<toml::Table>,
    /// The Matrix bridge's table, likewise.
    #[serde(default)]
    pub matrix: Option<toml::Table>,
    /// The memory's compactor (`[memory]`).
    #[serde(default)]
    pub memory: MemorySettings,
    /// Network listeners besides the Unix socket (`[listen]`).
    #[serde(default)]
    pub listen: ListenConfig,
    /// The top agent's subagents (`[[agents]]`).
    #[serde(default)]
    pub agents: Vec<SubagentConfig>,
    /// The MCP servers whose tools the agents get (`[[mcp]]`).
    #[serde(default)]
    pub mcp: Vec<mcp::McpServerConfig>,
    /// The browser client (`[web]`); off unless it names `listen`.
    #[serde(default)]
    pub web: WebConfig,
    /// Where voice notes are transcribed (`[transcription]`); without it a
    /// voice note's message says it could not be.
    #[serde(default)]
    pub transcription: Option<TranscriptionConfig>,
    /// The heartbeat (`[heartbeat]`); off without it.
    #[serde(default)]
    pub heartbeat: Option<crate::heartbeat::HeartbeatConfig>,
    /// Where `web_search` searches (`[search]`); without it there is none.
    #[serde(default)]
    pub search: Option<search::SearchConfig>,
}

/// `[listen]`: an optional TCP listener for clients on other machines. It
/// requires a token; without one the daemon refuses to start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenConfig {
    /// `host:port`, e.g. `127.0.0.1:7420`.
    #[serde(default)]
    pub tcp: Option<String>,
    /// The variable (or `secrets.env` entry) holding the token.
    #[serde(default = "default_token_env")]
    pub token_env: String,
}

impl Default for ListenConfig {
    fn default() -> Self {
        ListenConfig {
            tcp: None,
            token_env: default_token_env(),
        }
    }
}

fn default_token_env() -> String {
    "HEARTH_TOKEN".to_string()
}

/// One `[[agents]]` entry: a subagent of the top agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubagentConfig {
    /// Its name: letters, digits, `-` and `_`; its prompt is `agents/NAME/prompt.md`.
    pub name: String,
    /// What it is for, shown to the parent in every turn's state.
    pub responsibility: String,
    /// A model name on `[model]`'s provider; the parent's model when absent.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default = "default_layout")]
    pub layout: String,
    /// Its tools' folder; `HOME/agents/NAME/work` when absent.
    #[serde(default)]
    pub workdir: Option<PathBuf>,
    /// The `[[mcp]]` servers whose tools it gets (none by default; the top
    /// agent gets every server).
    #[serde(default)]
    pub mcp: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The top agent's name; its prompt is `agents/NAME/prompt.md`.
    #[serde(default = "default_agent_name")]
    pub name: String,
    /// The layout that sizes its memory (a file in `layouts/`).
    #[serde(default = "default_layout")]
    pub layout: String,
    /// The folder its tools work in; `HOME/agents/NAME/work` when absent.
    #[serde(default)]
    pub workdir: Option<PathBuf>,
    /// The time zone of schedules and of the time the agent is told (an IANA
    /// name such as `Europe/Paris`); the system's when absent.
    #[serde(default)]
    pub timezone: Option<String>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            name: default_agent_name(),
            layout: default_layout(),
            workdir: None,
            timezone: None,
        }
    }
}

fn default_agent_name() -> String {
    "hearth".to_string()
}

fn default_layout() -> String {
    "default".to_string()
}

/// Bounds on what one turn may do.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Model requests in one turn before it ends with a note.
    #[serde(default = "default_max_rounds")]
    pub max_rounds: u32,
    /// Characters of tool output kept in the log (head and tail).
    #[serde(default = "default_tool_output")]
    pub tool_output_chars: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rounds: default_max_rounds(),
            tool_output_chars: default_tool_output(),
        }
    }
}

fn default_max_rounds() -> u32 {
    50
}

fn default_tool_output() -> usize {
    30_000
}

impl Config {
    /// Reads `path`; a missing file is the default configuration.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Config::parse(path, &text),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(source) => Err(ConfigError::Read {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    pub fn parse(path: &Path, text: &str) -> Result<Config, ConfigError> {
        let config: Config = toml::from_str(text).map_err(|err| {
            let line = crate::toml_error::toml_error_line(text, &err);
            ConfigError::Parse {
                path: path.to_path_buf(),
                line,
                message: err.message().trim().to_string(),
            }
        })?;
        if let Some(model) = &config.model {
            check_model(model, path, "model")?;
        }
        config.check_memory(path)?;
        if let Some(Err(err)) = config.heartbeat.as_ref().map(|beat| beat.durations()) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "heartbeat".into(),
                message: format!("is unusable: {err}"),
            });
        }
        if let Some(search) = &config.search {
            search.check().map_err(|err| ConfigError::Invalid {
                path: path.to_path_buf(),
                key: "search".into(),
                message: format!("is unusable: {err}"),
            })?;
        }
        Ok(config)
    }
}

/// Refuses what the provider would refuse on every request: an effort
/// it does not define, or (for Anthropic's budgeted thinking) a
/// `max_tokens` with no room for the smallest budget. `key` is this
/// model's place in the file; fallbacks are checked too.
pub(crate) fn check_model(model: &ModelConfig, path: &Path, key: &str) -> Result<(), ConfigError> {
    if let Some(effort) = &model.effort {
        check_effort(model, path, effort, &format!("{key}.effort"), key)?;
    }
    for (position, fallback) in model.fallback.iter().enumerate() {
        check_model(fallback, path, &format!("{key}.fallback[{position}]"))?;
    }
    Ok(())
}

/// Refuses `effort` on this model as the provider would: `effort_key`
/// names where the effort is, `key` where this model's `max_tokens` is.
pub(crate) fn check_effort(
    model: &ModelConfig,
    path: &Path,
    effort: &str,
    effort_key: &str,
    key: &str,
) -> Result<(), ConfigError> {
    let invalid = |key: String, message: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        key,
        message,
    };
    let allowed = crate::model::thinking::efforts(model.provider, &model.model);
    if !allowed.contains(&effort) {
        return Err(invalid(
            effort_key.to_string(),
            format!(
                "is \"{effort}\", which {} `{}` does not take; use one of {}",
                model.provider.name(),
                model.model,
                allowed.join(", ")
            ),
        ));
    }
    let form = crate::model::thinking::form(&model.model, model.thinking);
    let budgeted =
        model.provider == ProviderKind::Anthropic && form == crate::model::ThinkingForm::Enabled;
    let max_tokens = model.max_tokens_or_default();
    if budgeted && crate::model::thinking::budget(effort, max_tokens).is_none() {
        return Err(invalid(
            format!("{key}.max_tokens"),
            format!(
                "is {max_tokens}, which leaves no room for thinking: `{}` thinks with a \
                 budget of at least {} tokens below max_tokens; raise max_tokens or remove effort",
                model.model,
                crate::model::thinking::MIN_BUDGET
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_provider_names_the_line_and_the_choices() {
        let text = "[agent]\nname = \"x\"\n\n[model]\nprovider = \"opena\"\nmodel = \"m\"\n";
        let err = Config::parse(Path::new("config.toml"), text).unwrap_err();
        let said = err.to_string();
        assert!(said.starts_with("config.toml line 5:"), "{said}");
        assert!(said.contains("openai-chat"), "{said}");
    }

    #[test]
    fn a_compatible_servers_key_is_never_openais_by_default() {
        let key_env = |lines: &str| {
            let text = format!("[model]\nmodel = \"m\"\n{lines}");
            let config = Config::parse(Path::new("c"), &text).unwrap();
            config.model.unwrap().key_env().to_string()
        };
        let other = "provider = \"openai-chat\"\nbase_url = \"http://127.0.0.1:8080/v1\"\n";
        assert_eq!(key_env(other), crate::model::COMPATIBLE_KEY_ENV);
        assert_eq!(
            key_env(&format!("{other}api_key_env = \"OPENROUTER_API_KEY\"\n")),
            "OPENROUTER_API_KEY"
        );
        assert_eq!(key_env("provider = \"openai-chat\"\n"), "OPENAI_API_KEY");
        assert_eq!(key_env("provider = \"openai\"\n"), "OPENAI_API_KEY");
    }

    #[test]
    fn empty_file_has_no_model() {
        let config = Config::parse(Path::new("c"), "").unwrap();
        assert!(config.model.is_none());
        assert_eq!(config.agent.name, "hearth");
    }

    #[test]
    fn model_section_reads() {
        let text = "[model]\nprovider = \"openai-chat\"\nmodel = \"gpt-5-mini\"\nbase_url = \"http://127.0.0.1:11434/v1/\"\neffort = \"low\"\n";
        let config = Config::parse(Path::new("c"), text).unwrap();
        let model = config.model.unwrap();
        assert_eq!(model.provider, ProviderKind::OpenAiChat);
        assert_eq!(model.base_url(), "http://127.0.0.1:11434/v1");
        assert!(model.stream);
        assert_eq!(model.max_retries, 3);
        assert!(model.fallback.is_empty());
    }

    #[test]
    fn anthropic_has_its_own_address_and_key_variable() {
        let text = "[model]\nprovider = \"anthropic\"\nmodel = \"claude-x\"\n";
        let model = Config::parse(Path::new("c"), text).unwrap().model.unwrap();
        assert_eq!(model.provider, ProviderKind::Anthropic);
        assert_eq!(model.base_url(), "https://api.anthropic.com/v1");
        assert_eq!(model.key_env(), "ANTHROPIC_API_KEY");
        assert_eq!(model.max_tokens_or_default(), 8192);
    }

    #[test]
    fn fallbacks_are_tried_in_order_after_the_model() {
        let text = "[model]\nprovider = \"openai\"\nmodel = \"a\"\nmax_retries = 1\n\n\
                    [[model.fallback]]\nprovider = \"anthropic\"\nmodel = \"b\"\n\n\
                    [[model.fallback]]\nprovider = \"openai-chat\"\nmodel = \"c\"\n\
                    base_url = \"http://127.0.0.1:11434/v1\"\n";
        let model = Config::parse(Path::new("c"), text).unwrap().model.unwrap();
        let chain = model.chain();
        let names: Vec<&str> = chain.iter().map(|m| m.model.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(chain.iter().all(|m| m.fallback.is_empty()));
        assert_eq!(chain[0].max_retries, 1);
        assert_eq!(chain[1].key_env(), "ANTHROPIC_API_KEY");
    }

    #[test]
    fn budget_and_prices_read() {
        let text = "[budget]\ndaily_usd = 2.5\n\n[prices.\"qwen3:8b\"]\ninput = 0.1\noutput = 0.4\n\n\
                    [prices.\"gpt-5\"]\ninput = 1.0\ncached_input = 0.1\ncache_write = 1.0\noutput = 8.0\n";
        let config = Config::parse(Path::new("c"), text).unwrap();
        assert_eq!(config.budget.daily_usd, Some(2.5));
        assert_eq!(config.budget.monthly_usd, None);
        assert_eq!(config.prices["qwen3:8b"].output, 0.4);
        assert_eq!(config.prices["gpt-5"].cached_input, Some(0.1));
        let said = Config::parse(Path::new("c"), "[budget]\ndaily = 1.0\n")
            .unwrap_err()
            .to_string();
        assert!(said.starts_with("c line 2:"), "{said}");
    }

    #[test]
    fn an_effort_the_provider_does_not_take_names_the_key_and_the_values() {
        let text = "[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\neffort = \"minimal\"\n";
        let said = Config::parse(Path::new("config.toml"), text)
            .unwrap_err()
            .to_string();
        assert!(said.starts_with("config.toml: `model.effort`"), "{said}");
        assert!(said.contains("low, medium, high, xhigh, max"), "{said}");
        let text = "[model]\nprovider = \"openai\"\nmodel = \"gpt-5\"\n\n\
                    [[model.fallback]]\nprovider = \"openai-chat\"\nmodel = \"q\"\neffort = \"hard\"\n";
        let said = Config::parse(Path::new("c"), text).unwrap_err().to_string();
        assert!(said.contains("`model.fallback[0].effort`"), "{said}");
        assert!(said.contains("none, minimal, low"), "{said}");
        let text = "[model]\nprovider = \"openai\"\nmodel = \"gpt-5\"\neffort = \"minimal\"\n";
        assert!(Config::parse(Path::new("c"), text).is_ok());
    }

    #[test]
    fn budgeted_thinking_needs_room_under_max_tokens() {
        let text = "[model]\nprovider = \"anthropic\"\nmodel = \"claude-haiku-4-5\"\n\
                    max_tokens = 1000\neffort = \"low\"\n";
        let said = Config::parse(Path::new("c"), text).unwrap_err().to_string();
        assert!(said.contains("`model.max_tokens`"), "{said}");
        let adaptive = text.replace("claude-haiku-4-5", "claude-sonnet-4-6");
        assert!(Config::parse(Path::new("c"), &adaptive).is_ok());
    }

    #[test]
    fn a_misspelt_fallback_field_names_its_line() {
        let text = "[model]\nprovider = \"openai\"\nmodel = \"a\"\n\n\
                    [[model.fallback]]\nprovider = \"anthropic\"\nmodle = \"b\"\n";
        let said = Config::parse(Path::new("c"), text).unwrap_err().to_string();
        assert!(said.starts_with("c line 7:"), "{said}");
    }
}

#[cfg(test)]
mod fuzz {
    //! Property tests: no text makes `Config::parse` panic, and every
    //! refusal names a line of the file.
    use super::*;
    use proptest::prelude::*;

    /// Lines a config file is made of, right and wrong, and some noise.
    fn line() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("[model]".to_string()),
            Just("[[model.fallback]]".to_string()),
            Just("[agent]".to_string()),
            Just("[limits]".to_string()),
            Just("[budget]".to_string()),
            Just("[[agents]]".to_string()),
            Just("provider = \"openai-chat\"".to_string()),
            Just("model = \"m\"".to_string()),
            Just("timeout_secs = 5".to_string()),
            Just("max_rounds = -1".to_string()),
            Just("daily_usd = 2.5".to_string()),
            Just("name = \"x\"".to_string()),
            Just("responsibility = \"y\"".to_string()),
            "[a-z_]{1,12} = (\"[^\"\\\\\n]{0,8}\"|[0-9]{1,3}|true|\\[\\]|\\{\\})",
            "[\\[\\]=\"a-zé✓ .#0-9]{0,16}",
            any::<String>(),
        ]
    }

    fn file() -> impl Strategy<Value = String> {
        proptest::collection::vec(line(), 0..10).prop_map(|lines| lines.join("\n"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_text_parses_or_names_a_line(text in file()) {
            match Config::parse(Path::new("config.toml"), &text) {
                Ok(_) => {}
                Err(ConfigError::Parse { line, message, .. }) => {
                    let lines = text.split('\n').count();
                    prop_assert!(line >= 1 && line <= lines, "line {} of {}: {}", line, lines, message);
                    prop_assert!(!message.is_empty());
                }
                Err(ConfigError::Invalid { key, .. }) => prop_assert!(key.starts_with("model")),
                Err(other) => panic!("parsing reads no file: {other}"),
            }
        }
    }
}

/// Whether `zone` names a time zone of the IANA database installed here:
/// a relative name of letters, digits, `_`, `-`, `+` and `/` (no `..`, no
/// absolute path) whose file in /usr/share/zoneinfo is a compiled zone
/// (it starts with `TZif`). A name that merely leads to some file, such as
/// `../../etc/passwd`, is not a zone.
pub fn is_iana_zone(zone: &str) -> bool {
    let well_formed = !zone.is_empty()
        && zone.len() <= 64
        && !zone.starts_with('/')
        && zone
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
        && zone
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '/'));
    if !well_formed {
        return false;
    }
    let mut magic = [0u8; 4];
    std::fs::File::open(std::path::Path::new("/usr/share/zoneinfo").join(zone))
        .and_then(|mut file| std::io::Read::read_exact(&mut file, &mut magic))
        .is_ok_and(|()| &magic == b"TZif")
}

#[cfg(test)]
mod zone_tests {
    use super::is_iana_zone;

    #[test]
    fn only_iana_zone_names_are_time_zones() {
        if std::path::Path::new("/usr/share/zoneinfo/Europe/Paris").exists() {
            assert!(is_iana_zone("Europe/Paris"));
            assert!(is_iana_zone("UTC"));
        }
        for bad in [
            "../../etc/passwd",
            "/etc/passwd",
            "Europe/../../etc/passwd",
            "",
            "Mars/Olympus",
            "zone.tab",
            "Europe",
        ] {
            assert!(!is_iana_zone(bad), "{bad}");
        }
    }
}
