//! The view: the list of tree nodes that tiles the log, oldest first, and the
//! rule that keeps it within its budgets. Pure: no I/O, no clock.
//!
//! Appending message T appends node (0, T) and changes nothing else — until
//! the rendered view passes its high budget. Then one batch of merges brings
//! it to its low budget: again and again the most due pair of adjacent
//! siblings is replaced by its parent, `due = (T − last) / 2^l`, the oldest of
//! equal pairs first. When that parent is not built yet the view waits for it
//! rather than pick another pair, so the view is a function of the log and
//! the tree, never of timing.

use super::tree::{one_line, Node};

/// The bytes of `<chat>\n` and `</chat>` around the lines.
const TAGS: usize = "<chat>\n".len() + "</chat>".len();

pub use crate::layout::Budgets;

/// Where built lines are found.
pub trait Lines {
    /// The line of a built node; none while it is not built.
    fn line(&self, node: Node) -> Option<&str>;
}

/// What [`View::advance`] reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Every message up to the target is in the view and no batch is open.
    Settled,
    /// The view waits for this node to be built.
    Waiting(Node),
}

/// The list of nodes and how far it has taken the log.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct View {
    /// Tiles [0, applied) oldest first.
    pub nodes: Vec<Node>,
    /// Messages taken into the view: T.
    pub applied: u64,
    /// A batch of merges is under way (it passed the high budget and has not
    /// yet come down to the low one).
    pub batching: bool,
}

/// Whether a message logged at `at` (RFC 3339, as the log stores it) came
/// more than `secs` after one logged at `before`. A time that does not read
/// is no gap.
pub fn idle_gap(before: &str, at: &str, secs: u64) -> bool {
    let parse = |text: &str| chrono::DateTime::parse_from_rfc3339(text).ok();
    match (parse(before), parse(at)) {
        (Some(before), Some(at)) => (at - before).num_seconds() > secs as i64,
        _ => false,
    }
}

/// The rendered size of one line: `id+n|text` and its newline.
pub fn line_size(node: Node, text: &str) -> usize {
    node.to_string().len() + 1 + one_line(text).len() + 1
}

/// One rendered line: `id+n|text`.
pub fn render_line(node: Node, text: &str) -> String {
    format!("{node}|{}", one_line(text))
}

impl View {
    /// The rendered size in bytes; every node of a view is built.
    pub fn size(&self, lines: &impl Lines) -> usize {
        TAGS + self
            .nodes
            .iter()
            .map(|&node| line_size(node, lines.line(node).unwrap_or("")))
            .sum::<usize>()
    }

    /// Takes messages into the view up to (not including) `through`, running
    /// batches as the budgets require, until done or a node is missing.
    pub fn advance(&mut self, through: u64, budgets: Budgets, lines: &impl Lines) -> Progress {
        self.advance_with_gaps(through, budgets, lines, |_| false)
    }

    /// [`View::advance`], where `after_gap(T)` tells whether message T was
    /// logged after an idle gap ([`idle_gap`]): taking one, a batch starts
    /// past the idle budget. The gaps are read from the log's times, so the
    /// view stays a function of the log and the tree.
    pub fn advance_with_gaps(
        &mut self,
        through: u64,
        budgets: Budgets,
        lines: &impl Lines,
        after_gap: impl Fn(u64) -> bool,
    ) -> Progress {
        let mut size = self.size(lines);
        loop {
            if self.batching {
                if size <= budgets.low {
                    self.batching = false;
                    continue;
                }
                let Some(at) = self.most_due_pair() else {
                    // No adjacent siblings are left: as small as it can be.
                    self.batching = false;
                    continue;
                };
                let (left, right) = (self.nodes[at], self.nodes[at + 1]);
                let parent = left.parent();
                let Some(text) = lines.line(parent) else {
                    return Progress::Waiting(parent);
                };
                size -= line_size(left, lines.line(left).unwrap_or(""));
                size -= line_size(right, lines.line(right).unwrap_or(""));
                size += line_size(parent, text);
                self.nodes.splice(at..at + 2, [parent]);
                continue;
            }
            if self.applied >= through {
                return Progress::Settled;
            }
            let node = Node::message(self.applied);
            let Some(text) = lines.line(node) else {
                return Progress::Waiting(node);
            };
            size += line_size(node, text);
            self.nodes.push(node);
            self.applied += 1;
            let high = if after_gap(node.first()) {
                budgets.idle.min(budgets.high)
            } else {
                budgets.high
            };
            if size > high {
                self.batching = true;
            }
        }
    }

