//! An MCP server's tool as a [`Tool`]. The servers' lists change while
//! hearth runs, so a call's tool is found by name when the call comes, and
//! what its server allows is read when it runs.

use super::tool::{Acts, Call, Tool};
use super::Outcome;
use crate::images::ImageStore;
use crate::model::ToolSpec;
use crate::tools::mcp::McpTools;
use futures_util::future::BoxFuture;

/// One tool an MCP server offers an agent.
pub struct McpTool {
    /// As the server offered it when the call came.
    spec: ToolSpec,
    /// The agent's servers, which run the call.
    mcp: McpTools,
    /// Where images in its result are stored; none: the result names them.
    images: Option<ImageStore>,
}

impl McpTool {
    /// The tool `spec` names, offered by one of `mcp`'s servers.
    pub fn new(spec: ToolSpec, mcp: McpTools, images: Option<ImageStore>) -> McpTool {
        McpTool { spec, mcp, images }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    /// Acting unless its server lets it run unasked (`trust = "read"`, or
    /// the server marks it read-only); a tool no server offers any more
    /// acts.
    fn acts(&self) -> Acts {
        let name = &self.spec.name;
        if self.mcp.handles(name) && !self.mcp.needs_approval(name) {
            Acts::Never
        } else {
            Acts::Always
        }
    }

    fn asks_always(&self) -> bool {
        self.mcp.needs_approval(&self.spec.name)
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(
            self.mcp
                .call(&self.spec.name, call.arguments, self.images.as_ref()),
        )
    }
}
