//! How the keeper asks for lines: in batches, the form the replay measures
//! (`memory/batch.rs`).
//!
//! - **At a turn's end**, the turn loop hands the keeper its last request
//!   and its reply ([`TurnChain`]); the long messages that request carried
//!   and the merges ready then are asked for at once. When the memory model
//!   is the turn's (the same configured name) and the layout names no
//!   `compaction_prompt`, in one call that extends that request, so its
//!   prefix is in the cache and no long message is sent twice. Otherwise
//!   (a memory model of its own, which no cache of the turn's serves, or a
//!   compaction prompt, which the chain would not carry) in ordinary
//!   batches after the compaction view, so the next turn finds them built.
//!   While a turn runs, its own long messages wait for its end.
//! - **A memory model of its own** gets the layout's `compaction_prompt`
//!   or the built-in one ([`crate::memory::COMPACTION_PROMPT`]) and no
//!   tools; the turn's model gets the turn's instructions (or the layout's
//!   compaction prompt) and tools, so the cache serves the prefix it shares
//!   with the turns; on a local server a compaction prompt (the `small`
//!   layout's) goes without tools, which share no prefix there.
//! - **On a local server** (llama.cpp, Ollama: `model/served.rs`) calls
//!   run one at a time and never beside a turn's requests: none starts
//!   while a turn runs, and a turn that asks for its view waits for the
//!   call running. Each of the server's few slots caches one prompt; a
//!   summary beside a turn sends the next turn to a cold slot.
//! - **Otherwise** (a long message a turn takes, a note, one logged after
//!   the turn's last request, after a restart), the messages that need a
//!   line wait for the next turn that asks for its view, and go with the
//!   merges ready then in one call after the compaction view, before the
//!   turn's first request. Merges alone never start a call unless the turn
//!   view waits for one of them (a batch of the view): they ride the calls
//!   that go anyway.
//! - **A node a batch left without a line** (missing, over the budget, or a
//!   call of several that failed for a reason of its own) is asked again on
//!   its own, with the single call's tries; only its own failures, counted
//!   there (or a batch of that node alone failing so), can end in a
//!   mechanical line (`failures.rs`). An outage leaves every node of the
//!   batch queued as it was.

use super::failures::Failure;
use super::{Input, Keeper, MemoryConfig, MemoryModel};
use crate::log::LogError;
use crate::memory::batch::{self, BATCH};
use crate::memory::compactor::{self, Task};
use crate::memory::tree::Node;
use crate::model::{Request, ToolSpec};
use std::collections::HashSet;
use tokio::time::Instant;

/// A turn that ended with a reply: its last request, the reply, and the
/// messages that request carried whole (and the reply), whose lines its
/// end may ask for in the same chain.
#[derive(Debug, Clone)]
pub struct TurnChain {
    pub request: Request,
    pub reply: String,
    pub messages: Vec<u64>,
}

/// What one batched call answered: a line or none for each node.
pub(super) type Answered = Result<Vec<(Node, Option<String>)>, Failure>;

