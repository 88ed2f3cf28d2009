//! hearth-daemon: the daemon `hearthd`: memory, tools, the turn loop, the
//! server, over the log (`hearth-log`, `daemon/log/`), the models
//! (`hearth-models`, `daemon/models/`) and the configuration
//! (`hearth-config`, `daemon/config/`).
//!
//! - `daemon.rs`: the daemon's life: start-up as a list of steps, serve, stop.
//! - `startup/`: each start-up step in a file of its own (the lock, the
//!   checks, secrets, models, default prompts, the agents, the listeners).
//! - `reload.rs`: what a reread `config.toml` changes in a running daemon.
//! - `bridges.rs`: the bridge processes the config enables (`hearth telegram`).
//! - `request.rs`: how a turn's request is laid out from the log (pure).
//! - `turn.rs`: the turn loop of one agent; `turn/chain.rs` a turn's chain
//!   of requests and tool calls, step by step.
//! - `server/`: the WebSocket protocol over the Unix socket (or TCP): the
//!   accept loop, one connection's protocol, one handler per client frame.
//! - `transcription.rs`: `[transcription]`, and the task that transcribes
//!   voice notes in the background and logs their transcripts.
//! - `tools/`: the agent's tools, one file per family.
//! - `tools/mcp/`: tools from the MCP servers the user configured.
//! - `server/web/`: the browser client: its page, login and WebSocket
//!   endpoint, one of the server's doors.
//! - `prefix.rs`: what every request of an agent begins with (cache key,
//!   instructions, the view in blocks), shared by turns and the compactor.
pub mod bridges;
pub mod daemon;
pub mod memory;
pub mod prefix;
pub mod reload;
pub mod request;
pub mod server;
pub mod startup;
pub mod tools;
pub mod transcription;
pub mod turn;

// The lower layers, crates of their own (`daemon/log/`, `daemon/models/`,
// `daemon/config/`),
// under their modules' own names: `crate::log` reads the same everywhere.
pub use hearth_config::{config, layout};
pub use hearth_log::{
    activity, approvals, child_log, confine, documents, heartbeat, inputs, log, private,
    provenance, redact, schedule, skills, socket, store, subagents, toml_error,
};
pub use hearth_models::{images, local, media, model, usage};
