//! The keeper: one task per agent that owns its tree, its two views and its
//! compactor queue, and answers turns that wait for a settled view.
//!
//! Its inputs are one closed set: messages appended to the log (handed over
//! whole by the log's writer once durable, so a new message is not read
//! back; the log is read only at start and after falling behind), a turn
//! asking for its view, a compaction call finishing, a retry falling due.
//! Work is found from queues kept as nodes are added — messages that need a
//! compress call, merges whose halves are built — never by scanning the tree.
//!
//! The turn view advances only when a turn asks for it, message by message up
//! to the turn's start, running batches as the budgets require and waiting
//! for any parent a batch needs: the view is a function of the log and the
//! tree, never of timing. It is saved after each change and loaded at start.
//!
//! The keeper holds the lines its views show, not the tree
//! (`keeper/held.rs`): others are read from the database when needed, and a
//! start reads the saved views, the queue of merges and the messages the
//! views have not taken, never the whole log or tree.
//!
//! How lines are asked for is in `keeper/calls.rs`: in batches answered as
//! numbered lines, a turn's long messages at its end (in its own chain when
//! the memory model is the turn's), and merges riding the calls that go
//! anyway. How failed calls wait is in
//! `keeper/failures.rs`: an outage of the provider never gives a node a
//! mechanical line, and a default memory model the provider refuses to the
//! key gives way to the turns' model.

mod calls;
mod failures;
mod held;

pub use calls::TurnChain;

use super::compactor::Task;
use super::store::{Built, ViewName};
use super::tree::{free_join, message_line, Node};
use super::view::{Progress, View};
use crate::activity::ActivityBoard;
use crate::layout::Layout;
use crate::log::{Entry, Log, LogError};
use crate::memory::MemoryLog;
use crate::model::{Model, ToolSpec};
use crate::usage::Meter;
use failures::{Failure, Outage};
use hearth_protocol::Event;
use held::{Held, PAGE};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("{0}")]
    Log(#[from] LogError),
    #[error("the memory keeper has stopped")]
    Stopped,
}

/// Messages the compaction view takes between two saves of it: what a
/// start advances it over again at most.
const SAVE_EVERY: u64 = 64;

/// Reads the agent's tools as they are now.
pub type ToolList = Arc<dyn Fn() -> Vec<ToolSpec> + Send + Sync>;

/// The model that writes an agent's summaries.
#[derive(Debug, Clone)]
pub struct MemoryModel {
    pub model: Model,
    /// Another model than the turns' (`[memory] model`, or the provider's
    /// small one): no cache holds the turns' prefix for it, so its calls
    /// carry a prompt of their own and no tools, and never extend a turn's
    /// chain.
    pub own: bool,
    /// When `model` is the provider's small model by default (the user
    /// chose none): the turns' model, which writes the summaries from the
    /// first call the provider refuses `model` to this key
    /// (`keeper/failures.rs`).
    pub turns: Option<Model>,
}

/// What the keeper needs to know about its agent.
pub struct MemoryConfig {
    pub agent: String,
    pub layout: Layout,
    /// The memory model; none writes mechanical lines.
    pub model: Option<MemoryModel>,
    /// The turn's prompt file, so compaction requests share the turn's prefix.
    pub prompt_file: PathBuf,
    /// The agent's tools as a turn would offer them now, read at each
    /// compaction call: an MCP server's list can change while hearthd runs
    /// (`tools/list_changed`), and a compaction request carries the new list
    /// as the next turn's does.
    pub tools: ToolList,
    pub events: broadcast::Sender<Event>,
    /// Stores what each compaction call cost; while a budget is spent, no
    /// call is made and lines are cut mechanically instead.
    pub meter: Meter,
    /// Where the agent's activity shows the summaries being written.
    pub activity: ActivityBoard,
}

/// The memory's size and backlog, for `status` and for a turn that waits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryGauge {
    /// Lines (nodes) in the turn view.
    pub lines: u64,
    /// The rendered turn view's size in bytes.
    pub bytes: u64,
    /// The size at which a batch of merges starts, in bytes.
    pub high_budget: u64,
    /// Lines that still need a compaction call (messages and merges).
    pub pending: u64,
    /// Of those, the long messages: a turn waits for those before it
    /// (merges wait for a call that goes anyway, unless the view needs one).
    pub messages: u64,
    /// Compaction calls running now.
    pub running: u64,
    /// Lines the keeper holds in memory: the views' and a few recent ones,
    /// however long the log (`keeper/held.rs`).
    pub held: u64,
}

