//! `[[mcp]]`: the MCP servers the user runs, one table each.
//!
//! ```toml
//! [[mcp]]
//! name = "fs"
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
//!
//! [[mcp]]
//! name = "github"
//! url = "https://api.githubcopilot.com/mcp/"
//! headers = { Authorization = "Bearer ${GITHUB_TOKEN}" }
//! ```
//!
//! A server is a child process (`command`, `args`, `env`) or a streamable
//! HTTP address (`url`, `headers`), never both. `${NAME}` in an `env` value
//! or a header is read from hearthd's environment or `secrets.env` when the
//! server starts, so no secret needs to sit in config.toml; `$$` is a `$`.
//! A child gets none of hearthd's environment besides [`SAFE_ENV`] and its
//! own `env`: the daemon's API keys stay with the daemon.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// hearthd's environment variables a server's child inherits: what programs
/// need to run at all (find other programs, a home, a language, a time zone).
pub const SAFE_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR",
];

/// One `[[mcp]]` table.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// How the agent's tools name it: `mcp__NAME__TOOL`. Letters, digits,
    /// `-` and `_`, without `__`.
    pub name: String,
    /// The program of a stdio server.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables the child gets besides `SAFE_ENV`; values may name
    /// secrets as `${NAME}`.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The address of a streamable HTTP server.
    #[serde(default)]
    pub url: Option<String>,
    /// Headers sent with every HTTP request; values may name secrets as
    /// `${NAME}`.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Only these of its tools are offered (all when absent).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// These of its tools are never offered.
    #[serde(default)]
    pub exclude: Vec<String>,
    /// `"read"`: the user vouches that its tools never change anything, so
    /// none of its calls waits for approval unless `[approvals]` names it.
    /// Default: a call waits unless the server marks the tool read-only.
    #[serde(default)]
    pub trust: Trust,
    /// `true`: the user vouches for the words of the server's tool names
    /// and descriptions, which ride every request. Default: they are the
    /// server's words, and a turn that offers its tools is tainted from
    /// its start, so acting tools ask (`tools/taint.rs`).
    #[serde(default)]
    pub trust_descriptions: bool,
    /// Seconds a call (and the start: launch, handshake, tool list) may take
    /// before the server is taken as hung and restarted.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

/// How far the user trusts a server's tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trust {
    /// Its tools may change the world: a call waits for approval unless the
    /// server marks the tool read-only (`readOnlyHint`).
    #[default]
    Ask,
    /// Its tools only read: no call waits unless `[approvals]` names it.
    Read,
}

fn default_timeout() -> u64 {
    60
}

/// What is wrong with an `[[mcp]]` table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpConfigError {
    #[error("[[mcp]] name `{0}`: use letters, digits, `-` and `_` (at most 32, no `__`)")]
    Name(String),
    #[error("[[mcp]] `{0}` is used twice")]
    Twice(String),
    #[error("[[mcp]] `{0}` needs either `command` (a stdio server) or `url` (streamable HTTP), not both")]
    Transport(String),
    #[error("[[mcp]] `{name}`: `{key}` applies only to {only} servers")]
    Misplaced {
        name: String,
        key: &'static str,
        only: &'static str,
    },
    #[error("[[mcp]] `{name}`: url `{url}` must start with http:// or https://")]
    Url { name: String, url: String },
    #[error("[[agents]] `{agent}` names MCP server `{server}`, which no [[mcp]] table defines")]
    UnknownServer { agent: String, server: String },
}

/// Where a server runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport<'a> {
    Stdio {
        command: &'a str,
        args: &'a [String],
    },
    Http {
        url: &'a str,
    },
}

impl McpServerConfig {
    /// How hearth reaches it; the config was checked by [`check`].
    pub fn transport(&self) -> Transport<'_> {
        match (&self.command, &self.url) {
            (Some(command), _) => Transport::Stdio {
                command,
                args: &self.args,
            },
            (None, url) => Transport::Http {
                url: url.as_deref().unwrap_or_default(),
            },
        }
    }

    /// At least a second, whatever the file says.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.max(1))
    }

    /// Whether the agent is offered its tool `tool` (the server's own name).
    pub fn offers(&self, tool: &str) -> bool {
        let chosen = self
            .tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|name| name == tool));
        chosen && !self.exclude.iter().any(|name| name == tool)
    }
}

