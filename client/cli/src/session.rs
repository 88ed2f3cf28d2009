//! What the terminal knows of the conversation: whether a turn runs, which
//! messages it typed, which it already showed, and so what each event
//! comes to on screen ([`Show`]). Every event is shown once: a message seen
//! in history and again live, a failed turn (its note and its `error`
//! event), an approval (its note and its `approval` event).

use crate::approvals::Approvals;
use crate::look::{self, Style};
use chrono::{DateTime, Local};
use hearth_protocol::{Event, EventKind, Message, NOTE_APPROVAL};
use std::collections::{BTreeSet, HashSet, VecDeque};

/// The source of the lines typed in a terminal.
pub const SOURCE: &str = "terminal";

/// Lines a long message keeps when history is shown on attach.
const FOLDED_LINES: usize = 6;

/// What an event comes to on screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Show {
    Nothing,
    /// Lines printed for good.
    Line(String),
    /// The agent's words, logged: a reply or what it said beside tool calls.
    Words {
        agent: String,
        at: String,
        text: String,
        /// A reply: the turn's last words, so nothing runs after them.
        ends_turn: bool,
    },
    /// A piece of the words the model is writing.
    Delta(String),
    /// A turn started.
    Busy,
    /// The turn ended.
    Idle,
}

/// What the terminal knows of the conversation.
#[derive(Debug)]
pub struct Session {
    /// A turn is running: Ctrl-C interrupts instead of quitting.
    pub busy: bool,
    /// The last input was a Ctrl-C at an idle prompt; another one quits.
    pub ctrl_c_armed: bool,
    pub style: Style,
    /// This client's name in `hello`; logged messages of a client of that
    /// name are shown as your own.
    pub me: String,
    /// Lines submitted and not yet acknowledged, oldest first; their own
    /// `user` event may come before the ack.
    pending: VecDeque<String>,
    /// Ids of the lines typed here.
    own: HashSet<u64>,
    /// Own ids that no reply or error has answered yet.
    unanswered: BTreeSet<u64>,
    /// Every id a reply or error answered, for acks that come late.
    answered: HashSet<u64>,
    /// The newest message shown, so that history and live events that
    /// overlap never show a message twice; a reconnect asks for what came
    /// after it.
    last_shown: Option<u64>,
    /// The oldest message shown, where paging back through history goes on.
    oldest_shown: Option<u64>,
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
    pub fn new(busy: bool, style: Style, me: &str) -> Session {
        Session {
            busy,
            ctrl_c_armed: false,
            style,
            me: me.to_string(),
            pending: VecDeque::new(),
            own: HashSet::new(),
            unanswered: BTreeSet::new(),
            answered: HashSet::new(),
            last_shown: None,
            oldest_shown: None,
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

    /// The daemon refused the oldest frame awaiting an answer; returns
    /// whether it was a line's submit.
    pub fn on_refused(&mut self) -> bool {
        let submit = self.awaiting.pop_front() == Some(Sent::Submit);
        if submit {
            self.pending.pop_front();
        }
        submit
    }

    /// The connection dropped: frames sent on it are answered no more,
    /// except the lines, which are sent again (with their keys, so none is
    /// logged twice). A turn that ran may be over.
    pub fn on_disconnect(&mut self) {
        self.awaiting.retain(|sent| *sent == Sent::Submit);
        self.busy = false;
    }

    /// The oldest frame awaiting an answer is acknowledged: a pending line
    /// durable as `id` (returns true), or an approval's decision logged.
    pub fn on_ack(&mut self, id: u64) -> bool {
        if self.awaiting.pop_front() == Some(Sent::Approve) {
            return false;
        }
        self.pending.pop_front();
        self.own.insert(id);
        if !self.answered.contains(&id) {
            self.unanswered.insert(id);
        }
        true
    }

    /// A logged message from a history page asked for on attach: shown
    /// folded when long.
    pub fn on_message(&mut self, message: &Message) -> Show {
        self.show(&Event::message(message), false)
    }

    /// Takes a live event.
    pub fn on_event(&mut self, event: &Event) -> Show {
        self.show(event, true)
    }

    /// The newest message id shown: a reconnect asks for what came after.
    pub fn last_shown(&self) -> Option<u64> {
        self.last_shown
    }

    /// Where paging back through history goes on: before this id.
    pub fn oldest_shown(&self) -> Option<u64> {
        self.oldest_shown
    }

    /// A page of older messages was shown, starting at `id`.
    pub fn paged_back_to(&mut self, id: u64) {
        self.oldest_shown = Some(self.oldest_shown.map_or(id, |oldest| oldest.min(id)));
    }

    /// A message of an older page as it is shown: whole, never twice-checked.
    pub fn older_message(&self, message: &Message, now: DateTime<Local>) -> Show {
        let event = Event::message(message);
        self.look(&event, now)
    }

    fn show(&mut self, event: &Event, live: bool) -> Show {
        if event.kind == EventKind::Approval {
            return match self.approvals.on_event(event) {
                Some(question) => Show::Line(self.style.ask(&question)),
                None => Show::Nothing,
            };
        }
        match event.kind {
            EventKind::Busy => {
                self.busy = true;
                return Show::Busy;
            }
            EventKind::Idle => {
                self.busy = false;
                return Show::Idle;
            }
            EventKind::Delta => {
                return Show::Delta(event.text.clone().unwrap_or_default());
            }
            EventKind::Reply | EventKind::Error => {
                for id in &event.answers {
                    self.unanswered.remove(id);
                    self.answered.insert(*id);
                }
            }
            _ => {}
        }
        // A failed turn is said by its note, logged just before this event.
        if event.kind == EventKind::Error && !event.answers.is_empty() {
            return Show::Nothing;
        }
        if let (Some(id), Some(_)) = (event.id, event.kind.message_kind()) {
            if self.last_shown.is_some_and(|last| id <= last) {
                return Show::Nothing;
            }
            self.last_shown = Some(id);
            if self.oldest_shown.is_none() {
                self.oldest_shown = Some(id);
            }
            if event.kind == EventKind::User && self.is_typed_here(id, event) {
                self.own.insert(id);
            }
        }
        // Live, an approval request is asked by its `approval` event.
        if live && event.kind == EventKind::Note && event.status.as_deref() == Some(NOTE_APPROVAL) {
            return Show::Nothing;
        }
        let mut event = event.clone();
        if !live {
            if let Some(text) = event.text.as_mut() {
                *text = look::fold(text, FOLDED_LINES);
            }
        }
        self.look(&event, Local::now())
    }

    fn look(&self, event: &Event, now: DateTime<Local>) -> Show {
        match event.kind {
            EventKind::Reply | EventKind::Echo => Show::Words {
                agent: match look::imported_from(event) {
                    Some(peer) => format!("{} · imported from {peer}", event.agent),
                    None => event.agent.clone(),
                },
                at: event.at.clone().unwrap_or_default(),
                // A cut or refused reply carries the line that says so.
                text: match event.kind {
                    EventKind::Reply => hearth_protocol::ending::shown(
                        event.text.as_deref().unwrap_or_default(),
                        event.status.as_deref(),
                    ),
                    _ => event.text.clone().unwrap_or_default(),
                },
                ends_turn: event.kind == EventKind::Reply,
            },
            _ => {
                let mine = event.kind == EventKind::User && self.is_mine(event);
                match look::event_line(event, mine, self.style, now) {
                    Some(line) => Show::Line(line),
                    None => Show::Nothing,
                }
            }
        }
    }

    /// Whether a `user` event is a line typed here: acknowledged as ours, or
    /// the next pending line arriving before its ack.
    fn is_typed_here(&self, id: u64, event: &Event) -> bool {
        self.own.contains(&id)
            || (event.source.as_deref() == Some(SOURCE)
                && event
                    .client
                    .as_deref()
                    .is_none_or(|client| client == self.me)
                && self.pending.front().map(String::as_str) == event.text.as_deref())
    }

    /// Whether a user message is shown as your own: typed here (or the
    /// transcript of a voice note sent from here), or by a terminal of
    /// this name in an earlier session.
    fn is_mine(&self, event: &Event) -> bool {
        let own = |id: &Option<u64>| id.is_some_and(|id| self.own.contains(&id));
        own(&event.id)
            || own(&event.transcript_of)
            || (event.source.as_deref() == Some(SOURCE)
                && event.client.as_deref() == Some(self.me.as_str()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::{Kind, NOTE_FAILED};

    fn message(id: u64, kind: Kind, source: &str, text: &str) -> Message {
        Message {
            agent: "hearth".into(),
            id,
            kind,
            source: source.into(),
            text: text.into(),
            status: None,
            at: "2026-11-30T10:00:00+00:00".into(),
            answers: Vec::new(),
            images: Vec::new(),
            outbox: None,
            client: None,
            transcript_of: None,
        }
    }

    fn event(id: u64, kind: Kind, source: &str, text: &str) -> Event {
        Event::message(&message(id, kind, source, text))
    }

    fn line(show: Show) -> String {
        match show {
            Show::Line(line) => line,
            other => panic!("expected a line, got {other:?}"),
        }
    }

    fn session() -> Session {
        Session::new(false, Style::plain(), "terminal@here")
    }

    #[test]
    fn own_lines_look_like_your_own_before_or_after_their_ack() {
        let mut session = session();
        session.on_submit("first".into());
        // The event before the ack.
        let mut first = event(10, Kind::User, "terminal", "first");
        first.client = Some("terminal@here".into());
        assert!(line(session.on_event(&first)).ends_with("› first"));
        session.on_ack(10);
        // The ack before the event.
        session.on_submit("second".into());
        session.on_ack(11);
        let second = event(11, Kind::User, "terminal", "second");
        assert!(line(session.on_event(&second)).ends_with("› second"));
        // Another terminal's words say whose they are.
        let mut other = event(12, Kind::User, "terminal", "hi");
        other.client = Some("terminal@elsewhere".into());
        assert!(line(session.on_event(&other)).ends_with("[terminal@elsewhere] hi"));
    }

    #[test]
    fn an_imported_message_says_where_it_came_from() {
        let mut session = session();
        let mut asked = message(1, Kind::User, "openclaw", "old words");
        asked.status = Some("imported".into());
        assert!(line(session.on_message(&asked)).ends_with("[imported from openclaw] old words"));
        let mut answered = message(2, Kind::Reply, "openclaw", "old answer");
        answered.status = Some("imported".into());
        let Show::Words { agent, .. } = session.on_message(&answered) else {
            panic!("words")
        };
        assert_eq!(agent, "hearth · imported from openclaw");
    }

    #[test]
    fn a_message_is_shown_once_across_history_and_live_events() {
        let mut session = session();
        let old = message(5, Kind::Reply, "hearth", "old");
        assert!(matches!(session.on_message(&old), Show::Words { .. }));
        assert_eq!(
            session.on_event(&event(5, Kind::Reply, "hearth", "old")),
            Show::Nothing
        );
        assert_eq!(
            session.on_event(&event(4, Kind::Note, "hearthd", "older")),
            Show::Nothing
        );
        assert!(matches!(
            session.on_event(&event(6, Kind::Note, "hearthd", "new")),
            Show::Line(_)
        ));
        assert_eq!(session.last_shown(), Some(6));
        assert_eq!(session.oldest_shown(), Some(5));
    }

    #[test]
    fn a_failed_turn_is_shown_once_by_its_note() {
        let mut session = session();
        session.on_submit("q".into());
        session.on_ack(3);
        let mut note = event(4, Kind::Note, "hearthd", "turn failed: no model");
        note.status = Some(NOTE_FAILED.into());
        assert!(line(session.on_event(&note)).contains("turn failed: no model"));
        let mut error = Event::signal(EventKind::Error, "hearth", Some("no model".into()));
        error.answers = vec![3];
        assert_eq!(session.on_event(&error), Show::Nothing);
        assert!(session.settled());
        // An error no note records is shown.
        let lost = Event::signal(EventKind::Error, "hearth", Some("the log is full".into()));
        assert_eq!(line(session.on_event(&lost)), "error: the log is full");
    }

    #[test]
    fn an_approval_is_asked_once_and_its_note_shows_only_in_history() {
        let mut session = session();
        session.approvals = Approvals::following("hearth");
        let mut asked = event(
            7,
            Kind::Note,
            "hearthd",
            "approval abc123: shell `ls` waits",
        );
        asked.status = Some(NOTE_APPROVAL.into());
        assert_eq!(session.on_event(&asked), Show::Nothing);
        let mut request = Event::signal(EventKind::Approval, "hearth", Some("shell `ls`".into()));
        request.approval = Some(Box::new(hearth_protocol::Approval {
            id: "abc123".into(),
            tool: "shell".into(),
            arguments: "{}".into(),
            deadline: "2026-11-30T10:05:00+00:00".into(),
            timeout_secs: 300,
            allowed: None,
        }));
        assert!(line(session.on_event(&request)).starts_with("approve shell `ls`?"));
        assert_eq!(session.on_event(&request), Show::Nothing);

        let mut fresh = Session::new(false, Style::plain(), "terminal@here");
        let mut logged = message(
            7,
            Kind::Note,
            "hearthd",
            "approval abc123: shell `ls` waits",
        );
        logged.status = Some(NOTE_APPROVAL.into());
        assert!(matches!(fresh.on_message(&logged), Show::Line(_)));
    }

    #[test]
    fn busy_follows_turns_and_settled_waits_for_answers() {
        let mut session = session();
        session.on_submit("q".into());
        assert!(!session.settled());
        session.on_ack(3);
        assert_eq!(
            session.on_event(&Event::signal(EventKind::Busy, "hearth", None)),
            Show::Busy
        );
        assert!(session.busy);
        assert!(!session.settled());
        let reply = Event::message(&Message {
            answers: vec![3],
            ..message(4, Kind::Reply, "hearth", "a")
        });
        assert!(matches!(session.on_event(&reply), Show::Words { .. }));
        session.on_event(&Event::signal(EventKind::Idle, "hearth", None));
        assert!(!session.busy);
        assert!(session.settled());
    }

    #[test]
    fn an_approvals_ack_is_not_taken_for_a_lines() {
        let mut session = session();
        session.on_submit("first".into());
        session.on_approve();
        session.on_submit("second".into());
        session.on_ack(10);
        session.on_ack(11);
        session.on_ack(12);
        assert!(session.all_acked());
        assert!(line(session.on_event(&event(12, Kind::User, "terminal", "second"))).contains('›'));
        session.on_approve();
        session.on_refused();
        session.on_submit("third".into());
        session.on_ack(14);
        assert!(session.all_acked());
    }

    #[test]
    fn a_long_message_in_history_is_folded_live_it_is_whole() {
        let long: String = (0..30).map(|n| format!("line {n}\n")).collect();
        let mut session = session();
        let Show::Words { text, .. } =
            session.on_message(&message(1, Kind::Reply, "hearth", &long))
        else {
            panic!("words")
        };
        assert!(text.contains("more lines"), "{text}");
        let Show::Words { text, .. } = session.on_event(&event(2, Kind::Reply, "hearth", &long))
        else {
            panic!("words")
        };
        assert_eq!(text, long);
    }
}
