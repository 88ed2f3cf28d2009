//! Approvals: tool calls that wait for a person's yes or no.
//!
//! `[approvals]` in config.toml names the tools, and the shell command
//! patterns, whose calls need approval (none by default):
//!
//! ```toml
//! [approvals]
//! tools = ["write_file", "mcp__github__*"] # every call of these (`*` as below)
//! shell = ["rm *", "git push*", "*sudo*"]  # shell commands matching a pattern
//! timeout_secs = 300                       # then the call is denied
//! ```
//!
//! [`ApprovalsConfig::needs_approval`] is the policy, a pure function of the
//! call; [`glob_matches`] matches a pattern (`*` any run of characters, `?`
//! one) against the whole command, trimmed.
//!
//! [`Approvals`] is the registry of the requests that wait, shared by the
//! tools (which ask and wait) and the socket (which routes `approve` frames
//! to it). A request is logged as a note and sent to every client as an
//! `approval` event; the first answer decides, and is logged as a note
//! naming who gave it, before the call runs. With no answer before the
//! timeout the call is denied. A request whose call is dropped while it
//! waits (an interrupt, a stop) is withdrawn and counts as denied. Whoever
//! takes a request out of the registry decides it, so an answer and the
//! timeout can never both win.

use crate::log::{Log, LogError, NewMessage};
use hearth_protocol::{Approval, Event, EventKind};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{broadcast, oneshot};

/// Characters of a call shown in a request; the event carries it whole.
const SHOWN_CHARS: usize = 1000;

/// Decided requests remembered, so a late answer hears how it went.
const REMEMBERED: usize = 256;

/// Characters of the name of who decided.
const WHO_CHARS: usize = 64;

/// `[approvals]`: which calls wait for a person.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Tools every call of which needs approval (`shell` here covers every
    /// command); `*` and `?` match as in [`glob_matches`] (`mcp__github__*`).
    #[serde(default)]
    pub tools: Vec<String>,
    /// Patterns of shell commands that need approval: `*` matches any run
    /// of characters, `?` one, against the whole command.
    #[serde(default)]
    pub shell: Vec<String>,
    /// Seconds a request waits before the call is denied.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Tools that may act without a yes after the turn read something from
    /// outside (a fetched page, an MCP result); see `tools/taint.rs`.
    #[serde(default)]
    pub untrusted_ok: Vec<String>,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            tools: Vec::new(),
            shell: Vec::new(),
            timeout_secs: default_timeout(),
            untrusted_ok: Vec::new(),
        }
    }
}

fn default_timeout() -> u64 {
    300
}

impl ApprovalsConfig {
    /// Whether this call (arguments already checked against the tool's
    /// schema) must wait for a person.
    pub fn needs_approval(&self, tool: &str, arguments: &Value) -> bool {
        if self.tools.iter().any(|name| glob_matches(name, tool)) {
            return true;
        }
        tool == "shell"
            && arguments
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|command| {
                    let command = command.trim();
                    self.shell
                        .iter()
                        .any(|pattern| glob_matches(pattern, command))
                })
    }

    /// At least a second, whatever the file says.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_secs.max(1))
    }
}

