//! `[tools]` in config.toml: what the agent's tools may do.
//!
//! Every key has a default, so an absent table is a working configuration:
//!
//! ```toml
//! [tools]
//! shell_timeout_secs = 120        # a command's time when it names none
//! shell_max_timeout_secs = 600    # the most a command may ask for
//! shell_kill_grace_secs = 2       # SIGTERM to SIGKILL on a timeout
//! shell_output_keep_bytes = 6144  # kept at each end of stdout and of stderr
//! concurrency = 4                 # calls of one response run at once
//! allow_private_network = false   # web_fetch may reach loopback and LAN hosts
//! fetch_timeout_secs = 30
//! fetch_max_bytes = 2000000       # read of a page, then stop
//! prompt_writable = false         # files may change agents/NAME/ when inside the folder
//!
//! [tools.browser]                 # the browser tools (headless Chromium), off by default
//! enabled = false
//! binary = "chromium"             # a path, or a name found on PATH
//! allow_private = []              # private addresses it may reach: "127.0.0.1:8080", "192.168.1.1"
//! idle_secs = 300                 # closed after this long unused
//! action_timeout_secs = 30        # the most one action (a load, a click) may take
//! page_memory_mb = 512            # a page's script heap
//! no_sandbox = false              # Chromium's own sandbox off (always off as root)
//! ```

use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// Seconds a shell command runs when its call names no `timeout_secs`.
    #[serde(default = "default_shell_timeout")]
    pub shell_timeout_secs: u64,
    /// The most a call's `timeout_secs` may ask for; more is capped to this.
    #[serde(default = "default_shell_max_timeout")]
    pub shell_max_timeout_secs: u64,
    /// Seconds between SIGTERM and SIGKILL when a command times out, so it
    /// may clean up; also how long output is still read after the command
    /// ended, in case something outside its group holds the pipes open.
    #[serde(default = "default_kill_grace")]
    pub shell_kill_grace_secs: u64,
    /// Bytes of stdout, and of stderr, kept at the head and again at the
    /// tail; the middle is counted and dropped while it is read, so a huge
    /// output never sits in memory. The default keeps a whole result under
    /// the log's clip (`limits.tool_output_chars`), so the clip never cuts
    /// between stdout and stderr.
    #[serde(default = "default_output_keep")]
    pub shell_output_keep_bytes: usize,
    /// Tool calls of one model response that run at once; results keep the
    /// calls' order whatever finishes first.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Lets `web_fetch` reach loopback, private, link-local and unspecified
    /// addresses (a local server, the LAN). Off by default: a page the agent
    /// reads must not be able to steer it at the owner's own network.
    #[serde(default)]
    pub allow_private_network: bool,
    /// Seconds a whole fetch (connect, redirects, body) may take.
    #[serde(default = "default_fetch_timeout")]
    pub fetch_timeout_secs: u64,
    /// Bytes of a page read before the fetch stops reading.
    #[serde(default = "default_fetch_max_bytes")]
    pub fetch_max_bytes: usize,
    /// Lets the file tools change the agent's prompt folder `agents/NAME/`
    /// when the working folder contains it (a workdir set to the home).
    #[serde(default)]
    pub prompt_writable: bool,
    /// The browser the agent drives (`[tools.browser]`).
    #[serde(default)]
    pub browser: BrowserConfig,
}

/// `[tools.browser]`: a headless Chromium the agent drives over the
/// DevTools protocol. Off unless enabled: it needs Chromium installed, and
/// a browser is a large thing to start for an agent that never browses.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BrowserConfig {
    /// Offers the `browser_*` tools.
    #[serde(default)]
    pub enabled: bool,
    /// The Chromium program: a path, or a name looked up on PATH.
    #[serde(default = "default_browser_binary")]
    pub binary: String,
    /// Private addresses the browser may reach although `[tools]
    /// allow_private_network` is off: a host (`192.168.1.1`, any port) or
    /// a host and port (`127.0.0.1:8080`), as written in URLs. The owner's
    /// router page, say, without the rest of the LAN.
    #[serde(default)]
    pub allow_private: Vec<String>,
    /// Seconds unused after which the browser is closed (its profile stays).
    #[serde(default = "default_browser_idle")]
    pub idle_secs: u64,
    /// Seconds one action may take (a page's load, a click, a snapshot);
    /// a page still busy then is stopped and said to be.
    #[serde(default = "default_browser_action_timeout")]
    pub action_timeout_secs: u64,
    /// Megabytes of script heap a page may use (V8's old space): a page
    /// that wants more is ended by Chromium, not the machine's memory.
    #[serde(default = "default_browser_page_memory")]
    pub page_memory_mb: u64,
    /// Starts Chromium without its own sandbox. Chromium refuses its
    /// sandbox to root, so as root it is always off.
    #[serde(default)]
    pub no_sandbox: bool,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        BrowserConfig {
            enabled: false,
            binary: default_browser_binary(),
            allow_private: Vec::new(),
            idle_secs: default_browser_idle(),
            action_timeout_secs: default_browser_action_timeout(),
            page_memory_mb: default_browser_page_memory(),
            no_sandbox: false,
        }
    }
}

