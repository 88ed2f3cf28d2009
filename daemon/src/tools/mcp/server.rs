//! One MCP server, kept running: started, its tools listed, watched, and
//! restarted with backoff when it crashes, hangs or breaks the protocol.
//!
//! A task per server (its supervisor) owns the connection. Calls take the
//! connection's peer and wait at most the server's `timeout_secs`; a call
//! that waits longer is cancelled (`notifications/cancelled`) and wakes the
//! supervisor, which takes the server as hung: it closes a stdio server's
//! input, gives it [`GRACE`] to exit, kills it and restarts it. Every failure is an error the model can act on, never a
//! failure of the turn: the server's name, what happened, and whether the
//! call may have taken effect.
//!
//! The offered tools survive a restart: while the server is down its tools
//! stay in the request (the cached prefix is kept) and their calls are
//! answered with an error. The list changes only when the server lists
//! other tools — after `tools/list_changed`, or a restart — and each change
//! bumps the server's generation with a sentence saying why.

use super::names::{self, ListedTool, Offer};
use super::stdio;
use crate::child_log::ChildLog;
use crate::config::mcp::{McpServerConfig, Transport};
use crate::tools::Processes;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientConfig, ClientRequest, Implementation,
    ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RoleClient, RunningService, ServiceError,
};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// Up this long, a server's next failure starts the backoff afresh.
const STABLE: Duration = Duration::from_secs(60);

/// The longest wait between two attempts to start a server.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// How long a hung stdio server has to exit once its input is closed
/// before it is killed.
const GRACE: Duration = Duration::from_secs(2);

/// Finds a secret by its name.
pub type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

/// What every server's supervisor needs from the daemon.
pub struct Context {
    pub processes: Processes,
    /// Where stdio servers start: the folder of config.toml.
    pub cwd: PathBuf,
    /// Finds a `${NAME}` secret: hearthd's environment, then secrets.env.
    pub lookup: Box<Lookup>,
    pub http: reqwest::Client,
}

/// Where a server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Starting,
    Ready,
    /// Failed; the next attempt comes after a backoff.
    Restarting,
    Stopped,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Starting => "starting",
            Status::Ready => "ready",
            Status::Restarting => "restarting",
            Status::Stopped => "stopped",
        }
    }
}

/// A server as `hearth mcp` shows it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub name: String,
    /// `stdio: COMMAND` or `http: URL`.
    pub transport: String,
    pub status: Status,
    pub offer: Offer,
    pub last_error: Option<String>,
    /// Times it was (re)started after a failure.
    pub restarts: u64,
    pub generation: u64,
}

struct State {
    status: Status,
    offer: Offer,
    /// Bumped at every change of `offer`.
    generation: u64,
    /// Why the offer last changed, for the note the next turn logs.
    change: Option<String>,
    last_error: Option<String>,
    /// The live connection's peer and number; none while down.
    peer: Option<(Peer<RoleClient>, u64)>,
    /// Connections made so far.
    epoch: u64,
    restarts: u64,
    /// True once the first attempt ended, well or not.
    settled: bool,
}

/// What wakes a supervisor besides its connection's end.
enum Wake {
    /// The server said its tools changed (`notifications/tools/list_changed`).
    ListChanged(u64),
    /// A call waited longer than the timeout on this connection.
    Hung(u64, String),
}

/// One configured server.
pub struct Server {
    config: McpServerConfig,
    state: Mutex<State>,
    /// Ticks at every change of the state.
    ticks: watch::Sender<u64>,
    wake: mpsc::UnboundedSender<Wake>,
    /// Where a stdio server's stderr goes: one for all its restarts, so a
    /// server that floods and crashes gets no fresh allowance each time.
    stderr_log: ChildLog,
}

