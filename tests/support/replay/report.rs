//! What a replay measures per strategy, and the markdown tables it prints.
//!
//! One [`Meter`] per strategy counts every request it sends through one
//! simulated cache per time-to-live, split into turn requests and compaction
//! calls. Requests are also counted in steady state (after the first tenth of
//! the history) and, of those, warm: a turn request sent within the
//! time-to-live of the turn request before it, a compaction call within the
//! time-to-live of the request before it that shares its prefix (for hearth
//! the compaction call before, whose compaction view it reads; for the
//! threshold baseline the turn request before). A request that is not warm
//! follows an idle user or an idle compactor, which empty any cache; no
//! layout that obeys the memory's rules can help that.
//!
//! Hearth's meter also holds its [`Floors`]: what any layout obeying the
//! memory's rules must send uncached on the same history.

use super::cache::{common_prefix, tokens, Body, Cache, BYTES_PER_TOKEN, MIN_TOKENS};
use std::fmt::Write;

/// Claude Haiku 4.5's minimum cacheable prompt, in tokens: a shorter
/// prefix is neither written nor read (reference/wire.md, Anthropic prompt
/// caching: 4,096 for Haiku 4.5 in the 2026 sources).
pub const HAIKU_MIN_TOKENS: u64 = 4_096;

/// Input counted over a set of requests, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub requests: u64,
    pub input: u64,
    pub cached: u64,
    /// Of the uncached input, that of requests long enough to be cached
    /// (at least 1,024 tokens): what a provider with explicit marks, one at
    /// the request's end, writes to its cache and bills as a write.
    pub written: u64,
    /// The largest request's input.
    pub largest: u64,
}

impl Tally {
    fn add(&mut self, input: u64, cached: u64) {
        self.add_marked(input, cached, input, MIN_TOKENS);
    }

    /// A request whose last cache mark ends `marked` tokens in: what it
    /// writes is its uncached input up to there (a provider with explicit
    /// marks writes nothing after the last one, nor a prefix shorter than
    /// the model's minimum, `min_tokens`).
    fn add_marked(&mut self, input: u64, cached: u64, marked: u64, min_tokens: u64) {
        self.requests += 1;
        self.input += input;
        self.cached += cached;
        if input >= min_tokens && marked >= min_tokens {
            self.written += marked.min(input).saturating_sub(cached);
        }
        self.largest = self.largest.max(input);
    }

    pub fn uncached(&self) -> u64 {
        self.input - self.cached
    }

    /// The share of input served from the cache, 0 to 1.
    pub fn share(&self) -> f64 {
        if self.input == 0 {
            return 0.0;
        }
        self.cached as f64 / self.input as f64
    }
}

/// One time-to-live's counts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tallies {
    pub turns: Tally,
    pub steady: Tally,
    /// Steady turn requests sent within the time-to-live of the turn request
    /// before.
    pub warm: Tally,
    /// The bytes of new messages that the warm turn requests were the first
    /// to carry: every message logged since the turn request before. (A
    /// message logged after an idle gap belongs to the cold request that
    /// follows it.)
    pub warm_new_bytes: u64,
    pub compaction: Tally,
    /// The same calls on a cache that skips prefixes under Claude Haiku
    /// 4.5's minimum ([`HAIKU_MIN_TOKENS`]): how they are priced when it
    /// writes the lines (counted only for a memory model of its own).
    pub compaction_haiku: Tally,
    /// Of the compaction calls, those that compress one message (the rest
    /// merge two lines, or summarize the history).
    pub compress: Tally,
    /// Steady compaction calls sent within the time-to-live of the
    /// compaction call before them.
    pub warm_compaction: Tally,
    /// Of the bytes each warm steady request shares with the request of its
    /// kind before it, those the cache did not serve because it serves
    /// whole 128-token blocks only: turn requests, and compaction calls
    /// (measured only when the meter keeps the bodies).
    pub unserved_turns: u64,
    pub unserved_calls: u64,
}

