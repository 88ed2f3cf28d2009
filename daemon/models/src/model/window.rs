//! Context windows: how many tokens a model takes in one request, from
//! `[model] context_window` or a table of well-known models, and whether the
//! largest request an agent's layout can make fits in it.
//!
//! A layout whose budget does not fit its model would fail every turn once
//! the history has grown, so the daemon refuses to start with one. The
//! estimate is deliberately generous: 3 bytes to a token (English prose runs
//! about 4), the whole view budget, the instructions and tool specs, one
//! clipped tool output for the turn's own work, and the answer's room.

use crate::model::ModelConfig;

/// Bytes to a token in the estimate (few tokenizers do worse).
const BYTES_PER_TOKEN: usize = 3;

/// The answer's room when the config sets no `max_tokens`, at most.
const DEFAULT_OUTPUT: u32 = 8192;

/// The answer's room when the config sets no `max_tokens`, as a part of a
/// window: a quarter, so an 8k window keeps three quarters for the input.
const OUTPUT_SHARE: u32 = 4;

/// Windows of well-known models by name prefix, longest prefix first where
/// they overlap. From the providers' model pages; a model missing here is
/// not checked unless the config gives its `context_window`.
const KNOWN: &[(&str, u32)] = &[
    ("gpt-3.5-turbo", 16_385),
    ("gpt-4o", 128_000),
    ("gpt-4-turbo", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4", 8_192),
    ("gpt-5", 400_000),
    ("o1-mini", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("claude-", 200_000),
];

/// The window of a well-known model (`gpt-4o-mini`, `claude-sonnet-4-5`),
/// by the longest matching name prefix.
pub fn known(model: &str) -> Option<u32> {
    KNOWN
        .iter()
        .filter(|(prefix, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|&(_, window)| window)
}

/// The window of `config`'s model: configured, else known.
pub fn of(config: &ModelConfig) -> Option<u32> {
    config.context_window.or_else(|| known(&config.model))
}

/// The room kept for the answer: `max_tokens`, else 8,192 tokens or a
/// quarter of a smaller known window. Local servers are sent it as their
/// output limit (`model/chat.rs`).
pub fn answer_room(config: &ModelConfig) -> u32 {
    config.max_tokens.unwrap_or_else(|| match of(config) {
        Some(window) => (window / OUTPUT_SHARE).clamp(256, DEFAULT_OUTPUT),
        None => DEFAULT_OUTPUT,
    })
}

/// What the largest request of one kind (a turn, a compaction) carries.
#[derive(Debug, Clone, Copy)]
pub struct Largest {
    /// What the request is, for the error: `turn` or `compaction`.
    pub purpose: &'static str,
    /// The view's high budget, in bytes.
    pub view_bytes: usize,
    /// The instructions and the tools' specs, in bytes.
    pub fixed_bytes: usize,
    /// Room for the request's own text: one clipped tool output for a
    /// turn, a long message or two lines for a compaction.
    pub own_bytes: usize,
}

impl Largest {
    /// The estimated input and output tokens for `config`'s model.
    pub fn tokens(&self, config: &ModelConfig) -> u32 {
        let bytes = self.view_bytes + self.fixed_bytes + self.own_bytes;
        let input = bytes.div_ceil(BYTES_PER_TOKEN);
        let output = answer_room(config);
        u32::try_from(input)
            .unwrap_or(u32::MAX)
            .saturating_add(output)
    }
}

impl Largest {
    /// The most view bytes a request of this kind can carry in `config`'s
    /// window, besides its fixed and own bytes and the answer's room; none
    /// when the window is unknown.
    pub fn view_room(&self, config: &ModelConfig) -> Option<usize> {
        let window = of(config)?;
        let input = window.saturating_sub(answer_room(config)) as usize;
        Some(
            (input * BYTES_PER_TOKEN)
                .saturating_sub(self.fixed_bytes)
                .saturating_sub(self.own_bytes),
        )
    }
}

#[derive(Debug, thiserror::Error)]
#[error(
    "agent `{agent}`: layout `{layout}` needs about {need} tokens for its largest {purpose} \
     request ({view} bytes of view, {fixed} of instructions and tools, {own} for its own \
     text, at 3 bytes a token, plus {output} for the answer), but {model} has a \
     {window}-token window. {advice}"
)]
pub struct TooSmall {
    pub agent: String,
    pub layout: String,
    pub purpose: &'static str,
    pub need: u32,
    pub view: usize,
    pub fixed: usize,
    pub own: usize,
    pub output: u32,
    pub model: String,
    pub window: u32,
    pub advice: String,
}

/// Checks `largest` against every model of a chain whose window is known.
/// `smaller` is what a smaller built-in layout would need, when there is one
/// (`small`), to suggest it only when it fits.
// Checked once at start; the error is the whole message the user reads.
#[allow(clippy::result_large_err)]
pub fn check<'a>(
    agent: &str,
    layout: &str,
    largest: Largest,
    models: impl IntoIterator<Item = &'a ModelConfig>,
    smaller: Option<(&str, Largest)>,
) -> Result<(), TooSmall> {
    for config in models {
        let Some(window) = of(config) else { continue };
        let need = largest.tokens(config);
        if need <= window {
            continue;
        }
        let advice = match smaller {
            Some((name, small)) if name != layout && small.tokens(config) <= window => format!(
                "Set `layout = \"{name}\"` in [agent] (a subagent's in its [[agents]] entry; \
                 about {} tokens), or use a model with a larger window.",
                small.tokens(config)
            ),
            _ => "Use a model with a larger window, or a layout file with smaller budgets \
                  (see layouts/ in docs/memory.md); if the window is larger than hearth thinks, \
                  set `context_window` in [model]."
                .to_string(),
        };
        return Err(TooSmall {
            agent: agent.to_string(),
            layout: layout.to_string(),
            purpose: largest.purpose,
            need,
            view: largest.view_bytes,
            fixed: largest.fixed_bytes,
            own: largest.own_bytes,
            output: answer_room(config),
            model: format!("{}/{}", config.provider.name(), config.model),
            window,
            advice,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProviderKind;

    fn model(name: &str, window: Option<u32>) -> ModelConfig {
        let text = format!("provider = \"openai-chat\"\nmodel = \"{name}\"");
        let mut config: ModelConfig = toml::from_str(&text).unwrap();
        config.context_window = window;
        assert_eq!(config.provider, ProviderKind::OpenAiChat);
        config
    }

    fn largest(view_bytes: usize) -> Largest {
        Largest {
            purpose: "turn",
            view_bytes,
            fixed_bytes: 6_000,
            own_bytes: 30_000,
        }
    }

    #[test]
    fn well_known_models_have_windows_by_their_longest_prefix() {
        assert_eq!(known("gpt-4o-mini"), Some(128_000));
        assert_eq!(known("gpt-4.1-mini"), Some(1_047_576));
        assert_eq!(known("gpt-4"), Some(8_192));
        assert_eq!(known("claude-sonnet-4-5"), Some(200_000));
        assert_eq!(known("o1-mini"), Some(128_000));
        assert_eq!(known("llama3.2"), None);
        assert_eq!(of(&model("llama3.2", Some(32_768))), Some(32_768));
        assert_eq!(of(&model("gpt-4o", Some(64_000))), Some(64_000));
    }

    #[test]
    fn the_default_budget_fits_large_windows_and_not_small_ones() {
        let default = largest(128_000);
        let small = largest(24_000);
        assert!(check("main", "default", default, [&model("gpt-4o", None)], None).is_ok());
        // Unknown windows are not checked.
        assert!(check("main", "default", default, [&model("llama3.2", None)], None).is_ok());

        let local = model("llama3.2", Some(32_768));
        let err = check("main", "default", default, [&local], Some(("small", small)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("32768-token window"), "{err}");
        assert!(err.contains("layout = \"small\""), "{err}");
        assert!(check("main", "small", small, [&local], Some(("small", small))).is_ok());

        // Nothing built in fits: no layout is suggested.
        let tiny = model("phi", Some(8_192));
        let err = check("main", "default", default, [&tiny], Some(("small", small)))
            .unwrap_err()
            .to_string();
        assert!(!err.contains("layout = \"small\""), "{err}");
        assert!(err.contains("context_window"), "{err}");
    }

    #[test]
    fn every_model_of_the_chain_must_fit() {
        let chain = [model("gpt-4o", None), model("gpt-4", None)];
        let err = check("main", "default", largest(128_000), &chain, None).unwrap_err();
        assert_eq!(err.model, "openai-chat/gpt-4");
        assert_eq!(err.window, 8_192);
    }
}
