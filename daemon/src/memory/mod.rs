//! Memory: the summary tree, the view, and the compactor.
//!
//! - `tree.rs`: node coordinates and line rules (pure).
//! - `view.rs`: the view and its merge rule (pure).
//! - `store.rs`: nodes and saved views in the log's database.
mod store;
mod tree;
mod view;

pub use store::{Built, ViewName};
pub use tree::Node;
pub use view::{Budgets, Lines, Progress, View};