/// What no layout that obeys the memory's rules can avoid sending uncached
/// on a given history, in bytes, counted as if the cache kept everything
/// forever: each part is a byte string that no earlier request carried
/// after the same prefix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Floors {
    /// Messages a turn sends whole (user messages, reports, echoes, tool
    /// calls and results): new, so sent once at least. Replies and notes
    /// reach the model only as view lines.
    pub whole: u64,
    /// The turn view at each turn's first request, from the first line the
    /// turn before did not show (new lines, or a batch's changes) to its
    /// end, with the state after it: the turn before had its state there.
    pub turn_view: u64,
    /// The bytes of messages too long for their own line: each is sent once
    /// more, whole, in its compress call, after the compaction view.
    pub compress: u64,
    /// The two lines of every merge call's first try: its task, after the
    /// compaction view; no earlier request carried them there.
    pub merge: u64,
    /// The compaction view's lines that a call's context shows for the first
    /// time since they last changed (new lines, or a batch's changes).
    pub compaction_view: u64,
    /// The ruler of every call whose context no earlier call showed: the
    /// task follows the context, so its ruler can be served from the cache
    /// only after a context sent before.
    pub rulers: u64,
}

impl Floors {
    /// Everything a turn request must send uncached.
    pub fn turns(&self) -> u64 {
        self.whole + self.turn_view
    }

    /// Everything a compaction call must send uncached.
    pub fn compaction(&self) -> u64 {
        self.compress + self.merge + self.compaction_view + self.rulers
    }
}

/// Everything measured for one strategy.
pub struct Meter {
    pub name: String,
    caches: Vec<Cache>,
    /// The compaction calls' own caches, when a memory model of its own
    /// writes the lines: its cache holds nothing the turns' model warmed.
    compaction_caches: Option<Vec<Cache>>,
    /// The same with Claude Haiku 4.5's minimum cacheable length.
    haiku_caches: Option<Vec<Cache>>,
    /// Whether the lines are written by the memory model (priced at its
    /// list prices) rather than the turns' model.
    pub memory_model: bool,
    pub tallies: Vec<Tallies>,
    /// Messages logged, and their text's bytes: what is new.
    pub messages: u64,
    pub new_bytes: u64,
    /// The largest view a turn request showed, in rendered bytes, and the
    /// layout's high budget; requests whose view passed it.
    pub largest_view: Option<usize>,
    pub view_budget: Option<usize>,
    pub over_budget: u64,
    /// Batches of merges seen by turns, and the sum over them of the share of
    /// the view's lines that stayed as they were before the first change.
    pub batches: u64,
    pub batch_kept: f64,
    /// What no layout obeying the rules could avoid (hearth's meter only).
    pub floors: Floors,
    /// Output tokens: of the turn requests (replies, echoes, tool calls),
    /// and of the compaction calls (every try's answer).
    pub turn_output: u64,
    pub compaction_output: u64,
    /// Where the current request stands: its time, whether it is in steady
    /// state, and per time-to-live whether it follows an idle gap.
    now: u64,
    steady: bool,
    cold: Vec<bool>,
    last_turn_request: Option<u64>,
    /// When the last compaction call was sent.
    last_compaction: Option<u64>,
    /// Bytes of messages logged since the last turn request, and those that
    /// the current turn request is the first to carry.
    unsent_bytes: u64,
    arrived_bytes: u64,
    /// The last turn request's and the last compaction call's bodies, kept
    /// to measure what the cache's block steps leave unserved; none when
    /// the bodies are too large to copy at every request.
    last_bodies: Option<[Vec<u8>; 2]>,
}

