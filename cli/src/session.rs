//! What the terminal shows and remembers: how an event looks as a line
//! ([`event_line`], [`Style`]) and the [`Session`] — whether a turn runs,
//! which messages were typed here, which were already shown.

use crate::approvals::Approvals;
use crate::terminal::SOURCE;
use hearth_protocol::{Event, EventKind, Message};
use std::collections::{BTreeSet, HashSet, VecDeque};
use std::io::{self, IsTerminal};

/// Characters of a tool call shown on its one line.
const TOOL_SUMMARY_CHARS: usize = 100;

/// Whether output gets ANSI colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub colour: bool,
}

impl Style {
    /// Colours when stdout is a terminal and `NO_COLOR` is not set.
    pub fn detect() -> Style {
        Style {
            colour: io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    pub fn plain() -> Style {
        Style { colour: false }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    pub fn error(self, text: &str) -> String {
        self.paint("31", text)
    }
}

/// How an event is shown, or `None` when it is not (`idle`, `delta`).
/// Replies and echoes are the agent's words, shown plain; user messages from
/// a terminal as `> text` and from elsewhere with their source; tools, notes
/// and signals dimmed and short; errors as `error: …`.
pub fn event_line(event: &Event, style: Style) -> Option<String> {
    let text = event.text.as_deref().unwrap_or_default();
    let line = match event.kind {
        EventKind::User => match event.source.as_deref() {
            Some(SOURCE) | None => format!("> {text}"),
            Some(source) => format!("[{source}] {text}"),
        },
        EventKind::Reply | EventKind::Echo => text.to_string(),
        EventKind::Tool => {
            let mut summary = format!("· {}", first_line(text, TOOL_SUMMARY_CHARS));
            if let Some(status) = event.status.as_deref().filter(|s| *s != "ok") {
                summary.push_str(&format!(" ({status})"));
            }
            style.dim(&summary)
        }
        EventKind::Note => style.dim(&format!("note: {text}")),
        EventKind::Work => match event.status.as_deref() {
            Some(status) => format!("[work, {status}] {text}"),
            None => format!("[work] {text}"),
        },
        EventKind::Error => {
            let text = if text.is_empty() {
                "the turn failed"
            } else {
                text
            };
            style.error(&format!("error: {text}"))
        }
        EventKind::Busy => style.dim("… thinking"),
        EventKind::Ready => style.dim(&format!("· {} is ready", event.agent)),
        EventKind::Subagent => style.dim(&format!("· subagent: {text}")),
        // Approvals are asked by the session, which keeps what waits.
        EventKind::Idle | EventKind::Delta | EventKind::Approval => return None,
    };
    // Images are named, never drawn: `[image: cat.png, 640x480]`.
    let mut line = line;
    for image in &event.images {
        line.push('\n');
        line.push_str(&style.dim(&format!("[image: {}]", image.label())));
    }
    Some(line)
}

/// The first line of `text`, cut to `max` characters with `…` when longer.
pub fn first_line(text: &str, max: usize) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let more_lines = lines.next().is_some();
    match first.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None if more_lines => format!("{first} …"),
        None => first.to_string(),
    }
}

/// What the terminal knows of the conversation: whether a turn runs, which
/// messages it typed, and which it already showed.
#[derive(Debug)]
pub struct Session {
    /// A turn is running: Ctrl-C interrupts instead of quitting.
    pub busy: bool,
    /// The last input was a Ctrl-C at an idle prompt; another one quits.
    pub ctrl_c_armed: bool,
    pub style: Style,
    /// Lines submitted and not yet acknowledged, oldest first; their own
    /// `user` event may come before the ack.
    pending: VecDeque<String>,
    /// Ids of the lines typed here, so their `user` events are not echoed.
    own: HashSet<u64>,
    /// Own ids that no reply or error has answered yet.
    unanswered: BTreeSet<u64>,
    /// Every id a reply or error answered, for acks that come late.
    answered: HashSet<u64>,
    /// The newest message shown, so that history and live events that
    /// overlap never show a message twice.
    last_shown: Option<u64>,
    /// Tool calls waiting for approval, which a typed `y` or `n` answers.
    pub approvals: Approvals,
    /// What the frames sent and not yet answered were, oldest first: the
    /// daemon answers in order, and both a submit and an approve get `ack`.
    awaiting: VecDeque<Sent>,
}

/// A frame sent that `ack` or `error` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sent {
    Submit,
    Approve,
}

impl Session {
    pub fn new(busy: bool, style: Style) -> Session {
        Session {
            busy,
            ctrl_c_armed: false,
            style,
            pending: VecDeque::new(),
            own: HashSet::new(),
            unanswered: BTreeSet::new(),
            answered: HashSet::new(),
            last_shown: None,
            approvals: Approvals::default(),
            awaiting: VecDeque::new(),
        }
    }

    /// A line typed here was sent.
    pub fn on_submit(&mut self, text: String) {
        self.pending.push_back(text);
        self.awaiting.push_back(Sent::Submit);
    }

    /// An answer to an approval was sent.
    pub fn on_approve(&mut self) {
        self.awaiting.push_back(Sent::Approve);
    }

    /// The daemon refused the oldest frame awaiting an answer.
    pub fn on_refused(&mut self) {
        if self.awaiting.pop_front() == Some(Sent::Submit) {
            self.pending.pop_front();
        }
    }

    /// The oldest frame awaiting an answer is acknowledged: a pending line
    /// durable as `id`, or an approval's decision logged.
    pub fn on_ack(&mut self, id: u64) {
        if self.awaiting.pop_front() == Some(Sent::Approve) {
            return;
        }
        self.pending.pop_front();
        self.own.insert(id);
        if !self.answered.contains(&id) {
            self.unanswered.insert(id);
        }
    }

    /// A logged message from history.
    pub fn on_message(&mut self, message: &Message) -> Option<String> {
        self.on_event(&Event::message(message))
    }

    /// Takes an event; returns what to print, if anything.
    pub fn on_event(&mut self, event: &Event) -> Option<String> {
        if event.kind == EventKind::Approval {
            return self.approvals.on_event(event);
        }
        match event.kind {
            EventKind::Busy => self.busy = true,
            EventKind::Idle => self.busy = false,
            EventKind::Reply | EventKind::Error => {
                for id in &event.answers {
                    self.unanswered.remove(id);
                    self.answered.insert(*id);
                }
            }
            _ => {}
        }
        if let (Some(id), Some(_)) = (event.id, event.kind.message_kind()) {
            if self.last_shown.is_some_and(|last| id <= last) {
                return None;
            }
            self.last_shown = Some(id);
            if event.kind == EventKind::User && self.is_own(id, event) {
                return None;
            }
        }
        event_line(event, self.style)
    }

    /// Whether a `user` event is a line typed here: acknowledged as ours, or
    /// the next pending line arriving before its ack.
    fn is_own(&self, id: u64, event: &Event) -> bool {
        self.own.contains(&id)
            || (event.source.as_deref() == Some(SOURCE)
                && self.pending.front().map(String::as_str) == event.text.as_deref())
    }

    /// Every line typed here is durable.
    pub fn all_acked(&self) -> bool {
        self.pending.is_empty()
    }

    /// Every line typed here is durable and answered.
    pub fn settled(&self) -> bool {
        self.pending.is_empty() && self.unanswered.is_empty()
    }
}