/// A handle to the keeper. Cheap to clone.
#[derive(Clone)]
pub struct Memory {
    inputs: mpsc::UnboundedSender<Input>,
    gauge: watch::Receiver<MemoryGauge>,
    /// The memory model's label when it is of its own, for `status`.
    own_model: Arc<std::sync::Mutex<Option<String>>>,
}

enum Input {
    /// A turn starting at `through` waits for the view of [0, through).
    Settle {
        through: u64,
        taken: Vec<u64>,
        reply: oneshot::Sender<Vec<String>>,
    },
    /// A compaction call for one node ended.
    Finished {
        node: Node,
        result: Result<String, Failure>,
    },
    /// A batched compaction call ended.
    Batch {
        nodes: Vec<Node>,
        result: calls::Answered,
    },
    /// The running turn ended, with its chain when it replied.
    TurnOver(Option<TurnChain>),
    /// The configuration was reloaded: the memory model from now on.
    Model(Option<MemoryModel>),
}

impl Memory {
    /// Loads the tree and the saved views and starts the keeper.
    pub async fn start(log: Log, config: MemoryConfig) -> Result<Memory, MemoryError> {
        let agent = config.agent.clone();
        log.prepare_memory(&agent).await?;
        let turn = log
            .load_view(&agent, ViewName::Turn)
            .await?
            .unwrap_or_default();
        let compaction = log
            .load_view(&agent, ViewName::Compaction)
            .await?
            .unwrap_or_default();
        // Every message below what either view took has a line; the ones
        // after are read again by `ingest`, which skips those built.
        let logged = log.next_id(&agent).await?;
        let known = turn.applied.max(compaction.applied).min(logged);
        let shown: BTreeSet<Node> = turn
            .nodes
            .iter()
            .chain(&compaction.nodes)
            .copied()
            .collect();
        let held = log.lines_of(&agent, shown.into_iter().collect()).await?;
        let merges = log
            .merges_due(&agent)
            .await?
            .into_iter()
            .map(|node| (node.first(), node.level))
            .collect();
        let (inputs, receiver) = mpsc::unbounded_channel();
        let appended = log.appended();
        let (gauge_tx, gauge) = watch::channel(MemoryGauge::default());
        let own_model = Arc::new(std::sync::Mutex::new(own_label(config.model.as_ref())));
        let keeper = Keeper {
            log,
            model: config.model.clone(),
            gauge: gauge_tx,
            config: Arc::new(config),
            held: Held(held.into_iter().collect()),
            known,
            appended,
            fresh: Vec::new(),
            behind: true,
            logged_at_start: logged,
            unbuilt: BTreeSet::new(),
            building: BTreeSet::new(),
            untrusted: HashSet::new(),
            merges,
            running: HashSet::new(),
            calls: 0,
            solo: HashSet::new(),
            open_turn: None,
            failures: HashMap::new(),
            not_before: HashMap::new(),
            compaction_saved: compaction.applied,
            turn,
            compaction,
            settles: Vec::new(),
            urgent: None,
            inputs: inputs.downgrade(),
            outage: None,
            refused_defaults: HashSet::new(),
            refusals_said: HashSet::new(),
            own_model: own_model.clone(),
        };
        tokio::spawn(keeper.run(receiver));
        Ok(Memory {
            inputs,
            gauge,
            own_model,
        })
    }

    /// The memory's size and backlog now.
    pub fn gauge(&self) -> MemoryGauge {
        *self.gauge.borrow()
    }

    /// Writes summaries with `model` from now on (a reloaded configuration).
    pub fn set_model(&self, model: Option<MemoryModel>) {
        *self
            .own_model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = own_label(model.as_ref());
        let _ = self.inputs.send(Input::Model(model));
    }