/// Whether `text` as a whole matches `pattern`: `*` matches any run of
/// characters (none included), `?` exactly one; everything else itself.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    let (mut p, mut t) = (0, 0);
    // The last `*` seen, and where in the text its run ends so far.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == '?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                // Let the last `*` take one more character and try again.
                Some((star_at, run_end)) => {
                    p = star_at + 1;
                    t = run_end + 1;
                    star = Some((star_at, run_end + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == '*')
}

/// A call in one line for people: `shell \`cmd\``, or the tool and its
/// arguments, cut at [`SHOWN_CHARS`].
pub fn describe(tool: &str, arguments: &Value) -> String {
    match (tool, arguments.get("command").and_then(Value::as_str)) {
        ("shell", Some(command)) => format!("shell `{}`", cut(command.trim(), SHOWN_CHARS)),
        _ => format!("{tool} {}", cut(&arguments.to_string(), SHOWN_CHARS)),
    }
}

/// Who decided, as the note names them: the client, and the person it
/// names when it knows one (`telegram (@ada)`); one short line.
pub fn who(client: &str, person: Option<&str>) -> String {
    let clean = |text: &str| {
        cut(
            &text.split_whitespace().collect::<Vec<_>>().join(" "),
            WHO_CHARS,
        )
    };
    match person.map(clean).filter(|person| !person.is_empty()) {
        Some(person) => format!("{} ({person})", clean(client)),
        None => clean(client),
    }
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// How a request ended, for the call that waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Denied; the text is the call's error outcome, for the model.
    Denied(String),
}

#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    #[error("there is no approval `{0}`; it may have been for an earlier daemon")]
    Unknown(String),
    #[error("approval `{id}` was already decided: {how}")]
    AlreadyDecided { id: String, how: String },
    #[error("the decision could not be logged: {0}")]
    Log(#[from] LogError),
}

/// A person's answer, handed to the call that waits.
struct Decision {
    allowed: bool,
}

/// A request that waits.
struct Pending {
    /// The agent whose call waits; its log gets the notes.
    agent: String,
    approval: Approval,
    /// The call in one line.
    text: String,
    answer: oneshot::Sender<Decision>,
}

/// The registry of requests; clones share it.
#[derive(Clone)]
pub struct Approvals {
    inner: Arc<Inner>,
}

struct Inner {
    /// Replaced whole by a reload; a request already waiting keeps its timeout.
    config: std::sync::RwLock<Arc<ApprovalsConfig>>,
    log: Log,
    events: broadcast::Sender<Event>,
    state: Mutex<State>,
    /// Ids are a keyed hash of a counter: short, and unlike the ones before.
    keys: RandomState,
    counter: AtomicU64,
}

#[derive(Default)]
struct State {
    pending: BTreeMap<String, Pending>,
    /// The last decided ids and how, newest last.
    decided: VecDeque<(String, String)>,
}

impl Approvals {
    pub fn new(config: ApprovalsConfig, log: Log, events: broadcast::Sender<Event>) -> Approvals {
        Approvals {
            inner: Arc::new(Inner {
                config: std::sync::RwLock::new(Arc::new(config)),
                log,
                events,
                state: Mutex::default(),
                keys: RandomState::new(),
                counter: AtomicU64::new(0),
            }),
        }
    }

    /// The configuration now.
    pub fn config(&self) -> Arc<ApprovalsConfig> {
        // A plain value: a panic while it was replaced leaves it usable.
        self.inner
            .config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Which calls wait for a person from now on (a reloaded configuration).
    pub fn update(&self, config: ApprovalsConfig) {
        *self
            .inner
            .config
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(config);
    }

    /// Whether this call must wait for a person (see
    /// [`ApprovalsConfig::needs_approval`]).
    pub fn needs_approval(&self, tool: &str, arguments: &Value) -> bool {
        self.config().needs_approval(tool, arguments)
    }

    /// Asks for approval of `agent`'s call and waits for the decision: the
    /// first answer, else a denial at the timeout. Dropping the future
    /// withdraws the request (logged as denied).
    pub async fn ask(&self, agent: &str, tool: &str, arguments: &Value) -> Verdict {
        self.ask_because(agent, tool, arguments, None).await
    }

    /// As [`Approvals::ask`], saying why the call waits (`after reading
    /// https://…`) in the request people see.
    pub async fn ask_because(
        &self,
        agent: &str,
        tool: &str,
        arguments: &Value,
        because: Option<&str>,
    ) -> Verdict {
        let timeout = self.config().timeout();
        let secs = timeout.as_secs();
        let text = match because {
            Some(because) => format!("{} ({because})", describe(tool, arguments)),
            None => describe(tool, arguments),
        };
        let id = self.new_id();
        let asked = format!("approval {id}: {text} waits for a yes or no (denied in {secs} s)");
        let asked = note(asked).with_status(hearth_protocol::MessageStatus::Approval);
        if let Err(err) = self.inner.log.append(agent, asked).await {
            return Verdict::Denied(format!("the approval request could not be logged: {err}"));
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let approval = Approval {
            id: id.clone(),
            tool: tool.to_string(),
            arguments: arguments.to_string(),
            deadline: (chrono::Local::now() + timeout)
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
            timeout_secs: secs,
            allowed: None,
        };
        let (answer, mut decision) = oneshot::channel();
        let pending = Pending {
            agent: agent.to_string(),
            approval,
            text,
            answer,
        };
        // In the registry before anyone hears of it, so any answer finds it.
        let asking = event(&pending, None);
        self.lock().pending.insert(id.clone(), pending);
        let mut withdraw = Withdraw {
            approvals: self,
            id: Some(id.clone()),
        };
        let _ = self.inner.events.send(asking);

        let waited = tokio::time::timeout_at(deadline, &mut decision).await;
        withdraw.id = None;
        let decision = match waited {
            Ok(decision) => decision,
            Err(_) => {
                let how = format!("denied, no one answered within {secs} s");
                match self.take(&id, &how) {
                    Some(pending) => {
                        // A note that cannot be logged stops the agent anyway.
                        let _ = self.close(&pending, false, &how).await;
                        return Verdict::Denied(format!(
                            "no one approved this call within {secs} s"
                        ));
                    }
                    // An answer took it just now: it is on its way.
                    None => decision.await,
                }
            }
        };
        match decision {
            Ok(Decision { allowed: true }) => Verdict::Allowed,
            Ok(Decision { allowed: false }) => {
                Verdict::Denied("the user denied this call".to_string())
            }
            Err(_) => Verdict::Denied(
                "the answer to this call's approval could not be logged, so it does not run"
                    .to_string(),
            ),
        }
    }

    /// Decides request `id` as `who` says (see [`who`]). The decision is
    /// logged before the call hears it; returns the note's id.
    pub async fn answer(&self, id: &str, allow: bool, who: &str) -> Result<u64, ApprovalError> {
        let how = if allow {
            format!("allowed by {who}")
        } else {
            format!("denied by {who}")
        };
        let pending = self.take(id, &how).ok_or_else(|| {
            let state = self.lock();
            match state.decided.iter().find(|(decided, _)| decided == id) {
                Some((_, how)) => ApprovalError::AlreadyDecided {
                    id: id.to_string(),
                    how: how.clone(),
                },
                None => ApprovalError::Unknown(id.to_string()),
            }
        })?;
        // If the note cannot be logged, the sender is dropped: the call is denied.
        let noted = self.close(&pending, allow, &how).await?;
        let _ = pending.answer.send(Decision { allowed: allow });
        Ok(noted)
    }

    /// The `approval` events of the requests that wait now, oldest first:
    /// for a client that attaches while they do.
    pub fn waiting(&self) -> Vec<Event> {
        let state = self.lock();
        let mut waiting: Vec<&Pending> = state.pending.values().collect();
        waiting.sort_by(|a, b| a.approval.deadline.cmp(&b.approval.deadline));
        waiting.into_iter().map(|p| event(p, None)).collect()
    }

    /// Takes request `id` out of the registry, remembering how it ended;
    /// `None` when it is not there (unknown, or decided already).
    fn take(&self, id: &str, how: &str) -> Option<Pending> {
        let mut state = self.lock();
        let pending = state.pending.remove(id)?;
        if state.decided.len() == REMEMBERED {
            state.decided.pop_front();
        }
        state.decided.push_back((id.to_string(), how.to_string()));
        Some(pending)
    }

    /// Logs how a taken request ended and tells the clients.
    async fn close(&self, pending: &Pending, allowed: bool, how: &str) -> Result<u64, LogError> {
        let id = &pending.approval.id;
        let logged = self
            .inner
            .log
            .append(&pending.agent, note(format!("approval {id}: {how}")))
            .await;
        let mut closed = event(pending, Some(allowed));
        closed.text = Some(how.to_string());
        let _ = self.inner.events.send(closed);
        Ok(logged?.id)
    }

    /// Six characters of `a-z0-9`, none of them waiting now.
    fn new_id(&self) -> String {
        const DIGITS: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        loop {
            let count = self.inner.counter.fetch_add(1, Ordering::Relaxed);
            let mut hash = self.inner.keys.hash_one(count);
            let id: String = (0..6)
                .map(|_| {
                    let digit = DIGITS[(hash % 36) as usize];
                    hash /= 36;
                    char::from(digit)
                })
                .collect();
            let state = self.lock();
            let seen = state.pending.contains_key(&id)
                || state.decided.iter().any(|(decided, _)| *decided == id);
            if !seen {
                return id;
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every change under the lock is one step; a panic cannot leave it half done.
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Withdraws a request whose call was dropped while it waited.
struct Withdraw<'a> {
    approvals: &'a Approvals,
    /// None once the wait ended by itself.
    id: Option<String>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let how = "denied, the call was cancelled before anyone answered";
        let Some(pending) = self.approvals.take(&id, how) else {
            return;
        };
        let approvals = self.approvals.clone();
        // The note is written after the drop; without a runtime (the daemon
        // stopping) only the clients are told.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    let _ = approvals.close(&pending, false, how).await;
                });
            }
            Err(_) => {
                let mut closed = event(&pending, Some(false));
                closed.text = Some(how.to_string());
                let _ = approvals.inner.events.send(closed);
            }
        }
    }
}

/// The `approval` event of a request; `allowed` once it was decided.
fn event(pending: &Pending, allowed: Option<bool>) -> Event {
    let mut event = Event::signal(
        EventKind::Approval,
        &pending.agent,
        Some(pending.text.clone()),
    );
    let mut approval = pending.approval.clone();
    approval.allowed = allowed;
    event.approval = Some(Box::new(approval));
    event
}

fn note(text: String) -> NewMessage {
    NewMessage::daemon_note(text)
}

#[cfg(test)]
mod tests;
