//! Reasoning settings per provider and per model: which `effort` values a
//! provider takes, and how an Anthropic model is asked to think.
//!
//! Anthropic has two forms. The newer models (Opus 4.6, Sonnet 4.6 and
//! everything after) take adaptive thinking, `thinking: {"type":
//! "adaptive"}` with `output_config.effort`; Opus 4.7 and later take only
//! that. The older ones (Sonnet 4.5, Opus 4.5, Haiku 4.5, Opus 4.1, the
//! Claude 4 and 3.7 models) refuse it and take only extended thinking with
//! a budget, `thinking: {"type": "enabled", "budget_tokens": N}`, where the
//! budget is at least 1,024 tokens and less than `max_tokens`.
//!
//! Sources, read 2026-12-01: platform.claude.com/docs/en/build-with-claude/
//! adaptive-thinking ("Older models (Claude Sonnet 4.5, Claude Opus 4.5,
//! etc.) do not support adaptive thinking and require thinking.type:
//! "enabled" with budget_tokens"; the same text in Amazon Bedrock's copy,
//! docs.aws.amazon.com/bedrock/latest/userguide/
//! claude-messages-adaptive-thinking.html), platform.claude.com/docs/en/
//! build-with-claude/effort (values `low`, `medium`, `high`, `xhigh`,
//! `max`; `xhigh` on Opus 4.7 and later, `max` on Opus 4.6, Sonnet 4.6 and
//! later), platform.claude.com/docs/en/build-with-claude/extended-thinking
//! (`budget_tokens` ≥ 1,024 and below `max_tokens`). OpenAI's values are
//! `reasoning.effort` of the Responses API and `reasoning_effort` of Chat
//! Completions, one enum (openai-python `types/shared_params/
//! reasoning_effort.py`, 2026): `none`, `minimal`, `low`, `medium`, `high`,
//! `xhigh`, `max`.
//!
//! A model this table does not know is read by its name (`claude-<family>-
//! <major>-<minor>`: 4.6 and later are adaptive); a name that says nothing
//! is taken as adaptive, the form of every model released since. The
//! `thinking` key of `[model]` overrides the table for a model it is wrong
//! about.

use crate::model::ProviderKind;
use serde::Deserialize;

/// How an Anthropic model is asked to think when an effort is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingForm {
    /// `thinking: {"type": "adaptive"}` and `output_config.effort`.
    Adaptive,
    /// `thinking: {"type": "enabled", "budget_tokens": N}`, the budget
    /// taken from the effort and `max_tokens`.
    Enabled,
}

/// Every effort value Anthropic's API defines.
pub const ANTHROPIC_EFFORTS: &[&str] = &["low", "medium", "high", "xhigh", "max"];

/// Every effort value OpenAI's APIs define (Responses and Chat Completions).
pub const OPENAI_EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/// The smallest thinking budget Anthropic accepts.
pub const MIN_BUDGET: u32 = 1024;

/// A known Anthropic model: its id prefix, its thinking form, and the
/// effort values it takes (for the enabled form, every value maps to a
/// budget, so all are allowed).
struct Known {
    prefix: &'static str,
    form: ThinkingForm,
    efforts: &'static [&'static str],
}

const ADAPTIVE_XHIGH: &[&str] = ANTHROPIC_EFFORTS;
const ADAPTIVE_MAX: &[&str] = &["low", "medium", "high", "max"];

/// Anthropic's models as of 2026-12-01, longest prefix first where one
/// contains another (`claude-opus-4-1` before `claude-opus-4`).
const KNOWN: &[Known] = &[
    Known {
        prefix: "claude-opus-4-8",
        form: ThinkingForm::Adaptive,
        efforts: ADAPTIVE_XHIGH,
    },
    Known {
        prefix: "claude-opus-4-7",
        form: ThinkingForm::Adaptive,
        efforts: ADAPTIVE_XHIGH,
    },
    Known {
        prefix: "claude-opus-4-6",
        form: ThinkingForm::Adaptive,
        efforts: ADAPTIVE_MAX,
    },
    Known {
        prefix: "claude-sonnet-4-6",
        form: ThinkingForm::Adaptive,
        efforts: ADAPTIVE_MAX,
    },
    Known {
        prefix: "claude-opus-4-5",
        form: ThinkingForm::Enabled,
        efforts: ANTHROPIC_EFFORTS,
    },
    Known {
        prefix: "claude-sonnet-4-5",
        form: ThinkingForm::Enabled,
        efforts: ANTHROPIC_EFFORTS,
    },
    Known {
        prefix: "claude-haiku-4-5",
        form: ThinkingForm::Enabled,
        efforts: ANTHROPIC_EFFORTS,
    },
    Known {
        prefix: "claude-opus-4-1",
        form: ThinkingForm::Enabled,
        efforts: ANTHROPIC_EFFORTS,
    },
    Known {
        prefix: "claude-opus-4",
        form: ThinkingForm::Enabled,
        efforts: ANTHROPIC_EFFORTS,
    },
    Known {
        prefix: "claude-sonnet-4",
        form: ThinkingForm::Enabled,
        efforts: ANTHROPIC_EFFORTS,
    },
    Known {
        prefix: "claude-3-7-sonnet",
        form: ThinkingForm::Enabled,
        efforts: ANTHROPIC_EFFORTS,
    },
];

