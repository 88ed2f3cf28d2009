//! The memory benchmark's simulation: a long synthetic history replayed
//! through hearth's real tree, views and request layout, and through three
//! baselines, with a fake model and a simulated prompt cache.
//!
//! - `history.rs`: the synthetic history (seeded, deterministic).
//! - `cache.rs`: requests as bytes, and OpenAI's prefix cache over them.
//! - `hearth.rs`: hearth's layout, driving the daemon's pure memory code.
//! - `strategies.rs`: the replay that drives every strategy in lockstep, and
//!   the baselines: the whole history, compaction at a threshold, a sliding
//!   window.
//! - `report.rs`: what is counted, and the tables.
//! - `spend.rs`: the spend at list prices, per model and time-to-live.
//! - `canaries.rs`: recall canaries, found by the real `search` and reached by `zoom`.

pub mod cache;
pub mod canaries;
pub mod hearth;
pub mod history;
pub mod report;
pub mod spend;
pub mod strategies;

pub use hearth::Hearth;
pub use history::{generate, Episode, Generator};
pub use report::{summary, table, Floors, Goals, Meter, Tally, LEGEND};
pub use strategies::{compare, Replay, Strategy, NAMES};
