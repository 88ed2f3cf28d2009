//! What every connection shares: the log, the agents, the registries.

use crate::approvals::Approvals;
use crate::images::ImageStore;
use crate::log::Log;
use crate::turn::AgentHandle;
use hearth_protocol::Event;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, oneshot, watch, Notify};

/// What every connection shares.
pub struct Shared {
    pub log: Log,
    pub events: broadcast::Sender<Event>,
    /// The top agent.
    pub agent: AgentHandle,
    /// Every agent by name, the top one and its subagents.
    pub agents: BTreeMap<String, AgentHandle>,
    /// Clients attached now.
    pub clients: AtomicU64,
    /// Told each time a client leaves, so a stop can wait for them all.
    pub client_left: Notify,
    /// When the daemon started, for `status`.
    pub started: std::time::Instant,
    /// Tool calls waiting for a person: `approve` frames answer them.
    pub approvals: Approvals,
    /// Where `image_put` stores images and `image_get` reads them.
    pub images: ImageStore,
    /// Where `media_put` stores audio and documents.
    pub media: crate::media::MediaStore,
    /// Transcribes voice notes, when `[transcription]` is configured.
    pub transcriber: Option<crate::transcription::Transcriber>,
    /// The MCP servers, for `mcp` and `status`.
    pub mcp: crate::tools::mcp::Mcp,
    /// The browser client's logins, when `[web]` is on.
    pub web: Option<crate::server::web::Web>,
    /// The meter every agent shares: its spending limits, live across a
    /// reload, for `stats`.
    pub meter: crate::usage::Meter,
    /// Where `stop` and `reload` frames go: the daemon's own loop.
    pub control: mpsc::Sender<Control>,
    /// Set to the close frame's reason when the daemon stops: every
    /// connection then closes with it.
    pub closing: watch::Sender<Option<&'static str>>,
    /// The database file, for its size in `status`.
    pub database: std::path::PathBuf,
    /// Where the agents' tools can read: a backup never goes there.
    pub tool_reach: crate::tools::reach::ToolReach,
    /// How the bridges are, for `status`.
    pub bridges: crate::bridges::BridgeBoard,
    /// The owner key this daemon wrote at start: a Unix-socket client's
    /// hello must carry it ([`hearth_protocol::owner_key`]). Never logged.
    pub owner_key: String,
}

/// What a reload changed: the tables that apply now, and those that wait
/// for a restart; or why the file was refused.
pub type ReloadOutcome = Result<(Vec<String>, Vec<String>), String>;

/// What a client asks of the daemon's own loop.
pub enum Control {
    /// Stop; `restart` only changes what clients are told.
    Stop { restart: bool },
    /// Read the configuration again.
    Reload(oneshot::Sender<ReloadOutcome>),
}

impl Shared {
    /// Closes every connection with a close frame giving `reason`, and
    /// waits (at most `patience`) until they are gone.
    pub async fn close_all(&self, reason: &'static str, patience: Duration) {
        self.closing.send_replace(Some(reason));
        let all_gone = async {
            loop {
                let left = self.client_left.notified();
                tokio::pin!(left);
                left.as_mut().enable();
                if self.clients.load(Ordering::SeqCst) == 0 {
                    return;
                }
                left.await;
            }
        };
        let _ = tokio::time::timeout(patience, all_gone).await;
    }
}
