//! What every connection shares: the log, the agents, the registries.

use crate::approvals::Approvals;
use crate::images::ImageStore;
use crate::log::Log;
use crate::turn::AgentHandle;
use hearth_protocol::Event;
use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use tokio::sync::broadcast;

/// What every connection shares.
pub struct Shared {
    pub log: Log,
    pub events: broadcast::Sender<Event>,
    /// The top agent.
    pub agent: AgentHandle,
    /// Every agent by name, the top one and its subagents.
    pub agents: BTreeMap<String, AgentHandle>,
    /// `provider/model`, or none.
    pub model: Option<String>,
    /// Clients attached now.
    pub clients: AtomicU64,
    /// When the daemon started, for `status`.
    pub started: std::time::Instant,
    /// Tool calls waiting for a person: `approve` frames answer them.
    pub approvals: Approvals,
    /// Where `image_put` stores images and `image_get` reads them.
    pub images: ImageStore,
    /// The MCP servers, for `mcp` and `status`.
    pub mcp: crate::mcp::Mcp,
    /// The browser client's logins, when `[web]` is on.
    pub web: Option<crate::web::Web>,
    /// The spending limits, for `stats`.
    pub budget: crate::usage::Budget,
}
