//! The crash suite's workload (`tests/crash.rs`): clients that submit in
//! bursts, some with idempotency keys; programs that push notify events,
//! some keys repeated; schedules added a little ahead — all against a real
//! `hearthd` that the suite kills with SIGKILL — and the
//! [`Ledger`](crate::crash::Ledger) of what the daemon acknowledged before
//! it died, which the suite then holds the log to.
//!
//! Nothing here sleeps: the moment of a kill is a number of
//! acknowledgements and events observed
//! ([`Progress`](crate::crash::Progress)), drawn from a seeded
//! [`Lcg`](crate::crash::Lcg), and every wait is for a condition, bounded by
//! [`DEADLINE`](crate::harness::DEADLINE).
//! Every task expects the daemon to vanish under it and simply stops,
//! recording what was sent but never acknowledged.

use crate::harness::DEADLINE;
use hearth_client::Connection;
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ReceiptStatus, ServerFrame, Status};
use std::collections::BTreeMap;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// A tiny linear congruential generator (Knuth's MMIX constants, high bits
/// kept): the workload's only randomness, so a seed replays the same plan.
#[derive(Debug, Clone)]
pub struct Lcg(u64);

impl Lcg {
    pub fn new(seed: u64) -> Lcg {
        Lcg(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    // A generator that never ends, not an iterator.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// A number in `[0, n)` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One planned user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// Unique across the whole run, so the log can be searched for it.
    pub text: String,
    pub source: String,
    pub key: Option<String>,
}

/// A submit the daemon acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acked {
    pub id: u64,
    pub duplicate: bool,
    pub message: Planned,
}

/// A notify event the daemon answered with a receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub key: String,
    pub seq: i64,
    pub status: ReceiptStatus,
}

/// Everything the daemon acknowledged, and what was sent when it died.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Per client, its acknowledged submits in the order the acks came.
    pub acked: BTreeMap<String, Vec<Acked>>,
    /// Submits sent but never acknowledged: logged at most once.
    pub unacked: Vec<Planned>,
    /// Receipts in the order they came, duplicates too.
    pub receipts: Vec<Receipt>,
    /// The text of each notify key (`notify <key>`), receipted or not.
    pub notify_texts: BTreeMap<String, String>,
    /// Notify keys sent without a receipt coming back.
    pub unreceipted: Vec<String>,
    /// Texts of schedules the daemon acknowledged.
    pub schedules: Vec<String>,
    /// Texts of schedules sent without an answer.
    pub unanswered_schedules: Vec<String>,
}

impl Ledger {
    /// Every acknowledged submit, of every client.
    pub fn all_acked(&self) -> impl Iterator<Item = &Acked> {
        self.acked.values().flatten()
    }

    /// Records that `client`'s submit of `message` was acknowledged.
    pub fn record_ack(&mut self, client: &str, id: u64, duplicate: bool, message: Planned) {
        self.acked
            .entry(client.to_string())
            .or_default()
            .push(Acked {
                id,
                duplicate,
                message,
            });
    }

    /// The first acknowledgement of `key`, if it had one.
    pub fn acked_key(&self, key: &str) -> Option<&Acked> {
        self.all_acked()
            .filter(|acked| !acked.duplicate)
            .find(|acked| acked.message.key.as_deref() == Some(key))
    }
}

/// The ledger, shared by the workload's tasks.
#[derive(Clone, Default)]
pub struct SharedLedger(Arc<Mutex<Ledger>>);

impl SharedLedger {
    pub fn lock(&self) -> MutexGuard<'_, Ledger> {
        // Every change under the lock is one push: a panic cannot tear it.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What the agent says beside a slow tool call it starts, so a kill can be
/// aimed at the call.
pub const SLOW_CALL_ECHO: &str = "Running a command.";

/// Acknowledgements and events observed so far in a round, and the echoes
/// of slow tool calls: what the moment of a kill is measured in.
#[derive(Clone)]
pub struct Progress {
    count: Arc<watch::Sender<u64>>,
    echoes: Arc<watch::Sender<u64>>,
}

impl Default for Progress {
    fn default() -> Progress {
        Progress {
            count: Arc::new(watch::channel(0).0),
            echoes: Arc::new(watch::channel(0).0),
        }
    }
}

impl Progress {
    pub fn bump(&self) {
        self.count.send_modify(|count| *count += 1);
    }

    pub fn count(&self) -> u64 {
        *self.count.borrow()
    }

    /// Resolves once `target` acknowledgements and events were observed.
    pub async fn reached(&self, target: u64) {
        let mut seen = self.count.subscribe();
        // Errs only if the sender is dropped, which `self` prevents.
        let _ = seen.wait_for(|count| *count >= target).await;
    }