/// The SDK's client side: tells the supervisor when the tools change.
struct Handler {
    wake: mpsc::UnboundedSender<Wake>,
    epoch: u64,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.wake.send(Wake::ListChanged(self.epoch));
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            Default::default(),
            Implementation::new("hearth", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// A live connection: the SDK's service and, for stdio, the child.
struct Connection {
    service: RunningService<RoleClient, Handler>,
    child: Option<stdio::Child>,
}

impl Server {
    /// Starts the supervisor of `config`'s server; it runs until `stop`.
    pub fn start(
        config: McpServerConfig,
        context: Arc<Context>,
        stop: watch::Receiver<bool>,
    ) -> Arc<Server> {
        let (wake, wakes) = mpsc::unbounded_channel();
        let stderr_log = ChildLog::new(format!("MCP server `{}` stderr", config.name));
        let server = Arc::new(Server {
            stderr_log,
            config,
            state: Mutex::new(State {
                status: Status::Starting,
                offer: Offer::default(),
                generation: 0,
                change: None,
                last_error: None,
                peer: None,
                epoch: 0,
                restarts: 0,
                settled: false,
            }),
            ticks: watch::channel(0).0,
            wake,
        });
        tokio::spawn(server.clone().supervise(context, wakes, stop));
        server
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Each change is a few assignments; a panic cannot leave half of one.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.state());
        self.ticks.send_modify(|tick| *tick += 1);
    }

    /// Waits until the first attempt to start has ended, well or not.
    pub async fn settled(&self) {
        let mut ticks = self.ticks.subscribe();
        while !self.state().settled {
            if ticks.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits until the supervisor has stopped (its child is gone by then).
    pub async fn until_stopped(&self) {
        let mut ticks = self.ticks.subscribe();
        while self.state().status != Status::Stopped {
            if ticks.changed().await.is_err() {
                return;
            }
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let state = self.state();
        Snapshot {
            name: self.config.name.clone(),
            transport: match self.config.transport() {
                Transport::Stdio { command, .. } => format!("stdio: {command}"),
                Transport::Http { url } => format!("http: {url}"),
            },
            status: state.status,
            offer: state.offer.clone(),
            last_error: state.last_error.clone(),
            restarts: state.restarts,
            generation: state.generation,
        }
    }

    /// The offered tools and their generation.
    pub fn offer(&self) -> (Offer, u64) {
        let state = self.state();
        (state.offer.clone(), state.generation)
    }

    /// Why the offer last changed.
    pub fn change(&self) -> Option<String> {
        self.state().change.clone()
    }

    /// Calls the server's tool `tool`; the result as JSON, or an error for
    /// the model.
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<Value, String> {
        let name = &self.config.name;
        let (peer, epoch) = {
            let state = self.state();
            match &state.peer {
                Some(peer) => peer.clone(),
                None => {
                    return Err(format!(
                        "the MCP server `{name}` is not running ({}); hearth is restarting it. \
                         Try again later, or do without it.",
                        state.last_error.as_deref().unwrap_or("it is starting")
                    ))
                }
            }
        };
        let arguments = match arguments {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
        let secs = self.config.timeout().as_secs();
        // A call that times out is cancelled (`notifications/cancelled`)
        // before the answer comes back here, so the server hears it before
        // the restart.
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(self.config.timeout());
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let answer = match peer.send_cancellable_request(request, options).await {
            Ok(handle) => handle.await_response().await,
            Err(err) => Err(err),
        };
        match answer {
            Err(ServiceError::Timeout { .. }) => {
                let why = format!("it did not answer a call of `{tool}` within {secs} s");
                let _ = self.wake.send(Wake::Hung(epoch, why));
                Err(format!(
                    "the MCP server `{name}` did not answer within {secs} s, so hearth restarts it. \
                     The call may or may not have taken effect: check before repeating it."
                ))
            }
            Err(ServiceError::McpError(error)) => Err(format!(
                "the MCP server `{name}` refused the call: {}",
                error.message
            )),
            Err(other) => {
                let why = self.ended(epoch).await.unwrap_or_else(|| other.to_string());
                Err(format!(
                    "the MCP server `{name}` stopped during the call ({why}); hearth restarts it. \
                     The call may or may not have taken effect: check before repeating it."
                ))
            }
            Ok(ServerResult::CallToolResult(result)) => {
                serde_json::to_value(&result).map_err(|err| {
                    format!("the MCP server `{name}` sent a result hearth cannot read: {err}")
                })
            }
            Ok(_) => Err(format!(
                "the MCP server `{name}` answered the call with something other than a tool result"
            )),
        }
    }

    /// Why connection `epoch` ended, once the supervisor knows (at most a
    /// few seconds: it reads the child's exit).
    async fn ended(&self, epoch: u64) -> Option<String> {
        let mut ticks = self.ticks.subscribe();
        let wait = async {
            loop {
                {
                    let state = self.state();
                    let live = state.peer.as_ref().is_some_and(|(_, e)| *e == epoch);
                    if !live && state.status != Status::Ready || state.epoch != epoch {
                        return state.last_error.clone();
                    }
                }
                if ticks.changed().await.is_err() {
                    return None;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .ok()
            .flatten()
    }

    async fn supervise(
        self: Arc<Self>,
        context: Arc<Context>,
        mut wakes: mpsc::UnboundedReceiver<Wake>,
        mut stop: watch::Receiver<bool>,
    ) {
        let name = self.config.name.clone();
        let mut failures: u32 = 0;
        loop {
            if *stop.borrow() {
                break;
            }
            self.update(|state| state.status = Status::Starting);
            let epoch = self.state().epoch + 1;
            let started = Instant::now();
            let connecting =
                tokio::time::timeout(self.config.timeout(), self.connect(&context, epoch));
            let connected = tokio::select! {
                connected = connecting => connected,
                _ = stopped(&mut stop) => break,
            };
            let reason = match connected {
                Err(_) => format!(
                    "it did not start within {} s (launch, handshake and tool list)",
                    self.config.timeout().as_secs()
                ),
                Ok(Err(why)) => why,
                Ok(Ok((connection, offer))) => {
                    tracing::info!(mcp = %name, "ready: {} tool(s) offered", offer.tools.len());
                    match self
                        .serve(connection, offer, epoch, &mut wakes, &mut stop)
                        .await
                    {
                        Some(reason) => reason,
                        None => break,
                    }
                }
            };
            if started.elapsed() >= STABLE {
                failures = 0;
            }
            let backoff = Duration::from_secs(1u64 << failures.min(6)).min(MAX_BACKOFF);
            failures += 1;
            tracing::warn!(mcp = %name, "{reason}; restarting in {} s", backoff.as_secs());
            self.update(|state| {
                state.status = Status::Restarting;
                state.peer = None;
                state.last_error = Some(reason);
                state.restarts += 1;
                state.settled = true;
            });
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stopped(&mut stop) => break,
            }
            // Wakes for the connection that ended are stale.
            while wakes.try_recv().is_ok() {}
        }
        self.update(|state| {
            state.status = Status::Stopped;
            state.peer = None;
            state.settled = true;
        });
    }

    /// Starts the server, shakes hands and lists its tools.
    async fn connect(&self, context: &Context, epoch: u64) -> Result<(Connection, Offer), String> {
        let handler = Handler {
            wake: self.wake.clone(),
            epoch,
        };
        let (service, mut child) = match self.config.transport() {
            Transport::Stdio { command, args } => {
                let (pipes, child) = stdio::start(
                    &self.config,
                    command,
                    args,
                    &context.cwd,
                    &context.processes,
                    &*context.lookup,
                    &self.stderr_log,
                )
                .await
                .map_err(|err| err.to_string())?;
                (handler.serve(pipes).await, Some(child))
            }
            Transport::Http { url } => {
                let transport = super::http::transport(&self.config, url, context)
                    .map_err(|err| err.to_string())?;
                (handler.serve(transport).await, None)
            }
        };
        let service = match (service, &mut child) {
            (Ok(service), _) => service,
            (Err(err), Some(child)) => {
                return Err(format!(
                    "the MCP handshake failed: {err} ({})",
                    child.why_ended().await
                ))
            }
            (Err(err), None) => return Err(format!("the MCP handshake failed: {err}")),
        };
        let offer = list(&self.config, service.peer()).await?;
        Ok((Connection { service, child }, offer))
    }

    /// Serves connection `epoch` until it ends (`Some` of why) or hearthd
    /// stops (`None`).
    async fn serve(
        &self,
        connection: Connection,
        offer: Offer,
        epoch: u64,
        wakes: &mut mpsc::UnboundedReceiver<Wake>,
        stop: &mut watch::Receiver<bool>,
    ) -> Option<String> {
        let Connection { service, mut child } = connection;
        let peer = service.peer().clone();
        let token = service.cancellation_token();
        self.set_offer(offer, "it restarted with other tools");
        self.update(|state| {
            state.status = Status::Ready;
            state.peer = Some((peer.clone(), epoch));
            state.epoch = epoch;
            state.settled = true;
        });
        let closed = service.waiting();
        tokio::pin!(closed);
        loop {
            tokio::select! {
                _ = &mut closed => {
                    return Some(match &mut child {
                        Some(child) => child.why_ended().await,
                        None => "it closed the connection".to_string(),
                    });
                }
                wake = wakes.recv() => match wake {
                    Some(Wake::ListChanged(on)) if on == epoch => {
                        let listed = tokio::time::timeout(self.config.timeout(), list(&self.config, &peer)).await;
                        match listed {
                            Ok(Ok(offer)) => self.set_offer(offer, "it changed its tool list (tools/list_changed)"),
                            Ok(Err(why)) => return Some(why),
                            Err(_) => return Some(format!(
                                "it did not list its tools within {} s after saying they changed",
                                self.config.timeout().as_secs()
                            )),
                        }
                    }
                    Some(Wake::Hung(on, why)) if on == epoch => {
                        // The stdio shutdown of the MCP spec: close the
                        // server's input and let it exit (reading the
                        // cancellation first); kill it only after the grace.
                        token.cancel();
                        let _ = tokio::time::timeout(GRACE, async {
                            let _ = (&mut closed).await;
                            if let Some(child) = &mut child {
                                let _ = (&mut child.exit).await;
                            }
                        })
                        .await;
                        return Some(why);
                    }
                    Some(_) => {}
                    None => return None,
                },
                _ = stopped(stop) => return None,
            }
        }
    }

    /// Takes `offer` as the server's tools; a different list than before
    /// bumps the generation, with `why` for the note.
    fn set_offer(&self, offer: Offer, why: &str) {
        let name = self.config.name.clone();
        self.update(|state| {
            if state.offer == offer {
                return;
            }
            let why = if state.generation == 0 {
                "it started"
            } else {
                why
            };
            state.generation += 1;
            state.change = Some(format!(
                "the MCP server `{name}` now offers {} tool(s): {why}",
                offer.tools.len()
            ));
            state.offer = offer;
        });
    }
}

/// Completes when hearthd stops.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // Nothing is held: the guard `wait_for` returns is dropped at once.
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// Lists the server's tools (every page) and chooses what is offered.
async fn list(config: &McpServerConfig, peer: &Peer<RoleClient>) -> Result<Offer, String> {
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|err| format!("it did not list its tools: {err}"))?;
    let listed: Vec<ListedTool> = tools
        .iter()
        .map(|tool| ListedTool {
            name: tool.name.to_string(),
            description: tool
                .description
                .as_deref()
                .or(tool.title.as_deref())
                .unwrap_or_default()
                .to_string(),
            input_schema: Value::Object((*tool.input_schema).clone()),
            read_only: tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false),
        })
        .collect();
    Ok(bounded(config, names::offer(config, &listed), listed.len()))
}

/// The most tools one server may offer.
pub const MAX_TOOLS: usize = 256;

/// The most bytes one server's offered tools may add to every request
/// (names, descriptions and schemas, as the start-up's window check counts).
pub const MAX_TOOLS_BYTES: usize = 256 * 1024;

/// `offer`, or none of its tools when there are more than [`MAX_TOOLS`] or
/// they take more than [`MAX_TOOLS_BYTES`]: a list that large would crowd
/// every request (or overflow the model's window) for every agent. The
/// server runs on; `hearth mcp` says why it offers nothing.
fn bounded(config: &McpServerConfig, offer: Offer, listed: usize) -> Offer {
    let bytes: usize = offer
        .tools
        .iter()
        .map(|tool| {
            tool.spec.name.len()
                + tool.spec.description.len()
                + tool.spec.parameters.to_string().len()
        })
        .sum();
    if offer.tools.len() <= MAX_TOOLS && bytes <= MAX_TOOLS_BYTES {
        return offer;
    }
    let why = format!(
        "the server lists {listed} tools ({} offered would take {bytes} bytes of every request); \
         hearth offers at most {MAX_TOOLS} tools and {MAX_TOOLS_BYTES} bytes from one server, \
         so it offers none of them: name the ones you want with `tools = [...]` in the \
         `[[mcp]]` table of `{}`",
        offer.tools.len(),
        config.name
    );
    tracing::warn!(mcp = %config.name, "{why}");
    Offer {
        tools: Vec::new(),
        skipped: vec![names::SkippedTool {
            tool: format!("all {listed} tools"),
            why,
        }],
    }
}
