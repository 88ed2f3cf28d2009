//! A streamable HTTP MCP server (`url`): not connected yet in this build;
//! the server is reported as failing with a clear error.

use super::config::McpServerConfig;
use super::server::Context;

/// Why an HTTP server cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("streamable HTTP servers (`url`) are not supported by this build of hearthd yet; run the server over stdio (`command`)")]
    Unsupported,
}

/// The SDK transport for `url`.
pub fn transport(
    _config: &McpServerConfig,
    _url: &str,
    _context: &Context,
) -> Result<super::stdio::Pipes, HttpError> {
    Err(HttpError::Unsupported)
}
