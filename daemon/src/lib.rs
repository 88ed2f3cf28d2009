//! hearth-daemon: the daemon `hearthd`.
//!
//! - `daemon.rs`: the daemon's life: start-up as a list of steps, serve, stop.
//! - `startup/`: each start-up step in a file of its own (the lock, the
//!   checks, secrets, models, default prompts, the agents, the listeners).
//! - `private.rs`: the umask, and a home tightened when others could read it.
//! - `socket.rs`: the Unix socket, bound private and bound again if lost.
//! - `reload.rs`: what a reread `config.toml` changes in a running daemon.
//! - `activity.rs`: what each agent is doing, broadcast live, never logged.
//! - `bridges.rs`: the bridge processes the config enables (`hearth telegram`).
//! - `child_log.rs`: what children write on stderr, copied into the
//!   daemon's log within bounds (line length, a rate, a total).
//! - `confine.rs`: Landlock rules applied in a child before exec (the
//!   shell's commands, the document reader).
//! - `config.rs`: `config.toml`, read at start and at each reload;
//!   `config/memory.rs`: `[memory]`, the model that writes summaries.
//! - `layout.rs`: the built-in layouts that size the view.
//! - `log.rs`: the append-only SQLite log and its one writer thread (`log/schema.rs` its tables, `log/chain.rs` its hash chain).
//! - `images.rs`: images stored once by their SHA-256, named from the log.
//! - `media.rs`: audio and documents stored the same way (`store.rs` the
//!   durable write both share); `documents.rs` a document's text by page.
//! - `request.rs`: how a turn's request is laid out from the log (pure).
//! - `schedule.rs`: schedules and the notify queue, delivered between chains.
//! - `heartbeat.rs`: `HEARTBEAT.md` reviewed on a schedule, on a warm cache only.
//! - `subagents.rs`: the top agent's children and their runs.
//! - `turn.rs`: the turn loop of one agent; `turn/chain.rs` a turn's chain
//!   of requests and tool calls, step by step.
//! - `inputs.rs`: what an agent's loop reads (wake, interrupt, due, stop),
//!   and the side the rest of the daemon holds to send it.
//! - `server/`: the WebSocket protocol over the Unix socket (or TCP): the
//!   accept loop, one connection's protocol, one handler per client frame.
//! - `transcription.rs`: `[transcription]`, and the task that transcribes
//!   voice notes in the background and logs their transcripts.
//! - `usage.rs`: every request's tokens and cost; prices and budgets.
//! - `local.rs`: a local Ollama server, used when no model is configured.
//! - `model/`: the providers, one file per wire protocol.
//! - `tools/`: the agent's tools, one file per family.
//! - `mcp/`: tools from the MCP servers the user configured.
//! - `redact.rs`: keys masked before anything is logged or stored.
//! - `provenance.rs`: `data.provenance`, where a message's words came from (untrusted input).
//! - `approvals.rs`: tool calls that wait for a person's yes or no.
//! - `skills.rs`: the agent's skills (`SKILL.md` folders), their listing
//!   in the request and the owner's record of those installed.
//! - `web/`: the browser client: its page, login and WebSocket endpoint.
pub mod activity;
pub mod approvals;
pub mod bridges;
pub mod child_log;
pub mod config;
pub mod confine;
pub mod daemon;
pub mod documents;
pub mod heartbeat;
pub mod images;
pub mod inputs;
pub mod layout;
pub mod local;
pub mod log;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod model;
pub mod private;
pub mod provenance;
pub mod redact;
pub mod reload;
pub mod request;
pub mod schedule;
pub mod server;
pub mod skills;
pub mod socket;
pub mod startup;
pub mod store;
pub mod subagents;
pub mod tools;
pub mod transcription;
pub mod turn;
pub mod usage;
pub mod web;