impl Meter {
    pub fn new(name: impl Into<String>, ttls: &[u64]) -> Meter {
        Meter {
            name: name.into(),
            caches: ttls.iter().map(|&ttl| Cache::new(ttl)).collect(),
            compaction_caches: None,
            haiku_caches: None,
            memory_model: false,
            tallies: vec![Tallies::default(); ttls.len()],
            messages: 0,
            new_bytes: 0,
            largest_view: None,
            view_budget: None,
            over_budget: 0,
            batches: 0,
            batch_kept: 0.0,
            floors: Floors::default(),
            turn_output: 0,
            compaction_output: 0,
            now: 0,
            steady: false,
            cold: vec![false; ttls.len()],
            last_turn_request: None,
            last_compaction: None,
            unsent_bytes: 0,
            arrived_bytes: 0,
            last_bodies: None,
        }
    }

    /// The compaction calls go to a memory model of their own: a cache of
    /// their own, priced at its list prices.
    pub fn lines_by_memory_model(mut self) -> Meter {
        self.compaction_caches = Some(self.ttls().iter().map(|&ttl| Cache::new(ttl)).collect());
        self.haiku_caches = Some(
            self.ttls()
                .iter()
                .map(|&ttl| Cache::with_minimum(ttl, HAIKU_MIN_TOKENS))
                .collect(),
        );
        self.memory_model = true;
        self
    }

    /// Also measures the bytes the cache's block steps leave unserved.
    pub fn measuring_blocks(mut self) -> Meter {
        self.last_bodies = Some([Vec::new(), Vec::new()]);
        self
    }

    /// The bytes `body` shares with the last request of its kind, which it
    /// then replaces; zero when bodies are not kept.
    fn shared_with_last(&mut self, body: &Body, kind: usize) -> u64 {
        let Some(bodies) = &mut self.last_bodies else {
            return 0;
        };
        let shared = common_prefix(&bodies[kind], body.bytes());
        bodies[kind].clear();
        bodies[kind].extend_from_slice(body.bytes());
        shared as u64
    }

    pub fn ttls(&self) -> Vec<u64> {
        self.caches.iter().map(|cache| cache.ttl).collect()
    }

    /// A message reached the log.
    pub fn logged(&mut self, text_bytes: usize, at: u64) {
        self.messages += 1;
        self.new_bytes += text_bytes as u64;
        self.unsent_bytes += text_bytes as u64;
        self.now = at;
    }

    /// The next requests are sent at `at` (compaction calls for what was
    /// just logged, or a turn request).
    pub fn at(&mut self, at: u64) {
        self.now = at;
    }

    /// A turn request follows, at `at`.
    pub fn turn_starts(&mut self, at: u64, steady: bool) {
        self.now = at;
        self.steady = steady;
        for (cold, cache) in self.cold.iter_mut().zip(&self.caches) {
            *cold = self
                .last_turn_request
                .is_none_or(|last| at.saturating_sub(last) > cache.ttl);
        }
        self.last_turn_request = Some(at);
        self.arrived_bytes = std::mem::take(&mut self.unsent_bytes);
    }

    /// One turn request.
    pub fn turn(&mut self, body: &mut Body) {
        let input = tokens(body.len() as u64);
        let shared = self.shared_with_last(body, 0);
        for at in 0..self.caches.len() {
            let cached = self.caches[at].serve(body, self.now);
            let tally = &mut self.tallies[at];
            tally.turns.add(input, cached);
            if self.steady {
                tally.steady.add(input, cached);
                if !self.cold[at] {
                    tally.warm.add(input, cached);
                    tally.warm_new_bytes += self.arrived_bytes;
                    tally.unserved_turns += shared.saturating_sub(cached * BYTES_PER_TOKEN);
                }
            }
        }
    }

    /// One of hearth's compaction calls after the compaction view;
    /// `compress` when it compresses a message. Warm when the compaction
    /// call before it, which shares its prefix (the compaction view), was
    /// within the time-to-live. Its last cache mark ends `marked` bytes in
    /// (its context, not its task): a provider with explicit marks writes
    /// only up to there.
    pub fn compaction_marked(&mut self, body: &mut Body, compress: bool, marked: usize) {
        self.call(body, compress, false, Some(marked));
    }

