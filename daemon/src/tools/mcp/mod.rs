//! Tools from the MCP servers the user configured (`[[mcp]]`), over the
//! official Rust SDK (`rmcp`).
//!
//! - `config.rs`: `[[mcp]]` tables, their checks, `${NAME}` secrets.
//! - `names.rs`: how tools are offered: names, canonical schemas, order (pure).
//! - `server.rs`: one server kept running: started, listed, restarted.
//! - `stdio.rs`: a server as a child process, its pipes and stderr.
//! - `http.rs`: a server at a streamable HTTP address.
//! - `content.rs`: a call's result as a tool outcome (text, images, resources).
//! - `frames.rs`: the servers in the `mcp` frame and `status`.
//! - `registry.rs`: [`Mcp`], every server; [`McpTools`], one agent's.

mod content;
mod frames;
mod http;
mod names;
mod registry;
mod server;
mod stdio;

pub use crate::config::mcp::{check as check_config, McpConfigError, McpServerConfig, Trust};
pub use frames::{frame, running_calls};
pub use names::{offered_name, Offer, OfferedTool, SkippedTool};
pub use registry::{Mcp, McpTools, Reloaded, RunningCall};
pub use server::{Context, Snapshot, Status};
