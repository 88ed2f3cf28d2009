//! The memory benchmark: a synthetic personal-assistant history replayed
//! through hearth's real tree, views and request layout and through three
//! baselines, with a simulated OpenAI prompt cache; then the time to build a
//! turn's request over a 100,000-message log. Prints markdown.
//!
//! `cargo bench --bench memory [-- MESSAGES]`; `tests/bench/bench.sh` writes the
//! output into BENCHMARKS.md.

// A benchmark stops at the first failure: unwrap and expect name what failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_daemon::layout::Layout;
use hearth_daemon::request;
use hearth_tests::replay::{
    compare, history, spend, summary, table, Generator, Goals, Hearth, Meter, Replay, Strategy,
    LEGEND,
};
use std::collections::HashSet;
use std::time::{Duration, Instant};

const SEED: u64 = 2026;
/// The summary's time-to-live: OpenAI's in-memory retention.
const SUMMARY_TTL: u64 = 10 * 60;
const BUILD_LOG: u64 = 100_000;
const BUILDS: usize = 501;

fn main() {
    let messages: u64 = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse().ok())
        .unwrap_or(10_000);
    // The cache's times-to-live: those the priced models sell (Anthropic's
    // five minutes and one hour, OpenAI's in-memory and 24-hour retention).
    let ttls = spend::ttls();
    let started = Instant::now();
    let meters = compare(SEED, messages, &ttls, true);
    let replay_time = started.elapsed();

    println!("## Replay: {messages} messages (seed {SEED})\n");
    println!(
        "A synthetic personal-assistant history (bursty sessions over weeks, short and long \
         user messages, replies, tool calls with outputs up to 30,000 characters) replayed \
         through hearth's real tree, views and `request::build` with a fake summarizer, and \
         through three baselines, on a simulated OpenAI prefix cache (longest fresh prefix in \
         128-token steps, nothing under 1,024 tokens). hearth's compaction calls are batched: \
         the long messages of a turn and the merges ready then asked for at the turn's end, \
         those before a turn (the ones it takes, notes) before its first request, merges \
         answered as numbered lines — the form the daemon's keeper sends \
         (`memory/keeper/calls.rs`). The first hearth row is the default: the lines written \
         by the provider's small model (`[memory] model`), whose calls carry a short prompt of \
         their own, no tools and the compaction view, and have a cache of their own (another \
         model's cache holds nothing of the turns); a message logged an idle hour after the \
         one before starts the view's batch past 120,000 bytes rather than 128,000 (the \
         layout's `idle_secs` and `idle_budget`, read from the messages' times as the keeper \
         reads them), since the cache has let the request go. The other hearth rows change one \
         thing each: no early batch; summaries as long as a line; the turns' model writing \
         them, each turn's batch extending the turn's own cached chain; the form before \
         batches, one call per line after the compaction view and every merge as soon as \
         ready.\n"
    );
    println!("{LEGEND}");
    for ttl in 0..ttls.len() {
        println!("{}", table(&meters, ttl));
    }
    let summary_ttl = ttls.iter().position(|&t| t == SUMMARY_TTL).unwrap_or(0);
    print!("{}", summary(&meters, summary_ttl));
    println!();
    println!("{}", spend::LEGEND);
    print!("{}", spend::tables(&meters));
    for (ttl, seconds) in ttls.iter().enumerate() {
        println!(
            "Goals for hearth's layout, cache time-to-live {} s:\n\n{}",
            seconds,
            Goals::of(&meters[0], ttl).lines()
        );
    }
    println!("Replay time: {:.1} s.\n", replay_time.as_secs_f64());
    println!("## Recall canaries\n");
    println!(
        "Eight facts planted in user messages at known ages across the same history (seed \
         {SEED}), each looked for with `search` through the daemon's real full-text index (every \
         message appended to a real log, every line of the tree stored) and reached by `zoom` \
         from the final view.\n"
    );
    println!(
        "{}",
        hearth_tests::replay::canaries::recall(SEED, messages).table()
    );
    build_timing();
}

/// The median time of `request::build` for a turn over a long log, with
/// the view settled (and of rendering the view, which a turn does once).
fn build_timing() {
    let layout = match Layout::find("default") {
        Ok(layout) => layout,
        Err(err) => panic!("the default layout: {err}"),
    };
    let instructions = history::instructions();
    let tools = history::tools();
    let mut hearth = Hearth::new(layout, &instructions, &tools, false, false);
    let mut meters = [Meter::new("hearth", &[600])];
    let mut replay = Replay::new(u64::MAX);
    let started = Instant::now();
    for episode in Generator::new(SEED + 1, BUILD_LOG) {
        let mut strategies: [&mut dyn Strategy; 1] = [&mut hearth];
        replay.episode(&episode, &mut strategies, &mut meters);
    }
    let fill = started.elapsed();
    let Some((turn, turn_log)) = replay.last_turn.clone() else {
        panic!("the history had no turn");
    };
    let state = "Local time: 2026-11-30T10:00:00+00:00 (Monday)\nYou are the agent `main`.";
    let Some(context) = hearth.context(turn, &turn_log, state) else {
        panic!("the last turn has no settled view");
    };
    let mut builds = Vec::with_capacity(BUILDS);
    let mut items = 0;
    for _ in 0..BUILDS {
        let start = Instant::now();
        let request = request::build(&context).request;
        builds.push(start.elapsed());
        items = request.items.len();
        std::hint::black_box(&request);
    }
    let taken: HashSet<u64> = context.taken_ids().into_iter().collect();
    let mut renders = Vec::with_capacity(BUILDS);
    for _ in 0..BUILDS {
        let start = Instant::now();
        std::hint::black_box(hearth.render(&taken));
        renders.push(start.elapsed());
    }
    let build = median(&mut builds);
    println!("## Building a turn's request over a {BUILD_LOG}-message log\n");
    println!(
        "The log: {} messages, replayed through the tree and view in {:.1} s; the settled view \
         has {} lines in {} request items.\n",
        meters[0].messages,
        fill.as_secs_f64(),
        context.view.len(),
        items
    );
    println!("| step | median of {BUILDS} |");
    println!("|---|---:|");
    println!("| `request::build` | {:.3} ms |", ms(build));
    println!(
        "| `View::render` (once per turn) | {:.3} ms |",
        ms(median(&mut renders))
    );
    println!(
        "\nGoal: build under 1 ms — {}.",
        if build < Duration::from_millis(1) {
            "met"
        } else {
            "MISSED"
        }
    );
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(time: Duration) -> f64 {
    time.as_secs_f64() * 1e3
}