    /// The index of the left node of the most due adjacent sibling pair; the
    /// oldest among equals.
    pub fn most_due_pair(&self) -> Option<usize> {
        let total = self.applied as u128;
        let mut best: Option<(usize, u128, u8)> = None;
        for (at, pair) in self.nodes.windows(2).enumerate() {
            let (left, right) = (pair[0], pair[1]);
            if left.level != right.level || !left.is_left() || right != left.sibling() {
                continue;
            }
            let age = total.saturating_sub(right.last() as u128);
            let better = match best {
                None => true,
                // age / 2^l > best_age / 2^best_l, without division.
                Some((_, best_age, best_level)) => (age << best_level) > (best_age << left.level),
            };
            if better {
                best = Some((at, age, left.level));
            }
        }
        best.map(|(at, _, _)| at)
    }

    /// The rendered lines, leaving out the single-message nodes of `skip`
    /// (the messages a turn takes, which it sends whole).
    pub fn render(&self, lines: &impl Lines, skip: impl Fn(u64) -> bool) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|node| !(node.level == 0 && skip(node.first())))
            .map(|&node| render_line(node, lines.line(node).unwrap_or("")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Every node built, each line `width` bytes.
    struct Uniform(usize);
    impl Lines for Uniform {
        fn line(&self, _: Node) -> Option<&str> {
            Some(&"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"[..self.0])
        }
    }

    /// A tiny deterministic generator for property tests.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    struct Random<'a>(&'a HashMap<Node, String>);
    impl Lines for Random<'_> {
        fn line(&self, node: Node) -> Option<&str> {
            self.0.get(&node).map(String::as_str)
        }
    }

    fn tiles(view: &View) -> bool {
        let mut next = 0;
        for node in &view.nodes {
            if node.first() != next {
                return false;
            }
            next = node.end();
        }
        next == view.applied
    }

    #[test]
    fn the_view_always_tiles_the_log_and_grows_only_at_its_end_between_batches() {
        for seed in 1..8 {
            let mut random = Lcg(seed);
            let mut lines = HashMap::new();
            let budgets = Budgets {
                high: 2_000,
                low: 1_000,
                idle: 1_700,
            };
            // One message in ten follows an idle gap.
            let gaps: Vec<bool> = (0..600).map(|_| random.next().is_multiple_of(10)).collect();
            let after_gap = |id: u64| gaps[id as usize];
            let mut view = View::default();
            for t in 0..600u64 {
                lines.insert(
                    Node::message(t),
                    "y".repeat(1 + random.next() as usize % 80),
                );
                let before = view.clone();
                // Build every parent the batch could ask for, as the compactor would.
                loop {
                    match view.advance_with_gaps(t + 1, budgets, &Random(&lines), after_gap) {
                        Progress::Settled => break,
                        Progress::Waiting(node) => {
                            let len = 10 + random.next() as usize % 60;
                            lines.insert(node, "z".repeat(len));
                        }
                    }
                }
                assert!(tiles(&view), "seed {seed} t {t}: {:?}", view.nodes);
                let size = view.size(&Random(&lines));
                let merged = view.nodes.len() != before.nodes.len() + 1
                    || view.nodes[..before.nodes.len()] != before.nodes[..];
                if merged {
                    // A batch ran: it ends within the low budget, or with no pair left.
                    assert!(size <= budgets.low || view.most_due_pair().is_none());
                } else if after_gap(t) {
                    assert!(size <= budgets.idle, "seed {seed} t {t}: {size}");
                } else {
                    assert!(size <= budgets.high);
                }
            }
        }
    }

    #[test]
    fn how_far_each_advance_goes_never_changes_the_view() {
        // The same log and tree, taken a message at a time or in runs of
        // any length (a turn takes several), give the same nodes.
        for seed in 1..6 {
            let mut random = Lcg(seed);
            let budgets = Budgets {
                high: 1_500,
                low: 700,
                idle: 1_200,
            };
            let gaps: Vec<bool> = (0..400).map(|_| random.next().is_multiple_of(7)).collect();
            let mut lines = HashMap::new();
            for t in 0..400u64 {
                lines.insert(
                    Node::message(t),
                    "y".repeat(1 + random.next() as usize % 60),
                );
            }
            // Every parent built, as the compactor would build it.
            for level in 1..10u8 {
                for i in 0..(400u64 >> level) {
                    lines.insert(Node::new(level, i), "p".repeat(10 + (i % 40) as usize));
                }
            }
            // The view at the end, and how many batches ran.
            let advance = |steps: &mut dyn FnMut() -> u64, gapped: bool| {
                let mut view = View::default();
                let mut batches = 0;
                while view.applied < 400 {
                    let through = (view.applied + steps()).min(400);
                    let before = view.nodes.len();
                    let progress =
                        view.advance_with_gaps(through, budgets, &Random(&lines), |id| {
                            gapped && gaps[id as usize]
                        });
                    assert_eq!(progress, Progress::Settled);
                    batches += usize::from(view.nodes.len() < before);
                }
                (view, batches)
            };
            let one_by_one = advance(&mut || 1, true);
            let mut runs = Lcg(seed + 100);
            let in_runs = advance(&mut || 1 + runs.next() % 9, true);
            assert_eq!(one_by_one.0, in_runs.0, "seed {seed}");
            let no_gaps = advance(&mut || 1, false);
            assert!(
                one_by_one.1 > no_gaps.1,
                "seed {seed}: the gaps changed nothing"
            );
        }
    }

    #[test]
    fn a_message_after_an_idle_gap_starts_the_batch_past_the_idle_budget() {
        let budgets = Budgets {
            high: 400,
            low: 200,
            idle: 300,
        };
        let mut quiet = View::default();
        let mut idle = View::default();
        // 34 lines and the tags: 344 bytes, past the idle budget only.
        quiet.advance(34, budgets, &Uniform(4));
        idle.advance_with_gaps(34, budgets, &Uniform(4), |id| id == 33);
        assert_eq!(quiet.size(&Uniform(4)), 344);
        assert_eq!(quiet.nodes.len(), 34);
        assert!(idle.nodes.len() < 34 && idle.size(&Uniform(4)) <= budgets.low);
        assert!(idle_gap(
            "2026-12-01T08:00:00+01:00",
            "2026-12-01T08:00:01+00:00",
            3_600
        ));
        assert!(!idle_gap(
            "2026-12-01T08:00:00.000+00:00",
            "2026-12-01T09:00:00.000+00:00",
            3_600
        ));
        assert!(!idle_gap("yesterday", "2026-12-01T09:00:00+00:00", 60));
    }

    #[test]
    fn unit_lines_merge_like_a_binary_counter() {
        // Lines of one width: the view's levels fall from oldest to newest,
        // and the old lines change rarely.
        let budgets = Budgets {
            high: 400,
            low: 200,
            idle: 400,
        };
        let mut view = View::default();
        let mut changes_at_start = 0;
        let mut previous_first = None;
        for t in 0..2_000u64 {
            assert_eq!(view.advance(t + 1, budgets, &Uniform(8)), Progress::Settled);
            let levels: Vec<u8> = view.nodes.iter().map(|n| n.level).collect();
            assert!(levels.windows(2).all(|w| w[0] >= w[1]), "t {t}: {levels:?}");
            if previous_first != view.nodes.first().copied() {
                changes_at_start += 1;
                previous_first = view.nodes.first().copied();
            }
        }
        assert!(
            changes_at_start < 20,
            "the oldest line changed {changes_at_start} times"
        );
    }

    #[test]
    fn a_batch_waits_for_the_parent_it_needs() {
        let mut lines = HashMap::new();
        for t in 0..4 {
            lines.insert(Node::message(t), "a".repeat(30));
        }
        let budgets = Budgets {
            high: 100,
            low: 60,
            idle: 100,
        };
        let mut view = View::default();
        let progress = view.advance(4, budgets, &Random(&lines));
        assert_eq!(progress, Progress::Waiting(Node::new(1, 0)));
        assert!(view.batching);
        lines.insert(Node::new(1, 0), "p".into());
        lines.insert(Node::new(1, 1), "q".into());
        assert_eq!(view.advance(4, budgets, &Random(&lines)), Progress::Settled);
        assert!(view.size(&Random(&lines)) <= budgets.high);
    }

    #[test]
    fn render_leaves_out_taken_messages() {
        let mut view = View::default();
        let budgets = Budgets {
            high: 10_000,
            low: 5_000,
            idle: 10_000,
        };
        view.advance(3, budgets, &Uniform(2));
        assert_eq!(
            view.render(&Uniform(2), |id| id == 2),
            vec!["0+1|xx", "1+1|xx"]
        );
    }
}
