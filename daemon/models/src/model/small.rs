//! The memory model's defaults, per provider and per model (pure): the
//! provider's small model that writes summaries for a turn model, and the
//! least reasoning a model takes.
//!
//! Summaries are short lines asked for in batches; a small model writes
//! them for a fraction of a turn model's price. The table names, for each
//! turn model on the provider's own API, that provider's small one; a
//! model it does not know keeps itself.
//!
//! The least reasoning, read 2026-12-01: OpenAI's `reasoning.effort`
//! reference (the `ReasoningEffort` schema of the Responses and Chat
//! Completions APIs): "gpt-5.1 defaults to none, which does not perform
//! reasoning … All models before gpt-5.1 default to medium reasoning
//! effort, and do not support none"; GPT-5 (`gpt-5`, `-mini`, `-nano`)
//! added `minimal`, which GPT-5.1 and later refuse; the codex models
//! take `low`, `medium` and `high` only (the API's own refusals of `none`
//! for `gpt-5.1-codex` and of `minimal` for `gpt-5-codex`), and the
//! codex-mini ones `medium` and `high`; the pro models take `high` alone
//! (their default). The o-series takes `low`, `medium`, `high`. Anthropic
//! thinks only when asked (no `thinking` parameter: no thinking).

use crate::model::ProviderKind;

/// The provider's small model that writes summaries for turns on `model`;
/// none when `model` is small already or unknown to the table.
pub fn small_model(provider: ProviderKind, model: &str) -> Option<&'static str> {
    match provider {
        ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat => {
            if model.contains("nano") {
                None
            } else if model.starts_with("gpt-5") {
                Some("gpt-5-nano")
            } else if model.starts_with("gpt-4.1") {
                Some("gpt-4.1-nano")
            } else if model.starts_with("gpt-4o") && !model.contains("mini") {
                Some("gpt-4o-mini")
            } else {
                None
            }
        }
        ProviderKind::Anthropic => {
            (model.starts_with("claude-") && !model.contains("haiku")).then_some("claude-haiku-4-5")
        }
        // Which models a plan's backend serves changes with the plan; the
        // turn's own model is one it serves.
        ProviderKind::ChatGpt => None,
    }
}

/// The least reasoning effort `model` takes, to send for summaries; none
/// when the model's own default is the least (or it is not known to
/// reason), so nothing is sent.
pub fn least_effort(provider: ProviderKind, model: &str) -> Option<&'static str> {
    if provider == ProviderKind::Anthropic {
        return None;
    }
    if model.contains("-pro") || model.contains("-chat") || model.contains("codex-mini") {
        return None;
    }
    if model.contains("codex") {
        return Some("low");
    }
    if let Some(rest) = model.strip_prefix("gpt-5") {
        // `gpt-5`, `gpt-5-mini`, `gpt-5-nano`, dated or not: `minimal`;
        // `gpt-5.1` and later point releases: `none`, and `low` for their
        // small ones, whose values the reference does not list.
        return match rest.strip_prefix('.') {
            None => Some("minimal"),
            Some(_) if model.contains("-mini") || model.contains("-nano") => Some("low"),
            Some(_) => Some("none"),
        };
    }
    let o_series = model
        .strip_prefix('o')
        .is_some_and(|rest| rest.bytes().next().is_some_and(|b| b.is_ascii_digit()));
    // `o1-mini` and `o1-preview` take no effort at all.
    if o_series && !model.starts_with("o1-") {
        return Some("low");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENAI: ProviderKind = ProviderKind::OpenAiResponses;
    const CHAT: ProviderKind = ProviderKind::OpenAiChat;
    const ANTHROPIC: ProviderKind = ProviderKind::Anthropic;

    #[test]
    fn each_provider_names_its_small_model() {
        for model in [
            "gpt-5",
            "gpt-5-mini",
            "gpt-5.1",
            "gpt-5.2-codex",
            "gpt-5-2025-08-07",
        ] {
            assert_eq!(small_model(OPENAI, model), Some("gpt-5-nano"), "{model}");
            assert_eq!(small_model(CHAT, model), Some("gpt-5-nano"), "{model}");
        }
        assert_eq!(small_model(OPENAI, "gpt-4.1"), Some("gpt-4.1-nano"));
        assert_eq!(small_model(OPENAI, "gpt-4.1-mini"), Some("gpt-4.1-nano"));
        assert_eq!(small_model(CHAT, "gpt-4o"), Some("gpt-4o-mini"));
        assert_eq!(small_model(CHAT, "gpt-4o-2024-08-06"), Some("gpt-4o-mini"));
        for model in [
            "claude-sonnet-4-5",
            "claude-opus-4-7",
            "claude-sonnet-4-6-20260101",
        ] {
            assert_eq!(
                small_model(ANTHROPIC, model),
                Some("claude-haiku-4-5"),
                "{model}"
            );
        }
    }

    #[test]
    fn a_small_or_unknown_model_keeps_itself() {
        for model in [
            "gpt-5-nano",
            "gpt-4.1-nano",
            "gpt-4o-mini",
            "o3",
            "qwen3:8b",
            "llama-3.1-70b",
        ] {
            assert_eq!(small_model(OPENAI, model), None, "{model}");
        }
        assert_eq!(small_model(ANTHROPIC, "claude-haiku-4-5"), None);
        assert_eq!(small_model(ANTHROPIC, "claude-3-5-haiku-latest"), None);
        assert_eq!(small_model(ANTHROPIC, "gpt-5"), None);
    }

    #[test]
    fn the_least_effort_is_the_models_own() {
        for model in ["gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-nano-2025-08-07"] {
            assert_eq!(least_effort(OPENAI, model), Some("minimal"), "{model}");
        }
        for model in ["gpt-5.1", "gpt-5.2", "gpt-5.5-2026-04-01"] {
            assert_eq!(least_effort(CHAT, model), Some("none"), "{model}");
        }
        assert_eq!(least_effort(OPENAI, "gpt-5.4-mini"), Some("low"));
        for model in ["gpt-5-codex", "gpt-5.1-codex", "gpt-5.2-codex-max"] {
            assert_eq!(least_effort(OPENAI, model), Some("low"), "{model}");
        }
        for model in ["o3", "o4-mini", "o3-mini", "o1"] {
            assert_eq!(least_effort(OPENAI, model), Some("low"), "{model}");
        }
        for model in [
            "gpt-5-pro",
            "gpt-5.1-codex-mini",
            "gpt-5-chat-latest",
            "o1-mini",
            "gpt-4.1",
            "gpt-4o-mini",
            "qwen3:8b",
            "omni",
        ] {
            assert_eq!(least_effort(OPENAI, model), None, "{model}");
        }
        assert_eq!(least_effort(ANTHROPIC, "claude-haiku-4-5"), None);
        // Every effort named is one the provider's table allows.
        for model in ["gpt-5", "gpt-5.1", "gpt-5-codex", "o3"] {
            let effort = least_effort(OPENAI, model).unwrap();
            assert!(crate::model::thinking::efforts(OPENAI, model).contains(&effort));
        }
    }
}