    /// One of hearth's calls at the end of a turn, extending its chain: it
    /// shares its prefix with the turn requests, so it is warm when the
    /// turn request before it was.
    pub fn chained(&mut self, body: &mut Body, compress: bool) {
        self.call(body, compress, true, None);
    }

    /// The threshold baseline's summary call, sent just before the turn
    /// request it makes room for: it shares its prefix with the turn
    /// requests, so it is warm when that turn request is.
    pub fn summary(&mut self, body: &mut Body) {
        self.call(body, false, true, None);
    }

    fn call(&mut self, body: &mut Body, compress: bool, after_turns: bool, marked: Option<usize>) {
        let input = tokens(body.len() as u64);
        let marked = marked.map_or(input, |bytes| tokens(bytes as u64));
        let shared = self.shared_with_last(body, 1);
        for at in 0..self.caches.len() {
            let warm = if after_turns {
                !self.cold[at]
            } else {
                self.last_compaction
                    .is_some_and(|last| self.now.saturating_sub(last) <= self.caches[at].ttl)
            };
            let cache = match &mut self.compaction_caches {
                Some(caches) => &mut caches[at],
                None => &mut self.caches[at],
            };
            let cached = cache.serve(body, self.now);
            let tally = &mut self.tallies[at];
            tally
                .compaction
                .add_marked(input, cached, marked, MIN_TOKENS);
            if compress {
                tally.compress.add_marked(input, cached, marked, MIN_TOKENS);
            }
            if let Some(caches) = &mut self.haiku_caches {
                let cached = caches[at].serve(body, self.now);
                tally
                    .compaction_haiku
                    .add_marked(input, cached, marked, HAIKU_MIN_TOKENS);
            }
            if self.steady && warm {
                tally.warm_compaction.add(input, cached);
                tally.unserved_calls += shared.saturating_sub(cached * BYTES_PER_TOKEN);
            }
        }
        self.last_compaction = Some(self.now);
    }

    /// The model wrote `bytes` in answer to the last turn request.
    pub fn turn_answer(&mut self, bytes: usize) {
        self.turn_output += tokens(bytes as u64);
    }

    /// The model wrote `bytes` in answer to the last compaction call.
    pub fn compaction_answer(&mut self, bytes: usize) {
        self.compaction_output += tokens(bytes as u64);
    }

    /// A turn found its view changed by a batch of merges, the first
    /// `kept` of its previous lines unchanged.
    pub fn batch(&mut self, kept: usize, previous: usize) {
        self.batches += 1;
        self.batch_kept += kept as f64 / previous.max(1) as f64;
    }

    /// The view a turn request shows, in rendered bytes, against its budget.
    pub fn view(&mut self, bytes: usize, budget: usize) {
        self.largest_view = Some(self.largest_view.unwrap_or(0).max(bytes));
        self.view_budget = Some(budget);
        if bytes > budget {
            self.over_budget += 1;
        }
    }

    /// Uncached input bytes per byte of new messages: turn requests only, or
    /// with the compaction calls.
    pub fn per_new_byte(&self, ttl: usize, with_compaction: bool) -> f64 {
        let tally = &self.tallies[ttl];
        let mut uncached = tally.turns.uncached();
        if with_compaction {
            uncached += tally.compaction.uncached();
        }
        (uncached * BYTES_PER_TOKEN) as f64 / self.new_bytes.max(1) as f64
    }

    /// The same over the steady, warm requests: their uncached input bytes
    /// per byte of the new messages the warm turn requests first carried.
    pub fn warm_per_new_byte(&self, ttl: usize, with_compaction: bool) -> f64 {
        let tally = &self.tallies[ttl];
        let mut uncached = tally.warm.uncached();
        if with_compaction {
            uncached += tally.warm_compaction.uncached();
        }
        (uncached * BYTES_PER_TOKEN) as f64 / tally.warm_new_bytes.max(1) as f64
    }

