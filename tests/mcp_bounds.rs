//! End-to-end: MCP servers that try to hold up or flood the daemon. One
//! that never answers and one that lists thousands of tools do not hold
//! the socket (tests/mcp/unruly.js); one that floods its stderr leaves the
//! daemon's log small (tests/mcp/misbehaving.js behind a flood). The
//! servers' ordinary life is in `tests/mcp.rs`.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_tests::bins;
use hearth_tests::fake_model::Reply;
use hearth_tests::harness::eventually;
use hearth_tests::mcp::{mcp_status, servers, start_with, turn, Running};

/// A daemon whose config has `extra` (the `[[mcp]]` tables and more).
async fn start(extra: &str) -> Running {
    start_with(bins!(), extra, &[], "").await
}

/// `tests/mcp/unruly.js` with these arguments, as the server `name`.
fn unruly(name: &str, args: &str) -> String {
    format!(
        "[[mcp]]\nname = \"{name}\"\ncommand = \"node\"\nargs = [\"{}\", {args}]\ntimeout_secs = 3600\n",
        servers().join("unruly.js").display()
    )
}

#[tokio::test]
async fn a_silent_server_and_one_with_thousands_of_tools_do_not_hold_the_socket() {
    // One never answers `initialize` (and may take an hour to be given
    // up); the other lists 5,000 tools. The daemon listens at once (the
    // harness waits for that), answers, and says what happened to each.
    let config = format!(
        "{}{}",
        unruly("silent", "\"silent\""),
        unruly("crowded", "\"crowded\", \"5000\"")
    );
    let t = start(&config).await;
    let status = eventually("status names both servers", || async {
        let output = t.home.hearth_async(&["status"]).await;
        assert!(output.status.success());
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.contains("mcp      crowded ready").then_some(text)
    })
    .await;
    assert!(
        status.contains("mcp      silent starting: 0 tool(s) offered"),
        "{status}"
    );
    assert!(
        status.contains(
            "crowded ready: 0 tool(s) offered; skipped all 5000 tools: the server lists 5000 tools"
        ),
        "{status}"
    );
    assert!(status.contains("`tools = [...]`"), "{status}");
    let mcp = mcp_status(&t.home).await;
    assert!(mcp.contains("skipped all 5000 tools"), "{mcp}");
}

#[tokio::test]
async fn a_server_that_floods_stderr_leaves_the_daemons_log_small() {
    // 300,000 lines and one line of 20 MB on stderr, then a file says the
    // flood is written (the daemon has read all of it but what a pipe
    // holds), then the misbehaving server serves as usual.
    let flood = "yes a-flood-of-words-on-stderr | head -n 300000 >&2; \
        head -c 20000000 /dev/zero | tr -c x x >&2; echo >&2; touch flooded; exec node ";
    let config = format!(
        "[[mcp]]\nname = \"loud\"\ncommand = \"bash\"\nargs = [\"-c\", \"{flood}{}\"]\n\
         trust = \"read\"\ntimeout_secs = 600\n",
        servers().join("misbehaving.js").display()
    );
    let mut t = start(&config).await;
    let flooded = t.home.path().join("flooded");
    eventually("the flood is written", || async {
        flooded.exists().then_some(())
    })
    .await;
    t.model.push(Reply::tool_call(
        "mcp__loud__echo",
        r#"{"text": "still here"}"#,
    ));
    t.model.push(Reply::text("it answered"));
    let tools = turn(&mut t, "echo").await;
    assert!(
        tools[0]
            .text
            .as_deref()
            .unwrap()
            .contains("echo: still here"),
        "{tools:?}"
    );
    let log = eventually("the dropped lines are noted", || async {
        let log = t.daemon.log_text();
        log.contains("line(s) not logged").then_some(log)
    })
    .await;
    assert!(
        log.len() < 1_000_000,
        "the daemon's log holds {} bytes",
        log.len()
    );
    let status = t.home.hearth_async(&["status"]).await;
    assert!(status.status.success());
    assert!(t.daemon.is_running());
}
