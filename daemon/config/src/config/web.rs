//! `[web]` in config.toml: where the browser client listens.

use serde::Deserialize;

/// `[web]`: the browser client, off unless `listen` is set.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// `host:port` the page is served on, e.g. `127.0.0.1:8787`. Loopback
    /// unless you name another address; every address needs a login.
    #[serde(default)]
    pub listen: Option<String>,
    /// The address a browser opens when a tunnel or a proxy stands in front
    /// (`https://hearth.example.ts.net`); `hearth web` prints links to it.
    /// The listen address when absent.
    #[serde(default)]
    pub url: Option<String>,
}
