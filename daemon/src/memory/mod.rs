//! Memory: the summary tree, the view, and the compactor.
//!
//! - `tree.rs`: node coordinates and line rules (pure).
//! - `view.rs`: the view and its merge rule (pure).
//! - `store.rs`: nodes, saved views and the merge queue in the log's database.
//! - `compactor.rs`: one compaction call: its request and its tries.
//! - `batch.rs`: several lines in one call, at a turn's end or before it.
//! - `keeper.rs`: the task that owns an agent's tree and views;
//!   `keeper/calls.rs`: how it asks for lines (batches, a turn's chain,
//!   a memory model of its own);
//!   `keeper/failures.rs`: how failed calls wait (an outage cuts no line);
//!   `keeper/held.rs`: the lines it holds (the views', not the history).
//! - `search.rs`: the full-text index of messages and lines, and `search`.
//! - `facts.rs`: the pinned facts, bounded (pure), and their table.
//! - `huge.rs`: huge messages as head and tail in requests (pure).
//! - `inspect.rs`: the memory frames: search, the view, a node, the facts.
pub mod batch;
mod compactor;
mod facts;
#[cfg(test)]
mod facts_record_tests;
mod huge;
mod inspect;
mod keeper;
pub mod search;
mod store;
mod tree;
mod view;

pub use compactor::{
    clean as clean_answer, own_prompt as own_compaction_prompt, request as compaction_request,
    Task, PROMPT as COMPACTION_PROMPT,
};
pub use facts::FactsLog;
pub use facts::{Change as FactChange, Fact, FactError, Pinned, FACTS_LIMIT, FACT_LIMIT};
pub use huge::{ceil_boundary, floor_boundary, head_and_tail, task_line};
pub use inspect::{answer as answer_frame, hits_text};
pub use keeper::{
    Memory, MemoryConfig, MemoryError, MemoryGauge, MemoryModel, ToolList, TurnChain,
};
pub use search::SearchLog;
pub use store::{Built, MemoryLog, ViewName};
pub use tree::{cut, free_join, message_line, one_line, Node};
pub use view::{idle_gap, line_size, render_line, Budgets, Lines, Progress, View};
