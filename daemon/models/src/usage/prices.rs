//! What model tokens cost: a built-in table of common models' list prices,
//! overridable per model in `config.toml`, and the arithmetic of one
//! request's cost. Pure: no I/O.

use crate::model::Usage;
use serde::Deserialize;
use std::collections::BTreeMap;

/// One model's prices in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    /// Input tokens neither read from nor written to the prompt cache.
    pub input: f64,
    /// Input tokens read from the prompt cache.
    pub cached_input: f64,
    /// Input tokens written to the prompt cache (Anthropic charges extra:
    /// 1.25 times input for its five-minute entries).
    pub cache_write: f64,
    pub output: f64,
}

/// Anthropic's one-hour cache entries cost twice the input price to write.
pub const LONG_WRITE_TIMES_INPUT: f64 = 2.0;

impl Price {
    /// The cost in USD of one request's usage. `Usage::input` counts every
    /// input token, so the cached and written ones are taken out of it
    /// before the plain input price applies.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let special = usage.cached_input.saturating_add(usage.cache_write);
        let plain = usage.input.saturating_sub(special);
        let long = usage.cache_write_long.min(usage.cache_write);
        let short = usage.cache_write - long;
        (plain as f64 * self.input
            + usage.cached_input as f64 * self.cached_input
            + short as f64 * self.cache_write
            + long as f64 * self.input * LONG_WRITE_TIMES_INPUT
            + usage.output as f64 * self.output)
            / 1_000_000.0
    }
}

/// `[prices."model-name"]` in `config.toml`: USD per million tokens. The
/// cache prices default to the input price (no discount, no surcharge).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceConfig {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cached_input: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl PriceConfig {
    fn price(&self) -> Price {
        Price {
            input: self.input,
            cached_input: self.cached_input.unwrap_or(self.input),
            cache_write: self.cache_write.unwrap_or(self.input),
            output: self.output,
        }
    }
}

/// List prices of transcription models, USD per minute of audio, matched
/// by the longest prefix of the model name; `[transcription]
/// price_per_minute` overrides them.
const PER_MINUTE: &[(&str, f64)] = &[
    ("whisper-1", 0.006),
    ("gpt-4o-transcribe", 0.006),
    ("gpt-4o-mini-transcribe", 0.003),
];

/// What a minute of audio costs with the transcription model `model`,
/// when the table knows it.
pub fn per_minute(model: &str) -> Option<f64> {
    PER_MINUTE
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, price)| *price)
}

/// List prices of common models (USD per million tokens: input, cached
/// input, cache write, output), matched by the longest prefix of the model
/// name. Prices change: `[prices."name"]` overrides any of them. OpenAI
/// charges nothing extra for cache writes; Anthropic's are its 5-minute
/// writes, 1.25 times the input price (its one-hour writes cost twice the
/// input price, [`LONG_WRITE_TIMES_INPUT`]).
const BUILT_IN: &[(&str, [f64; 4])] = &[
    // OpenAI.
    ("gpt-5", [1.25, 0.125, 1.25, 10.0]),
    ("gpt-5-mini", [0.25, 0.025, 0.25, 2.0]),
    ("gpt-5-nano", [0.05, 0.005, 0.05, 0.40]),
    ("gpt-5-pro", [15.0, 15.0, 15.0, 120.0]),
    ("gpt-5.2", [1.75, 0.175, 1.75, 14.0]),
    ("gpt-4.1", [2.0, 0.50, 2.0, 8.0]),
    ("gpt-4.1-mini", [0.40, 0.10, 0.40, 1.60]),
    ("gpt-4.1-nano", [0.10, 0.025, 0.10, 0.40]),
    ("gpt-4o", [2.50, 1.25, 2.50, 10.0]),
    ("gpt-4o-mini", [0.15, 0.075, 0.15, 0.60]),
    ("o3", [2.0, 0.50, 2.0, 8.0]),
    ("o3-mini", [1.10, 0.55, 1.10, 4.40]),
    ("o4-mini", [1.10, 0.275, 1.10, 4.40]),
    // Anthropic. Opus 4 and 4.1 cost three times what the later Opus 4.x do.
    ("claude-opus-4", [5.0, 0.50, 6.25, 25.0]),
    ("claude-opus-4-0", [15.0, 1.50, 18.75, 75.0]),
    ("claude-opus-4-1", [15.0, 1.50, 18.75, 75.0]),
    ("claude-opus-4.1", [15.0, 1.50, 18.75, 75.0]),
    ("claude-opus-4-2025", [15.0, 1.50, 18.75, 75.0]),
    ("claude-sonnet-4", [3.0, 0.30, 3.75, 15.0]),
    ("claude-haiku-4", [1.0, 0.10, 1.25, 5.0]),
    ("claude-3-7-sonnet", [3.0, 0.30, 3.75, 15.0]),
    ("claude-3-5-haiku", [0.80, 0.08, 1.0, 4.0]),
];

