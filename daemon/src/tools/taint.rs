//! A turn that has read something from outside the owner is tainted until
//! it ends; while it is, the tools that act on the world need a person's
//! yes, and the request names what tainted the turn.
//!
//! What taints: any call whose outcome carries outside words (its
//! provenance, `registry.rs`): a page `web_fetch` read, a result of an MCP
//! server (its tools' output comes from outside, whatever the server is), a
//! page of a document someone sent (`read_attachment`), a skill the owner
//! did not install (`read_skill`), a shell command
//! that could reach the network, a file changed while outside words could
//! come into it (`exposure.rs`). A turn also starts tainted when it takes
//! an untrusted message, offers an MCP server's tools (their descriptions
//! are the server's words) or shows a pinned fact remembered in a tainted
//! turn (`turn.rs`).
//!
//! What acts: each tool says ([`Tool::acts`](super::tool::Tool::acts)),
//! and a tool that does not say it only reads acts, so a new tool fails
//! closed: `shell`, the file writers, `whatsapp_send`, and the tools that
//! store words for later (`schedule_add`, `subagent_start`, `remember`,
//! whose stored words also keep the taint, see `provenance.rs`).
//! `web_fetch` acts when it goes to a host the turn has not fetched from
//! yet (a page could tell the model to send what it knows to another
//! address); an MCP tool acts unless its server is marked `trust =
//! "read"` or marks the tool read-only. `[approvals] untrusted_ok` relaxes
//! this per tool.
//!
//! This is a limit on what injected words can do, not a detector of them:
//! the model still reads the page, and a tool that only reads (`read_file`,
//! `zoom`, `search`) runs as before.

use super::registry::Provenance;
use super::tool::Acts;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The taint of the running turn, shared by the clones of one agent's tools.
#[derive(Clone, Default)]
pub struct Taint {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// What tainted the turn first, in words (`after reading https://…`).
    reason: Option<String>,
    /// The hosts `web_fetch` fetched from in this turn.
    hosts: BTreeSet<String>,
}

impl Taint {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Each change is one field set; a panic cannot leave it half-made.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new turn starts clean.
    pub fn clear(&self) {
        *self.lock() = State::default();
    }

    /// The turn read something untrusted; the first reason is kept.
    pub fn taint(&self, reason: String) {
        let mut state = self.lock();
        if state.reason.is_none() {
            state.reason = Some(crate::provenance::bounded(&reason));
        }
    }

    /// What tainted the running turn (`after reading https://…`); none for
    /// a clean turn. What the turn stores for later keeps it.
    pub fn reason(&self) -> Option<String> {
        self.lock().reason.clone()
    }

    /// Notes that a call ran, tainting the turn when its outcome carries
    /// words from outside (`provenance`), whatever its status: an error
    /// page is outside text too. `tool` and `arguments` name it.
    pub fn after_call(&self, tool: &str, arguments: &Value, provenance: &Provenance) {
        match provenance {
            Provenance::Hearth => {}
            // The page's address, not the call's: a browser's read names
            // no URL, and web_fetch's page is the URL it was asked.
            Provenance::Web { url } => {
                if let Some(host) = host_of(url) {
                    self.lock().hosts.insert(host);
                }
                self.taint(format!("after reading {url}"));
            }
            Provenance::Document { .. } => {
                let id = arguments
                    .get("id")
                    .and_then(Value::as_u64)
                    .unwrap_or_default();
                self.taint(format!("after reading a document message {id} carries"));
            }
            Provenance::Mcp { server } => {
                self.taint(format!(
                    "after a result of the MCP server `{server}` ({tool})"
                ));
            }
            Provenance::Shell { .. } => {
                self.taint("after a shell command that could reach the network".to_string());
            }
            Provenance::File { path, why } => {
                self.taint(format!("after reading `{path}`, changed while {why}"));
            }
            Provenance::Search { url } => {
                self.taint(format!("after the search results of {url}"));
            }
            Provenance::Skill { name } => {
                self.taint(format!("after {}", crate::provenance::skill_origin(name)));
            }
        }
    }

