//! hearth-config: `config.toml` and the layouts, read as the daemon reads
//! them, above the log and the models and below everything that acts on
//! them, so `hearth setup` checks the file it writes without linking the
//! daemon. hearth-daemon re-exports each module under its own name.
//!
//! - `config.rs`: `config.toml`, read at start and at each reload, and its
//!   tables: `config/memory.rs` (`[memory]`, the model that writes
//!   summaries), `config/tools.rs` (`[tools]`), `config/mcp.rs` (`[[mcp]]`,
//!   their checks, `${NAME}` secrets), `config/transcription.rs`,
//!   `config/web.rs`.
//! - `layout.rs`: the built-in layouts that size the view.

pub mod config;
pub mod layout;

// The lower layers' modules under their own names, so `crate::model`
// reads the same in every layer of the daemon.
pub(crate) use hearth_log::{approvals, heartbeat, toml_error};
pub(crate) use hearth_models::{model, usage};
