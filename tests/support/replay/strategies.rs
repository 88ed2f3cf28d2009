//! The strategies compared, and the replay that drives them over one history
//! in lockstep, so every strategy sees the same messages at the same times.
//!
//! - [`Hearth`]: the real tree, views and layout.
//! - [`Unbounded`]: every message whole, appended; never forgets.
//! - [`Compacting`]: the whole history until a request passes 80% of a
//!   200k-token window, then one call summarizes all but the last 20k tokens.
//! - [`Sliding`]: the messages of the last N bytes (N = hearth's high budget).
//!
//! The baselines send the history as a plain transcript (user items, the
//! assistant's calls and their results) with the per-request state last, the
//! layout kindest to them; hearth sends what `request::build` lays out.

use super::cache::{self, Body};
use super::hearth::Hearth;
use super::history::{clock_text, log_time, Episode, Generator, Message};
use super::report::Meter;
use hearth_daemon::layout::Layout;
use hearth_daemon::log::{Entry, MessageData, TurnRecord};
use hearth_daemon::memory::{cut, one_line};
use hearth_daemon::model::{ToolCall, ToolSpec};
use hearth_daemon::request::whole;
use hearth_protocol::Kind;
use std::collections::VecDeque;

/// The agent in the replay.
pub const AGENT: &str = "main";

/// A way to lay out a long conversation's requests.
pub trait Strategy {
    /// A message reached the log (its compaction calls, if any, run now).
    fn logged(&mut self, entry: &Entry, meter: &mut Meter);
    /// One request of a turn's chain. `turn_log` is the log from the turn's
    /// first taken message on; `state` is the request's state message.
    fn request(&mut self, turn: TurnRecord, turn_log: &[Entry], state: &str, meter: &mut Meter);
    /// The turn's reply, the last entry of `turn_log`, was logged: the turn
    /// is over.
    fn turn_ended(&mut self, _turn: TurnRecord, _turn_log: &[Entry], _meter: &mut Meter) {}
}

/// Walks a history, logging its messages and sending its turns' requests to
/// every strategy.
#[derive(Default)]
pub struct Replay {
    next_id: u64,
    seq: i64,
    /// Turns that start at or after this message are in steady state.
    pub steady_from: u64,
    /// The last turn: its record and its log from the first taken message.
    pub last_turn: Option<(TurnRecord, Vec<Entry>)>,
}

impl Replay {
    pub fn new(steady_from: u64) -> Replay {
        Replay {
            steady_from,
            ..Replay::default()
        }
    }

    pub fn episode(
        &mut self,
        episode: &Episode,
        strategies: &mut [&mut dyn Strategy],
        meters: &mut [Meter],
    ) {
        match episode {
            Episode::Note(message) => {
                self.log(message, strategies, meters);
            }
            Episode::Turn(turn) => {
                let mut turn_log = Vec::new();
                let first = self.next_id;
                for message in &turn.taken {
                    turn_log.push(self.log(message, strategies, meters));
                }
                let record = TurnRecord {
                    seq: self.seq,
                    start_id: self.next_id,
                    taken_after: first.checked_sub(1),
                    taken_through: self.next_id - 1,
                };
                self.seq += 1;
                for (step, &at) in turn.requests_at.iter().enumerate() {
                    let state = format!(
                        "Local time: {}\nYou are the agent `{AGENT}`.",
                        clock_text(at)
                    );
                    let steady = record.start_id >= self.steady_from;
                    let answer = match turn.steps.get(step) {
                        Some(logged) => logged.iter().map(written).sum(),
                        None => turn.reply.text.len(),
                    };
                    for (strategy, meter) in strategies.iter_mut().zip(meters.iter_mut()) {
                        meter.turn_starts(at, steady);
                        strategy.request(record, &turn_log, &state, meter);
                        meter.turn_answer(answer);
                    }
                    for message in turn.steps.get(step).into_iter().flatten() {
                        turn_log.push(self.log(message, strategies, meters));
                    }
                }
                turn_log.push(self.log(&turn.reply, strategies, meters));
                for (strategy, meter) in strategies.iter_mut().zip(meters.iter_mut()) {
                    strategy.turn_ended(record, &turn_log, meter);
                }
                self.last_turn = Some((record, turn_log));
            }
        }
    }