impl Keeper {
    /// Starts calls up to the layout's concurrency: the node the turn view
    /// waits for first; nodes a batch left without a line alone; while a
    /// turn waits for its view, the messages that need a line (each once
    /// fewer than `compactor_ahead` unbuilt messages precede it, and none of
    /// the running turn's own) with the ready merges, in one batch.
    pub(super) async fn schedule(&mut self) -> Result<(), LogError> {
        let Some(model) = self.model.clone() else {
            return Ok(());
        };
        let now = Instant::now();
        let Some(concurrency) = self.concurrency(now) else {
            return Ok(());
        };
        let layout = &self.config.layout;
        let mut candidates: Vec<Node> = Vec::new();
        if let Some(node) = self.urgent.filter(|node| self.queued(*node)) {
            candidates.push(node);
        }
        // Long messages outside a turn's chain wait for a turn that asks
        // for its view, and go in one batch before its first request.
        let open = self.open_turn;
        let asked = !self.settles.is_empty();
        candidates.extend(
            self.unbuilt
                .iter()
                .take(if asked { layout.compactor_ahead } else { 0 })
                .filter(|&&id| open.is_none_or(|start| id < start))
                .map(|&id| Node::message(id)),
        );
        // What was asked already and must be asked again goes on whether
        // a turn waits or not: a node a batch left without a line, or one
        // whose call failed.
        let mut again: Vec<Node> = self
            .solo
            .iter()
            .chain(self.failures.keys())
            .copied()
            .filter(|node| self.queued(*node))
            .collect();
        again.sort_by_key(|node| (node.first(), node.level));
        candidates.extend(again);
        candidates.extend(
            self.merges
                .iter()
                .map(|&(first, level)| Node::new(level, first >> level)),
        );
        let mut seen = HashSet::new();
        let mut alone = Vec::new();
        let mut batch = Vec::new();
        let mut worth_a_call = false;
        for node in candidates {
            if !seen.insert(node) || !self.ready(node, now) {
                continue;
            }
            if self.solo.contains(&node) {
                alone.push(node);
            } else if batch.len() < BATCH {
                worth_a_call |= node.level == 0 || Some(node) == self.urgent;
                batch.push(node);
            }
        }
        if !worth_a_call {
            batch.clear();
        }
        if alone.is_empty() && batch.is_empty() {
            return Ok(());
        }
        if let Some(why) = self.config.meter.refusal().await? {
            self.spent(why);
            return Ok(());
        }
        let batch_first = self.urgent.is_some_and(|node| batch.contains(&node));
        if batch_first && self.calls < concurrency {
            self.send_batch(std::mem::take(&mut batch), None, &model)
                .await?;
        }
        for node in alone {
            if self.calls >= concurrency {
                break;
            }
            if let Some(task) = self.task(node).await? {
                self.send_one(node, task, &model);
            }
        }
        if !batch.is_empty() && self.calls < concurrency {
            self.send_batch(batch, None, &model).await?;
        }
        Ok(())
    }

    /// A turn ended: with a reply, the lines of the long messages it
    /// carried and the ready merges are asked for now, in its chain when
    /// the memory model can read it from the cache; every other message of
    /// the turn goes the ordinary way from now on.
    pub(super) async fn turn_over(&mut self, chain: Option<TurnChain>) -> Result<(), LogError> {
        self.open_turn = None;
        let (Some(chain), Some(model)) = (chain, self.model.clone()) else {
            return Ok(());
        };
        // The chain is the turn's request: only the turn's model finds it in
        // the cache, and only with the turn's prompt, which a layout's
        // compaction prompt keeps out of compaction.
        let chained = !model.own && self.config.layout.compaction_prompt.is_none();
        // The reply was logged before the turn handed its chain over.
        self.ingest().await?;
        let now = Instant::now();
        // While the provider is out, the messages wait in the ordinary queue.
        if self.outage.is_some() {
            return Ok(());
        }
        let Some(concurrency) = self.concurrency(now) else {
            return Ok(());
        };
        let mut messages: Vec<Node> = chain
            .messages
            .iter()
            .map(|&id| Node::message(id))
            .filter(|node| self.unbuilt.contains(&node.first()))
            .filter(|node| !self.solo.contains(node) && self.ready(*node, now))
            .collect();
        messages.dedup();
        let mut merges: Vec<Node> = self
            .merges
            .iter()
            .map(|&(first, level)| Node::new(level, first >> level))
            .filter(|node| !self.solo.contains(node) && self.ready(*node, now))
            .collect();
        if messages.is_empty() && merges.is_empty() {
            return Ok(());
        }
        if let Some(why) = self.config.meter.refusal().await? {
            self.spent(why);
            return Ok(());
        }
        loop {
            if self.calls >= concurrency {
                return Ok(());
            }
            let take = messages.len().min(BATCH);
            let mut nodes: Vec<Node> = messages.drain(..take).collect();
            let room = BATCH - nodes.len();
            nodes.extend(merges.drain(..room.min(merges.len())));
            if nodes.is_empty() {
                return Ok(());
            }
            let turn = chained.then_some((&chain.request, chain.reply.as_str()));
            self.send_batch(nodes, turn, &model).await?;
            if messages.is_empty() {
                return Ok(());
            }
        }
    }

    /// How many calls may run now; none while an outage waits. During an
    /// outage one call at a time tries again, until one succeeds.
    /// A local server (`model/served.rs`) takes one call at a time, and
    /// none while a turn's requests run (a turn that asks for its view
    /// waits for the call running: [`Keeper::holds_the_turn`]).
    fn concurrency(&self, now: Instant) -> Option<usize> {
        allowed_calls(
            self.config.layout.compactor_concurrency,
            self.outage.as_ref().map(|outage| outage.until > now),
            self.one_at_a_time(),
            self.open_turn.is_some() && self.settles.is_empty(),
        )
    }

