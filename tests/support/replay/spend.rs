//! What each strategy's requests cost at list prices, from its meter: input
//! the cache did not serve, cache reads, cache writes, output — for the
//! turns and for the compaction calls (every try) — per priced model and
//! cache time-to-live, with the goals beside the figures.
//!
//! OpenAI bills cached input at its discount and charges nothing to write
//! the cache. Anthropic bills reads at a tenth of the input price and
//! writes at 1.25 times it for its five-minute entries, twice it for its
//! one-hour entries; every turn request here is taken to carry a mark at
//! its end (as hearth's do), so all its uncached input is written, unless
//! it is too short to be cached at all; hearth's compaction calls write up
//! to their last mark, the end of their context. Where a memory model of
//! its own writes the lines, its calls are priced at its prices. The simulated cache is OpenAI's (a
//! prefix in 128-token steps); Anthropic serves a prefix up to a mark, so
//! its figures are an estimate of the same shape.

use super::cache::tokens;
use super::report::{Meter, Tally};
use super::strategies::THRESHOLD;
use hearth_daemon::usage::{Price, Prices};
use std::fmt::Write;

/// A priced model at one cache time-to-live.
#[derive(Debug, Clone, Copy)]
pub struct Pricing {
    pub model: &'static str,
    pub price: Price,
    /// The provider's small model, which writes hearth's lines by default
    /// (`[memory] model`), and its prices.
    pub memory_model: &'static str,
    pub memory_price: Price,
    /// Seconds an entry lives after its last use.
    pub ttl: u64,
    /// Cache writes as a multiple of the input price; none when writing
    /// costs nothing beyond the input itself (OpenAI).
    pub writes: Option<f64>,
}

/// What the spend tables show, printed above them.
pub const LEGEND: &str = "\
Spend: every request of the replay priced at list prices, turns and compaction \
calls (every try) alike, with output at 4 bytes per token (replies, echoes, tool \
calls, every compaction answer). *Uncached input*: input neither read from the \
cache nor written to it; *cache writes*: Anthropic's, at its multiplier for the \
entry's lifetime (every turn request is taken to carry a mark at its end, so all \
its uncached input is written unless it is under 1,024 tokens); OpenAI charges no \
write premium. The same cache time-to-live holds for every strategy in a row; \
Anthropic's figures use the same simulated prefix cache, an estimate of the \
same shape. hearth's compaction calls write only up to their last mark (their \
context: the task after it is input, not a write). Where the provider's small \
model writes the lines, its calls are priced at its own list prices and served \
by a cache of their own. Reasoning tokens are not counted: hearth asks the \
memory model for the least reasoning it takes (`minimal` for gpt-5-nano; \
Claude without thinking); claude-haiku-4-5 caches no prefix under its minimum \
of 4,096 tokens, so its calls are counted on a cache that skips shorter ones \
(the others' minimum is 1,024). *compaction ÷ turns*: what compaction adds to the \
turns' spend.";

/// The small models that write the lines by default beside gpt-5-mini and
/// claude-sonnet-4-5.
pub const OPENAI_MEMORY: &str = "gpt-5-nano";
pub const ANTHROPIC_MEMORY: &str = "claude-haiku-4-5";

/// The priced columns: gpt-5-mini with its in-memory retention (up to
/// about ten minutes, an hour when the cache is quiet) and the extended
/// one of 24 hours; claude-sonnet-4-5 with the five-minute and the
/// one-hour entries (Anthropic sells no 24-hour one).
pub fn pricings() -> Vec<Pricing> {
    let prices = Prices::default();
    let mut out = Vec::new();
    if let (Some(price), Some(memory_price)) =
        (prices.lookup("gpt-5-mini"), prices.lookup(OPENAI_MEMORY))
    {
        for ttl in [600, 3_600, 86_400] {
            out.push(Pricing {
                model: "gpt-5-mini",
                price,
                memory_model: OPENAI_MEMORY,
                memory_price,
                ttl,
                writes: None,
            });
        }
    }
    if let (Some(price), Some(memory_price)) = (
        prices.lookup("claude-sonnet-4-5"),
        prices.lookup(ANTHROPIC_MEMORY),
    ) {
        for (ttl, writes) in [(300, 1.25), (3_600, 2.0)] {
            out.push(Pricing {
                model: "claude-sonnet-4-5",
                price,
                memory_model: ANTHROPIC_MEMORY,
                memory_price,
                ttl,
                writes: Some(writes),
            });
        }
    }
    out
}

/// Every time-to-live the priced columns need, once each, ascending.
pub fn ttls() -> Vec<u64> {
    let mut ttls: Vec<u64> = pricings().iter().map(|p| p.ttl).collect();
    ttls.sort_unstable();
    ttls.dedup();
    ttls
}

/// Spend in USD.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    /// Input neither read from the cache nor written to it.
    pub uncached: f64,
    pub reads: f64,
    pub writes: f64,
    pub output: f64,
}

