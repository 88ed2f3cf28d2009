//! [`Mcp`]: every configured server, shared by the agents; [`McpTools`]:
//! the servers one agent gets, as tools.
//!
//! The top agent gets every server; a subagent those its `[[agents]]`
//! table names (`mcp = ["fs"]`). An agent's MCP tools follow its built-in
//! ones, sorted by name. [`McpTools::changes`] says, once, which servers'
//! tools changed since the agent last looked: the next request differs
//! there, and the turn logs why.
//!
//! `hearth reload` changes the servers live ([`Mcp::reload`]): a new table
//! starts its server, a removed one stops it, a changed one restarts it;
//! the others run on untouched. An agent finds the servers by name at
//! every request, so it sees the new set at its next one.

use super::content;
use super::names::OfferedTool;
use super::server::{Context, Server, Snapshot};
use crate::config::mcp::{McpServerConfig, Trust};
use crate::images::ImageStore;
use crate::model::ToolSpec;
use crate::tools::Outcome;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use tokio::sync::watch;

/// How long a reload waits for a server it stops to end.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

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
    servers: Arc<RwLock<BTreeMap<String, Supervised>>>,
    /// What starting a server takes; none in a registry with no servers
    /// that was never started.
    spawner: Option<Arc<Spawner>>,
    running: Arc<Mutex<BTreeMap<u64, RunningCall>>>,
    next_call: Arc<AtomicU64>,
}

/// A server and what stops its supervisor alone.
struct Supervised {
    server: Arc<Server>,
    stop: watch::Sender<bool>,
}

/// The context servers start in, and hearthd's stop.
struct Spawner {
    context: Arc<Context>,
    stop: watch::Receiver<bool>,
}

impl Spawner {
    /// Starts `config`'s supervisor; it stops with hearthd or on its own
    /// stop.
    fn start(&self, config: &McpServerConfig) -> Supervised {
        let (stop, stopped) = watch::channel(*self.stop.borrow());
        let mut all = self.stop.clone();
        let forward = stop.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = all.wait_for(|stop| *stop) => {
                    let _ = forward.send(true);
                }
                // The supervisor ended and dropped its receiver.
                _ = forward.closed() => {}
            }
        });
        Supervised {
            server: Server::start(config.clone(), self.context.clone(), stopped),
            stop,
        }
    }
}

/// What a reload changed in the servers, by name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    pub started: Vec<String>,
    pub restarted: Vec<String>,
    pub stopped: Vec<String>,
}

impl Mcp {
    /// Starts a supervisor per server; they stop with `stop`.
    pub fn start(
        configs: &[McpServerConfig],
        context: Context,
        stop: watch::Receiver<bool>,
    ) -> Mcp {
        let spawner = Arc::new(Spawner {
            context: Arc::new(context),
            stop,
        });
        let servers = configs
            .iter()
            .map(|config| (config.name.clone(), spawner.start(config)))
            .collect();
        Mcp {
            servers: Arc::new(RwLock::new(servers)),
            spawner: Some(spawner),
            ..Mcp::default()
        }
    }

    /// Makes the running servers those of `configs`: starts the new ones,
    /// stops the removed ones and restarts those whose table changed (the
    /// old one stopped first, so the two never run at once). It does not
    /// wait for the new ones: an agent finds their tools once listed.
    pub async fn reload(&self, configs: &[McpServerConfig]) -> Reloaded {
        let Some(spawner) = &self.spawner else {
            return Reloaded::default();
        };
        let mut reloaded = Reloaded::default();
        let mut stopping = Vec::new();
        {
            let mut servers = self.write();
            servers.retain(|name, running| {
                let kept = configs.iter().any(|config| config.name == *name);
                if !kept {
                    let _ = running.stop.send(true);
                    stopping.push(running.server.clone());
                    reloaded.stopped.push(name.clone());
                }
                kept
            });
            for config in configs {
                match servers.get(&config.name) {
                    // Its tools stay offered until the new one lists its own.
                    Some(running) if running.server.config() != config => {
                        let _ = running.stop.send(true);
                        stopping.push(running.server.clone());
                        reloaded.restarted.push(config.name.clone());
                    }
                    Some(_) => {}
                    None => reloaded.started.push(config.name.clone()),
                }
            }
        }
        for server in stopping {
            let _ = tokio::time::timeout(STOP_WAIT, server.until_stopped()).await;
        }
        let mut servers = self.write();
        for name in reloaded.started.iter().chain(&reloaded.restarted) {
            if let Some(config) = configs.iter().find(|config| config.name == *name) {
                servers.insert(name.clone(), spawner.start(config));
            }
        }
        drop(servers);
        reloaded
    }