impl BrowserConfig {
    pub fn idle(&self) -> Duration {
        Duration::from_secs(self.idle_secs.max(1))
    }

    pub fn action_timeout(&self) -> Duration {
        Duration::from_secs(self.action_timeout_secs.max(1))
    }
}

fn default_browser_binary() -> String {
    "chromium".to_string()
}

fn default_browser_idle() -> u64 {
    300
}

fn default_browser_action_timeout() -> u64 {
    30
}

fn default_browser_page_memory() -> u64 {
    512
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            shell_timeout_secs: default_shell_timeout(),
            shell_max_timeout_secs: default_shell_max_timeout(),
            shell_kill_grace_secs: default_kill_grace(),
            shell_output_keep_bytes: default_output_keep(),
            concurrency: default_concurrency(),
            allow_private_network: false,
            fetch_timeout_secs: default_fetch_timeout(),
            fetch_max_bytes: default_fetch_max_bytes(),
            prompt_writable: false,
            browser: BrowserConfig::default(),
        }
    }
}

impl ToolsConfig {
    /// The time a command gets: what it asked for, else the default, never
    /// more than the maximum nor less than a second.
    pub fn shell_timeout(&self, asked_secs: Option<u64>) -> Duration {
        let max = self.shell_max_timeout_secs.max(1);
        let secs = asked_secs.unwrap_or(self.shell_timeout_secs).clamp(1, max);
        Duration::from_secs(secs)
    }

    pub fn kill_grace(&self) -> Duration {
        Duration::from_secs(self.shell_kill_grace_secs)
    }

    /// At least one call at a time, whatever the file says.
    pub fn concurrency(&self) -> usize {
        self.concurrency.max(1)
    }

    pub fn fetch_timeout(&self) -> Duration {
        Duration::from_secs(self.fetch_timeout_secs.max(1))
    }
}

fn default_shell_timeout() -> u64 {
    120
}

fn default_shell_max_timeout() -> u64 {
    600
}

fn default_kill_grace() -> u64 {
    2
}

fn default_output_keep() -> usize {
    6 * 1024
}

fn default_concurrency() -> usize {
    4
}

fn default_fetch_timeout() -> u64 {
    30
}

fn default_fetch_max_bytes() -> usize {
    2_000_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_table_is_the_defaults() {
        let config: ToolsConfig = toml::from_str("").unwrap();
        assert_eq!(config.shell_timeout_secs, 120);
        assert_eq!(config.concurrency(), 4);
        assert!(!config.allow_private_network);
        assert!(!config.prompt_writable);
        assert!(!config.browser.enabled);
        assert_eq!(config.browser.binary, "chromium");
    }

    #[test]
    fn the_browser_table_reads_its_keys_and_refuses_unknown_ones() {
        let config: ToolsConfig = toml::from_str(
            "[browser]\nenabled = true\nallow_private = [\"127.0.0.1:8080\"]\nidle_secs = 0",
        )
        .unwrap();
        assert!(config.browser.enabled);
        assert_eq!(config.browser.allow_private, ["127.0.0.1:8080"]);
        assert_eq!(config.browser.idle(), Duration::from_secs(1));
        assert!(toml::from_str::<ToolsConfig>("[browser]\nenable = true").is_err());
    }

    #[test]
    fn unknown_keys_are_refused() {
        assert!(toml::from_str::<ToolsConfig>("shell_timeout = 3").is_err());
    }

    #[test]
    fn a_timeout_is_capped_by_the_maximum() {
        let config: ToolsConfig =
            toml::from_str("shell_timeout_secs = 5\nshell_max_timeout_secs = 10").unwrap();
        assert_eq!(config.shell_timeout(None), Duration::from_secs(5));
        assert_eq!(config.shell_timeout(Some(3600)), Duration::from_secs(10));
        assert_eq!(config.shell_timeout(Some(0)), Duration::from_secs(1));
    }
}