/// The table's entry for `model`: its prefix followed by nothing, a date,
/// or a tag (`-latest`, `@20250514`), never by a further version number
/// (`claude-sonnet-4-7` is not `claude-sonnet-4`).
fn known(model: &str) -> Option<&'static Known> {
    KNOWN.iter().find(|known| {
        let Some(rest) = model.strip_prefix(known.prefix) else {
            return false;
        };
        let Some(tail) = rest.strip_prefix('-') else {
            return rest.is_empty() || rest.starts_with('@');
        };
        let segment = tail.split('-').next().unwrap_or_default();
        !(segment.len() <= 2 && !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// `claude-<family>-<major>-<minor>…` (or the older `claude-<major>-<minor>-
/// <family>`) → (major, minor), when the name says.
fn version(model: &str) -> Option<(u32, u32)> {
    let rest = model.strip_prefix("claude-")?;
    let numbered = rest.bytes().next().is_some_and(|b| b.is_ascii_digit());
    let mut parts = rest.split('-').skip(usize::from(!numbered));
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()
        .and_then(|minor| minor.parse::<u32>().ok())
        // A date (`20250514`) after the major version is no minor.
        .filter(|minor| *minor < 100)
        .unwrap_or(0);
    Some((major, minor))
}

/// The thinking form of the Anthropic model `model`: the override when set,
/// else the table, else its version, else adaptive.
pub fn form(model: &str, over: Option<ThinkingForm>) -> ThinkingForm {
    if let Some(form) = over {
        return form;
    }
    if let Some(known) = known(model) {
        return known.form;
    }
    match version(model) {
        Some(version) if version < (4, 6) => ThinkingForm::Enabled,
        _ => ThinkingForm::Adaptive,
    }
}

/// The effort values `model` of `provider` takes.
pub fn efforts(provider: ProviderKind, model: &str) -> &'static [&'static str] {
    match provider {
        ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat | ProviderKind::ChatGpt => {
            OPENAI_EFFORTS
        }
        ProviderKind::Anthropic => known(model).map_or(ANTHROPIC_EFFORTS, |known| known.efforts),
    }
}

/// The thinking budget for `effort` under `max_tokens`: a share of the
/// output limit that grows with the effort, at least [`MIN_BUDGET`] and
/// always below `max_tokens` (the answer after the thinking needs room).
/// None when `max_tokens` leaves no room for the smallest budget.
pub fn budget(effort: &str, max_tokens: u32) -> Option<u32> {
    if max_tokens <= MIN_BUDGET {
        return None;
    }
    let quarters = match effort {
        "low" => 1,
        "medium" => 2,
        "high" => 3,
        _ => 4,
    };
    let share = (u64::from(max_tokens) * quarters / 4) as u32;
    Some(share.clamp(MIN_BUDGET, max_tokens - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn older_models_think_with_a_budget_and_newer_ones_adaptively() {
        for model in [
            "claude-sonnet-4-5",
            "claude-sonnet-4-5-20250929",
            "claude-opus-4-5",
            "claude-haiku-4-5-20251001",
            "claude-opus-4-1",
            "claude-opus-4-20250514",
            "claude-sonnet-4-0",
            "claude-3-7-sonnet-latest",
            "claude-3-5-haiku-20241022",
            "claude-haiku-4-1",
        ] {
            assert_eq!(form(model, None), ThinkingForm::Enabled, "{model}");
        }
        for model in [
            "claude-sonnet-4-6",
            "claude-opus-4-6",
            "claude-opus-4-7",
            "claude-opus-4-8",
            "claude-opus-5",
            "claude-sonnet-5-1",
            "claude-sonnet-4-7",
            "claude-mythos-preview",
        ] {
            assert_eq!(form(model, None), ThinkingForm::Adaptive, "{model}");
        }
    }

    #[test]
    fn the_config_overrides_the_table() {
        assert_eq!(
            form("claude-sonnet-4-5", Some(ThinkingForm::Adaptive)),
            ThinkingForm::Adaptive
        );
        assert_eq!(
            form("claude-next", Some(ThinkingForm::Enabled)),
            ThinkingForm::Enabled
        );
    }

    #[test]
    fn budgets_stay_within_max_tokens() {
        assert_eq!(budget("low", 8192), Some(2048));
        assert_eq!(budget("medium", 8192), Some(4096));
        assert_eq!(budget("high", 8192), Some(6144));
        assert_eq!(budget("max", 8192), Some(8191));
        assert_eq!(budget("low", 2000), Some(1024));
        assert_eq!(budget("max", 1025), Some(1024));
        assert_eq!(budget("low", 1024), None);
        for max_tokens in [1025, 4000, 8192, 64_000] {
            for effort in ANTHROPIC_EFFORTS {
                let budget = budget(effort, max_tokens).unwrap();
                assert!((MIN_BUDGET..max_tokens).contains(&budget));
            }
        }
    }

    #[test]
    fn xhigh_is_only_for_the_models_that_take_it() {
        let anthropic = ProviderKind::Anthropic;
        assert!(efforts(anthropic, "claude-opus-4-7").contains(&"xhigh"));
        assert!(!efforts(anthropic, "claude-sonnet-4-6").contains(&"xhigh"));
        assert!(efforts(anthropic, "claude-sonnet-4-6").contains(&"max"));
        assert!(!efforts(anthropic, "claude-sonnet-4-5").contains(&"minimal"));
        assert!(efforts(ProviderKind::OpenAiResponses, "gpt-5").contains(&"minimal"));
    }
}
