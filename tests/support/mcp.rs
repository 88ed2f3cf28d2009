//! What the MCP tests share (`tests/mcp.rs`, `tests/mcp_http.rs`): where
//! the pinned reference servers are, a `hearthd` with `[[mcp]]` tables and
//! a fake model, a turn run to its reply, and `hearth mcp`'s output.

use crate::fake_model::FakeModel;
use crate::harness::{model_table, Bins, Daemon, TestHome};
use hearth_protocol::{Event, EventKind};
use std::path::PathBuf;

/// The folder of the test servers (tests/mcp), with the reference servers
/// installed in it.
pub fn servers() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    assert!(
        dir.join("node_modules/.bin/mcp-server-everything").exists(),
        "the reference MCP servers are not installed: run `npm ci --prefix tests/mcp`"
    );
    dir
}

/// `@modelcontextprotocol/server-everything` over stdio, as `ev`.
pub fn everything() -> String {
    format!(
        "[[mcp]]\nname = \"ev\"\ncommand = \"{}\"\nargs = [\"stdio\"]\n",
        servers()
            .join("node_modules/.bin/mcp-server-everything")
            .display()
    )
}

pub use crate::harness::Running;

/// A daemon whose config has `extra` (the `[[mcp]]` tables and more), with
/// these variables in its environment and, unless empty, this secrets.env.
pub async fn start_with(bins: Bins, extra: &str, env: &[(&str, &str)], secrets: &str) -> Running {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins);
    home.write_config(&format!(
        "{}\n{extra}\n",
        model_table("openai-chat", &model.base_url())
    ));
    if !secrets.is_empty() {
        home.write_secrets(secrets);
    }
    let daemon = Daemon::start_with_env(&home, env);
    Running::attach(model, home, daemon).await
}

/// Submits `text` and waits for its reply; returns the `tool` events of the turn.
pub async fn turn(t: &mut Running, text: &str) -> Vec<Event> {
    let (id, _) = t.client.submit(text, "terminal", None).await;
    t.client.reply_to(id).await;
    t.client
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Tool && e.id.is_some_and(|at| at > id))
        .cloned()
        .collect()
}

/// `hearth mcp`'s output.
pub async fn mcp_status(home: &TestHome) -> String {
    let output = home.hearth_async(&["mcp"]).await;
    String::from_utf8_lossy(&output.stdout).into_owned()
}