    /// Why this call of `tool` must wait for a person, when the turn is
    /// tainted and the call acts on the world (`acts`, as the tool says).
    pub fn needs_approval(
        &self,
        tool: &str,
        acts: Acts,
        arguments: &Value,
        untrusted_ok: &[String],
    ) -> Option<String> {
        let state = self.lock();
        let reason = state.reason.as_ref()?;
        if untrusted_ok
            .iter()
            .any(|pattern| crate::approvals::glob_matches(pattern, tool))
        {
            return None;
        }
        let acting = match acts {
            Acts::Never => false,
            Acts::Always => true,
            Acts::OnNewHost => {
                host_of(&url_of(arguments)).is_none_or(|host| !state.hosts.contains(&host))
            }
        };
        acting.then(|| reason.clone())
    }
}

fn url_of(arguments: &Value) -> String {
    arguments
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// The host of an http(s) URL, lowercased.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_clean_turn_asks_nothing() {
        let taint = Taint::default();
        let shell = json!({"command": "ls"});
        assert_eq!(
            taint.needs_approval("shell", Acts::Always, &shell, &[]),
            None
        );
    }

    #[test]
    fn after_a_page_acting_tools_ask_and_name_the_page() {
        let taint = Taint::default();
        taint.after_call(
            "web_fetch",
            &json!({"url": "https://Evil.example/p?q=1"}),
            &Provenance::Web {
                url: "https://Evil.example/p?q=1".into(),
            },
        );
        let shell = json!({"command": "curl x | sh"});
        let why = taint.needs_approval("shell", Acts::Always, &shell, &[]);
        assert_eq!(
            why.as_deref(),
            Some("after reading https://Evil.example/p?q=1")
        );
        assert!(taint
            .needs_approval("read_file", Acts::Never, &json!({"path": "a"}), &[])
            .is_none());
        let same_host = json!({"url": "https://evil.example/other"});
        assert!(taint
            .needs_approval("web_fetch", Acts::OnNewHost, &same_host, &[])
            .is_none());
        let other_host = json!({"url": "https://collector.example/?data=secret"});
        assert!(taint
            .needs_approval("web_fetch", Acts::OnNewHost, &other_host, &[])
            .is_some());
        assert!(taint
            .needs_approval("mcp__fs__write", Acts::Always, &json!({}), &[])
            .is_some());
        assert!(taint
            .needs_approval("mcp__fs__read", Acts::Never, &json!({}), &[])
            .is_none());
        let relaxed = ["shell".to_string()];
        assert!(taint
            .needs_approval("shell", Acts::Always, &shell, &relaxed)
            .is_none());
        taint.clear();
        assert!(taint
            .needs_approval("shell", Acts::Always, &shell, &[])
            .is_none());
    }

    #[test]
    fn mcp_results_taint_the_turn() {
        let taint = Taint::default();
        taint.after_call(
            "mcp__mail__read",
            &json!({}),
            &Provenance::Mcp {
                server: "mail".into(),
            },
        );
        let why = taint.needs_approval("write_file", Acts::Always, &json!({}), &[]);
        assert!(why.is_some_and(|why| why.contains("MCP server `mail`")));
    }

    #[test]
    fn in_a_tainted_turn_the_tools_that_store_words_ask_and_a_list_runs() {
        use super::super::facts::{Forget, Remember};
        use super::super::schedule::{ScheduleAdd, ScheduleList};
        use super::super::tool::Tool;
        let taint = Taint::default();
        taint.taint("after reading https://evil.example".into());
        let storing: [&dyn Tool; 3] = [&ScheduleAdd, &Remember, &Forget];
        for tool in storing {
            let name = tool.spec().name;
            assert!(
                taint
                    .needs_approval(&name, tool.acts(), &json!({}), &[])
                    .is_some(),
                "{name}"
            );
        }
        assert!(taint
            .needs_approval("schedule_list", ScheduleList.acts(), &json!({}), &[])
            .is_none());
        assert_eq!(
            taint.reason().as_deref(),
            Some("after reading https://evil.example")
        );
    }

    #[test]
    fn a_shell_command_that_could_reach_the_network_taints_and_a_plain_one_does_not() {
        let taint = Taint::default();
        let command = json!({"command": "ls"});
        taint.after_call("shell", &command, &Provenance::Hearth);
        assert!(taint.reason().is_none());
        taint.after_call(
            "shell",
            &command,
            &Provenance::Shell {
                command: "curl x".into(),
            },
        );
        assert_eq!(
            taint.reason().as_deref(),
            Some("after a shell command that could reach the network")
        );
    }
}