/// Checks every table, and that the servers `[[agents]]` name exist.
/// `agents` pairs each subagent's name with its `mcp` list.
pub fn check<'a>(
    servers: &[McpServerConfig],
    agents: impl IntoIterator<Item = (&'a str, &'a [String])>,
) -> Result<(), McpConfigError> {
    let mut seen = Vec::new();
    for server in servers {
        let name = &server.name;
        let fine = !name.is_empty()
            && name.len() <= 32
            && !name.contains("__")
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !fine {
            return Err(McpConfigError::Name(name.clone()));
        }
        if seen.contains(&name) {
            return Err(McpConfigError::Twice(name.clone()));
        }
        seen.push(name);
        let misplaced = |key, only| McpConfigError::Misplaced {
            name: name.clone(),
            key,
            only,
        };
        match (&server.command, &server.url) {
            (Some(_), None) => {
                if !server.headers.is_empty() {
                    return Err(misplaced("headers", "HTTP (`url`)"));
                }
            }
            (None, Some(url)) => {
                if !server.args.is_empty() {
                    return Err(misplaced("args", "stdio (`command`)"));
                }
                if !server.env.is_empty() {
                    return Err(misplaced("env", "stdio (`command`)"));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(McpConfigError::Url {
                        name: name.clone(),
                        url: url.clone(),
                    });
                }
            }
            _ => return Err(McpConfigError::Transport(name.clone())),
        }
    }
    for (agent, names) in agents {
        if let Some(server) = names.iter().find(|name| !seen.contains(name)) {
            return Err(McpConfigError::UnknownServer {
                agent: agent.to_string(),
                server: server.clone(),
            });
        }
    }
    Ok(())
}

/// `${NAME}` that could not be found.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExpandError {
    #[error("${{{0}}} is not set in hearthd's environment or secrets.env")]
    Missing(String),
    #[error("`{0}`: a `$` must start `${{NAME}}` or be written `$$`")]
    Syntax(String),
}

/// `text` with each `${NAME}` replaced by `lookup(NAME)` and `$$` by `$`.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(after) = after.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some((name, after)) = after
            .strip_prefix('{')
            .and_then(|inner| inner.split_once('}'))
            .filter(|(name, _)| {
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        {
            out.push_str(&lookup(name).ok_or_else(|| ExpandError::Missing(name.to_string()))?);
            rest = after;
        } else {
            return Err(ExpandError::Syntax(text.to_string()));
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<McpServerConfig> {
        #[derive(Deserialize)]
        struct File {
            mcp: Vec<McpServerConfig>,
        }
        toml::from_str::<File>(text).unwrap().mcp
    }

    #[test]
    fn a_stdio_server_in_three_lines_is_complete() {
        let servers = parse(
            "[[mcp]]\nname = \"fs\"\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/tmp\"]\n",
        );
        check(&servers, []).unwrap();
        assert_eq!(servers[0].trust, Trust::Ask);
        assert_eq!(servers[0].timeout(), Duration::from_secs(60));
        assert!(matches!(
            servers[0].transport(),
            Transport::Stdio { command: "npx", .. }
        ));
    }

    #[test]
    fn bad_tables_are_refused_with_what_to_change() {
        let refused = |text: &str| check(&parse(text), []).unwrap_err().to_string();
        assert!(refused("[[mcp]]\nname = \"a__b\"\ncommand = \"x\"\n").contains("no `__`"));
        assert!(refused("[[mcp]]\nname = \"a\"\n").contains("either `command`"));
        assert!(
            refused("[[mcp]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h\"\n")
                .contains("not both")
        );
        assert!(refused("[[mcp]]\nname = \"a\"\nurl = \"ftp://h\"\n").contains("http://"));
        assert!(
            refused("[[mcp]]\nname = \"a\"\nurl = \"http://h\"\nenv = { A = \"1\" }\n")
                .contains("`env` applies only to stdio")
        );
        assert!(refused(
            "[[mcp]]\nname = \"a\"\ncommand = \"x\"\n[[mcp]]\nname = \"a\"\ncommand = \"y\"\n"
        )
        .contains("used twice"));
        let servers = parse("[[mcp]]\nname = \"fs\"\ncommand = \"x\"\n");
        let names = vec!["gh".to_string()];
        assert_eq!(
            check(&servers, [("helper", names.as_slice())]),
            Err(McpConfigError::UnknownServer {
                agent: "helper".into(),
                server: "gh".into()
            })
        );
    }

    #[test]
    fn tools_and_exclude_choose_what_is_offered() {
        let servers = parse(
            "[[mcp]]\nname = \"a\"\ncommand = \"x\"\ntools = [\"one\", \"two\"]\nexclude = [\"two\"]\n",
        );
        assert!(servers[0].offers("one"));
        assert!(!servers[0].offers("two"));
        assert!(!servers[0].offers("three"));
    }

    #[test]
    fn secrets_are_expanded_and_a_missing_one_is_named() {
        let lookup = |name: &str| (name == "TOKEN").then(|| "s3cret".to_string());
        assert_eq!(
            expand("Bearer ${TOKEN}, $$5", &lookup).unwrap(),
            "Bearer s3cret, $5"
        );
        assert_eq!(
            expand("${NOPE}", &lookup),
            Err(ExpandError::Missing("NOPE".into()))
        );
        assert!(matches!(
            expand("$TOKEN", &lookup),
            Err(ExpandError::Syntax(_))
        ));
        assert_eq!(expand("plain", &lookup).unwrap(), "plain");
    }
}
