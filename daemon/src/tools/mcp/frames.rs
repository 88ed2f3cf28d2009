//! The MCP servers as the protocol shows them: the `mcp` frame and the
//! running calls in `status`.

use super::registry::Mcp;
use hearth_protocol::{McpCall, McpServer};

/// Every server, by name, for the `mcp` frame.
pub fn frame(mcp: &Mcp) -> Vec<McpServer> {
    mcp.snapshots()
        .into_iter()
        .map(|server| McpServer {
            name: server.name,
            transport: server.transport,
            state: server.status.name().to_string(),
            tools: server
                .offer
                .tools
                .iter()
                .map(|tool| tool.spec.name.clone())
                .collect(),
            skipped: server
                .offer
                .skipped
                .iter()
                .map(|skipped| format!("{}: {}", skipped.tool, skipped.why))
                .collect(),
            last_error: server.last_error,
            restarts: server.restarts,
        })
        .collect()
}

/// The MCP calls running now, for `status`.
pub fn running_calls(mcp: &Mcp) -> Vec<McpCall> {
    mcp.running()
        .into_iter()
        .map(|call| McpCall {
            agent: call.agent,
            server: call.server,
            tool: call.tool,
            secs: call.started.elapsed().as_secs(),
        })
        .collect()
}