    /// The largest share of turn input that could come from the cache if
    /// every new byte were sent uncached once and nothing else: the ceiling
    /// the new text itself sets.
    pub fn text_cap(&self) -> f64 {
        let input = self.tallies.first().map_or(0, |t| t.turns.input) * BYTES_PER_TOKEN;
        1.0 - self.new_bytes as f64 / input.max(1) as f64
    }

    /// The largest share of turn input any layout obeying the rules could
    /// serve from the cache: all of it but the turn floors (over every turn
    /// request, as if the cache kept everything forever).
    pub fn share_cap(&self) -> f64 {
        let input = self.tallies.first().map_or(0, |t| t.turns.input) * BYTES_PER_TOKEN;
        1.0 - self.floors.turns() as f64 / input.max(1) as f64
    }

    /// A floor in bytes per byte of new messages.
    pub fn floor_per_new_byte(&self, bytes: u64) -> f64 {
        bytes as f64 / self.new_bytes.max(1) as f64
    }
}

/// hearth's goals, checked on one meter and one time-to-live. The goals
/// for steady state are judged on the warm requests, which a layout can
/// serve from the cache; the figures over every request are printed beside
/// them, and the floors under them.
pub struct Goals {
    pub steady_share: f64,
    pub warm_share: f64,
    /// The largest share any layout obeying the rules could reach.
    pub share_cap: f64,
    /// The ceiling the new text sets (see [`Meter::text_cap`]).
    pub text_cap: f64,
    pub per_new_byte: f64,
    pub with_compaction: f64,
    pub warm_per_new_byte: f64,
    pub warm_with_compaction: f64,
    /// The least uncached input per new byte any layout obeying the rules
    /// could send: turn requests, and with the compaction calls.
    pub floor: f64,
    pub floor_with_compaction: f64,
    pub within_budget: bool,
}

impl Goals {
    pub fn of(meter: &Meter, ttl: usize) -> Goals {
        let tally = &meter.tallies[ttl];
        let floors = meter.floors;
        Goals {
            steady_share: tally.steady.share(),
            warm_share: tally.warm.share(),
            share_cap: meter.share_cap(),
            text_cap: meter.text_cap(),
            per_new_byte: meter.per_new_byte(ttl, false),
            with_compaction: meter.per_new_byte(ttl, true),
            warm_per_new_byte: meter.warm_per_new_byte(ttl, false),
            warm_with_compaction: meter.warm_per_new_byte(ttl, true),
            floor: meter.floor_per_new_byte(floors.turns()),
            floor_with_compaction: meter.floor_per_new_byte(floors.turns() + floors.compaction()),
            within_budget: meter.over_budget == 0 && meter.largest_view.is_some(),
        }
    }

    pub fn lines(&self) -> String {
        let mark = |met: bool| if met { "met" } else { "MISSED" };
        format!(
            "- warm steady turn input from the cache within half a point of the ceiling the new \
             text sets ({:.1}%): {:.1}% — {} (at most {:.1}% under the rules; every steady \
             request: {:.1}%)\n\
             - uncached input per new byte ≤ 1.5 in steady state, warm requests: turn requests \
             {:.2} — {}; with the compaction calls {:.2} — {}. Over every request: {:.2} and \
             {:.2}; with a cache that kept everything forever, no layout obeying the rules \
             could send less than {:.2} and {:.2} over every request (a batch that falls on a \
             cold request is not counted among the warm ones).\n\
             - every request's view within the layout's budget: {}\n",
            self.text_cap * 100.0,
            self.warm_share * 100.0,
            mark(self.warm_share >= self.text_cap - 0.005),
            self.share_cap * 100.0,
            self.steady_share * 100.0,
            self.warm_per_new_byte,
            mark(self.warm_per_new_byte <= 1.5),
            self.warm_with_compaction,
            mark(self.warm_with_compaction <= 1.5),
            self.per_new_byte,
            self.with_compaction,
            self.floor,
            self.floor_with_compaction,
            mark(self.within_budget),
        )
    }
}

