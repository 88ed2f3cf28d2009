//! Memory: the summary tree, the view, and the compactor.
//!
//! - `tree.rs`: node coordinates and line rules (pure).
//! - `view.rs`: the view and its merge rule (pure).
//! - `store.rs`: nodes and saved views in the log's database.
//! - `compactor.rs`: one compaction call: its request and its tries.
//! - `keeper.rs`: the task that owns an agent's tree and views.
mod compactor;
mod keeper;
mod store;
mod tree;
mod view;

pub use compactor::{clean as clean_answer, request as compaction_request, Task};
pub use keeper::{Memory, MemoryConfig, MemoryError};
pub use store::{Built, ViewName};
pub use tree::{cut, free_join, message_line, one_line, Node};
pub use view::{line_size, render_line, Budgets, Lines, Progress, View};
