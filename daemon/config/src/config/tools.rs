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
