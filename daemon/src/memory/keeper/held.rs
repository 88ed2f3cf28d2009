//! What the keeper holds of the tree: the lines its two views show and a
//! few recent ones, never the history. Every other line is read from the
//! database when it is needed (a merge's halves, a view taking messages it
//! has not seen), and whether a node is built is known without its line.
//!
//! **Built, without the tree.** Every message below `known` has a line
//! unless it waits in `unbuilt` (or in the build under way); a parent whose
//! halves are built is built at once or waits in `merges`. So a node is
//! built when the log reaches its end and no message or merge within it
//! waits: three range lookups in queues of pending work. The queue of
//! merges is stored beside the nodes (`store.rs`), so a start reads it, not
//! the tree.
//!
//! **Bounded.** The held lines are the views' and those of the last
//! [`RECENT`] messages; past twice that the others are dropped. A view that
//! takes a line the keeper dropped asks for it again ([`Keeper::fill`]):
//! the view stays a function of the log and the tree, whatever is held.

use super::Keeper;
use crate::log::LogError;
use crate::memory::store::ViewName;
use crate::memory::tree::Node;
use crate::memory::view::{idle_gap, Budgets, Lines, Progress};
use crate::memory::MemoryLog;
use std::collections::{BTreeSet, HashMap, HashSet};

/// Messages read from the database at once: a page of lines, or of times.
pub(super) const PAGE: u64 = 1000;

/// Lines of the newest messages held beside the views: what the next turn
/// most likely takes.
pub(super) const RECENT: u64 = 256;

/// Built lines the keeper holds, by node.
#[derive(Default)]
pub(super) struct Held(pub(super) HashMap<Node, String>);

impl Lines for Held {
    fn line(&self, node: Node) -> Option<&str> {
        self.0.get(&node).map(String::as_str)
    }
}

/// Whether a queue keyed by (first message, level) holds a node within
/// `node`: one that starts in its span at its level or below.
pub(super) fn any_within(queue: &BTreeSet<(u64, u8)>, node: Node) -> bool {
    queue
        .range((node.first(), 0)..(node.end(), 0))
        .any(|&(_, level)| level <= node.level)
}

impl Keeper {
    /// Whether `node` has a line, held or stored.
    pub(super) fn built(&self, node: Node) -> bool {
        if self.held.0.contains_key(&node) {
            return true;
        }
        if node.end() > self.known
            || self
                .unbuilt
                .range(node.first()..node.end())
                .next()
                .is_some()
            || any_within(&self.building, node)
        {
            return false;
        }
        node.level == 0 || !any_within(&self.merges, node)
    }

    /// The line of `node` when it is built: held, or read from the
    /// database (and held until the next trim).
    pub(super) async fn line_of(&mut self, node: Node) -> Result<Option<String>, LogError> {
        if let Some(line) = self.held.0.get(&node) {
            return Ok(Some(line.clone()));
        }
        if !self.built(node) {
            return Ok(None);
        }
        let read = self
            .log
            .lines_of(&self.config.agent, vec![node])
            .await?
            .into_iter()
            .next()
            .map(|(_, text)| text);
        if let Some(text) = &read {
            self.held.0.insert(node, text.clone());
        }
        Ok(read)
    }

    /// Reads a line the views need from the database: a message's with the
    /// page of built messages after it, which a view takes next.
    async fn fetch(&mut self, node: Node) -> Result<(), LogError> {
        let agent = self.config.agent.clone();
        let lines = if node.level == 0 {
            let to = (node.first() + PAGE).min(self.known);
            self.log.message_lines(&agent, node.first(), to).await?
        } else {
            self.log.lines_of(&agent, vec![node]).await?
        };
        if !lines.iter().any(|(read, _)| *read == node) {
            return Err(LogError::Commit(format!(
                "the memory's tree lacks the line of node {node}, which its queues say is built; \
                 the database may have been written by another version of hearthd"
            )));
        }
        for (read, text) in lines {
            self.held.0.entry(read).or_insert(text);
        }
        Ok(())
    }

    /// Advances a view toward `through`, a page of messages at a time,
    /// reading the lines it needs that are built but not held; the turn
    /// view with the idle gaps read from the log's times. Returns where it
    /// stopped: settled, or waiting for a node not built yet.
    pub(super) async fn fill(
        &mut self,
        name: ViewName,
        through: u64,
        budgets: Budgets,
    ) -> Result<Progress, LogError> {
        loop {
            let applied = self.view(name).applied;
            let step = through.min(applied + PAGE);
            let gaps = match name {
                ViewName::Turn => self.gaps(applied, step).await?,
                ViewName::Compaction => BTreeSet::new(),
            };
            let progress = loop {
                let view = match name {
                    ViewName::Turn => &mut self.turn,
                    ViewName::Compaction => &mut self.compaction,
                };
                match view.advance_with_gaps(step, budgets, &self.held, |id| gaps.contains(&id)) {
                    Progress::Waiting(node) if self.built(node) => self.fetch(node).await?,
                    progress => break progress,
                }
            };
            self.trim();
            if progress != Progress::Settled || step >= through {
                return Ok(progress);
            }
        }
    }

    fn view(&self, name: ViewName) -> &crate::memory::view::View {
        match name {
            ViewName::Turn => &self.turn,
            ViewName::Compaction => &self.compaction,
        }
    }

    /// The messages in `[from, to)` logged an idle gap (the layout's
    /// `idle_secs`) after the one before them, read from the log's times.
    async fn gaps(&self, from: u64, to: u64) -> Result<BTreeSet<u64>, LogError> {
        let Some(secs) = self.config.layout.idle_gap() else {
            return Ok(BTreeSet::new());
        };
        if from >= to {
            return Ok(BTreeSet::new());
        }
        let times = self
            .log
            .logged_times(&self.config.agent, from.saturating_sub(1), to)
            .await?;
        Ok(times
            .windows(2)
            .filter(|pair| pair[1].0 == pair[0].0 + 1 && pair[1].0 >= from)
            .filter(|pair| idle_gap(&pair[0].1, &pair[1].1, secs))
            .map(|pair| pair[1].0)
            .collect())
    }

    /// Drops the held lines no view shows, but for the newest messages',
    /// once they pass twice what is kept: the memory holds the views, not
    /// the history.
    pub(super) fn trim(&mut self) {
        let views = self.turn.nodes.len() + self.compaction.nodes.len();
        if self.held.0.len() <= views + 2 * RECENT as usize {
            return;
        }
        let shown: HashSet<Node> = self
            .turn
            .nodes
            .iter()
            .chain(&self.compaction.nodes)
            .copied()
            .collect();
        let recent = self.known.saturating_sub(RECENT);
        self.held
            .0
            .retain(|node, _| shown.contains(node) || (node.level == 0 && node.first() >= recent));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_holds_a_node_within_only_at_its_level_or_below() {
        let queue: BTreeSet<(u64, u8)> = [(4, 1), (8, 3)].into_iter().collect();
        assert!(any_within(&queue, Node::new(2, 1)), "4+2 is within 4+4");
        assert!(any_within(&queue, Node::new(1, 2)), "4+2 itself");
        assert!(!any_within(&queue, Node::new(1, 3)), "6+2 holds neither");
        assert!(!any_within(&queue, Node::new(2, 2)), "8+8 is above 8+4");
        assert!(any_within(&queue, Node::new(3, 1)));
    }
}
