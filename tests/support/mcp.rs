//! What the MCP tests share (`tests/mcp.rs`, `tests/mcp_http.rs`): where
//! the pinned reference servers are, a `hearthd` with `[[mcp]]` tables and
//! a fake model, a turn run to its reply, and `hearth mcp`'s output.

use crate::fake_model::FakeModel;
use crate::harness::{Bins, Client, Daemon, TestHome};
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

/// A running `hearthd`, its fake model and a client attached as `terminal`.
pub struct Running {
    pub model: FakeModel,
    pub home: TestHome,
    pub daemon: Daemon,
    pub client: Client,
}

/// A daemon whose config has `extra` (the `[[mcp]]` tables and more), with
/// these variables in its environment and, unless empty, this secrets.env.
pub async fn start_with(bins: Bins, extra: &str, env: &[(&str, &str)], secrets: &str) -> Running {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins);
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n{extra}\n",
        model.base_url(),
    ));
    if !secrets.is_empty() {
        use std::os::unix::fs::PermissionsExt;
        let file = home.path().join("secrets.env");
        std::fs::write(&file, secrets).expect("secrets.env written");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
            .expect("secrets.env made private");
    }
    let daemon = Daemon::start_with_env(&home, env);
    let client = home.connect("terminal", None).await;
    Running {
        model,
        home,
        daemon,
        client,
    }
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
