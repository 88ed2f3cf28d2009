//! Tools from the MCP servers the user configured (`[[mcp]]`), over the
//! official Rust SDK (`rmcp`).
//!
//! - `config.rs`: `[[mcp]]` tables, their checks, `${NAME}` secrets.
//! - `names.rs`: how tools are offered: names, canonical schemas, order (pure).

mod config;
mod names;

pub use config::{check as check_config, McpConfigError, McpServerConfig, Trust};
pub use names::{offered_name, Offer, OfferedTool};