    /// Whether the memory model is a server of the owner's (llama.cpp,
    /// Ollama, … at a local address): its few slots each keep one prompt
    /// in their cache, so a summary beside a turn sends the next turn to
    /// a slot that must read its whole prompt again. Its summaries run one
    /// at a time, between the turns' requests.
    pub(super) fn one_at_a_time(&self) -> bool {
        self.model
            .as_ref()
            .is_some_and(|memory| memory.model.is_local_server())
    }

    /// Whether a turn that asks for its view waits for the summary call
    /// running first: on a local server, so the turn's requests never run
    /// beside one.
    pub(super) fn holds_the_turn(&self) -> bool {
        self.one_at_a_time() && self.calls > 0
    }

    /// Whether `node` waits in a queue.
    fn queued(&self, node: Node) -> bool {
        if node.level == 0 {
            self.unbuilt.contains(&node.first())
        } else {
            self.merges.contains(&(node.first(), node.level))
        }
    }

    /// Whether `node` may be asked for now: not running, no wait after a
    /// failure still to run.
    fn ready(&self, node: Node, now: Instant) -> bool {
        !self.running.contains(&node) && self.not_before.get(&node).is_none_or(|at| *at <= now)
    }

    /// The compaction view's lines before message `first`: a call's context.
    fn context(&self, first: u64) -> Vec<String> {
        self.compaction
            .nodes
            .iter()
            .take_while(|n| n.end() <= first)
            .map(|&n| crate::memory::view::render_line(n, self.held.0.get(&n).map_or("", |l| l)))
            .collect()
    }

    /// One call for one node, with the single call's tries.
    fn send_one(&mut self, node: Node, task: Task, model: &MemoryModel) {
        self.running.insert(node);
        self.calls += 1;
        let context = self.context(node.first());
        let config = self.config.clone();
        let inputs = self.inputs.clone();
        let model = model.clone();
        tokio::spawn(async move {
            let (instructions, tools) = prefix(&config, &model);
            let request = compactor::request(
                &config.agent,
                &instructions,
                &tools,
                &context,
                &config.layout,
                &task,
            );
            let result = compactor::compact(&model.model, &config.meter, &request, &config.layout)
                .await
                .map(|line| task.keep_speaker(line))
                .map_err(|err| Failure::of(&err, model.model.label()));
            // None: the memory was dropped, and its keeper ended.
            if let Some(inputs) = inputs.upgrade() {
                let _ = inputs.send(Input::Finished { node, result });
            }
        });
    }

    /// One call for several nodes: after `chain` (a turn's last request
    /// and its reply) when given, otherwise after the compaction view.
    async fn send_batch(
        &mut self,
        nodes: Vec<Node>,
        chain: Option<(&Request, &str)>,
        model: &MemoryModel,
    ) -> Result<(), LogError> {
        let mut tasks = Vec::new();
        for node in nodes {
            if let Some(task) = self.task(node).await? {
                tasks.push(task);
            }
        }
        if tasks.is_empty() {
            return Ok(());
        }
        let nodes: Vec<Node> = tasks.iter().map(Task::node).collect();
        self.running.extend(nodes.iter().copied());
        self.calls += 1;
        let config = self.config.clone();
        let request = match chain {
            Some((turn, reply)) => batch::chain_request(turn, reply, &tasks, &config.layout),
            None => {
                let first = nodes.iter().map(|n| n.first()).min().unwrap_or(0);
                let (instructions, tools) = prefix(&config, model);
                batch::request(
                    &config.agent,
                    &instructions,
                    &tools,
                    &self.context(first),
                    &config.layout,
                    &tasks,
                )
            }
        };
        let inputs = self.inputs.clone();
        let model = model.clone();
        tokio::spawn(async move {
            let result = batch::ask(
                &model.model,
                &config.meter,
                &request,
                &tasks,
                &config.layout,
            )
            .await
            .map_err(|err| Failure::of(&err, model.model.label()));
            // None: the memory was dropped, and its keeper ended.
            if let Some(inputs) = inputs.upgrade() {
                let _ = inputs.send(Input::Batch { nodes, result });
            }
        });
        Ok(())
    }