    /// Waits until every server's first attempt to start has ended (each is
    /// bounded by its timeout), so the first turn's tools are the same as
    /// at every start.
    pub async fn settled(&self) {
        for server in self.servers() {
            server.settled().await;
        }
    }

    /// Every server's state, by name.
    pub fn snapshots(&self) -> Vec<Snapshot> {
        self.servers()
            .iter()
            .map(|server| server.snapshot())
            .collect()
    }

    /// The servers running now, by name.
    fn servers(&self) -> Vec<Arc<Server>> {
        self.read()
            .values()
            .map(|running| running.server.clone())
            .collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Supervised>> {
        // Each change is an insert or a remove.
        self.servers
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Supervised>> {
        self.servers
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
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
        McpTools {
            agent: agent.to_string(),
            mcp: self.clone(),
            names: names.map(<[String]>::to_vec),
            seen: Arc::default(),
        }
    }
}

/// The MCP servers of one agent. Clones share what the agent has seen.
#[derive(Clone)]
pub struct McpTools {
    agent: String,
    mcp: Mcp,
    /// The servers the agent gets by name; none: every server.
    names: Option<Vec<String>>,
    seen: Arc<Mutex<Seen>>,
}

/// What an agent last looked at: each server's offered tools.
#[derive(Default)]
struct Seen {
    looked: bool,
    tools: BTreeMap<String, Vec<OfferedTool>>,
}

impl McpTools {
    /// The agent's servers running now.
    fn servers(&self) -> Vec<Arc<Server>> {
        self.mcp
            .read()
            .iter()
            .filter(|(name, _)| {
                self.names
                    .as_ref()
                    .is_none_or(|names| names.iter().any(|n| n == *name))
            })
            .map(|(_, running)| running.server.clone())
            .collect()
    }

    /// The servers' offered tools, sorted by name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self
            .servers()
            .iter()
            .flat_map(|server| server.offer().0.tools)
            .map(|tool| tool.spec)
            .collect();
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        specs
    }

    /// The servers that offer tools now and whose descriptions the owner
    /// has not vouched for (`trust_descriptions = true`), by name.
    pub fn unvouched_servers(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .servers()
            .iter()
            .filter(|server| !server.config().trust_descriptions)
            .filter(|server| !server.offer().0.tools.is_empty())
            .map(|server| server.config().name.clone())
            .collect();
        names.sort();
        names
    }

    /// Whether `name` is one of these tools.
    pub fn handles(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    fn find(&self, name: &str) -> Option<(Arc<Server>, OfferedTool)> {
        self.servers().into_iter().find_map(|server| {
            let (offer, _) = server.offer();
            offer
                .tools
                .into_iter()
                .find(|tool| tool.spec.name == name)
                .map(|tool| (server, tool))
        })
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
    /// first call only records what is offered), and per server a reload
    /// added or removed.
    pub fn changes(&self) -> Vec<String> {
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let looked = std::mem::replace(&mut seen.looked, true);
        let servers = self.servers();
        let mut changes = Vec::new();
        seen.tools.retain(|name, _| {
            let kept = servers.iter().any(|server| server.name() == name);
            if !kept {
                changes.push(format!(
                    "the MCP server `{name}` was removed from the configuration: its tools \
                     are no longer offered"
                ));
            }
            kept
        });
        for server in &servers {
            let (offer, _) = server.offer();
            let changed = match seen.tools.get(server.name()) {
                Some(before) => *before != offer.tools,
                // A server a reload added, once it offers tools.
                None => looked && !offer.tools.is_empty(),
            };
            seen.tools.insert(server.name().to_string(), offer.tools);
            if changed {
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
