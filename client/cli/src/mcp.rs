//! `hearth mcp`: the MCP servers hearthd runs, their state, their tools and
//! their last error.

use hearth_client::{ask_once, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, McpServer, ServerFrame};
use std::io::Write;
use std::process::ExitCode;

/// Prints every server: human lines, or with `json` the frame as sent.
pub async fn mcp(home: &Home, json: bool, out: &mut dyn Write) -> Result<ExitCode, CommandError> {
    let servers = ask_once(
        home,
        None,
        "hearth-mcp",
        &ClientFrame::Mcp,
        |answer| match answer {
            ServerFrame::Mcp { servers } => Some(servers),
            _ => None,
        },
    )
    .await?;
    if json {
        writeln!(out, "{}", ServerFrame::Mcp { servers }.encode())?;
    } else {
        write!(out, "{}", text(&servers))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A server per paragraph: `NAME: STATE (TRANSPORT)`, then its tools, what
/// is skipped and why, and its last error.
pub fn text(servers: &[McpServer]) -> String {
    if servers.is_empty() {
        return "no MCP servers: add [[mcp]] tables to config.toml (see docs/tools.md)\n"
            .to_string();
    }
    let mut text = String::new();
    for server in servers {
        text.push_str(&format!(
            "{}: {} ({}), {} tool(s), {} restart(s)\n",
            server.name,
            server.state,
            server.transport,
            server.tools.len(),
            server.restarts
        ));
        for tool in &server.tools {
            text.push_str(&format!("  {tool}\n"));
        }
        for skipped in &server.skipped {
            text.push_str(&format!("  skipped {skipped}\n"));
        }
        if let Some(error) = &server.last_error {
            text.push_str(&format!("  last error: {error}\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_shows_its_state_tools_and_last_error() {
        let servers = [McpServer {
            name: "fs".into(),
            transport: "stdio: npx".into(),
            state: "restarting".into(),
            tools: vec!["mcp__fs__read_file".into()],
            skipped: vec!["odd: its schema uses `pattern`".into()],
            last_error: Some("it exited with status 1".into()),
            restarts: 2,
        }];
        assert_eq!(
            text(&servers),
            "fs: restarting (stdio: npx), 1 tool(s), 2 restart(s)\n  mcp__fs__read_file\n  \
             skipped odd: its schema uses `pattern`\n  last error: it exited with status 1\n"
        );
        assert!(text(&[]).starts_with("no MCP servers"));
    }
}