impl Spend {
    fn of(tally: &Tally, output: u64, pricing: &Pricing) -> Spend {
        let per = |tokens: u64, usd: f64| tokens as f64 * usd / 1e6;
        let price = pricing.price;
        let (plain, writes) = match pricing.writes {
            Some(times) => (
                tally.uncached() - tally.written,
                per(tally.written, price.input * times),
            ),
            None => (tally.uncached(), 0.0),
        };
        Spend {
            uncached: per(plain, price.input),
            reads: per(tally.cached, price.cached_input),
            writes,
            output: per(output, price.output),
        }
    }

    pub fn total(&self) -> f64 {
        self.uncached + self.reads + self.writes + self.output
    }

    fn plus(&self, other: &Spend) -> Spend {
        Spend {
            uncached: self.uncached + other.uncached,
            reads: self.reads + other.reads,
            writes: self.writes + other.writes,
            output: self.output + other.output,
        }
    }
}

/// One strategy's spend: its turn requests and its compaction calls.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Priced {
    pub turns: Spend,
    pub compaction: Spend,
}

impl Priced {
    /// `meter`'s spend under `pricing`; none when the meter did not
    /// simulate that time-to-live.
    pub fn of(meter: &Meter, pricing: &Pricing) -> Option<Priced> {
        let at = meter.ttls().iter().position(|&ttl| ttl == pricing.ttl)?;
        let tally = &meter.tallies[at];
        let lines = if meter.memory_model {
            Pricing {
                price: pricing.memory_price,
                ..*pricing
            }
        } else {
            *pricing
        };
        // Claude Haiku 4.5 caches no prefix under its larger minimum.
        let calls = if meter.memory_model && pricing.memory_model == ANTHROPIC_MEMORY {
            &tally.compaction_haiku
        } else {
            &tally.compaction
        };
        Some(Priced {
            turns: Spend::of(&tally.turns, meter.turn_output, pricing),
            compaction: Spend::of(calls, meter.compaction_output, &lines),
        })
    }

    pub fn all(&self) -> Spend {
        self.turns.plus(&self.compaction)
    }

    /// What compaction adds to the turns' spend, as a share of it.
    pub fn compaction_share(&self) -> f64 {
        self.compaction.total() / self.turns.total().max(f64::MIN_POSITIVE)
    }
}

/// The goals of spend, checked for hearth (the first meter) against the
/// threshold baseline under one pricing.
#[derive(Debug, Clone, Copy)]
pub struct SpendGoals {
    pub compaction_share: f64,
    /// What the compaction calls' output alone adds to the turns' spend.
    pub output_share: f64,
    pub ratio: f64,
    /// The most hearth's total may be, as a share of the baseline's.
    pub ratio_goal: f64,
    /// hearth's compaction spend; what the ratio goal leaves for it after
    /// hearth's turns; and the least it could cost under the memory's
    /// rules on this history: its lines' output and the uncached input no
    /// form of request avoids ([`super::report::Floors::compaction`]), at
    /// the input price of the model that writes the lines.
    pub compaction: f64,
    pub room: f64,
    pub floor: f64,
    /// That uncached input, in tokens.
    pub floor_tokens: u64,
}

/// The most compaction may add to hearth's turns' spend.
pub const COMPACTION_GOAL: f64 = 0.15;

impl SpendGoals {
    pub fn of(meters: &[Meter], pricing: &Pricing) -> Option<SpendGoals> {
        let meter = meters.first()?;
        let hearth = Priced::of(meter, pricing)?;
        let threshold = meters.iter().find(|meter| meter.name == THRESHOLD)?;
        let threshold = Priced::of(threshold, pricing)?;
        let ratio_goal = if pricing.ttl >= 86_400 { 0.45 } else { 0.4 };
        let input = if meter.memory_model {
            pricing.memory_price.input
        } else {
            pricing.price.input
        };
        let floor_tokens = tokens(meter.floors.compaction());
        Some(SpendGoals {
            compaction_share: hearth.compaction_share(),
            output_share: hearth.compaction.output / hearth.turns.total().max(f64::MIN_POSITIVE),
            ratio: hearth.all().total() / threshold.all().total().max(f64::MIN_POSITIVE),
            ratio_goal,
            compaction: hearth.compaction.total(),
            room: ratio_goal * threshold.all().total() - hearth.turns.total(),
            floor: hearth.compaction.output + floor_tokens as f64 * input / 1e6,
            floor_tokens,
        })
    }

    pub fn met(&self) -> bool {
        self.compaction_share <= COMPACTION_GOAL && self.ratio <= self.ratio_goal
    }
}

fn ttl_text(ttl: u64) -> String {
    if ttl.is_multiple_of(3_600) {
        format!("{} h", ttl / 3_600)
    } else {
        format!("{} min", ttl / 60)
    }
}

fn usd(value: f64) -> String {
    format!("${value:.2}")
}

/// A price per million tokens, to the cent or to the tenth of a cent
/// below a dime ($0.025).
fn rate(value: f64) -> String {
    if value < 0.1 {
        format!("${value:.3}")
    } else {
        format!("${value:.2}")
    }
}