/// The prices a daemon charges requests at: the config's overrides, then
/// the built-in table. A model in neither is unpriced: its requests are
/// stored with cost 0 and shown as unpriced (local models, say).
#[derive(Debug, Clone, Default)]
pub struct Prices {
    /// Lowercased keys of `[prices]`, with their prices.
    overrides: Vec<(String, Price)>,
}

impl Prices {
    pub fn new(overrides: &BTreeMap<String, PriceConfig>) -> Prices {
        Prices {
            overrides: overrides
                .iter()
                .map(|(name, price)| (name.to_lowercase(), price.price()))
                .collect(),
        }
    }

    /// The price of `model`, a `provider/model` label or a bare model name.
    /// An override applies to the models whose name (or label) starts with
    /// its key, the longest key winning; the built-in table matches the
    /// name's last `/` segment, so `openai-chat/anthropic/claude-sonnet-4.5`
    /// (OpenRouter) is priced as `claude-sonnet-4`.
    pub fn lookup(&self, model: &str) -> Option<Price> {
        let label = model.to_lowercase();
        // A ChatGPT plan's requests are paid for by the plan: metered in
        // tokens, never priced as API calls.
        if is_plan(&label) {
            return None;
        }
        let name = label
            .split_once('/')
            .map_or(label.as_str(), |(_, name)| name);
        let overridden = self
            .overrides
            .iter()
            .filter(|(key, _)| name.starts_with(key.as_str()) || label.starts_with(key.as_str()))
            .max_by_key(|(key, _)| key.len())
            .map(|(_, price)| *price);
        if overridden.is_some() {
            return overridden;
        }
        let last = name.rsplit('/').next().unwrap_or(name);
        BUILT_IN
            .iter()
            .filter(|(prefix, _)| last.starts_with(prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, [input, cached_input, cache_write, output])| Price {
                input: *input,
                cached_input: *cached_input,
                cache_write: *cache_write,
                output: *output,
            })
    }

    /// The cost in USD of `usage` on `model`; none when the model is unpriced.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.lookup(model).map(|price| price.cost(usage))
    }
}