fn mega(tokens: u64) -> String {
    format!("{:.1}M", tokens as f64 / 1e6)
}

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

fn ttl_text(ttl: u64) -> String {
    if ttl.is_multiple_of(3_600) {
        format!("{} h", ttl / 3_600)
    } else {
        format!("{} min", ttl / 60)
    }
}

/// What the tables' columns mean.
pub const LEGEND: &str = "\
- *turn input*: input tokens of every turn request (4 bytes per token).
- *from cache*: the share of turn input the simulated cache served; *steady*: \
  the same after the first tenth of the history; *steady, warm*: of those, \
  the requests sent within the time-to-live of the turn request before (an \
  idle user empties any cache; no layout helps that).
- *uncached per new byte*: uncached input bytes of turn requests ÷ bytes of \
  new messages logged (1.0: every byte paid once); *with compaction*: \
  counting the compaction calls' uncached input too. Every request counts, \
  the cold ones after an idle gap and the first tenth included.
- *warm, per new byte*: the same over the steady, warm requests only: \
  uncached input bytes of the steady turn requests sent within the \
  time-to-live of the turn request before ÷ bytes of the messages logged \
  since that request before (what they were the first to carry; a message \
  logged after an idle gap belongs to the cold request that follows it); \
  *with compaction*: adding the uncached input of the steady compaction \
  calls sent within the time-to-live of the request before them that \
  shares their prefix — for hearth the compaction call before (the \
  compaction view), for the threshold baseline the turn request before (its \
  summary call reads the whole history); the denominator stays the same.
- *largest request*: the largest single request, turn or compaction.
- *compaction calls*: hearth's compress and merge calls (tries included), \
  the threshold baseline's summary calls; their input and its cache share.
";

/// The markdown table of every meter for one time-to-live.
pub fn table(meters: &[Meter], ttl: usize) -> String {
    let mut out = String::new();
    let seconds = meters.first().map_or(0, |meter| meter.ttls()[ttl]);
    let _ = writeln!(out, "Cache time-to-live {}:\n", ttl_text(seconds));
    out.push_str(
        "| strategy | turn requests | turn input (tokens) | from cache | steady | steady, warm | \
         uncached per new byte | with compaction | warm, per new byte | with compaction | \
         largest request (tokens) | compaction calls | compaction input (tokens) | \
         its cache share |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for meter in meters {
        let tally = &meter.tallies[ttl];
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} |",
            meter.name,
            tally.turns.requests,
            mega(tally.turns.input),
            percent(tally.turns.share()),
            percent(tally.steady.share()),
            percent(tally.warm.share()),
            meter.per_new_byte(ttl, false),
            meter.per_new_byte(ttl, true),
            meter.warm_per_new_byte(ttl, false),
            meter.warm_per_new_byte(ttl, true),
            tally.turns.largest.max(tally.compaction.largest),
            tally.compaction.requests,
            mega(tally.compaction.input),
            percent(tally.compaction.share()),
        );
    }
    out
}