    fn log(
        &mut self,
        message: &Message,
        strategies: &mut [&mut dyn Strategy],
        meters: &mut [Meter],
    ) -> Entry {
        let entry = entry(self.next_id, message);
        self.next_id += 1;
        for (strategy, meter) in strategies.iter_mut().zip(meters.iter_mut()) {
            meter.logged(message.text.len(), message.at);
            strategy.logged(&entry, meter);
        }
        entry
    }
}

/// The bytes the model wrote for a message of a turn's chain: an echo's
/// text, a tool call's name and arguments (its output is the tool's).
fn written(message: &Message) -> usize {
    match &message.call {
        Some(call) => call.name.len() + call.arguments.len(),
        None => message.text.len(),
    }
}

/// A message as the log holds it, with the machine details the turn loop
/// writes for echoes and tool calls.
pub fn entry(id: u64, message: &Message) -> Entry {
    let data = match (&message.call, message.step) {
        (Some(call), Some(step)) => MessageData::call(
            &ToolCall {
                id: call.id.clone(),
                name: call.name.to_string(),
                arguments: call.arguments.clone(),
            },
            step,
            &call.output,
        ),
        (None, Some(step)) => MessageData::at_step(step),
        _ => MessageData::default(),
    };
    Entry {
        message: hearth_protocol::Message {
            agent: AGENT.to_string(),
            id,
            kind: message.kind,
            source: message.source.to_string(),
            text: message.text.clone(),
            status: (message.kind == Kind::Tool).then(|| "ok".to_string()),
            at: log_time(message.at),
            answers: vec![],
            images: vec![],
            outbox: None,
            client: None,
            transcript_of: None,
        },
        data,
    }
}

/// One logged message as transcript items, serialized.
fn transcript(entry: &Entry) -> Vec<u8> {
    let mut out = Vec::new();
    let message = &entry.message;
    let data = &entry.data;
    match message.kind {
        Kind::Reply | Kind::Echo => cache::assistant(&mut out, Some(&message.text), &[]),
        Kind::Tool => match (&data.call_id, &data.name, &data.arguments) {
            (Some(id), Some(name), Some(arguments)) => {
                cache::assistant(&mut out, None, &[(id, name, arguments)]);
                cache::tool_result(&mut out, id, data.output.as_deref().unwrap_or(""));
            }
            _ => cache::user(&mut out, &whole(entry)),
        },
        _ => cache::user(&mut out, &whole(entry)),
    }
    out
}

/// The state item and the body's end.
fn tail(state: &str) -> Vec<u8> {
    let mut out = Vec::new();
    cache::user(&mut out, state);
    out.extend_from_slice(cache::END);
    out
}

/// Every message whole, appended: cached, and unbounded.
pub struct Unbounded {
    body: Body,
    /// Where the history ends in the body and the state begins.
    history_end: usize,
}

impl Unbounded {
    pub fn new(instructions: &str, tools: &[ToolSpec]) -> Unbounded {
        let mut body = Body::default();
        body.push(&cache::head(instructions, tools));
        Unbounded {
            history_end: body.len(),
            body,
        }
    }
}

impl Strategy for Unbounded {
    fn logged(&mut self, entry: &Entry, _: &mut Meter) {
        self.body.truncate(self.history_end);
        self.body.push(&transcript(entry));
        self.history_end = self.body.len();
    }

    fn request(&mut self, _: TurnRecord, _: &[Entry], state: &str, meter: &mut Meter) {
        self.body.truncate(self.history_end);
        self.body.push(&tail(state));
        meter.turn(&mut self.body);
    }
}

/// The model's window, in tokens, and the share of it that triggers a compaction.
pub const WINDOW_TOKENS: usize = 200_000;
/// Compact once a request would pass this many bytes: 80% of the window.
pub const COMPACT_AT: usize = WINDOW_TOKENS * 4 * 8 / 10;
/// What a compaction keeps whole: the last 20k tokens of messages.
pub const KEEP_BYTES: usize = 20_000 * 4;
/// The summary that replaces the rest.
pub const SUMMARY_BYTES: usize = 8_000;

