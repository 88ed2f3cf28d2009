//! What an agent is doing now: the `activity` events every client can show
//! live, and the daemon's side of `status` beyond the log (memory, database,
//! bridges). Activity is never logged: it says what happens, the log says
//! what happened.

use serde::{Deserialize, Serialize};

/// What an agent is doing, sent as an `activity` event each time it changes
/// (and to a client that attaches meanwhile) and reported in `status`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Activity {
    /// What the agent's turn does now.
    pub doing: Doing,
    /// When it started doing it, local RFC 3339 (a retry's: when it failed).
    pub since: String,
    /// Summaries the compactor is writing in the background now; with
    /// `doing: idle` the agent is compacting its memory between turns.
    #[serde(default)]
    pub compacting: u32,
}

/// The states of an agent's turn, in `activity.doing`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Doing {
    /// No turn runs.
    Idle,
    /// A model request is out: the model is thinking or writing.
    Thinking,
    /// A tool call runs.
    Tool {
        /// The tool's name (`shell`, `web_fetch`, …).
        name: String,
        /// What it was asked, in one short line (a shell command, a URL).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// For `shell`: the last line of output so far (sent at most a few
        /// times a second).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        line: Option<String>,
        /// Calls of this round still running (several run at once).
        #[serde(default = "one")]
        running: u32,
    },
    /// A model request failed in a way that may pass; it is tried again.
    Retrying {
        /// The try that comes next, 2 for the first retry.
        attempt: u32,
        /// Tries in all before the turn gives up (or a fallback takes over).
        attempts: u32,
        /// Why the last try failed, in one line.
        reason: String,
        /// How long the daemon waits before the next try, in milliseconds.
        wait_ms: u64,
    },
    /// The turn waits for memory summaries before its first request.
    Summaries {
        /// Summaries still to be written.
        pending: u32,
        /// Why they are not being written now, when they wait for the
        /// provider (down, rate-limited, out of budget): its last failure,
        /// in one line. They are written once calls succeed again.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waiting_for: Option<String>,
    },
}

fn one() -> u32 {
    1
}

impl Activity {
    /// An idle agent with nothing in the background.
    pub fn idle(since: String) -> Activity {
        Activity {
            doing: Doing::Idle,
            since,
            compacting: 0,
        }
    }

    /// What it says in one line, as a status line shows it (without the
    /// times, which a client counts from `since`).
    pub fn describe(&self) -> String {
        let mut text = match &self.doing {
            Doing::Idle => "idle".to_string(),
            Doing::Thinking => "thinking".to_string(),
            Doing::Tool {
                name,
                detail,
                line,
                running,
            } => {
                let mut text = name.clone();
                if let Some(detail) = detail {
                    text.push_str(": ");
                    text.push_str(detail);
                }
                if *running > 1 {
                    text.push_str(&format!(" (and {} more)", running - 1));
                }
                if let Some(line) = line {
                    text.push_str(" | ");
                    text.push_str(line);
                }
                text
            }
            Doing::Retrying {
                attempt,
                attempts,
                reason,
                wait_ms,
            } => format!(
                "retrying the model ({attempt} of {attempts}) in {:.1} s: {reason}",
                *wait_ms as f64 / 1000.0
            ),
            Doing::Summaries {
                pending,
                waiting_for,
            } => match waiting_for {
                Some(why) => format!(
                    "waiting for {pending} memory summaries until the model answers again: {why}"
                ),
                None => format!("waiting for {pending} memory summaries"),
            },
        };
        if self.compacting > 0 {
            if matches!(self.doing, Doing::Idle) {
                text = format!("compacting memory ({} summaries)", self.compacting);
            } else {
                text.push_str(&format!(" · compacting ({})", self.compacting));
            }
        }
        text
    }
}

/// The agent's memory, as `status` reports it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MemoryStatus {
    /// Lines (nodes) in the view.
    pub lines: u64,
    /// The rendered view's size in bytes.
    pub bytes: u64,
    /// The budget at which a batch of merges starts, in bytes.
    pub high_budget: u64,
    /// Summaries not written yet.
    pub pending: u64,
    /// The model that writes the summaries (`provider/model`), when it is
    /// not the turns' own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A bridge the configuration enables, as `status` reports it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct BridgeStatus {
    /// `telegram`, `whatsapp`.
    pub name: String,
    /// `running`, `restarting` (it stopped and is started again after a
    /// pause), `failed` (its configuration cannot work: fix it, then
    /// `hearth reload`), or `stopped`.
    pub state: String,
    /// Why it is not running, when it is not: the bridge's last words;
    /// while it runs, what keeps it from working (its [`problem_state`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The state in which a running bridge says what keeps it from working
/// (`telegram.problem`: a webhook that blocks polling); empty when nothing
/// does. `status` shows it beside the bridge.
pub fn problem_state(bridge: &str) -> String {
    format!("{bridge}.problem")
}

/// The WebSocket close code the daemon sends every client when it stops
/// (1001, "going away").
pub const CLOSE_GOING_AWAY: u16 = 1001;

/// The close frame's reason when the daemon stops for good.
pub const CLOSE_STOPPING: &str = "hearthd stopping";

/// The close frame's reason when the daemon stops to start again
/// (`hearth restart`): a client may reconnect with `since` and miss nothing.
pub const CLOSE_RESTARTING: &str = "hearthd restarting";
