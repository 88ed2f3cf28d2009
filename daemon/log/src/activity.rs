//! What an agent is doing now: one board per agent that the turn loop, the
//! retry loop, the shell and the memory keeper write to, and that sends an
//! `activity` event to every client at each change. Nothing here is logged.
//!
//! The board keeps the current activity so a client that attaches meanwhile,
//! and `status`, get it too. A shell command's last output line changes far
//! more often than anyone can read; it is sent at most once per
//! [`LINE_EVERY`], and the newest line is kept so the next send carries it.

use hearth_protocol::{Activity, Doing, Event};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::time::Instant;

/// The shortest time between two events that only change a tool's last line.
pub const LINE_EVERY: Duration = Duration::from_millis(250);

/// The longest last line an event carries, in characters.
const LINE_CHARS: usize = 200;

/// One agent's activity. Cheap to clone; clones share the board.
#[derive(Clone)]
pub struct ActivityBoard {
    agent: String,
    events: broadcast::Sender<Event>,
    state: Arc<Mutex<State>>,
}

/// What the board holds between changes.
struct State {
    activity: Activity,
    /// Tool calls of the round still running, by name and detail, in order.
    tools: Vec<(u64, String, Option<String>)>,
    /// The id the next started tool call gets.
    next_call: u64,
    /// When the last line-only event was sent.
    line_sent: Option<Instant>,
}

/// A running tool call on the board; dropping it takes the call off.
pub struct ToolCallGuard {
    board: ActivityBoard,
    id: u64,
}

impl ActivityBoard {
    pub fn new(agent: &str, events: broadcast::Sender<Event>) -> ActivityBoard {
        ActivityBoard {
            agent: agent.to_string(),
            events,
            state: Arc::new(Mutex::new(State {
                activity: Activity::idle(now()),
                tools: Vec::new(),
                next_call: 0,
                line_sent: None,
            })),
        }
    }

    /// The activity now.
    pub fn current(&self) -> Activity {
        self.lock().activity.clone()
    }

    /// The activity event of the activity now, for a client that attaches.
    pub fn event(&self) -> Event {
        Event::activity(&self.agent, self.current())
    }

    /// No turn runs.
    pub fn idle(&self) {
        self.set(Doing::Idle);
    }

    /// A model request is out.
    pub fn thinking(&self) {
        self.set(Doing::Thinking);
    }

    /// The turn waits for `pending` memory summaries.
    pub fn summaries(&self, pending: u32) {
        self.set(Doing::Summaries {
            pending,
            waiting_for: None,
        });
    }

    /// The turn waits for `pending` memory summaries, which wait in turn
    /// for the provider to answer again (`why`: its last failure).
    pub fn summaries_waiting(&self, pending: u32, why: &str) {
        self.set(Doing::Summaries {
            pending,
            waiting_for: Some(first_line(why)),
        });
    }

    /// A model call failed for a passing reason; try `attempt` of `attempts`
    /// follows after `wait`.
    pub fn retrying(&self, attempt: u32, attempts: u32, reason: &str, wait: Duration) {
        self.set(Doing::Retrying {
            attempt,
            attempts,
            reason: first_line(reason),
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
        });
    }

    /// How many summaries the compactor writes now.
    pub fn compacting(&self, running: u32) {
        let mut state = self.lock();
        if state.activity.compacting == running {
            return;
        }
        state.activity.compacting = running;
        self.send(&state.activity);
    }

    /// A tool call starts; it shows until the guard is dropped.
    pub fn tool(&self, name: &str, detail: Option<String>) -> ToolCallGuard {
        let mut state = self.lock();
        let id = state.next_call;
        state.next_call += 1;
        state
            .tools
            .push((id, name.to_string(), detail.map(|d| first_line(&d))));
        self.show_tools(&mut state, None);
        ToolCallGuard {
            board: self.clone(),
            id,
        }
    }

    /// A shell command wrote output; its last whole or partial line, when
    /// not blank, becomes the tool's `line` (sent at most every
    /// [`LINE_EVERY`]).
    pub fn tool_output(&self, output: &str) {
        let Some(line) = output
            .lines()
            .rev()
            .map(str::trim)
            .find(|line| !line.is_empty())
        else {
            return;
        };
        let mut state = self.lock();
        let Doing::Tool { line: shown, .. } = &mut state.activity.doing else {
            return;
        };
        *shown = Some(first_line(line));
        let due = state
            .line_sent
            .is_none_or(|sent| sent.elapsed() >= LINE_EVERY);
        if due {
            state.line_sent = Some(Instant::now());
            self.send(&state.activity);
        }
    }