    /// Resolves once a [`SLOW_CALL_ECHO`] was observed: a slow tool call
    /// has just started.
    pub async fn echoed(&self) {
        let mut seen = self.echoes.subscribe();
        // As above.
        let _ = seen.wait_for(|echoes| *echoes > 0).await;
    }
}

/// A `submit` frame, built from its JSON so that fields added later with
/// defaults need no change here.
pub fn submit_frame(text: &str, source: &str, key: Option<&str>) -> ClientFrame {
    let json = serde_json::json!({"type": "submit", "text": text, "source": source, "key": key});
    ClientFrame::decode(&json.to_string()).expect("a valid submit frame")
}

async fn open(home: &Home, name: &str, since: Option<u64>) -> Option<Connection> {
    match tokio::time::timeout(DEADLINE, Connection::open(home, name, since)).await {
        Ok(Ok((connection, _))) => Some(connection),
        _ => None,
    }
}

/// The next answer that is not an event; `None` when the daemon is gone.
/// Each event on the way counts as progress.
async fn answer(connection: &mut Connection, progress: &Progress) -> Option<ServerFrame> {
    loop {
        let next = tokio::time::timeout(DEADLINE, connection.next())
            .await
            .expect("the daemon answers or dies within the deadline");
        match next {
            Ok(Some(ServerFrame::Event(_))) => progress.bump(),
            Ok(Some(frame)) => return Some(frame),
            Ok(None) | Err(_) => return None,
        }
    }
}

/// A client that submits `bursts`: each burst's submits are sent back to
/// back, then their acks read. Stops at the first sign that the daemon died;
/// what was sent then and not acknowledged goes to the ledger as unacked.
pub async fn submitter(
    home: Home,
    name: String,
    bursts: Vec<Vec<Planned>>,
    ledger: SharedLedger,
    progress: Progress,
) {
    let Some(mut connection) = open(&home, &name, None).await else {
        return;
    };
    for burst in bursts {
        let mut pending = std::collections::VecDeque::new();
        for message in burst {
            let frame = submit_frame(&message.text, &message.source, message.key.as_deref());
            let sent = connection.send(&frame).await;
            pending.push_back(message);
            if sent.is_err() {
                break;
            }
        }
        while let Some(message) = pending.pop_front() {
            match answer(&mut connection, &progress).await {
                Some(ServerFrame::Ack { id, duplicate }) => {
                    progress.bump();
                    ledger.lock().record_ack(&name, id, duplicate, message);
                }
                Some(other) => panic!("{name}: expected an ack, got {other:?}"),
                None => {
                    let mut ledger = ledger.lock();
                    ledger.unacked.push(message);
                    ledger.unacked.extend(pending);
                    return;
                }
            }
        }
    }
}

/// A program that pushes notify events with these keys, one at a time.
pub async fn notifier(home: Home, keys: Vec<String>, ledger: SharedLedger, progress: Progress) {
    let Some(mut connection) = open(&home, "notifier", None).await else {
        return;
    };
    for key in keys {
        let text = format!("notify {key}");
        ledger.lock().notify_texts.insert(key.clone(), text.clone());
        let frame = ClientFrame::Notify {
            key: key.clone(),
            text,
            source: "notify".into(),
        };
        let sent = connection.send(&frame).await.is_ok();
        match answer(&mut connection, &progress).await {
            Some(ServerFrame::Receipt { status, seq }) if sent => {
                progress.bump();
                ledger.lock().receipts.push(Receipt { key, seq, status });
            }
            Some(other) => panic!("notifier: expected a receipt, got {other:?}"),
            None => {
                ledger.lock().unreceipted.push(key);
                return;
            }
        }
    }
}

/// Adds one-off schedules, each `(when, text)`: a local time a few seconds
/// ahead, so it is never in the past when it arrives. Then, if asked,
/// interrupts whatever turn runs.
pub async fn scheduler(
    home: Home,
    schedules: Vec<(String, String)>,
    interrupt: bool,
    ledger: SharedLedger,
    progress: Progress,
) {
    let Some(mut connection) = open(&home, "scheduler", None).await else {
        return;
    };
    for (when, text) in schedules {
        let frame = ClientFrame::ScheduleAdd {
            when,
            text: text.clone(),
        };
        let sent = connection.send(&frame).await.is_ok();
        match answer(&mut connection, &progress).await {
            Some(ServerFrame::Schedules { schedules }) if sent => {
                assert_eq!(schedules.len(), 1, "the new schedule: {schedules:?}");
                progress.bump();
                ledger.lock().schedules.push(text);
            }
            Some(other) => panic!("scheduler: expected schedules, got {other:?}"),
            None => {
                ledger.lock().unanswered_schedules.push(text);
                return;
            }
        }
    }
    if interrupt && connection.send(&ClientFrame::Interrupt).await.is_ok() {
        match answer(&mut connection, &progress).await {
            Some(ServerFrame::Interrupted { .. }) | None => {}
            Some(other) => panic!("scheduler: expected interrupted, got {other:?}"),
        }
    }
}

/// The ids of the logged messages one client saw, across reconnections.
#[derive(Clone, Default)]
pub struct Seen(Arc<Mutex<Vec<u64>>>);

impl Seen {
    pub fn ids(&self) -> Vec<u64> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn last(&self) -> Option<u64> {
        self.ids().last().copied()
    }

