//! What the daemon answers to the asking frames (`status`, `stats`, `schedules`,
//! `mcp`, `web_sessions`, `notify`): the reports themselves.

use crate::activity::{Activity, BridgeStatus, MemoryStatus};
use serde::{Deserialize, Serialize};

/// A stored schedule.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ScheduleInfo {
    pub id: i64,
    /// The cron expression, or the one-off time.
    pub when: String,
    pub text: String,
    /// The next firing, local RFC 3339.
    pub next: String,
}

/// One day's model requests of one agent, as `stats` reports them.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct StatsRow {
    /// The local day, `YYYY-MM-DD`.
    pub day: String,
    pub agent: String,
    /// Model requests: turns' and compactions'.
    pub requests: u64,
    /// Every input token, cached or not.
    pub input_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cached_input_tokens: u64,
    /// Input tokens written to the prompt cache, where the provider says.
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    /// What the priced requests cost, in USD.
    pub cost_usd: f64,
    /// Requests to models without a price (local ones), counted at 0.
    pub unpriced_requests: u64,
    /// Requests whose usage the provider never reported (a cut stream, a
    /// failure after it accepted the request), counted at hearth's
    /// estimate, which errs high.
    #[serde(default)]
    pub estimated_requests: u64,
    /// Voice notes transcribed (counted in `requests` too), and what they
    /// cost (in `cost_usd` too).
    #[serde(default)]
    pub transcriptions: u64,
    #[serde(default)]
    pub transcription_usd: f64,
}

/// Spending against `[budget]`, as `stats` reports it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct BudgetUse {
    /// What all agents spent today and this month, in USD.
    pub today_usd: f64,
    pub month_usd: f64,
    /// The limits; none where no limit is set.
    #[serde(default)]
    pub daily_usd: Option<f64>,
    #[serde(default)]
    pub monthly_usd: Option<f64>,
}

/// How a notify event was taken.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptStatus {
    /// Stored; it will enter the log once.
    Accepted,
    /// Its key was seen before; nothing new was stored.
    Duplicate,
}

/// The agent's state, as `status` reports it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Status {
    pub agent: String,
    /// A turn is running.
    pub busy: bool,
    /// The newest message's id, if the log has any.
    #[serde(default)]
    pub last_id: Option<u64>,
    /// User messages and reports waiting for a turn.
    pub waiting: u64,
    /// `provider/model`, or none when no model is configured.
    #[serde(default)]
    pub model: Option<String>,
    /// Clients attached, not counting the one that asks.
    pub clients: u64,
    pub pid: u32,
    pub version: String,
    /// Seconds since the daemon started.
    #[serde(default)]
    pub uptime_secs: u64,
    /// Every agent of the daemon (the top one first, then its subagents).
    #[serde(default)]
    pub agents: Vec<AgentStatus>,
    /// The next schedule of this agent: local time and text.
    #[serde(default)]
    pub next_schedule: Option<String>,
    /// What all agents spent today, in USD.
    #[serde(default)]
    pub cost_today_usd: Option<f64>,
    /// The MCP tool calls running now, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_calls: Vec<McpCall>,
    /// Each configured MCP server, as the `mcp` frame shows it: whether it
    /// started, what it offers and skips, why it last failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServer>,
    /// What the agent is doing now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<Activity>,
    /// The agent's memory: its view and the summaries not written yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryStatus>,
    /// The database's size on disk (with its write-ahead log), in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_bytes: Option<u64>,
    /// The bridges the configuration enables and how they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bridges: Vec<BridgeStatus>,
    /// Which confinement the shell's commands run under, in words
    /// (`Landlock (ABI 7): …`, or `none (…)` where the kernel has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<String>,
    /// Bytes of live events waiting for clients to read them, all clients
    /// together (each holds at most 4 MiB; past it, it is caught up from
    /// the log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_bytes: Option<u64>,
    /// The log's tamper-evident chain in words: what the start's check
    /// found if it found something wrong, and the last `hearth verify`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
    /// The ChatGPT plan's usage limits, when the model is `chatgpt` and the
    /// backend reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanLimits>,
    /// When the local model server serves a smaller window than the
    /// configured one: what it serves, and how to make it serve more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
}

/// A ChatGPT plan's usage limits, as the Codex backend last reported them
/// (its `x-codex-*` headers, or a refusal at the limit).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PlanLimits {
    /// `plus`, `pro`, `team`, … when known.
    #[serde(default)]
    pub plan: Option<String>,
    /// The windows the plan counts use in (a few hours, a week).
    #[serde(default)]
    pub windows: Vec<PlanWindow>,
    /// When the plan refused a request at its limit: when it takes requests
    /// again (RFC 3339).
    #[serde(default)]
    pub limited_until: Option<String>,
    /// When the backend said so (RFC 3339).
    pub reported_at: String,
}

/// One window of a plan's usage limit.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct PlanWindow {
    /// How long the window is, in minutes (300: five hours; 10080: a week).
    #[serde(default)]
    pub window_minutes: Option<u64>,
    /// How much of the window's allowance is used, 0 to 100.
    pub used_percent: f64,
    /// When the window starts afresh (RFC 3339).
    #[serde(default)]
    pub resets_at: Option<String>,
}

/// An MCP tool call that runs now, in `status`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct McpCall {
    pub agent: String,
    pub server: String,
    /// The server's own name of the tool.
    pub tool: String,
    /// Seconds since it started.
    pub secs: u64,
}

/// One MCP server in an `mcp` frame.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct McpServer {
    pub name: String,
    /// `stdio: COMMAND` or `http: URL`.
    pub transport: String,
    /// `starting`, `ready`, `restarting` or `stopped`.
    pub state: String,
    /// The tools the agents are offered, by their offered names.
    pub tools: Vec<String>,
    /// Tools the server lists that are not offered: `NAME: why`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// Why it last failed, if it ever did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Times it was restarted after a failure.
    #[serde(default)]
    pub restarts: u64,
}

/// One agent in `status`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct AgentStatus {
    pub name: String,
    pub busy: bool,
}

/// A browser logged in to the web client, as `web_sessions` lists it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct WebSession {
    pub id: i64,
    /// When its code was used, local RFC 3339.
    pub created: String,
    /// When it last opened the page or the live connection.
    pub last_seen: String,
    /// The browser's own description (its User-Agent), cut short.
    pub browser: String,
    /// Whether `web_revoke` ended it.
    pub revoked: bool,
}