    fn finish_tool(&self, id: u64) {
        let mut state = self.lock();
        state.tools.retain(|(call, _, _)| *call != id);
        if state.tools.is_empty() {
            // The model reads the results next.
            Self::change(&mut state, Doing::Thinking);
            self.send(&state.activity);
        } else {
            self.show_tools(&mut state, None);
        }
    }

    /// Shows the first running call, and how many run.
    fn show_tools(&self, state: &mut State, line: Option<String>) {
        let Some((_, name, detail)) = state.tools.first().cloned() else {
            return;
        };
        let running = u32::try_from(state.tools.len()).unwrap_or(u32::MAX);
        let doing = Doing::Tool {
            name,
            detail,
            line,
            running,
        };
        Self::change(state, doing);
        self.send(&state.activity);
    }

    fn set(&self, doing: Doing) {
        let mut state = self.lock();
        if !matches!(doing, Doing::Tool { .. }) {
            state.tools.clear();
        }
        if state.activity.doing == doing && !matches!(doing, Doing::Retrying { .. }) {
            return;
        }
        Self::change(&mut state, doing);
        self.send(&state.activity);
    }

    fn change(state: &mut State, doing: Doing) {
        state.activity.doing = doing;
        state.activity.since = now();
        state.line_sent = None;
    }

    fn send(&self, activity: &Activity) {
        let _ = self
            .events
            .send(Event::activity(&self.agent, activity.clone()));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a plain value: a panic while it was held leaves it usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for ToolCallGuard {
    fn drop(&mut self) {
        self.board.finish_tool(self.id);
    }
}

fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
}

/// `text`'s first line, cut to [`LINE_CHARS`] characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::EventKind;

    fn doing(event: &Event) -> Doing {
        assert_eq!(event.kind, EventKind::Activity);
        event.activity.as_ref().unwrap().doing.clone()
    }

    #[tokio::test(start_paused = true)]
    async fn a_tool_call_shows_its_name_and_last_line_then_the_model_thinks_again() {
        let (events, mut seen) = broadcast::channel(64);
        let board = ActivityBoard::new("hearth", events);
        board.thinking();
        assert_eq!(doing(&seen.recv().await.unwrap()), Doing::Thinking);
        let call = board.tool("shell", Some("make\nall".into()));
        let Doing::Tool { name, detail, .. } = doing(&seen.recv().await.unwrap()) else {
            panic!("a tool")
        };
        assert_eq!((name.as_str(), detail.as_deref()), ("shell", Some("make")));
        board.tool_output("one\ntwo\n");
        board.tool_output("three\n");
        let Doing::Tool { line, .. } = doing(&seen.recv().await.unwrap()) else {
            panic!("a tool")
        };
        assert_eq!(line.as_deref(), Some("two"));
        // Within LINE_EVERY the line is kept, not sent.
        assert!(seen.try_recv().is_err());
        tokio::time::advance(LINE_EVERY).await;
        board.tool_output("four");
        let Doing::Tool { line, .. } = doing(&seen.recv().await.unwrap()) else {
            panic!("a tool")
        };
        assert_eq!(line.as_deref(), Some("four"));
        drop(call);
        assert_eq!(doing(&seen.recv().await.unwrap()), Doing::Thinking);
        board.idle();
        assert_eq!(doing(&seen.recv().await.unwrap()), Doing::Idle);
        assert_eq!(board.current().doing, Doing::Idle);
    }

    #[tokio::test]
    async fn compaction_is_counted_beside_what_the_turn_does() {
        let (events, mut seen) = broadcast::channel(64);
        let board = ActivityBoard::new("hearth", events);
        board.compacting(2);
        let event = seen.recv().await.unwrap();
        assert_eq!(event.activity.unwrap().compacting, 2);
        // No change, no event.
        board.compacting(2);
        board.idle();
        assert!(seen.try_recv().is_err());
        board.retrying(2, 3, "HTTP 529\nbody", Duration::from_millis(1500));
        assert_eq!(
            doing(&seen.recv().await.unwrap()),
            Doing::Retrying {
                attempt: 2,
                attempts: 3,
                reason: "HTTP 529".into(),
                wait_ms: 1500
            }
        );
        assert_eq!(board.current().compacting, 2);
    }
}