    /// The nodes of a call the provider refused for its model, asked again
    /// at once with `model`: in one batch, and those asked alone alone.
    pub(super) async fn again(
        &mut self,
        nodes: Vec<Node>,
        model: &MemoryModel,
    ) -> Result<(), LogError> {
        if let Some(why) = self.config.meter.refusal().await? {
            self.spent(why);
            return Ok(());
        }
        let (alone, batch): (Vec<Node>, Vec<Node>) =
            nodes.into_iter().partition(|node| self.solo.contains(node));
        for node in alone {
            if let Some(task) = self.task(node).await? {
                self.send_one(node, task, model);
            }
        }
        if !batch.is_empty() {
            self.send_batch(batch, None, model).await?;
        }
        Ok(())
    }

    /// A batched call ended: its lines are built; a node it gave no line
    /// is asked again alone; an outage leaves them all queued.
    pub(super) async fn answered(
        &mut self,
        nodes: Vec<Node>,
        result: Answered,
    ) -> Result<(), LogError> {
        self.calls = self.calls.saturating_sub(1);
        for node in &nodes {
            self.running.remove(node);
        }
        match result {
            Ok(lines) => {
                self.recovered();
                let mut built = Vec::new();
                for (node, line) in lines {
                    match line {
                        Some(line) => built.push((node, line, false)),
                        None => {
                            self.solo.insert(node);
                        }
                    }
                }
                self.build(built).await
            }
            Err(failure) if failure.refusal.is_some() => match self.refused(&failure) {
                Some(model) => self.again(nodes, &model).await,
                None => {
                    self.out(failure.why, None);
                    Ok(())
                }
            },
            // A batch of one failed for that node's own reason: it counts
            // as the node's failure, as a single call's would.
            Err(failure) if failure.own && nodes.len() == 1 => self.failed(nodes[0], failure).await,
            Err(failure) if failure.own => {
                tracing::warn!(
                    agent = %self.config.agent,
                    "a batch of {} summaries failed: {}; each is asked again alone",
                    nodes.len(),
                    failure.why
                );
                self.solo.extend(nodes);
                Ok(())
            }
            Err(failure) => {
                self.out(failure.why, None);
                Ok(())
            }
        }
    }
}

/// How many summary calls may run: the layout's `concurrency`; none
/// while an outage waits (`outage`: whether its wait still runs) and one
/// when it has passed, to try again; on a local server (`one_at_a_time`)
/// one, and none while a turn's requests run (`turn_running`: a turn is
/// open and no longer waits for its view).
fn allowed_calls(
    concurrency: usize,
    outage: Option<bool>,
    one_at_a_time: bool,
    turn_running: bool,
) -> Option<usize> {
    match outage {
        Some(true) => None,
        _ if one_at_a_time && turn_running => None,
        Some(false) => Some(1),
        None if one_at_a_time => Some(1),
        None => Some(concurrency),
    }
}

/// The instructions and tools a compaction request outside a turn's chain
/// starts with: on a memory model of its own, its own prompt and no tools;
/// on the turn's model, the turn's instructions (or the layout's
/// compaction prompt) and tools, as its turns send them; a compaction
/// prompt on a local server goes without tools.
fn prefix(config: &MemoryConfig, model: &MemoryModel) -> (String, Vec<ToolSpec>) {
    if model.own {
        return (
            compactor::own_prompt(&config.layout).to_string(),
            Vec::new(),
        );
    }
    match &config.layout.compaction_prompt {
        // On a local server a prompt of its own shares no prefix with the
        // turns (a chat template renders the tools after the instructions),
        // and the tools would only take a small window's room.
        Some(prompt) if model.model.is_local_server() => (prompt.clone(), Vec::new()),
        Some(prompt) => (prompt.clone(), (config.tools)()),
        None => (
            crate::prefix::instructions(&config.prompt_file),
            (config.tools)(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::allowed_calls;

    #[test]
    fn a_local_servers_summaries_run_one_at_a_time_and_never_beside_a_turn() {
        // A hosted provider: the layout's concurrency, turn or no turn.
        assert_eq!(allowed_calls(8, None, false, false), Some(8));
        assert_eq!(allowed_calls(8, None, false, true), Some(8));
        // A local server: one call, and none while a turn's requests run.
        assert_eq!(allowed_calls(8, None, true, false), Some(1));
        assert_eq!(allowed_calls(8, None, true, true), None);
        // An outage: none while it waits, then one try, for everyone.
        assert_eq!(allowed_calls(8, Some(true), false, false), None);
        assert_eq!(allowed_calls(8, Some(false), false, false), Some(1));
        assert_eq!(allowed_calls(8, Some(false), true, true), None);
    }
}
