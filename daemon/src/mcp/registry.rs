//! [`Mcp`]: every configured server, shared by the agents; [`McpTools`]:
//! the servers one agent gets, as tools.
//!
//! The top agent gets every server; a subagent those its `[[agents]]`
//! table names (`mcp = ["fs"]`). An agent's MCP tools follow its built-in
//! ones, sorted by name. [`McpTools::changes`] says, once, which servers'
//! tools changed since the agent last looked: the next request differs
//! there, and the turn logs why.

use super::config::{McpServerConfig, Trust};
use super::content;
use super::names::OfferedTool;
use super::server::{Context, Server, Snapshot};
use crate::images::ImageStore;
use crate::model::ToolSpec;
use crate::tools::Outcome;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::watch;

/// A call that runs now, for `hearth status`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningCall {
    pub agent: String,
    pub server: String,
    pub tool: String,
    pub started: std::time::Instant,
}

/// Every configured server. Cheap to clone.
#[derive(Clone, Default)]
pub struct Mcp {
    servers: Arc<BTreeMap<String, Arc<Server>>>,
    running: Arc<Mutex<BTreeMap<u64, RunningCall>>>,
    next_call: Arc<AtomicU64>,
}

impl Mcp {
    /// Starts a supervisor per server; they stop with `stop`.
    pub fn start(
        configs: &[McpServerConfig],
        context: Context,
        stop: watch::Receiver<bool>,
    ) -> Mcp {
        let context = Arc::new(context);
        let servers = configs
            .iter()
            .map(|config| {
                let server = Server::start(config.clone(), context.clone(), stop.clone());
                (config.name.clone(), server)
            })
            .collect();
        Mcp {
            servers: Arc::new(servers),
            ..Mcp::default()
        }
    }

    /// Waits until every server's first attempt to start has ended (each is
    /// bounded by its timeout), so the first turn's tools are the same as
    /// at every start.
    pub async fn settled(&self) {
        for server in self.servers.values() {
            server.settled().await;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Every server's state, by name.
    pub fn snapshots(&self) -> Vec<Snapshot> {
        self.servers
            .values()
            .map(|server| server.snapshot())
            .collect()
    }

    /// The MCP calls that run now, oldest first.
    pub fn running(&self) -> Vec<RunningCall> {
        self.table().values().cloned().collect()
    }

    fn table(&self) -> MutexGuard<'_, BTreeMap<u64, RunningCall>> {
        // Each change is one insert or remove.
        self.running
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The servers `names` lists (every server for none), as `agent`'s tools.
    pub fn for_agent(&self, agent: &str, names: Option<&[String]>) -> McpTools {
        let servers = self
            .servers
            .values()
            .filter(|server| names.is_none_or(|names| names.iter().any(|n| n == server.name())))
            .cloned()
            .collect();
        McpTools {
            agent: agent.to_string(),
            mcp: self.clone(),
            servers,
            seen: Arc::default(),
        }
    }
}

/// The MCP servers of one agent. Clones share what the agent has seen.
#[derive(Clone)]
pub struct McpTools {
    agent: String,
    mcp: Mcp,
    servers: Vec<Arc<Server>>,
    /// The generation of each server's tools the agent last looked at.
    seen: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl McpTools {
    /// The servers' offered tools, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self
            .servers
            .iter()
            .flat_map(|server| server.offer().0.tools)
            .map(|tool| tool.spec)
            .collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs
    }

    /// Whether `name` is one of these tools.
    pub fn handles(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    fn find(&self, name: &str) -> Option<(Arc<Server>, OfferedTool)> {
        self.servers.iter().find_map(|server| {
            let (offer, _) = server.offer();
            offer
                .tools
                .into_iter()
                .find(|tool| tool.spec.name == name)
                .map(|tool| (server.clone(), tool))
        })
    }

    /// The name of the server whose tool `name` is.
    pub fn server_of(&self, name: &str) -> Option<String> {
        self.find(name)
            .map(|(server, _)| server.config().name.clone())
    }

    /// Whether a call of `name` waits for approval by the server's trust:
    /// `trust = "read"` never; otherwise unless the server marks the tool
    /// read-only.
    pub fn needs_approval(&self, name: &str) -> bool {
        match self.find(name) {
            Some((server, tool)) => server.config().trust == Trust::Ask && !tool.read_only,
            None => false,
        }
    }

    /// One sentence per server whose tools changed since the last call (the
    /// first call only records what is offered).
    pub fn changes(&self) -> Vec<String> {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut changes = Vec::new();
        for server in &self.servers {
            let (_, generation) = server.offer();
            let before = seen.insert(server.name().to_string(), generation);
            if before.is_some_and(|before| before != generation) {
                changes.extend(server.change());
            }
        }
        changes
    }

    /// Runs a call of `name` (checked against its schema already).
    pub async fn call(&self, name: &str, arguments: Value, images: Option<&ImageStore>) -> Outcome {
        let Some((server, tool)) = self.find(name) else {
            return Outcome::error(format!("there is no tool `{name}`"));
        };
        let id = self.mcp.next_call.fetch_add(1, Ordering::Relaxed);
        self.mcp.table().insert(
            id,
            RunningCall {
                agent: self.agent.clone(),
                server: server.name().to_string(),
                tool: tool.tool.clone(),
                started: std::time::Instant::now(),
            },
        );
        // Removed when the call ends or is dropped (an interrupt).
        let _running = Unlist(&self.mcp, id);
        match server.call(&tool.tool, arguments).await {
            Ok(result) => content::outcome(server.name(), &tool.tool, &result, images).await,
            Err(why) => Outcome {
                provenance: crate::tools::Provenance::Mcp {
                    server: server.name().to_string(),
                },
                ..Outcome::error(why)
            },
        }
    }
}

/// Takes a call off the running list when dropped.
struct Unlist<'a>(&'a Mcp, u64);

impl Drop for Unlist<'_> {
    fn drop(&mut self) {
        self.0.table().remove(&self.1);
    }
}