const SUMMARY_TASK: &str = "Summarize the conversation above for your own future use: who \
asked for what, what was decided and done, what is still open, names, numbers and dates. \
The summary will replace everything but the most recent messages.";

/// The whole history until 80% of the window is used; then a summary
/// replaces all but the last 20k tokens.
pub struct Compacting {
    body: Body,
    head_end: usize,
    history_end: usize,
    /// The messages since the last compaction: their items and a few words.
    kept: VecDeque<(Vec<u8>, String)>,
    kept_bytes: usize,
    summary: String,
}

impl Compacting {
    pub fn new(instructions: &str, tools: &[ToolSpec]) -> Compacting {
        let mut body = Body::default();
        body.push(&cache::head(instructions, tools));
        Compacting {
            head_end: body.len(),
            history_end: body.len(),
            body,
            kept: VecDeque::new(),
            kept_bytes: 0,
            summary: String::new(),
        }
    }

    /// One summary call over the whole history; then the history restarts
    /// from the summary and the messages of the last 20k tokens.
    fn compact(&mut self, meter: &mut Meter) {
        self.body.truncate(self.history_end);
        let mut task = Vec::new();
        cache::user(&mut task, SUMMARY_TASK);
        task.extend_from_slice(cache::END);
        self.body.push(&task);
        meter.summary(&mut self.body);
        // The fake model's summary: the first words of each message it
        // replaces, after the summary before, at most SUMMARY_BYTES.
        let mut words = std::mem::take(&mut self.summary);
        while self.kept_bytes > KEEP_BYTES {
            let Some((item, snippet)) = self.kept.pop_front() else {
                break;
            };
            self.kept_bytes -= item.len();
            words.push_str("; ");
            words.push_str(&snippet);
        }
        let start = words.len().saturating_sub(SUMMARY_BYTES);
        let start = (start..words.len())
            .find(|&at| words.is_char_boundary(at))
            .unwrap_or(words.len());
        self.summary = words[start..].to_string();
        meter.compaction_answer(self.summary.len());
        self.body.truncate(self.head_end);
        let mut summary = Vec::new();
        cache::user(
            &mut summary,
            &format!("Summary of the conversation so far: {}", self.summary),
        );
        self.body.push(&summary);
        for (item, _) in &self.kept {
            self.body.push(item);
        }
        self.history_end = self.body.len();
    }
}

impl Strategy for Compacting {
    fn logged(&mut self, entry: &Entry, _: &mut Meter) {
        let item = transcript(entry);
        self.body.truncate(self.history_end);
        self.body.push(&item);
        self.history_end = self.body.len();
        self.kept_bytes += item.len();
        let snippet = cut(&one_line(&entry.message.text), 80);
        self.kept.push_back((item, snippet));
    }

    fn request(&mut self, _: TurnRecord, _: &[Entry], state: &str, meter: &mut Meter) {
        let tail = tail(state);
        if self.history_end + tail.len() > COMPACT_AT {
            self.compact(meter);
        }
        self.body.truncate(self.history_end);
        self.body.push(&tail);
        meter.turn(&mut self.body);
    }
}

/// The messages of the last `limit` bytes before the turn, whole; the window
/// slides at each turn's start and stays put during its chain.
pub struct Sliding {
    head: Vec<u8>,
    limit: usize,
    window: VecDeque<Vec<u8>>,
    window_bytes: usize,
    /// Messages logged since the window last slid.
    pending: Vec<Vec<u8>>,
    seq: Option<i64>,
    body: Body,
    scratch: Vec<u8>,
}

impl Sliding {
    pub fn new(instructions: &str, tools: &[ToolSpec], limit: usize) -> Sliding {
        Sliding {
            head: cache::head(instructions, tools),
            limit,
            window: VecDeque::new(),
            window_bytes: 0,
            pending: Vec::new(),
            seq: None,
            body: Body::default(),
            scratch: Vec::new(),
        }
    }
}

impl Strategy for Sliding {
    fn logged(&mut self, entry: &Entry, _: &mut Meter) {
        self.pending.push(transcript(entry));
    }