    fn push(&self, id: u64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(id);
    }
}

/// A client that follows the log across crashes: it reconnects with
/// `since` = the last id it saw and records every message id it receives,
/// so the suite can check it missed nothing and saw nothing twice. Runs
/// until the daemon dies; every event counts as progress.
pub async fn observer(home: Home, seen: Seen, progress: Progress) {
    let since = seen.last();
    let Some(mut connection) = open(&home, "observer", since).await else {
        return;
    };
    // Ids at or below this came from history, not from events.
    let mut floor: Option<u64> = None;
    if since.is_none() {
        // Nothing seen yet: what was logged before this hello comes from a
        // history page, and the events that overlap it are skipped.
        let page = ClientFrame::History {
            before: None,
            limit: Some(10_000),
        };
        if connection.send(&page).await.is_err() {
            return;
        }
        let mut early = Vec::new();
        loop {
            match connection.next().await {
                Ok(Some(ServerFrame::History { messages })) => {
                    for message in &messages {
                        seen.push(message.id);
                    }
                    floor = messages.last().map(|m| m.id);
                    for id in early.drain(..) {
                        if floor.is_none_or(|floor| id > floor) {
                            seen.push(id);
                        }
                    }
                    break;
                }
                Ok(Some(ServerFrame::Event(event))) => {
                    progress.bump();
                    note_echo(&event, &progress);
                    if let (Some(id), Some(_)) = (event.id, event.kind.message_kind()) {
                        early.push(id);
                    }
                }
                Ok(Some(_)) => {}
                _ => return,
            }
        }
    }
    while let Ok(Some(frame)) = connection.next().await {
        if let ServerFrame::Event(event) = frame {
            progress.bump();
            note_echo(&event, &progress);
            if let (Some(id), Some(_)) = (event.id, event.kind.message_kind()) {
                if floor.is_none_or(|floor| id > floor) {
                    seen.push(id);
                }
            }
        }
    }
}

fn note_echo(event: &hearth_protocol::Event, progress: &Progress) {
    if event.kind == hearth_protocol::EventKind::Echo
        && event.text.as_deref() == Some(SLOW_CALL_ECHO)
    {
        progress.echoes.send_modify(|echoes| *echoes += 1);
    }
}

/// A client for the moments between rounds, when the daemon is up and must
/// answer: every failure is a test failure.
pub struct Steady {
    connection: Connection,
}

impl Steady {
    pub async fn connect(home: &Home, name: &str) -> Steady {
        let (connection, _) = tokio::time::timeout(DEADLINE, Connection::open(home, name, None))
            .await
            .expect("connected in time")
            .expect("connected");
        Steady { connection }
    }

    /// Sends `frame` and returns the first answer that is not an event.
    pub async fn request(&mut self, frame: ClientFrame) -> ServerFrame {
        self.connection.send(&frame).await.expect("sent");
        loop {
            let next = tokio::time::timeout(DEADLINE, self.connection.next())
                .await
                .expect("an answer in time")
                .expect("a readable frame")
                .expect("the daemon is up");
            if !matches!(next, ServerFrame::Event(_)) {
                return next;
            }
        }
    }

    pub async fn submit(&mut self, message: &Planned) -> (u64, bool) {
        let frame = submit_frame(&message.text, &message.source, message.key.as_deref());
        match self.request(frame).await {
            ServerFrame::Ack { id, duplicate } => (id, duplicate),
            other => panic!("expected an ack, got {other:?}"),
        }
    }

    pub async fn notify(&mut self, key: &str, text: &str) -> (ReceiptStatus, i64) {
        let frame = ClientFrame::Notify {
            key: key.to_string(),
            text: text.to_string(),
            source: "notify".into(),
        };
        match self.request(frame).await {
            ServerFrame::Receipt { status, seq } => (status, seq),
            other => panic!("expected a receipt, got {other:?}"),
        }
    }

    pub async fn status(&mut self) -> Status {
        match self.request(ClientFrame::Status).await {
            ServerFrame::Status(status) => *status,
            other => panic!("expected status, got {other:?}"),
        }
    }

    /// The whole log through the protocol, page by page, oldest first.
    pub async fn whole_log(&mut self) -> Vec<hearth_protocol::Message> {
        let mut log = Vec::new();
        let mut before = None;
        loop {
            let frame = ClientFrame::History {
                before,
                limit: Some(1000),
            };
            let ServerFrame::History { messages } = self.request(frame).await else {
                panic!("expected history");
            };
            let Some(first) = messages.first() else {
                break;
            };
            before = Some(first.id);
            let done = first.id == 0;
            log.splice(0..0, messages);
            if done {
                break;
            }
        }
        log
    }

    /// Waits (bounded) for the next event, or for `limit` to pass: how a
    /// poll for a condition waits without spinning.
    pub async fn next_event_or(&mut self, limit: std::time::Duration) {
        let _ = tokio::time::timeout(limit, self.connection.next()).await;
    }
}

/// A number from the environment (a round count, a seed), or `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {text:?}")),
        Err(_) => default,
    }
}

/// How many times each invariant was checked, for the report.
#[derive(Default)]
pub struct Tally(pub BTreeMap<&'static str, u64>);

impl Tally {
    pub fn add(&mut self, invariant: &'static str, times: u64) {
        *self.0.entry(invariant).or_default() += times;
    }
}