    /// The memory model (`provider/model`) when it is not the turns' own.
    pub fn own_model(&self) -> Option<String> {
        self.own_model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The rendered view of every message before `through`, once every line
    /// of it is built — without the single-message lines of `taken`, which the
    /// turn sends whole.
    pub async fn settle(&self, through: u64, taken: Vec<u64>) -> Result<Vec<String>, MemoryError> {
        let (reply, answer) = oneshot::channel();
        self.inputs
            .send(Input::Settle {
                through,
                taken,
                reply,
            })
            .map_err(|_| MemoryError::Stopped)?;
        answer.await.map_err(|_| MemoryError::Stopped)
    }

    /// The running turn ended: with its chain when it replied, so the lines
    /// of the long messages it carried are asked for at once — in one call
    /// that extends its last request when the memory model is the turn's;
    /// without, they are asked the ordinary way.
    pub fn turn_ended(&self, chain: Option<TurnChain>) {
        let _ = self.inputs.send(Input::TurnOver(chain));
    }
}

/// The label of `model` when it is a memory model of its own.
fn own_label(model: Option<&MemoryModel>) -> Option<String> {
    model.filter(|m| m.own).map(|m| m.model.label())
}

struct Pending {
    through: u64,
    taken: Vec<u64>,
    reply: oneshot::Sender<Vec<String>>,
}

struct Keeper {
    log: Log,
    config: Arc<MemoryConfig>,
    /// The memory model: the configured one, until a reload changes it.
    model: Option<MemoryModel>,
    /// Where the size and backlog are published after each step.
    gauge: watch::Sender<MemoryGauge>,
    /// The lines the views show and a few recent ones; every other line is
    /// in the database (`keeper/held.rs`).
    held: Held,
    /// Messages read from the log: T. Every one below has a line unless it
    /// waits in `unbuilt` or `building`.
    known: u64,
    /// The log writer's hand-over of each durable group's messages.
    appended: broadcast::Receiver<Arc<Vec<Entry>>>,
    /// This agent's messages the log's writer handed over since the last
    /// step, in order.
    fresh: Vec<Entry>,
    /// Whether the log may hold messages after `known` that `fresh` lacks
    /// (at start, and after the writer's hand-over lagged): read from the
    /// log until its end is reached.
    behind: bool,
    /// The log's length when the keeper started: below it, a message read
    /// may have its line stored already.
    logged_at_start: u64,
    /// Messages whose line needs a compress call, not yet built.
    unbuilt: BTreeSet<u64>,
    /// The nodes of the build under way not built yet, by (first message,
    /// level): a message read and about to get its line, a parent joined
    /// for free. Empty between steps.
    building: BTreeSet<(u64, u8)>,
    /// Messages read but not yet given a line whose words came from
    /// outside the owner: their line gets the untrusted marker.
    untrusted: HashSet<u64>,
    /// Parents whose halves are built but do not fit together, by (first
    /// message, level); stored beside the nodes, so a start reads the queue.
    merges: BTreeSet<(u64, u8)>,
    /// Nodes asked for by the calls running now.
    running: HashSet<Node>,
    /// Compaction calls running now.
    calls: usize,
    /// Nodes a batch left without a line: each is asked again alone.
    solo: HashSet<Node>,
    /// The running turn's first message of its own: its long messages wait
    /// for its end, which asks for them in its chain.
    open_turn: Option<u64>,
    failures: HashMap<Node, u32>,
    /// A failed node is tried again only after this.
    not_before: HashMap<Node, Instant>,
    turn: View,
    compaction: View,
    /// How far the saved compaction view had taken the log.
    compaction_saved: u64,
    settles: Vec<Pending>,
    /// The node the turn view waits for: built first.
    urgent: Option<Node>,
    /// Where the calls it starts send their answers. Weak: only the
    /// `Memory` handles keep the keeper's inputs open, so the keeper ends
    /// when the last of them is dropped (a running call's answer is then
    /// dropped with it).
    inputs: mpsc::WeakUnboundedSender<Input>,
    /// While the provider is down, rate-limited or out of budget: why, and
    /// when to try again. Every queued node waits meanwhile.
    outage: Option<Outage>,
    /// Default memory models the provider refused this run: a reload that
    /// names one again gets the turns' model at once.
    refused_defaults: HashSet<String>,
    /// Chosen memory models whose refusal was said.
    refusals_said: HashSet<String>,
    /// The memory model's label for `status` when it is of its own.
    own_model: Arc<std::sync::Mutex<Option<String>>>,
}

impl Keeper {
    async fn run(mut self, mut inputs: mpsc::UnboundedReceiver<Input>) {
        let agent = self.config.agent.clone();
        loop {
            if let Err(err) = self.step().await {
                tracing::error!(agent = %agent, "memory: {err}");
                return;
            }
            self.publish();
            let retry = self.next_retry();
            // Wait for something that can change what `step` does: a message
            // of this agent logged, a turn asking, a call ending, a retry due.
            loop {
                tokio::select! {
                    input = inputs.recv() => match input {
                        Some(input) => {
                            if let Err(err) = self.handle(input).await {
                                tracing::error!(agent = %agent, "memory: {err}");
                                return;
                            }
                            break;
                        }
                        None => return,
                    },
                    group = self.appended.recv() => match group {
                        Ok(group) => {
                            if self.handed(&group) {
                                break;
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => {
                            self.behind = true;
                            break;
                        }
                        Err(broadcast::error::RecvError::Closed) => return,
                    },
                    _ = sleep_until(retry) => break,
                }
            }
        }
    }

    /// Everything that can be done now: read new messages, advance the
    /// views, answer settled turns, start compaction calls.
    async fn step(&mut self) -> Result<(), LogError> {
        self.ingest().await?;
        self.advance().await?;
        self.schedule().await
    }

    async fn handle(&mut self, input: Input) -> Result<(), LogError> {
        match input {
            Input::Settle {
                through,
                taken,
                reply,
            } => {
                self.open_turn = Some(through);
                self.settles.push(Pending {
                    through,
                    taken,
                    reply,
                })
            }
            Input::Finished { node, result } => {
                self.running.remove(&node);
                self.calls = self.calls.saturating_sub(1);
                match result {
                    Ok(text) => {
                        self.recovered();
                        self.build(vec![(node, text, false)]).await?
                    }
                    Err(failure) => match self.refused(&failure) {
                        Some(model) => self.again(vec![node], &model).await?,
                        None => self.failed(node, failure).await?,
                    },
                }
            }
            Input::Batch { nodes, result } => self.answered(nodes, result).await?,
            Input::TurnOver(chain) => self.turn_over(chain).await?,
            Input::Model(model) => self.set_model(model),
        }
        Ok(())
    }

    /// Publishes the size and backlog, and the calls running as activity.
    fn publish(&self) {
        let gauge = MemoryGauge {
            lines: self.turn.nodes.len() as u64,
            bytes: self.turn.size(&self.held) as u64,
            high_budget: self.config.layout.high_budget as u64,
            pending: (self.unbuilt.len() + self.merges.len()) as u64,
            messages: self.unbuilt.len() as u64,
            running: self.calls as u64,
            held: self.held.0.len() as u64,
        };
        self.gauge.send_if_modified(|old| {
            let changed = *old != gauge;
            *old = gauge;
            changed
        });
        let running = u32::try_from(self.running.len()).unwrap_or(u32::MAX);
        self.config.activity.compacting(running);
        // A turn waiting for summaries that wait for the provider says so.
        if let (Some(outage), false) = (&self.outage, self.settles.is_empty()) {
            let pending = u32::try_from(gauge.pending).unwrap_or(u32::MAX);
            self.config.activity.summaries_waiting(pending, &outage.why);
        }
    }

    /// Takes the messages appended since the last look: those the writer
    /// handed over when they follow on from what is known, else read from
    /// the log. Lines that fit are built at once, the others queued for
    /// the compactor.
    async fn ingest(&mut self) -> Result<(), LogError> {
        // What was handed over and not yet seen: every message acknowledged
        // before a turn's ask or end (the writer hands a group over before
        // it answers its jobs).
        loop {
            match self.appended.try_recv() {
                Ok(group) => {
                    self.handed(&group);
                }
                Err(broadcast::error::TryRecvError::Lagged(_)) => self.behind = true,
                Err(_) => break,
            }
        }
        let fresh: Vec<Entry> = std::mem::take(&mut self.fresh)
            .into_iter()
            .filter(|entry| entry.message.id >= self.known)
            .collect();
        let follows = fresh
            .iter()
            .zip(self.known..)
            .all(|(entry, id)| entry.message.id == id);
        if !self.behind && follows {
            return self.take(fresh).await;
        }
        self.behind = true;
        loop {
            let agent = self.config.agent.clone();
            let page = self
                .log
                .range(&agent, self.known, u64::MAX, PAGE as u32)
                .await?;
            // A page short of full was the log's end when it was read: what
            // is appended after it is handed over by the writer.
            let more = page.len() >= PAGE as usize;
            self.take(page).await?;
            if !more {
                self.behind = false;
                return Ok(());
            }
        }
    }

    /// Keeps this agent's messages of a group the writer handed over;
    /// whether there were any.
    fn handed(&mut self, group: &[Entry]) -> bool {
        let before = self.fresh.len();
        let agent = &self.config.agent;
        self.fresh.extend(
            group
                .iter()
                .filter(|entry| &entry.message.agent == agent)
                .cloned(),
        );
        self.fresh.len() > before
    }

    /// Takes a page of messages that follow on from `known`.
    async fn take(&mut self, page: Vec<Entry>) -> Result<(), LogError> {
        let (Some(first), Some(last)) = (page.first(), page.last()) else {
            return Ok(());
        };
        // Read again after a restart: those with a line stored are skipped.
        let stored: HashSet<u64> = if first.message.id < self.logged_at_start {
            let (from, to) = (first.message.id, last.message.id + 1);
            let ids = self
                .log
                .built_messages(&self.config.agent, from, to)
                .await?;
            ids.into_iter().collect()
        } else {
            HashSet::new()
        };
        let mut built = Vec::new();
        for entry in page {
            let id = entry.message.id;
            self.known = id + 1;
            if stored.contains(&id) {
                continue;
            }
            let node = Node::message(id);
            if crate::provenance::untrusted_origin(&entry.data).is_some() {
                self.untrusted.insert(id);
            }
            let line = message_line(entry.message.kind.as_str(), &view_text(&entry.message));
            if line.len() <= self.config.layout.line_budget || self.model.is_none() {
                let mechanical = line.len() > self.config.layout.line_budget;
                let text = super::tree::cut(&line, self.config.layout.line_budget);
                self.building.insert((id, 0));
                built.push((node, text, mechanical));
            } else {
                self.unbuilt.insert(id);
            }
        }
        self.build(built).await?;
        // A long backlog read at once (an import) is held a page at a time.
        self.trim();
        Ok(())
    }

    /// Stores built lines and builds every parent that follows for free;
    /// parents that need a call join the merge queue.
    async fn build(&mut self, mut queue: Vec<(Node, String, bool)>) -> Result<(), LogError> {
        let mut stored = Vec::new();
        let mut due = Vec::new();
        while let Some((node, text, mechanical)) = queue.pop() {
            if self.built(node) {
                self.building.remove(&(node.first(), node.level));
                continue;
            }
            // A line is written once and sent in every later request: a key
            // a model endpoint echoed into it must never get there.
            let text = crate::redact::mask(&text).into_owned();
            // Untrusted words keep their marker in every line made of them,
            // so they never pass for the owner's in the memory.
            let untrusted = match node.children() {
                None => self.untrusted.remove(&node.first()),
                Some((left, right)) => {
                    let mut marked = false;
                    for child in [left, right] {
                        marked |= self
                            .line_of(child)
                            .await?
                            .is_some_and(|line| line.contains(crate::provenance::MARKER));
                    }
                    marked && !text.contains(crate::provenance::MARKER)
                }
            };
            let text = crate::provenance::marked(text, untrusted);
            if node.level == 0 {
                self.unbuilt.remove(&node.first());
            }
            self.merges.remove(&(node.first(), node.level));
            self.solo.remove(&node);
            self.failures.remove(&node);
            self.not_before.remove(&node);
            self.held.0.insert(node, text.clone());
            self.building.remove(&(node.first(), node.level));
            stored.push(Built {
                node,
                text,
                mechanical,
            });
            // A node built just now had no parent: its parent is ready
            // when its sibling is built.
            if !self.built(node.sibling()) {
                continue;
            }
            let parent = node.parent();
            let (left, right) = parent.children().unwrap_or((node, node));
            let (Some(l), Some(r)) = (self.line_of(left).await?, self.line_of(right).await?) else {
                continue;
            };
            match free_join(&l, &r, self.config.layout.line_budget) {
                Some(joined) => {
                    self.building.insert((parent.first(), parent.level));
                    queue.push((parent, joined, false));
                }
                None if self.model.is_none() => {
                    let task = merge_task(parent, &l, &r);
                    let line = task.mechanical(self.config.layout.line_budget);
                    self.building.insert((parent.first(), parent.level));
                    queue.push((parent, line, true));
                }
                None => {
                    self.merges.insert((parent.first(), parent.level));
                    due.push(parent);
                }
            }
        }
        if !stored.is_empty() || !due.is_empty() {
            self.log
                .store_built(&self.config.agent, stored, due)
                .await?;
        }
        Ok(())
    }

    /// The task that builds `node`, from the log or its children.
    async fn task(&mut self, node: Node) -> Result<Option<Task>, LogError> {
        if node.level == 0 {
            let entries = self
                .log
                .range(&self.config.agent, node.first(), node.first() + 1, 1)
                .await?;
            // A huge message's task is its head and tail: the compactor's
            // input is bounded as a turn's is.
            return Ok(entries.first().map(|entry| Task::Compress {
                id: node.first(),
                line: super::huge::task_line(&entry.message, self.config.layout.huge_limit()),
            }));
        }
        let Some((left, right)) = node.children() else {
            return Ok(None);
        };
        Ok(
            match (self.line_of(left).await?, self.line_of(right).await?) {
                (Some(l), Some(r)) => Some(merge_task(node, &l, &r)),
                _ => None,
            },
        )
    }

    /// Advances the compaction view as far as built lines allow, and the turn
    /// view toward the turns that wait; answers those that are settled.
    async fn advance(&mut self) -> Result<(), LogError> {
        let agent = self.config.agent.clone();
        let before = self.compaction.clone();
        let budgets = self.config.layout.compaction_budgets();
        self.fill(ViewName::Compaction, self.known, budgets).await?;
        if self.compaction != before && self.compaction_due() {
            self.log
                .save_view(&agent, ViewName::Compaction, &self.compaction)
                .await?;
            self.compaction_saved = self.compaction.applied;
        }
        let Some(target) = self.settles.iter().map(|s| s.through).max() else {
            self.urgent = None;
            return Ok(());
        };
        let before = self.turn.clone();
        let budgets = self.config.layout.turn_budgets();
        let progress = self.fill(ViewName::Turn, target, budgets).await?;
        if self.turn != before {
            self.log
                .save_view(&agent, ViewName::Turn, &self.turn)
                .await?;
        }
        self.urgent = match progress {
            Progress::Waiting(node) => Some(node),
            Progress::Settled => None,
        };
        if progress == Progress::Settled && !self.holds_the_turn() {
            for pending in std::mem::take(&mut self.settles) {
                let taken: HashSet<u64> = pending.taken.iter().copied().collect();
                let lines = self.turn.render(&self.held, |id| taken.contains(&id));
                let _ = pending.reply.send(lines);
            }
        }
        Ok(())
    }

    /// Whether the compaction view is saved now: every [`SAVE_EVERY`]
    /// messages it took. It moves with every message, and a start that
    /// loads an older one advances it again over the stored lines to the
    /// same nodes (the view is a function of the log and the tree), so
    /// saving it at each message would write its row again for every
    /// message logged.
    fn compaction_due(&self) -> bool {
        self.compaction.applied >= self.compaction_saved + SAVE_EVERY
    }

    fn next_retry(&self) -> Option<Instant> {
        self.not_before
            .iter()
            .filter(|(node, _)| !self.running.contains(node))
            .map(|(_, at)| *at)
            .chain(self.outage.as_ref().map(|outage| outage.until))
            .min()
    }
}

fn merge_task(parent: Node, left: &str, right: &str) -> Task {
    Task::Merge {
        parent,
        left: left.to_string(),
        right: right.to_string(),
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A message's text as its line shows it: with images, how many come first
/// (`[2 images] caption`); the bytes never.
fn view_text(message: &hearth_protocol::Message) -> String {
    crate::images::labelled(&message.text, message.images.len())
}
