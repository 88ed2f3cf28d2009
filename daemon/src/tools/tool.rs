//! [`Tool`]: what every tool gives the registry — its spec, whether it
//! acts, and its call — and [`ToolSet`], tools by name in the order the
//! model sees them.
//!
//! A tool's name lives in its spec alone: the registry finds a call's tool
//! by it, and the taint of a turn asks the tool whether it acts
//! (`taint.rs`). A tool that does not say it only reads acts, so a new tool
//! fails closed: in a tainted turn it asks before it runs.

use super::Outcome;
use crate::activity::ActivityBoard;
use crate::log::Log;
use crate::model::ToolSpec;
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Whether a call changes the world, which decides whether it runs unasked
/// in a turn that read words from outside (`taint.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acts {
    /// It only reads (hearth's memory, the working folder, the documents
    /// messages carry, a list): it runs unasked.
    Never,
    /// It writes, sends, runs something or stores words for later: it asks.
    /// What a tool is unless it says otherwise.
    Always,
    /// It reads a page (`web_fetch`): it acts when it goes to a host the turn
    /// has not read from yet, since the address itself can carry what the
    /// model knows to whoever a page named.
    OnNewHost,
}

/// One tool the model may call.
pub trait Tool: Send + Sync {
    /// Its name, description and argument schema, as the model sees them.
    fn spec(&self) -> ToolSpec;

    /// Whether its calls change the world. Acting unless the tool says it
    /// only reads: a tool that forgets to say asks, never runs unasked.
    fn acts(&self) -> Acts {
        Acts::Always
    }

    /// Whether every call waits for a person's yes, in a clean turn too,
    /// and does not run when no one can be asked: an MCP server's tool that
    /// its server's trust does not let run.
    fn asks_always(&self) -> bool {
        false
    }

    /// What a call was asked, in a few words for its activity: a shell
    /// command, a URL, a path.
    fn detail(&self, _arguments: &Value) -> Option<String> {
        None
    }

    /// Runs a call whose arguments passed the spec's schema. A failure is
    /// an error outcome the model reads, never a failure of the turn.
    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome>;
}

/// One call of a tool, with what every tool may need besides its own parts.
pub struct Call<'a> {
    /// The agent whose tool runs.
    pub agent: &'a str,
    /// Its log (the memory tools read it; facts and schedules go in it).
    pub log: &'a Log,
    /// The arguments, checked against the tool's schema.
    pub arguments: Value,
    /// What tainted the running turn, if anything did: words a tool
    /// stores for later keep it.
    pub tainted: Option<String>,
    /// Where the call's progress shows (a shell command's last line).
    pub activity: Option<&'a ActivityBoard>,
}

/// The value of `key` in `arguments`, when it is a string.
pub fn text_of(arguments: &Value, key: &str) -> Option<String> {
    arguments.get(key)?.as_str().map(str::to_string)
}

/// Tools by name, in the order they were given (the order of the model's
/// tool list). Names are unique: the first of a name is kept.
#[derive(Clone, Default)]
pub struct ToolSet {
    /// In the model's order; the spec is asked once, when the set is made.
    listed: Vec<(ToolSpec, Arc<dyn Tool>)>,
    /// A name's place in `listed`.
    by_name: BTreeMap<String, usize>,
}

impl ToolSet {
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> ToolSet {
        let mut set = ToolSet::default();
        for tool in tools {
            let spec = tool.spec();
            if set.by_name.contains_key(&spec.name) {
                tracing::warn!(tool = %spec.name, "a second tool of one name is left out");
                continue;
            }
            set.by_name.insert(spec.name.clone(), set.listed.len());
            set.listed.push((spec, tool));
        }
        set
    }

    /// The specs, in order.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.listed.iter().map(|(spec, _)| spec)
    }

    /// The tool of this name, with its spec.
    pub fn get(&self, name: &str) -> Option<(&ToolSpec, &Arc<dyn Tool>)> {
        let (spec, tool) = self.listed.get(*self.by_name.get(name)?)?;
        Some((spec, tool))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{Processes, Tools, ToolsConfig, WhatsAppContacts, Workspace};

    /// A tool that says nothing of what it does.
    struct Unsaid;

    impl Tool for Unsaid {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "a_new_tool".to_string(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
            }
        }

        fn call<'a>(&'a self, _call: Call<'a>) -> BoxFuture<'a, Outcome> {
            Box::pin(async { Outcome::ok("") })
        }
    }

    #[test]
    fn a_tool_that_does_not_say_it_only_reads_acts() {
        assert_eq!(Unsaid.acts(), Acts::Always);
        assert!(!Unsaid.asks_always());
    }

    #[test]
    fn a_set_keeps_the_first_tool_of_a_name_and_the_given_order() {
        let set = ToolSet::new(vec![
            Arc::new(super::super::date::Date),
            Arc::new(Unsaid),
            Arc::new(super::super::zoom::Zoom),
            Arc::new(super::super::date::Date),
        ]);
        let names: Vec<&str> = set.specs().map(|spec| spec.name.as_str()).collect();
        assert_eq!(names, ["date", "a_new_tool", "zoom"]);
        assert!(set.get("a_new_tool").is_some());
        assert!(set.get("shell").is_none());
    }

    /// Every built-in tool, with every part an agent can have: its name is
    /// its own, and whether it acts is pinned here. What writes, sends, runs
    /// or stores words for later acts; a new tool makes this fail until it
    /// is placed (and until then it acts).
    #[tokio::test]
    async fn every_tool_that_writes_sends_or_runs_says_it_acts() {
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
            .with_whatsapp(WhatsAppContacts::default())
            .with_browser(crate::tools::Browser::new(
                &ToolsConfig::default(),
                dir.path(),
                "a",
                Processes::new(),
                None,
            ));
        let names: Vec<String> = tools.specs().into_iter().map(|spec| spec.name).collect();
        let unique: std::collections::BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        use Acts::{Always, Never, OnNewHost};
        let expected = [
            ("date", Never),
            ("zoom", Never),
            ("search", Never),
            ("read_attachment", Never),
            ("remember", Always),
            ("forget", Always),
            ("schedule_add", Always),
            ("schedule_list", Never),
            ("schedule_cancel", Always),
            ("shell", Always),
            ("read_file", Never),
            ("write_file", Always),
            ("edit_file", Always),
            ("list_dir", Never),
            ("web_fetch", OnNewHost),
            ("show_image", Always),
            ("subagent_start", Always),
            ("subagent_stop", Always),
            ("subagent_list", Never),
            ("whatsapp_send", Always),
            ("browser_open", OnNewHost),
            ("browser_read", Never),
            ("browser_click", Always),
            ("browser_type", Always),
            ("browser_scroll", Never),
            ("browser_screenshot", Never),
        ]
        .map(|(name, acts)| (name.to_string(), acts));
        assert_eq!(tools.acting(), expected);
    }
}
