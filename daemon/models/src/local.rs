//! Local models: with no `[model]` configured, the daemon asks a local
//! Ollama server which models it has (`GET /api/tags`) and uses the first one
//! through Ollama's OpenAI-compatible Chat Completions endpoint.
//!
//! The server probed is `http://127.0.0.1:11434`, or the address in
//! `HEARTH_OLLAMA_URL`; `HEARTH_OLLAMA_URL=off` (or empty) skips the probe.
//! `hearth setup` lists its models and reads a model's context length
//! (`POST /api/show`) through [`list`] and [`context_length`].
//! A server that does not answer within [`PROBE_TIMEOUT`] counts as absent,
//! so a start without one is not held up.

use crate::model::ModelConfig;
use serde::Deserialize;
use std::time::Duration;

/// The environment variable that names the Ollama server to probe.
pub const OLLAMA_URL_ENV: &str = "HEARTH_OLLAMA_URL";

/// Where Ollama listens by default.
pub const DEFAULT_OLLAMA_URL: &str = "http://127.0.0.1:11434";

/// How long the probe waits for an answer.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long `hearth setup` waits for the server's model list and details
/// (a server that is loading a model answers slowly).
const SHOW_TIMEOUT: Duration = Duration::from_secs(20);

/// A model found on a local server.
#[derive(Debug, Clone)]
pub struct LocalModel {
    /// A `[model]` for it: `openai-chat` at the server's `/v1`.
    pub config: ModelConfig,
    /// What the daemon logs as a note at start.
    pub note: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("no answer from {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("{url} answered, but not with Ollama's model list: {message}")]
    NotOllama { url: String, message: String },
}

/// `GET /api/tags`, as far as it is read.
#[derive(Debug, Deserialize)]
struct Tags {
    #[serde(default)]
    models: Vec<Tag>,
}

#[derive(Debug, Deserialize)]
struct Tag {
    name: String,
}

/// The server to probe: `HEARTH_OLLAMA_URL`, or the default; none when the
/// variable is `off` or empty.
pub fn probe_url() -> Option<String> {
    match std::env::var(OLLAMA_URL_ENV) {
        Ok(value) if value.trim().is_empty() || value.trim() == "off" => None,
        Ok(value) => Some(value.trim().trim_end_matches('/').to_string()),
        Err(_) => Some(DEFAULT_OLLAMA_URL.to_string()),
    }
}

/// Looks for a local Ollama server with a model; none when the probe is
/// off, nothing answers, or the server has no model.
pub async fn detect() -> Option<LocalModel> {
    let url = probe_url()?;
    match probe(&url).await {
        Ok(Some(name)) => {
            let config = model_config(&url, &name)?;
            let note = format!(
                "no [model] is configured: using the local Ollama model `{name}` at {}; \
                 add a [model] section to config.toml to choose another",
                config.base_url()
            );
            Some(LocalModel { config, note })
        }
        Ok(None) => {
            tracing::info!("Ollama at {url} has no models (`ollama pull` one to use it)");
            None
        }
        Err(err) => {
            tracing::debug!("no local model: {err}");
            None
        }
    }
}

/// Asks the Ollama server at `url` for its models; returns the first one
/// that can chat (embedding models are passed over), if any.
pub async fn probe(url: &str) -> Result<Option<String>, ProbeError> {
    let unreachable = |err: reqwest::Error| ProbeError::Unreachable {
        url: url.to_string(),
        message: err.to_string(),
    };
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .build()
        .map_err(unreachable)?;
    let response = client
        .get(format!("{url}/api/tags"))
        .send()
        .await
        .map_err(unreachable)?;
    let not_ollama = |message: String| ProbeError::NotOllama {
        url: url.to_string(),
        message,
    };
    if !response.status().is_success() {
        return Err(not_ollama(format!("HTTP {}", response.status())));
    }
    let body = response.bytes().await.map_err(unreachable)?;
    let tags: Tags = serde_json::from_slice(&body).map_err(|err| not_ollama(err.to_string()))?;
    Ok(first_chat_model(&tags))
}

fn first_chat_model(tags: &Tags) -> Option<String> {
    chat_models(tags).into_iter().next()
}

/// The models of a `GET /api/tags` answer that can chat (embedding models
/// are passed over), in the server's order.
fn chat_models(tags: &Tags) -> Vec<String> {
    tags.models
        .iter()
        .map(|tag| tag.name.trim())
        .filter(|name| !name.is_empty() && !name.contains("embed"))
        .map(str::to_string)
        .collect()
}

/// Every model the Ollama server at `url` has that can chat, for a person
/// to choose from (`hearth setup`).
pub async fn list(url: &str) -> Result<Vec<String>, ProbeError> {
    let body = get_json(url, reqwest::Method::GET, "/api/tags", None).await?;
    let tags: Tags = serde_json::from_value(body).map_err(|err| ProbeError::NotOllama {
        url: url.to_string(),
        message: err.to_string(),
    })?;
    Ok(chat_models(&tags))
}

/// The context length model `name` was made for, as the Ollama server at
/// `url` says in `POST /api/show` (`model_info`, the key that ends in
/// `.context_length`); none when it does not say. The server may run it
/// with a smaller window (its `OLLAMA_CONTEXT_LENGTH`).
pub async fn context_length(url: &str, name: &str) -> Result<Option<u32>, ProbeError> {
    let request = serde_json::json!({ "model": name });
    let body = get_json(url, reqwest::Method::POST, "/api/show", Some(request)).await?;
    Ok(context_length_in(&body))
}

/// The `model_info.*.context_length` of an `/api/show` answer.
fn context_length_in(show: &serde_json::Value) -> Option<u32> {
    show.get("model_info")?
        .as_object()?
        .iter()
        .find(|(key, _)| key.ends_with(".context_length"))
        .and_then(|(_, value)| value.as_u64())
        .and_then(|length| u32::try_from(length).ok())
}

/// One call to the server's own API, its answer as JSON.
async fn get_json(
    url: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> Result<serde_json::Value, ProbeError> {
    let unreachable = |err: reqwest::Error| ProbeError::Unreachable {
        url: url.to_string(),
        message: err.without_url().to_string(),
    };
    let client = reqwest::Client::builder()
        .timeout(SHOW_TIMEOUT)
        .build()
        .map_err(unreachable)?;
    let mut request = client.request(method, format!("{url}{path}"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.map_err(unreachable)?;
    let not_ollama = |message: String| ProbeError::NotOllama {
        url: url.to_string(),
        message,
    };
    if !response.status().is_success() {
        return Err(not_ollama(format!("{path}: HTTP {}", response.status())));
    }
    let bytes = response.bytes().await.map_err(unreachable)?;
    serde_json::from_slice(&bytes).map_err(|err| not_ollama(format!("{path}: {err}")))
}

/// `[model]` for `name` on the Ollama server at `url`: Chat Completions at
/// `url/v1`, with the other settings at their defaults. The key variable is
/// one of Ollama's own, so no cloud key is ever sent to it.
pub fn model_config(url: &str, name: &str) -> Option<ModelConfig> {
    let mut table = toml::Table::new();
    table.insert("provider".into(), "openai-chat".into());
    table.insert("model".into(), name.into());
    table.insert("base_url".into(), format!("{url}/v1").into());
    table.insert("api_key_env".into(), "OLLAMA_API_KEY".into());
    // Built from the same defaults as a `[model]` section; these fields
    // always make a valid one.
    table.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProviderKind;

    #[test]
    fn the_first_chat_model_is_chosen() {
        let tags: Tags = serde_json::from_str(
            r#"{"models":[{"name":"nomic-embed-text:latest","size":1},{"name":"qwen3:8b"},{"name":"llama3.2:1b"}]}"#,
        )
        .unwrap();
        assert_eq!(first_chat_model(&tags).as_deref(), Some("qwen3:8b"));
        let empty: Tags = serde_json::from_str(r#"{"models":[]}"#).unwrap();
        assert_eq!(first_chat_model(&empty), None);
    }

    #[test]
    fn the_context_length_is_read_from_model_info() {
        let show = serde_json::json!({
            "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 40960}
        });
        assert_eq!(context_length_in(&show), Some(40_960));
        assert_eq!(
            context_length_in(&serde_json::json!({"model_info": {}})),
            None
        );
        assert_eq!(context_length_in(&serde_json::json!({})), None);
    }

    #[test]
    fn a_local_model_speaks_chat_completions_at_v1_without_a_cloud_key() {
        let config = model_config("http://127.0.0.1:11434", "qwen3:8b").unwrap();
        assert_eq!(config.provider, ProviderKind::OpenAiChat);
        assert_eq!(config.model, "qwen3:8b");
        assert_eq!(config.base_url(), "http://127.0.0.1:11434/v1");
        assert_eq!(config.key_env(), "OLLAMA_API_KEY");
        assert!(config.stream);
    }
}