    fn request(&mut self, turn: TurnRecord, _: &[Entry], state: &str, meter: &mut Meter) {
        if self.seq != Some(turn.seq) {
            self.seq = Some(turn.seq);
            for item in self.pending.drain(..) {
                self.window_bytes += item.len();
                self.window.push_back(item);
            }
            while self.window_bytes > self.limit {
                let Some(item) = self.window.pop_front() else {
                    break;
                };
                self.window_bytes -= item.len();
            }
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&self.head);
        for item in self.window.iter().chain(&self.pending) {
            self.scratch.extend_from_slice(item);
        }
        self.scratch.extend_from_slice(&tail(state));
        self.body.replace(&self.scratch);
        meter.turn(&mut self.body);
    }
}

/// The comparison's rows, in order: hearth as the daemon runs it by default
/// (the lines written by the provider's small model, `[memory] model`, and
/// asked for at half the line budget, `summary_budget`); the same with
/// summaries asked for as long as a line; the turns' own model writing
/// full-length lines at the end of each turn's chain (the default before);
/// one compaction call per line (the form before batches); and the three
/// baselines.
pub const NAMES: [&str; 8] = [
    "hearth (default: lines by the small model)",
    "hearth, no early batch after an idle hour",
    "hearth, small model, summaries as long as a line",
    "hearth, lines by the turns' model (in the turn's chain)",
    "hearth, one compaction call per line (before)",
    "whole history",
    "compact at 80% of 200k",
    "sliding window (128 kB)",
];

/// The baseline that spend is compared with.
pub const THRESHOLD: &str = NAMES[6];

/// The rows shown only when `compare` is asked for its diagnostics.
const DIAGNOSTIC: std::ops::Range<usize> = 1..5;

/// Replays one history of at least `messages` messages through every
/// strategy in lockstep; one meter per strategy, in [`NAMES`] order (without
/// hearth's other forms unless `diagnostic`), each with one cache per
/// time-to-live in `ttls` (seconds).
pub fn compare(seed: u64, messages: u64, ttls: &[u64], diagnostic: bool) -> Vec<Meter> {
    let layout = match Layout::find("default") {
        Ok(layout) => layout,
        Err(err) => panic!("the default layout: {err}"),
    };
    let instructions = super::history::instructions();
    let tools = super::history::tools();
    let mut hearth =
        Hearth::new(layout.clone(), &instructions, &tools, true, false).lines_by_memory_model();
    // Every batch past the high budget, as before `idle_secs`.
    let no_idle = Layout {
        idle_secs: None,
        idle_budget: None,
        ..layout.clone()
    };
    let mut busy = Hearth::new(no_idle, &instructions, &tools, true, false).lines_by_memory_model();
    // Summaries asked for as long as a line, as before `summary_budget`.
    let long = Layout {
        summary_budget: None,
        ..layout.clone()
    };
    let mut long_lines =
        Hearth::new(long.clone(), &instructions, &tools, true, false).lines_by_memory_model();
    let mut chained = Hearth::new(long.clone(), &instructions, &tools, true, false);
    let mut retimed = Hearth::new(long, &instructions, &tools, true, false).one_call_per_line();
    let mut unbounded = Unbounded::new(&instructions, &tools);
    let mut compacting = Compacting::new(&instructions, &tools);
    let mut sliding = Sliding::new(&instructions, &tools, layout.high_budget);
    let mut strategies: Vec<&mut dyn Strategy> = vec![
        &mut hearth,
        &mut busy,
        &mut long_lines,
        &mut chained,
        &mut retimed,
        &mut unbounded,
        &mut compacting,
        &mut sliding,
    ];
    // hearth's rows (the first five names) keep their last request of
    // each kind, which is small enough to copy at every request.
    let mut meters: Vec<Meter> = NAMES
        .iter()
        .enumerate()
        .map(|(at, name)| match Meter::new(*name, ttls) {
            meter if at < 3 => meter.measuring_blocks().lines_by_memory_model(),
            meter if at < 5 => meter.measuring_blocks(),
            meter => meter,
        })
        .collect();
    if !diagnostic {
        for at in DIAGNOSTIC.rev() {
            strategies.remove(at);
            meters.remove(at);
        }
    }
    let mut replay = Replay::new(messages / 10);
    for episode in Generator::new(seed, messages) {
        replay.episode(&episode, &mut strategies, &mut meters);
    }
    meters
}
