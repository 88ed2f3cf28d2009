//! A turn that has read something from outside the owner is tainted until
//! it ends; while it is, the tools that act on the world need a person's
//! yes, and the request names what tainted the turn.
//!
//! What taints: any call whose outcome carries outside words (its
//! provenance, `registry.rs`): a page `web_fetch` read, a result of an MCP
//! server (its tools' output comes from outside, whatever the server is), a
//! page of a document someone sent (`read_attachment`), a shell command
//! that could reach the network, a file changed while outside words could
//! come into it (`exposure.rs`). A turn also starts tainted when it takes
//! an untrusted message, offers an MCP server's tools (their descriptions
//! are the server's words) or shows a pinned fact remembered in a tainted
//! turn (`turn.rs`).
//!
//! What acts: every tool but the few in [`READ_ONLY`], so a new tool fails
//! closed: `shell`, the file writers, `whatsapp_send`, and the tools that
//! store words for later (`schedule_add`, `subagent_start`, `remember`,
//! whose stored words also keep the taint, see `provenance.rs`).
//! `web_fetch` acts when it goes to a host the turn has not fetched from
//! yet (a page could tell the model to send what it knows to another
//! address); an MCP tool acts unless its server is marked `trust =
//! "read"`. `[approvals] untrusted_ok` relaxes this per tool.
//!
//! This is a limit on what injected words can do, not a detector of them:
//! the model still reads the page, and a tool that only reads (`read_file`,
//! `zoom`, `search`) runs as before.

use super::registry::Provenance;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// The built-in tools that only read: hearth's memory, the working folder,
/// the documents messages carry, the lists of schedules and subagents.
/// Every other tool acts. A tool added later is acting until it is named
/// here, so forgetting to classify it makes it ask, never run unasked.
pub const READ_ONLY: &[&str] = &[
    "date",
    "zoom",
    "search",
    "read_file",
    "list_dir",
    "read_attachment",
    "schedule_list",
    "subagent_list",
];

/// How a call stands in a tainted turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Runs without asking.
    ReadOnly,
    /// Asks.
    Acting,
    /// `web_fetch`: asks unless the turn already fetched from the host.
    Fetch,
    /// An MCP tool: asks unless its server is marked `trust = "read"`.
    Mcp,
}

/// The class of a call of `tool`; `is_mcp`: an MCP server's tool.
pub fn class(tool: &str, is_mcp: bool) -> Class {
    if is_mcp {
        Class::Mcp
    } else if tool == "web_fetch" {
        Class::Fetch
    } else if READ_ONLY.contains(&tool) {
        Class::ReadOnly
    } else {
        Class::Acting
    }
}

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
            Provenance::Web { .. } => {
                let url = url_of(arguments);
                if let Some(host) = host_of(&url) {
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
        let acting = match class(tool, is_mcp) {
            Class::ReadOnly => false,
            Class::Acting => true,
            Class::Fetch => {
                host_of(&url_of(arguments)).is_none_or(|host| !state.hosts.contains(&host))
            }
            Class::Mcp => !read_only_mcp,
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
            &Provenance::Web {
                url: "https://Evil.example/p?q=1".into(),
            },
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
        taint.after_call(
            "mcp__mail__read",
            &json!({}),
            &Provenance::Mcp {
                server: "mail".into(),
            },
        );
        let why = taint.needs_approval("write_file", &json!({}), false, false, &[]);
        assert!(why.is_some_and(|why| why.contains("MCP server `mail`")));
    }

    #[test]
    fn tools_act_unless_named_read_only_and_storing_words_acts() {
        for tool in [
            "schedule_add",
            "subagent_start",
            "remember",
            "forget",
            "a_new_tool",
        ] {
            assert_eq!(class(tool, false), Class::Acting, "{tool}");
        }
        let taint = Taint::default();
        taint.taint("after reading https://evil.example".into());
        for tool in ["schedule_add", "subagent_start", "remember"] {
            assert!(
                taint
                    .needs_approval(tool, &json!({}), false, false, &[])
                    .is_some(),
                "{tool}"
            );
        }
        assert!(taint
            .needs_approval("schedule_list", &json!({}), false, false, &[])
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

    /// Every tool the registry offers, with every part an agent can have,
    /// in its class: a new tool makes this fail until it is placed (and
    /// until then it acts).
    #[tokio::test]
    async fn every_tool_the_registry_offers_is_classified() {
        use crate::tools::{Processes, Tools, ToolsConfig, WhatsAppContacts, Workspace};
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = tokio::sync::broadcast::channel(16);
        let log = crate::log::Log::open(&dir.path().join("hearth.db"), events.clone()).unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let workspace = Workspace::new(
            &work,
            &dir.path().join("agents/a"),
            &ToolsConfig::default(),
            Processes::new(),
        )
        .unwrap();
        let images = crate::images::ImageStore::new(dir.path());
        let media = crate::media::MediaStore::new(dir.path(), images.clone());
        let child = crate::subagents::Child {
            responsibility: "looks".into(),
            inputs: crate::inputs::channel().0,
        };
        let subagents = crate::subagents::Subagents::new(
            "a",
            crate::inputs::channel().0,
            std::collections::BTreeMap::from([("scout".to_string(), child)]),
            log.clone(),
            events,
        );
        let tools = Tools::new("a", log)
            .with_workspace(workspace)
            .with_images(images)
            .with_media(media)
            .with_subagents(Arc::new(subagents))
            .with_whatsapp(WhatsAppContacts::default());
        let classes: Vec<(String, Class)> = tools
            .specs()
            .into_iter()
            .map(|spec| {
                let class = class(&spec.name, false);
                (spec.name, class)
            })
            .collect();
        use Class::{Acting, Fetch, ReadOnly};
        let expected = [
            ("date", ReadOnly),
            ("zoom", ReadOnly),
            ("search", ReadOnly),
            ("read_attachment", ReadOnly),
            ("remember", Acting),
            ("forget", Acting),
            ("schedule_add", Acting),
            ("schedule_list", ReadOnly),
            ("schedule_cancel", Acting),
            ("shell", Acting),
            ("read_file", ReadOnly),
            ("write_file", Acting),
            ("edit_file", Acting),
            ("list_dir", ReadOnly),
            ("web_fetch", Fetch),
            ("show_image", Acting),
            ("subagent_start", Acting),
            ("subagent_stop", Acting),
            ("subagent_list", ReadOnly),
            ("whatsapp_send", Acting),
        ]
        .map(|(name, class)| (name.to_string(), class));
        assert_eq!(classes, expected);
        for name in READ_ONLY {
            assert!(
                classes.iter().any(|(tool, _)| tool == name),
                "READ_ONLY names `{name}`, which no agent is offered"
            );
        }
    }
}