/// The spend tables, one per priced model, and the goals under each.
pub fn tables(meters: &[Meter]) -> String {
    let mut out = String::new();
    let pricings = pricings();
    let mut models: Vec<&str> = pricings.iter().map(|p| p.model).collect();
    models.dedup();
    for model in models {
        let columns: Vec<&Pricing> = pricings.iter().filter(|p| p.model == model).collect();
        let Some(first) = columns.first() else {
            continue;
        };
        let price = first.price;
        let writes = match first.writes {
            Some(_) => columns
                .iter()
                .map(|p| {
                    format!(
                        "{} at {}",
                        rate(price.input * p.writes.unwrap_or(1.0)),
                        ttl_text(p.ttl)
                    )
                })
                .collect::<Vec<_>>()
                .join(", "),
            None => "no write premium".to_string(),
        };
        let memory = first.memory_price;
        let _ = writeln!(
            out,
            "Spend at list prices, {model} (per million tokens: input {}, cached input {}, \
             cache writes {writes}, output {}); the lines of the small model's rows by {} (input {}, \
             cached input {}, output {}, writes at the same multipliers):\n",
            rate(price.input),
            rate(price.cached_input),
            rate(price.output),
            first.memory_model,
            rate(memory.input),
            rate(memory.cached_input),
            rate(memory.output),
        );
        out.push_str(
            "| strategy | cache time-to-live | uncached input | cache reads | cache writes | \
             output | total | turns | compaction | compaction ÷ turns | total ÷ compact at \
             threshold |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for meter in meters {
            for pricing in &columns {
                let Some(priced) = Priced::of(meter, pricing) else {
                    continue;
                };
                let threshold = meters
                    .iter()
                    .find(|m| m.name == THRESHOLD)
                    .and_then(|m| Priced::of(m, pricing));
                let all = priced.all();
                let ratio = threshold.map_or("—".to_string(), |t| {
                    format!(
                        "{:.2}",
                        all.total() / t.all().total().max(f64::MIN_POSITIVE)
                    )
                });
                let share = if priced.compaction.total() > 0.0 {
                    format!("{:.0}%", 100.0 * priced.compaction_share())
                } else {
                    "—".to_string()
                };
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {share} | {ratio} |",
                    meter.name,
                    ttl_text(pricing.ttl),
                    usd(all.uncached),
                    usd(all.reads),
                    usd(all.writes),
                    usd(all.output),
                    usd(all.total()),
                    usd(priced.turns.total()),
                    usd(priced.compaction.total()),
                );
            }
        }
        out.push('\n');
        for pricing in &columns {
            let Some(goals) = SpendGoals::of(meters, pricing) else {
                continue;
            };
            let mark = |met: bool| if met { "met" } else { "MISSED" };
            let _ = writeln!(
                out,
                "- {model}, {}: compaction adds {:.0}% to hearth's turns' spend (goal at most \
                 {:.0}%) — {}; of that, the lines' output alone (every line the model writes, \
                 whatever the requests' form) {:.0}%; hearth's total is {:.3} of \
                 compact-at-threshold's (goal at most {:.2}) — {}.",
                ttl_text(pricing.ttl),
                100.0 * goals.compaction_share,
                100.0 * COMPACTION_GOAL,
                mark(goals.compaction_share <= COMPACTION_GOAL),
                100.0 * goals.output_share,
                goals.ratio,
                goals.ratio_goal,
                mark(goals.ratio <= goals.ratio_goal),
            );
            let _ = writeln!(
                out,
                "  Compaction costs {}; the {:.2} goal leaves it {} after hearth's turns; under \
                 the memory's rules it cannot cost less than {} on this history (its lines' \
                 output, and {:.1}M tokens of input no form of request avoids, at the input \
                 price, before any cache read).",
                usd(goals.compaction),
                goals.ratio_goal,
                usd(goals.room),
                usd(goals.floor),
                goals.floor_tokens as f64 / 1e6,
            );
        }
        out.push('\n');
    }
    out.push_str(&anthropic_lifetime(meters, &pricings));
    out
}

/// Which Anthropic entry costs hearth less on this history: five minutes
/// at 1.25 times input for writes, or one hour at twice it.
fn anthropic_lifetime(meters: &[Meter], pricings: &[Pricing]) -> String {
    let Some(hearth) = meters.first() else {
        return String::new();
    };
    let spend = |ttl: u64| {
        pricings
            .iter()
            .find(|p| p.writes.is_some() && p.ttl == ttl)
            .and_then(|p| Priced::of(hearth, p))
            .map(|priced| priced.all().total())
    };
    let (Some(short), Some(long)) = (spend(300), spend(3_600)) else {
        return String::new();
    };
    format!(
        "Anthropic's entries for {}: {} with five-minute entries, {} with one-hour ones \
         ({:.2} times): the {} entry costs less on this history's idle gaps.\n\n",
        hearth.name,
        usd(short),
        usd(long),
        long / short.max(f64::MIN_POSITIVE),
        if long < short {
            "one-hour"
        } else {
            "five-minute"
        },
    )
}
