//! The window a local model server actually serves, asked of the server
//! itself: a model made for 128k tokens may be run with 4k (Ollama's
//! default on a small machine), and llama.cpp splits its `-c` among its
//! `-np` slots. A request longer than the served window is refused or, on
//! some servers, cut at its start without a word; knowing the window, the
//! daemon warns and sizes the layout to it instead.
//!
//! Asked only of a server on this machine or the local network
//! ([`is_local`]), and only briefly ([`ASK_TIMEOUT`]): a server that does
//! not answer, or answers neither way, leaves the configured window as it
//! is.
//!
//! The fields read, as the servers document them:
//! - llama.cpp's server (`tools/server/README.md`, `GET /props`):
//!   `default_generation_settings.n_ctx` is the context of one slot, the
//!   window each request gets (the total `-c` divided by `-np`).
//! - Ollama (`docs.ollama.com/api/ps`, `GET /api/ps`): each running model's
//!   `context_length`, the window it was loaded with; and
//!   (`docs.ollama.com/api/show`, `POST /api/show`) `parameters`, the
//!   Modelfile's parameters as text, whose `num_ctx` line is the window the
//!   model is loaded with when nothing else asks.

use crate::model::{ModelConfig, ProviderKind};
use serde_json::Value;
use std::net::IpAddr;
use std::time::Duration;

/// How long the questions to the server may take (asked at once, at each
/// start and reload): a server on this machine or the local network
/// answers them in milliseconds, and a start waits no longer.
pub const ASK_TIMEOUT: Duration = Duration::from_millis(500);

/// Which server answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerKind {
    LlamaCpp,
    Ollama,
}

impl ServerKind {
    /// How to make the server serve a larger window, in the server's own
    /// terms.
    pub fn how_to_raise(self, window: u32) -> String {
        match self {
            ServerKind::LlamaCpp => format!(
                "start llama-server with `-c {window} -np 1` (each of its `-np` slots gets \
                 `-c` divided by their number)"
            ),
            ServerKind::Ollama => format!(
                "run Ollama with `OLLAMA_CONTEXT_LENGTH={window} ollama serve`, or set \
                 `PARAMETER num_ctx {window}` in the model's Modelfile"
            ),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ServerKind::LlamaCpp => "llama.cpp",
            ServerKind::Ollama => "Ollama",
        }
    }
}

/// The window a server serves a model with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    pub server: ServerKind,
    /// Tokens one request may hold.
    pub window: u32,
}

/// The warning of the last start whose server served less than the
/// configured window, for `hearth status`.
static WARNING: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Keeps `warning` for [`warning`]; none: the served window is not smaller
/// (asked again at a reload that changes the model).
pub fn remember_warning(warning: Option<String>) {
    *WARNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = warning;
}

/// What the start found: the served window is smaller than the configured
/// one, and what to do about it; none when it is not.
pub fn warning() -> Option<String> {
    WARNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// Whether `url` names this machine or the local network (loopback,
/// private, link-local or unique-local addresses, `localhost`): a server
/// run by the owner, whose own API may be asked about its window.
pub fn is_local(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(ip) => local_ip(ip),
        Err(_) => host == "localhost" || host.ends_with(".localhost"),
    }
}