/// Whether the model labelled `label` runs on a ChatGPT plan (`chatgpt/…`).
pub fn is_plan(label: &str) -> bool {
    label.starts_with("chatgpt/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached_input: u64, cache_write: u64, output: u64) -> Usage {
        Usage {
            input,
            cached_input,
            cache_write,
            cache_write_long: 0,
            output,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn the_longest_built_in_prefix_wins() {
        let prices = Prices::default();
        assert_eq!(prices.lookup("openai/gpt-5-mini").unwrap().input, 0.25);
        assert_eq!(
            prices.lookup("openai/gpt-5-2025-08-07").unwrap().input,
            1.25
        );
        assert_eq!(prices.lookup("openai/gpt-4o-mini").unwrap().output, 0.60);
        assert_eq!(prices.lookup("openai/gpt-4o").unwrap().output, 10.0);
        assert_eq!(prices.lookup("openai/o3-mini").unwrap().input, 1.10);
        assert_eq!(prices.lookup("openai/o3").unwrap().input, 2.0);
        let opus = |model| prices.lookup(model).unwrap().input;
        assert_eq!(opus("anthropic/claude-opus-4-5-20251101"), 5.0);
        assert_eq!(opus("anthropic/claude-opus-4-1-20250805"), 15.0);
        assert_eq!(opus("anthropic/claude-opus-4-20250514"), 15.0);
        let sonnet = prices.lookup("anthropic/claude-sonnet-4-5").unwrap();
        assert_eq!(
            sonnet,
            Price {
                input: 3.0,
                cached_input: 0.30,
                cache_write: 3.75,
                output: 15.0
            }
        );
        // A router's `vendor/model` name is priced by its last segment.
        assert_eq!(
            prices.lookup("openai-chat/anthropic/claude-sonnet-4.5"),
            Some(sonnet)
        );
    }

    #[test]
    fn a_plans_requests_are_never_priced_as_api_calls() {
        let mut overrides = BTreeMap::new();
        overrides.insert(
            "gpt-5".to_string(),
            PriceConfig {
                input: 1.0,
                cached_input: None,
                output: 1.0,
                cache_write: None,
            },
        );
        for prices in [Prices::default(), Prices::new(&overrides)] {
            assert!(prices.lookup("openai/gpt-5").is_some());
            assert_eq!(prices.lookup("chatgpt/gpt-5"), None);
            assert_eq!(
                prices.cost("chatgpt/gpt-5-codex", &usage(1000, 0, 0, 1000)),
                None
            );
        }
    }

    #[test]
    fn local_and_unknown_models_are_unpriced() {
        let prices = Prices::default();
        assert_eq!(prices.lookup("openai-chat/qwen3:8b"), None);
        assert_eq!(prices.lookup("openai-chat/gpt-oss:20b"), None);
        assert_eq!(
            prices.cost("openai-chat/llama3.2", &usage(10, 0, 0, 10)),
            None
        );
    }

    #[test]
    fn an_override_wins_and_fills_cache_prices_from_input() {
        let mut overrides = BTreeMap::new();
        let config = |input, output| PriceConfig {
            input,
            output,
            cached_input: None,
            cache_write: None,
        };
        overrides.insert("qwen3".to_string(), config(0.1, 0.2));
        overrides.insert("GPT-5".to_string(), config(2.5, 20.0));
        overrides.insert(
            "gpt-5-mini".to_string(),
            PriceConfig {
                cached_input: Some(0.01),
                ..config(0.5, 4.0)
            },
        );
        let prices = Prices::new(&overrides);
        let qwen = prices.lookup("openai-chat/qwen3:8b").unwrap();
        assert_eq!((qwen.cached_input, qwen.cache_write), (0.1, 0.1));
        // The longest key wins among overrides, and overrides beat the table.
        assert_eq!(
            prices.lookup("openai/gpt-5-mini").unwrap().cached_input,
            0.01
        );
        assert_eq!(prices.lookup("openai/gpt-5-nano").unwrap().input, 2.5);
        // Other models keep the table's price.
        assert_eq!(prices.lookup("openai/gpt-4.1").unwrap().input, 2.0);
    }

    #[test]
    fn cost_charges_cached_and_written_tokens_apart_from_plain_input() {
        let price = Price {
            input: 3.0,
            cached_input: 0.3,
            cache_write: 3.75,
            output: 15.0,
        };
        // 1,000,000 input of which 600,000 cached and 100,000 written.
        let cost = price.cost(&usage(1_000_000, 600_000, 100_000, 10_000));
        assert!(close(cost, 0.9 + 0.18 + 0.375 + 0.15), "{cost}");
        assert!(close(price.cost(&usage(0, 0, 0, 0)), 0.0));
        // A provider reporting more cached than input never goes negative.
        assert!(price.cost(&usage(10, 20, 0, 0)) >= 0.0);
    }
}
