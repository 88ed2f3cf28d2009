//! hearth-log: the daemon's lowest layers, in a crate of their own so that
//! nothing above them (memory, tools, the server) rebuilds them: the leaves
//! every part uses, and the store of words: the append-only log with its
//! chain, its index and its tables, provenance, approvals, subagents and
//! schedules. `hearth-daemon` re-exports each module under its own name.
//!
//! - `private.rs`: the umask, and a home tightened when others could read it.
//! - `socket.rs`: the Unix socket, bound private and bound again if lost.
//! - `activity.rs`: what each agent is doing, broadcast live, never logged.
//! - `child_log.rs`: what children write on stderr, copied into the
//!   daemon's log within bounds (line length, a rate, a total).
//! - `confine.rs`: Landlock rules applied in a child before exec (the
//!   shell's commands, the document reader).
//! - `log.rs`: the append-only SQLite log and its one writer thread (`log/schema.rs` its tables, `log/chain.rs` its hash chain).
//! - `schedule.rs`: schedules and the notify queue, delivered between chains.
//! - `heartbeat.rs`: `HEARTBEAT.md` reviewed on a schedule, on a warm cache only.
//! - `skills.rs`: the agent's skills (`SKILL.md` folders), their listing
//!   in the request and the owner's record of those installed.
//! - `subagents.rs`: the top agent's children and their runs.
//! - `inputs.rs`: what an agent's loop reads (wake, interrupt, due, stop),
//!   and the side the rest of the daemon holds to send it.
//! - `redact.rs`: keys masked before anything is logged or stored.
//! - `provenance.rs`: `data.provenance`, where a message's words came from (untrusted input).
//! - `approvals.rs`: tool calls that wait for a person's yes or no.
//! - `toml_error.rs`: the line a TOML error points at.
//! - `store.rs`: the durable write of content-addressed files;
//!   `documents.rs` a document's text by page, PDFs read in a limited child.

pub mod activity;
pub mod approvals;
pub mod child_log;
pub mod confine;
pub mod documents;
pub mod heartbeat;
pub mod inputs;
pub mod log;
pub mod private;
pub mod provenance;
pub mod redact;
pub mod schedule;
pub mod skills;
pub mod socket;
pub mod store;
pub mod subagents;
pub mod toml_error;
