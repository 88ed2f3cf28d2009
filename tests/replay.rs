//! The memory benchmark's replay, small: 1,000 messages through hearth's real
//! tree, views and layout and through the baselines. It checks what must hold
//! on any history, never how fast anything ran (`cargo bench --bench memory`
//! measures the full size and the speed).

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_daemon::layout::Layout;
use hearth_daemon::model::small::small_model;
use hearth_daemon::model::ProviderKind;
use hearth_tests::replay::spend::{pricings, ANTHROPIC_MEMORY, OPENAI_MEMORY};
use hearth_tests::replay::{compare, Meter};

const TEN_MINUTES: u64 = 600;

fn meters() -> Vec<Meter> {
    compare(7, 1_000, &[TEN_MINUTES], false)
}

#[test]
fn hearth_keeps_every_view_within_budget_and_beats_the_forgetful_baselines() {
    let meters = meters();
    let [hearth, whole, compacting, sliding] = &meters[..] else {
        panic!("four strategies, got {}", meters.len());
    };
    assert!(hearth.messages >= 1_000, "{} messages", hearth.messages);

    // Every turn request's view is within the layout's high budget.
    let (Some(view), Some(budget)) = (hearth.largest_view, hearth.view_budget) else {
        panic!("hearth measured no view");
    };
    assert_eq!(hearth.over_budget, 0, "largest view {view} of {budget}");
    assert!(view <= budget);
    // The history is long enough for the view to pass its budget and merge.
    assert!(hearth.batches > 0, "no batch of merges ran");

    // Each strategy sent the same turn requests.
    let requests = hearth.tallies[0].turns.requests;
    assert!(requests > 300, "{requests} turn requests");
    for meter in &meters {
        assert_eq!(meter.tallies[0].turns.requests, requests, "{}", meter.name);
        assert_eq!(meter.new_bytes, hearth.new_bytes, "{}", meter.name);
    }

    // The cache serves a larger share of hearth's input than of the window
    // that slides at every turn.
    let share = |meter: &Meter| meter.tallies[0].turns.share();
    assert!(
        share(hearth) > share(sliding),
        "hearth {:.3}, sliding {:.3}",
        share(hearth),
        share(sliding)
    );

    // Uncached input per new byte: finite, and below both baselines that
    // bound their requests. (Compaction at a threshold is served a larger
    // *share* from the cache than hearth — its requests are up to 640 kB and
    // mostly old — but pays more uncached input for each new byte.)
    let per_byte = |meter: &Meter| meter.per_new_byte(0, false);
    assert!(per_byte(hearth).is_finite() && per_byte(hearth) > 0.0);
    for baseline in [sliding, compacting] {
        assert!(
            per_byte(hearth) < per_byte(baseline),
            "hearth {:.2}, {} {:.2}",
            per_byte(hearth),
            baseline.name,
            per_byte(baseline)
        );
    }
    assert!(hearth.tallies[0].turns.input < compacting.tallies[0].turns.input);

    // hearth compacts as it goes; the whole history never does.
    assert!(hearth.tallies[0].compaction.requests > 0);
    assert_eq!(whole.tallies[0].compaction.requests, 0);
    // Whole history is the largest request of all.
    assert!(whole.tallies[0].turns.largest > hearth.tallies[0].turns.largest);
}

#[test]
fn the_replay_is_deterministic() {
    let first = compare(11, 300, &[TEN_MINUTES], false);
    let second = compare(11, 300, &[TEN_MINUTES], false);
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.tallies[0].turns, b.tallies[0].turns, "{}", a.name);
        assert_eq!(
            a.tallies[0].compaction, b.tallies[0].compaction,
            "{}",
            a.name
        );
    }
}

#[test]
fn every_canary_is_found_by_search_and_reachable_by_zoom() {
    let recall = hearth_tests::replay::canaries::recall(7, 1_000);
    assert_eq!(recall.found.len(), 8);
    for found in &recall.found {
        assert!(
            found.rank.is_some(),
            "`{}` not in the first hits: {recall:?}",
            found.query
        );
        assert!(
            found.reachable,
            "message {} not reachable by zoom",
            found.id
        );
    }
    assert_eq!(recall.rate(), 1.0);
}

#[test]
fn the_replay_prices_the_memory_model_and_summary_length_the_daemon_uses_by_default() {
    // The default row's lines are priced at the small model the daemon
    // picks for the priced turn models on their providers' own APIs.
    assert_eq!(
        small_model(ProviderKind::OpenAiResponses, "gpt-5-mini"),
        Some(OPENAI_MEMORY)
    );
    assert_eq!(
        small_model(ProviderKind::Anthropic, "claude-sonnet-4-5"),
        Some(ANTHROPIC_MEMORY)
    );
    for pricing in pricings() {
        let expected = match pricing.model {
            "gpt-5-mini" => OPENAI_MEMORY,
            _ => ANTHROPIC_MEMORY,
        };
        assert_eq!(pricing.memory_model, expected, "{}", pricing.model);
    }
    // The default layout asks for summaries two of which fit one line.
    let layout = Layout::find("default").unwrap();
    assert!(2 * layout.summary_budget() < layout.line_budget);
}