/// The history's size, the views' bounds and batches, and where compaction
/// input goes, under the tables (for the time-to-live at `ttl`).
pub fn summary(meters: &[Meter], ttl: usize) -> String {
    let mut out = String::new();
    if let Some(meter) = meters.first() {
        let _ = writeln!(
            out,
            "History: {} messages, {:.1} MB of new text ({} tokens at {} bytes per token).",
            meter.messages,
            meter.new_bytes as f64 / 1e6,
            mega(tokens(meter.new_bytes)),
            BYTES_PER_TOKEN
        );
    }
    for meter in meters {
        if let (Some(view), Some(budget)) = (meter.largest_view, meter.view_budget) {
            let _ = writeln!(
                out,
                "{}: largest view {view} bytes of a {budget}-byte budget; {} requests over it. \
                 {} batches of merges, one per {:.0} turn requests, each keeping on average \
                 {:.0}% of the view's lines before its first change.",
                meter.name,
                meter.over_budget,
                meter.batches,
                meter.tallies[ttl].turns.requests as f64 / meter.batches.max(1) as f64,
                100.0 * meter.batch_kept / meter.batches.max(1) as f64,
            );
            let turns = meter.tallies[ttl].turns;
            let _ = writeln!(
                out,
                "{}: {:.1} kB of new text per turn request against {:.1} kB of input: even if \
                 every new byte were sent uncached once and nothing else, at most {:.1}% of turn \
                 input could come from the cache.",
                meter.name,
                meter.new_bytes as f64 / turns.requests.max(1) as f64 / 1e3,
                (turns.input * BYTES_PER_TOKEN) as f64 / turns.requests.max(1) as f64 / 1e3,
                100.0
                    * (1.0
                        - meter.new_bytes as f64 / (turns.input * BYTES_PER_TOKEN).max(1) as f64),
            );
            let floors = meter.floors;
            if floors != Floors::default() {
                let per = |bytes: u64| meter.floor_per_new_byte(bytes);
                let _ = writeln!(
                    out,
                    "{}: floors under the memory's rules on this history, in bytes per new \
                     byte, as if the cache kept everything forever: the messages turns send \
                     whole {:.2}; the turn view from its first line the turn before did not \
                     show (new lines, batches) and the state, at each turn {:.2}; the messages \
                     too long for their own line, sent once more whole by their compress \
                     calls {:.2}; the two lines of each merge call {:.2}; the compaction view's \
                     lines a call shows for the first time since they changed {:.2}; the ruler \
                     of each call after a context no call showed before {:.2}. Turn \
                     requests cannot go below {:.2}, nor with the compaction calls below \
                     {:.2}; at most {:.1}% of turn input can come from the cache.",
                    meter.name,
                    per(floors.whole),
                    per(floors.turn_view),
                    per(floors.compress),
                    per(floors.merge),
                    per(floors.compaction_view),
                    per(floors.rulers),
                    per(floors.turns()),
                    per(floors.turns() + floors.compaction()),
                    100.0 * meter.share_cap(),
                );
            }
            let tally = &meter.tallies[ttl];
            if meter.last_bodies.is_some() {
                let _ = writeln!(
                    out,
                    "{}: the cache serves whole 128-token blocks: of the bytes each warm steady \
                     request shares with the request of its kind before it, those it did not \
                     serve come to {:.2} per new byte of the warm turn requests and {:.2} in \
                     their compaction calls ({} time-to-live; no layout controls where in a \
                     block a request departs from the one before).",
                    meter.name,
                    tally.unserved_turns as f64 / tally.warm_new_bytes.max(1) as f64,
                    tally.unserved_calls as f64 / tally.warm_new_bytes.max(1) as f64,
                    ttl_text(meter.ttls()[ttl]),
                );
            }
            let (all, compress) = (meter.tallies[ttl].compaction, meter.tallies[ttl].compress);
            let per_byte = |tally: Tally| {
                (tally.uncached() * BYTES_PER_TOKEN) as f64 / meter.new_bytes.max(1) as f64
            };
            let _ = writeln!(
                out,
                "{}: compaction calls {} ({} compress a message, {} merge two lines); uncached \
                 input per new byte with a {} time-to-live: {:.2} from compress calls, {:.2} from \
                 merges.",
                meter.name,
                all.requests,
                compress.requests,
                all.requests - compress.requests,
                ttl_text(meter.ttls()[ttl]),
                per_byte(compress),
                per_byte(all) - per_byte(compress),
            );
        }
    }
    out
}
