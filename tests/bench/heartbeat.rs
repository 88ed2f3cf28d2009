//! What a heartbeat costs: a week of an owner's days and nights through
//! hearth's own rule (`daemon/log/src/heartbeat.rs`, [`Heartbeat`]), priced
//! at list prices, against the same week on a fixed 30-minute cadence (the
//! default of OpenClaw's heartbeat), whose beats run whatever the cache
//! holds.
//!
//! `cargo bench --bench heartbeat` prints a Markdown section for
//! BENCHMARKS.md. Time is simulated: the rule is pure, asked at each minute
//! of the week; nothing sleeps, nothing leaves the machine.
//!
//! The same prompt for both: a prefix of [`PREFIX`] tokens (the
//! instructions, the tools and the conversation's view), the beat's
//! message with its checklist ([`BEAT`] tokens) and the quiet answer
//! ([`ANSWER`]). What differs is when beats run, and so what the provider's
//! cache holds: hearth fires a beat only within `within` of a turn's end
//! (its prefix read from the cache), and never in a quiet night; a fixed
//! cadence of 30 minutes runs every beat, each long after the last
//! request, when a five-minute cache entry is gone (the prefix written to
//! the cache again).

use hearth_daemon::heartbeat::Heartbeat;
use hearth_daemon::model::Usage;
use hearth_daemon::usage::{Price, Prices};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// Tokens of the prompt before the beat: instructions, tools, the view.
const PREFIX: u64 = 40_000;
/// Tokens of the beat's message with a short checklist.
const BEAT: u64 = 400;
/// Tokens of the quiet answer (`HEARTBEAT_OK`).
const ANSWER: u64 = 8;

const MINUTE: Duration = Duration::from_secs(60);

/// The minutes of the day the owner writes (a turn each, a minute long):
/// morning, lunch, evening, late evening; then the night until 08:00.
const TALKS: [u64; 4] = [8 * 60, 12 * 60 + 30, 18 * 60, 22 * 60 + 30];
const DAYS: u64 = 7;

/// The priced models: one of each provider's common ones.
const MODELS: [&str; 2] = ["claude-sonnet-4-5", "gpt-5"];

/// Beats in one simulated week, by day (08:00 to 23:00) and night.
#[derive(Default)]
struct Week {
    day_beats: u64,
    night_beats: u64,
}

fn is_night(minute_of_day: u64) -> bool {
    !(8 * 60..23 * 60).contains(&minute_of_day)
}

/// hearth's rule, asked at every minute of the week.
fn hearth_week(every: Duration, within: Duration) -> Week {
    let start = Instant::now();
    let at = |minute: u64| start + MINUTE * u32::try_from(minute).unwrap_or(u32::MAX);
    let mut heartbeat = Heartbeat::new(every, within, start);
    let mut week = Week::default();
    let mut busy_until = 0;
    for minute in 0..DAYS * 24 * 60 {
        let of_day = minute % (24 * 60);
        if minute < busy_until {
            continue;
        }
        if TALKS.contains(&of_day) {
            // The owner's turn: a minute; the cache is warm after it.
            busy_until = minute + 1;
            heartbeat.turn_ended(at(busy_until));
            continue;
        }
        if heartbeat.due(at(minute)) {
            heartbeat.fired(at(minute));
            busy_until = minute + 1;
            heartbeat.turn_ended(at(busy_until));
            if is_night(of_day) {
                week.night_beats += 1;
            } else {
                week.day_beats += 1;
            }
        }
    }
    week
}

/// A fixed cadence: a beat every `every`, whatever came before.
fn fixed_week(every: Duration) -> Week {
    let step = every.as_secs() / 60;
    let mut week = Week::default();
    for minute in (step..DAYS * 24 * 60).step_by(step as usize) {
        if is_night(minute % (24 * 60)) {
            week.night_beats += 1;
        } else {
            week.day_beats += 1;
        }
    }
    week
}

/// One beat's request: its prefix from the cache (hearth, within minutes
/// of a turn) or written to it again (a beat half an hour after the last
/// request); the beat's message written for the next.
fn beat_usage(warm: bool) -> Usage {
    Usage {
        input: PREFIX + BEAT,
        cached_input: if warm { PREFIX } else { 0 },
        cache_write: if warm { BEAT } else { PREFIX + BEAT },
        cache_write_long: 0,
        output: ANSWER,
    }
}

fn price(model: &str) -> Price {
    let prices = Prices::new(&BTreeMap::new());
    match prices.lookup(model) {
        Some(price) => price,
        None => panic!("{model} is in the built-in table of list prices"),
    }
}

fn main() {
    let every = Duration::from_secs(30 * 60);
    let within = Duration::from_secs(5 * 60);
    let hearth = hearth_week(every, within);
    let fixed = fixed_week(every);
    println!("## Heartbeat: a week's cost");
    println!();
    println!(
        "`cargo bench --bench heartbeat` (`tests/bench/heartbeat.rs`): a simulated week, the owner writing at 08:00, 12:30, 18:00 and 22:30 each day, \
         a heartbeat every 30 minutes (`[heartbeat] every = \"30m\"`, `within = \"5m\"`), through hearth's own rule; against the same week on a fixed \
         30-minute cadence (OpenClaw's default). Both with the same prompt: a {PREFIX}-token prefix, a {BEAT}-token beat, a {ANSWER}-token quiet answer. \
         hearth's beats come within 5 minutes of a turn, the prefix read from the cache; the fixed cadence's come 30 minutes after the last request, \
         the five-minute cache entry gone and the prefix written again."
    );
    println!();
    println!("| | beats by day (a week) | beats by night (23:00–08:00, a week) |");
    println!("|---|---|---|");
    println!("| hearth | {} | {} |", hearth.day_beats, hearth.night_beats);
    println!(
        "| fixed 30-minute cadence | {} | {} |",
        fixed.day_beats, fixed.night_beats
    );
    println!();
    println!("| model (list prices) | one hearth beat | one cadence beat | hearth, a night | cadence, a night | hearth, a week | cadence, a week | hearth / cadence |");
    println!("|---|---|---|---|---|---|---|---|");
    for model in MODELS {
        let price = price(model);
        let warm = price.cost(&beat_usage(true));
        let cold = price.cost(&beat_usage(false));
        let nights = DAYS as f64;
        let hearth_week = warm * (hearth.day_beats + hearth.night_beats) as f64;
        let fixed_week = cold * (fixed.day_beats + fixed.night_beats) as f64;
        println!(
            "| `{model}` | ${warm:.4} | ${cold:.4} | ${:.2} | ${:.2} | ${hearth_week:.2} | ${fixed_week:.2} | {:.3} |",
            warm * hearth.night_beats as f64 / nights,
            cold * fixed.night_beats as f64 / nights,
            hearth_week / fixed_week.max(1e-12),
        );
    }
}