fn local_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        IpAddr::V6(ip) => {
            ip.is_loopback()
                || (ip.segments()[0] & 0xfe00) == 0xfc00
                || (ip.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

/// The servers that answered [`window`] as llama.cpp or Ollama, by root.
static RECOGNISED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Whether `config` speaks Chat Completions to a local address: a server
/// whose own API may be asked about its window.
fn at_local_address(config: &ModelConfig) -> bool {
    config.provider == ProviderKind::OpenAiChat
        && config.base_url.is_some()
        && is_local(config.base_url())
}

/// Whether `config`'s model is served by a llama.cpp or Ollama server of
/// the owner's, as it answered at start ([`window`]): a server with a few
/// slots, each caching one prompt, where summaries run one at a time.
pub fn is_local_server(config: &ModelConfig) -> bool {
    at_local_address(config)
        && RECOGNISED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&server_root(config.base_url()))
}

fn recognise(root: &str) {
    let mut known = RECOGNISED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !known.iter().any(|known| known == root) {
        known.push(root.to_string());
    }
}

/// Asks the server `config` names which window it serves the model with;
/// none when it is not at a local address, or says nothing either server
/// says. A server that answers as llama.cpp or Ollama is remembered as one
/// ([`is_local_server`]).
pub async fn window(config: &ModelConfig) -> Option<Served> {
    if !at_local_address(config) {
        return None;
    }
    let root = server_root(config.base_url());
    let client = reqwest::Client::builder()
        .timeout(ASK_TIMEOUT)
        .build()
        .ok()?;
    // The three questions at once: a start waits for the slowest answer,
    // never for the sum of three timeouts.
    let request = serde_json::json!({ "model": config.model });
    let (props_url, ps_url, show_url) = (
        format!("{root}/props"),
        format!("{root}/api/ps"),
        format!("{root}/api/show"),
    );
    let (props, running, show) = tokio::join!(
        get(&client, &props_url, None),
        get(&client, &ps_url, None),
        get(&client, &show_url, Some(request)),
    );
    if let Some(window) = props.as_ref().and_then(llama_cpp_window) {
        recognise(&root);
        return Some(Served {
            server: ServerKind::LlamaCpp,
            window,
        });
    }
    if running.as_ref().is_some_and(|ps| ps["models"].is_array()) {
        recognise(&root);
    }
    if let Some(window) = running
        .as_ref()
        .and_then(|ps| ollama_running_window(ps, &config.model))
    {
        return Some(Served {
            server: ServerKind::Ollama,
            window,
        });
    }
    let show = show?;
    ollama_parameter_window(&show).map(|window| Served {
        server: ServerKind::Ollama,
        window,
    })
}

/// The server's own root: the Chat Completions address without `/v1`.
pub fn server_root(base_url: &str) -> String {
    let url = base_url.trim_end_matches('/');
    url.strip_suffix("/v1").unwrap_or(url).to_string()
}

/// One question, its answer as JSON; none for any failure (the server is
/// another kind, or is down: the configured window stands).
async fn get(client: &reqwest::Client, url: &str, body: Option<Value>) -> Option<Value> {
    let request = match body {
        Some(body) => client.post(url).json(&body),
        None => client.get(url),
    };
    let response = request.send().await.ok()?;
    if !response.status().is_success() {
        return None;
    }
    serde_json::from_slice(&response.bytes().await.ok()?).ok()
}

/// llama.cpp's `/props`: one slot's context.
fn llama_cpp_window(props: &Value) -> Option<u32> {
    number(&props["default_generation_settings"]["n_ctx"])
}

/// Ollama's `/api/ps`: the context the model named `model` runs with, when
/// it is loaded (`qwen3` is `qwen3:latest`).
fn ollama_running_window(ps: &Value, model: &str) -> Option<u32> {
    let full = |name: &str| {
        if name.contains(':') {
            name.to_string()
        } else {
            format!("{name}:latest")
        }
    };
    ps["models"].as_array()?.iter().find_map(|running| {
        let name = running["model"].as_str().or(running["name"].as_str())?;
        (full(name) == full(model))
            .then(|| number(&running["context_length"]))
            .flatten()
    })
}

/// Ollama's `/api/show`: the `num_ctx` line of the model's parameters.
fn ollama_parameter_window(show: &Value) -> Option<u32> {
    show["parameters"].as_str()?.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some("num_ctx"))
            .then(|| words.next()?.parse().ok())
            .flatten()
    })
}

fn number(value: &Value) -> Option<u32> {
    value.as_u64().and_then(|n| u32::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn local_addresses_are_this_machine_and_the_local_network() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://192.168.1.20:8080/v1",
            "http://10.0.0.5/v1",
            "http://[::1]:8080/v1",
        ] {
            assert!(is_local(url), "{url}");
        }
        for url in [
            "https://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "http://8.8.8.8/v1",
            "not a url",
        ] {
            assert!(!is_local(url), "{url}");
        }
    }

    #[test]
    fn llama_cpp_serves_one_slots_context() {
        // `-c 16384 -np 4`: the total is split among the slots.
        let props = json!({
            "default_generation_settings": {"n_ctx": 4096, "params": {}},
            "total_slots": 4,
            "model_path": "model.gguf",
        });
        assert_eq!(llama_cpp_window(&props), Some(4096));
        assert_eq!(llama_cpp_window(&json!({"models": []})), None);
    }

    #[test]
    fn ollama_serves_the_running_context_else_the_parameters_num_ctx() {
        let ps = json!({"models": [
            {"name": "qwen3:8b", "model": "qwen3:8b", "size": 1, "context_length": 4096},
            {"name": "llama3.2:latest", "model": "llama3.2:latest", "context_length": 8192},
        ]});
        assert_eq!(ollama_running_window(&ps, "qwen3:8b"), Some(4096));
        assert_eq!(ollama_running_window(&ps, "llama3.2"), Some(8192));
        assert_eq!(ollama_running_window(&ps, "phi4"), None);
        let show = json!({"parameters": "stop \"<|im_end|>\"\nnum_ctx 16384\ntemperature 0.6"});
        assert_eq!(ollama_parameter_window(&show), Some(16_384));
        assert_eq!(ollama_parameter_window(&json!({"model_info": {}})), None);
    }

    #[test]
    fn the_server_root_drops_v1() {
        assert_eq!(
            server_root("http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080"
        );
        assert_eq!(server_root("http://h:1"), "http://h:1");
    }
}
