//! End-to-end: tools of MCP servers in a real `hearthd`, called by a fake
//! model. The servers are the reference servers nobody here wrote
//! (`@modelcontextprotocol/server-everything` and `server-filesystem`,
//! pinned in tests/mcp/package-lock.json; `.ci/run` installs them), and a
//! small misbehaving server written for these tests (tests/mcp/misbehaving.js).
//! Servers at streamable HTTP addresses are in `tests/mcp_http.rs`.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{EventKind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_model::{results_sent, FakeModel, Recorded, Reply};
use hearth_tests::harness::{eventually, small_layout};
use hearth_tests::mcp::{everything, mcp_status, servers, start_with, turn, Running};
use std::path::PathBuf;

fn filesystem(folder: &std::path::Path) -> String {
    format!(
        "[[mcp]]\nname = \"fs\"\ncommand = \"{}\"\nargs = [\"{}\"]\n",
        servers()
            .join("node_modules/.bin/mcp-server-filesystem")
            .display(),
        folder.display()
    )
}

fn misbehaving(extra: &str) -> String {
    format!(
        "[[mcp]]\nname = \"bad\"\ncommand = \"node\"\nargs = [\"{}\"{extra}]\ntimeout_secs = 2\n",
        servers().join("misbehaving.js").display()
    )
}

/// The misbehaving server as `name`, trusted to only read (so no call
/// waits for approval).
fn misbehaving_as(name: &str) -> String {
    format!(
        "[[mcp]]\nname = \"{name}\"\ncommand = \"node\"\nargs = [\"{}\"]\ntrust = \"read\"\ntimeout_secs = 5\n",
        servers().join("misbehaving.js").display()
    )
}

/// A daemon whose config has `extra` (the `[[mcp]]` tables and more).
async fn start(extra: &str) -> Running {
    start_with(bins!(), extra, &[], "").await
}

/// The names of the tools in request `index`.
fn tool_names(model: &FakeModel, index: usize) -> Vec<String> {
    offered(&model.requests()[index])
}

/// The names of the tools a request offers.
fn offered(request: &Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_echo_goes_through_the_everything_server_and_back() {
    let mut t = start(&everything()).await;
    t.model.push(Reply::tool_call(
        "mcp__ev__echo",
        r#"{"message": "hello there"}"#,
    ));
    t.model.push(Reply::text("it echoed"));
    let tools = turn(&mut t, "echo something").await;
    assert_eq!(tools.len(), 1);
    let text = tools[0].text.clone().unwrap();
    assert_eq!(tools[0].status.as_deref(), Some("ok"), "{text}");
    assert!(text.contains("Echo: hello there"), "{text}");
    let names = tool_names(&t.model, 0);
    let mcp: Vec<&String> = names.iter().filter(|n| n.starts_with("mcp__")).collect();
    let mut sorted = mcp.clone();
    sorted.sort();
    assert_eq!(mcp, sorted, "MCP tools are sorted");
    assert!(names.contains(&"mcp__ev__echo".to_string()));
    let sent = results_sent(&t.model, 1);
    assert_eq!(sent.len(), 1);
    assert!(sent[0].starts_with("[MCP server `ev`]\n"), "{}", sent[0]);
    // A call the server's schema refuses never reaches it.
    t.model
        .push(Reply::tool_call("mcp__ev__echo", r#"{"message": 5}"#));
    t.model.push(Reply::text("fixed"));
    let tools = turn(&mut t, "again").await;
    assert_eq!(tools[0].status.as_deref(), Some("error"));
    assert!(tools[0]
        .text
        .as_deref()
        .unwrap()
        .contains("property `message` must be a string"));
    assert!(t.daemon.is_running());
}

#[tokio::test]
async fn a_server_sees_none_of_hearthds_secrets_but_its_own_env() {
    let config = everything().replace(
        "args = [\"stdio\"]",
        "args = [\"stdio\"]\nenv = { GIVEN = \"${MCP_GIVEN}\" }",
    );
    let env = [
        ("OPENAI_API_KEY", "sk-openai-secret"),
        ("MCP_GIVEN", "given-value"),
    ];
    let mut t = start_with(bins!(), &config, &env, "").await;
    t.model.push(Reply::tool_call("mcp__ev__get-env", "{}"));
    t.model.push(Reply::text("seen"));
    let tools = turn(&mut t, "what is your environment?").await;
    let text = tools[0].text.clone().unwrap();
    assert_eq!(tools[0].status.as_deref(), Some("ok"), "{text}");
    assert!(text.contains("\"PATH\""), "{text}");
    assert!(text.contains("given-value"), "{text}");
    for secret in [
        "sk-openai-secret",
        "sk-test-secret",
        "OPENAI_API_KEY",
        "HEARTH_TEST_KEY",
    ] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
}

#[tokio::test]
async fn an_image_result_is_stored_and_shown_to_the_model() {
    let mut t = start(&everything()).await;
    t.model
        .push(Reply::tool_call("mcp__ev__get-tiny-image", "{}"));
    t.model.push(Reply::text("a tiny image"));
    let tools = turn(&mut t, "show me an image").await;
    let text = tools[0].text.clone().unwrap();
    assert_eq!(tools[0].status.as_deref(), Some("ok"), "{text}");
    assert!(text.contains("[image "), "{text}");
    let images = std::fs::read_dir(t.home.path().join("images"))
        .map(|dir| dir.count())
        .unwrap_or(0);
    assert!(images >= 1, "the image is in the image store");
    let messages = t.model.requests()[1].body["messages"].to_string();
    assert!(
        messages.contains("data:image/png;base64,"),
        "the image goes back to the model"
    );
}

#[tokio::test]
async fn the_filesystem_server_lists_its_folder_and_refuses_outside_it() {
    let outside = tempfile::tempdir().unwrap();
    let allowed = tempfile::tempdir().unwrap();
    std::fs::write(allowed.path().join("notes.txt"), "hi").unwrap();
    let mut t = start(&filesystem(allowed.path())).await;
    let inside = format!(r#"{{"path": "{}"}}"#, allowed.path().display());
    let beyond = format!(r#"{{"path": "{}"}}"#, outside.path().display());
    t.model
        .push(Reply::tool_call("mcp__fs__list_directory", inside));
    t.model
        .push(Reply::tool_call("mcp__fs__list_directory", beyond));
    t.model.push(Reply::text("listed"));
    let tools = turn(&mut t, "list the folder").await;
    assert_eq!(tools.len(), 2);
    let listed = tools[0].text.clone().unwrap();
    assert_eq!(tools[0].status.as_deref(), Some("ok"), "{listed}");
    assert!(listed.contains("[FILE] notes.txt"), "{listed}");
    let refused = tools[1].text.clone().unwrap();
    assert_eq!(tools[1].status.as_deref(), Some("error"), "{refused}");
    assert!(refused.contains("outside allowed directories"), "{refused}");
}

#[tokio::test]
async fn a_write_through_the_filesystem_server_waits_for_approval() {
    let allowed = tempfile::tempdir().unwrap();
    let mut t = start(&filesystem(allowed.path())).await;
    let mut approver = t.home.connect("approver", None).await;
    let target = allowed.path().join("new.txt");
    let arguments = format!(
        r#"{{"path": "{}", "content": "written"}}"#,
        target.display()
    );
    t.model
        .push(Reply::tool_call("mcp__fs__write_file", arguments));
    t.model.push(Reply::text("wrote it"));
    let (id, _) = t.client.submit("write a file", "terminal", None).await;
    let asked = approver.approval_asked().await;
    let approval = asked.approval.unwrap();
    assert_eq!(approval.tool, "mcp__fs__write_file");
    assert!(!target.exists(), "nothing is written before the yes");
    let answer = approver.approve(&approval.id, true).await;
    assert!(!matches!(answer, ServerFrame::Error { .. }), "{answer:?}");
    t.client.reply_to(id).await;
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written");
}

#[tokio::test]
async fn approvals_patterns_name_mcp_tools_even_of_a_trusted_server() {
    let config = format!(
        "{}[approvals]\ntools = [\"mcp__one__ec*\"]\n",
        misbehaving_as("one")
    );
    let mut t = start(&config).await;
    let mut approver = t.home.connect("approver", None).await;
    t.model
        .push(Reply::tool_call("mcp__one__echo", r#"{"text": "asked"}"#));
    t.model.push(Reply::text("denied"));
    let (id, _) = t.client.submit("echo", "terminal", None).await;
    let asked = approver
        .wait_for(|e| e.kind == EventKind::Approval)
        .await
        .approval
        .unwrap();
    assert_eq!(asked.tool, "mcp__one__echo");
    let answer = approver.approve(&asked.id, false).await;
    assert!(!matches!(answer, ServerFrame::Error { .. }), "{answer:?}");
    t.client.reply_to(id).await;
    let tool = t
        .client
        .events
        .iter()
        .find(|e| e.kind == EventKind::Tool && e.id.is_some_and(|at| at > id))
        .cloned()
        .unwrap();
    assert_eq!(tool.status.as_deref(), Some("error"), "{tool:?}");
    assert!(!tool.text.unwrap_or_default().contains("echo: asked"));
}

#[tokio::test]
async fn a_crash_mid_call_costs_one_error_and_the_server_comes_back() {
    let starts = tempfile::NamedTempFile::new().unwrap();
    let log = format!(", \"--log\", \"{}\"", starts.path().display());
    let mut t = start(&format!(
        "{}[approvals]\ntools = []\n",
        misbehaving(&log).replace("timeout_secs = 2", "trust = \"read\"\ntimeout_secs = 2")
    ))
    .await;
    t.model.push(Reply::tool_call("mcp__bad__crash", "{}"));
    t.model.push(Reply::text("it crashed"));
    let tools = turn(&mut t, "crash it").await;
    let text = tools[0].text.clone().unwrap();
    assert_eq!(tools[0].status.as_deref(), Some("error"));
    assert!(
        text.contains("the MCP server `bad` stopped during the call"),
        "{text}"
    );
    assert!(text.contains("exited with status 3"), "{text}");
    assert!(text.contains("crashing on purpose"), "{text}");
    eventually("the server restarted", || async {
        (std::fs::read_to_string(starts.path())
            .unwrap()
            .lines()
            .count()
            >= 2)
            .then_some(())
    })
    .await;
    // Once it is back, its tools work again; `hearth mcp` says what
    // happened last.
    let status = eventually("the server is ready", || async {
        let status = mcp_status(&t.home).await;
        status.contains("bad: ready").then_some(status)
    })
    .await;
    assert!(status.contains("1 restart(s)"), "{status}");
    assert!(
        status.contains("last error: it exited with status 3"),
        "{status}"
    );
    t.model
        .push(Reply::tool_call("mcp__bad__echo", r#"{"text": "back"}"#));
    t.model.push(Reply::text("back"));
    let tools = turn(&mut t, "echo").await;
    assert!(tools[0].text.as_deref().unwrap().contains("echo: back"));
    // The server stops with hearthd.
    let server = last_started(starts.path());
    assert!(alive(server));
    assert!(t.daemon.stop());
    eventually("the server ended with hearthd", || async {
        (!alive(server)).then_some(())
    })
    .await;
}

/// The pid of the misbehaving server's last start, from its `--log`.
fn last_started(log: &std::path::Path) -> u32 {
    let text = std::fs::read_to_string(log).unwrap();
    let line = text.lines().last().expect("a start logged");
    line.trim_start_matches("started ").parse().unwrap()
}

/// Whether process `pid` runs (a zombie no longer does).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

#[tokio::test]
async fn a_hung_call_times_out_and_a_line_that_is_not_json_is_a_fault() {
    let mut t =
        start(&misbehaving("").replace("timeout_secs = 2", "trust = \"read\"\ntimeout_secs = 2"))
            .await;
    t.model.push(Reply::tool_call("mcp__bad__hang", "{}"));
    t.model.push(Reply::text("it hung"));
    let tools = turn(&mut t, "hang").await;
    let text = tools[0].text.clone().unwrap();
    assert_eq!(tools[0].status.as_deref(), Some("error"));
    assert!(text.contains("did not answer within 2 s"), "{text}");
    // The server was told the call is cancelled before it was restarted:
    // its stderr goes to hearthd.log.
    eventually("the server hears the cancellation", || async {
        t.daemon
            .log_text()
            .contains("cancelled request")
            .then_some(())
    })
    .await;
    eventually("the server is started again after it heard it", || async {
        let log = t.daemon.log_text();
        let cancelled = log.find("cancelled request")?;
        log[cancelled..]
            .contains("misbehaving server ready")
            .then_some(())
    })
    .await;
    eventually("the server is ready", || async {
        mcp_status(&t.home)
            .await
            .contains("bad: ready")
            .then_some(())
    })
    .await;
    t.model.push(Reply::tool_call("mcp__bad__garbage", "{}"));
    t.model.push(Reply::text("garbage"));
    let tools = turn(&mut t, "garbage").await;
    let text = tools[0].text.clone().unwrap();
    assert_eq!(tools[0].status.as_deref(), Some("error"));
    assert!(
        text.contains("a line that is not JSON: `this is not json`"),
        "{text}"
    );
    assert!(t.daemon.is_running());
}

#[tokio::test]
async fn a_changed_tool_list_changes_the_next_requests_with_a_note() {
    // The compactor is its own model, so its requests answer themselves
    // (the default reply) and the turns' replies are queued for the turns.
    let layout = tempfile::NamedTempFile::new().unwrap();
    // A small line budget: a long message is summarized by a compaction
    // request before the turn that takes it.
    std::fs::write(layout.path(), small_layout(80, 4000, 2000)).unwrap();
    let mut t = start(&format!(
        "[memory]\nmodel = \"summary-model\"\n[agent]\nlayout = \"{}\"\n\n{}",
        layout.path().display(),
        misbehaving("").replace("timeout_secs = 2", "trust = \"read\"\ntimeout_secs = 2")
    ))
    .await;
    t.model.set_default(Reply::text("a summary"));
    let turn_requests = |model: &FakeModel| -> Vec<Recorded> {
        let turns = model.requests().into_iter();
        turns.filter(|r| r.body["model"] == "fake-model").collect()
    };
    t.model
        .push_for("fake-model", Reply::tool_call("mcp__bad__grow", "{}"));
    t.model.push_for("fake-model", Reply::text("grown"));
    turn(&mut t, "grow").await;
    let before = turn_requests(&t.model);
    assert!(!offered(&before[1]).contains(&"mcp__bad__extra".to_string()));
    eventually("the new list is known", || async {
        mcp_status(&t.home)
            .await
            .contains("mcp__bad__extra")
            .then_some(())
    })
    .await;
    let seen = t.model.request_count();
    // A long message: the compactor summarizes it before the turn takes it.
    let long = "please keep this long story about the garden and its pond ".repeat(3);
    t.model.push_for("fake-model", Reply::text("ok"));
    turn(&mut t, &long).await;
    let after = t.model.requests_from(seen);
    let next_turn = after
        .iter()
        .find(|r| r.body["model"] == "fake-model")
        .expect("the next turn's request");
    assert!(offered(next_turn).contains(&"mcp__bad__extra".to_string()));
    let compactions: Vec<&Recorded> = after
        .iter()
        .filter(|r| r.body["model"] == "summary-model")
        .collect();
    assert!(
        compactions
            .iter()
            .any(|r| r.body["messages"].to_string().contains("its pond")),
        "the long message was summarized: {} request(s)",
        compactions.len()
    );
    // A memory model of its own shares no cached prefix with the turns:
    // its requests carry no tools, the old list or the new.
    for compaction in &compactions {
        assert!(
            compaction.body.get("tools").is_none(),
            "{}",
            compaction.body
        );
    }
    let notes = notes(&t.home).await;
    assert!(
        notes
            .iter()
            .any(|n| n.contains("`bad` now offers 6 tool(s)")
                && n.contains("tools/list_changed")
                && n.contains("cached prefix starts over")),
        "{notes:?}"
    );
}

#[tokio::test]
async fn a_subagent_is_offered_only_the_servers_its_config_names() {
    // `one` leaves out a tool, `two` offers only two of its tools.
    // The owner vouches for both servers' descriptions, so the top agent's
    // turn is not tainted by them and `subagent_start` does not ask.
    let config = format!(
        "{}exclude = [\"crash\"]\ntrust_descriptions = true\n{}tools = [\"echo\", \"grow\"]\n\
         trust_descriptions = true\n[[agents]]\nname = \"scout\"\n\
         responsibility = \"looks things up\"\nmodel = \"scout-model\"\nmcp = [\"one\"]\n",
        misbehaving_as("one"),
        misbehaving_as("two")
    );
    let mut t = start(&config).await;
    let start_scout = serde_json::json!({"name": "scout", "task": "echo through both"});
    t.model.push_for(
        "fake-model",
        Reply::tool_call("subagent_start", start_scout.to_string()),
    );
    t.model.push_for("fake-model", Reply::text("asked scout"));
    t.model.push_for(
        "scout-model",
        Reply::ToolCalls {
            text: None,
            calls: vec![
                ("mcp__two__echo".into(), r#"{"text": "via two"}"#.into()),
                ("mcp__one__echo".into(), r#"{"text": "via one"}"#.into()),
            ],
        },
    );
    t.model.push_for("scout-model", Reply::text("one answered"));
    t.model
        .push_for("fake-model", Reply::text("scout reported"));
    turn(&mut t, "ask scout").await;
    let report = t.client.wait_for(|e| e.kind == EventKind::Work).await;
    assert_eq!(report.status.as_deref(), Some("finished"), "{report:?}");
    t.client.reply_to(report.id.unwrap()).await;

    let requests = t.model.requests();
    let of = |model: &str| -> Vec<&Recorded> {
        requests
            .iter()
            .filter(|r| r.body["model"] == model)
            .collect()
    };
    let mcp = |request: &Recorded| -> Vec<String> {
        let names = offered(request).into_iter();
        names.filter(|name| name.starts_with("mcp__")).collect()
    };
    // The top agent gets every server, as its tables choose; the subagent
    // only `one`.
    let parent = mcp(of("fake-model")[0]);
    assert!(parent.contains(&"mcp__one__echo".to_string()), "{parent:?}");
    assert!(
        !parent.contains(&"mcp__one__crash".to_string()),
        "{parent:?}"
    );
    let two: Vec<&String> = parent
        .iter()
        .filter(|n| n.starts_with("mcp__two__"))
        .collect();
    assert_eq!(two, ["mcp__two__echo", "mcp__two__grow"], "{parent:?}");
    let scout = of("scout-model");
    for request in &scout {
        let names = mcp(request);
        assert!(names.contains(&"mcp__one__echo".to_string()), "{names:?}");
        assert!(
            names.iter().all(|n| n.starts_with("mcp__one__")),
            "{names:?}"
        );
    }
    // A call of the other server's tool is refused before any server sees
    // it; the named server's works.
    let results = scout[1].tool_results();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results[0].contains("there is no tool `mcp__two__echo`"),
        "{}",
        results[0]
    );
    assert!(
        !results[0]
            .split_once("the tools are:")
            .is_some_and(|(_, tools)| tools.contains("mcp__two__")),
        "{}",
        results[0]
    );
    assert!(results[1].contains("echo: via one"), "{}", results[1]);
}

#[tokio::test]
async fn the_tools_part_of_the_request_is_the_same_bytes_at_every_start() {
    let allowed = tempfile::tempdir().unwrap();
    let config = format!("{}{}", everything(), filesystem(allowed.path()));
    let mut first = start(&config).await;
    first.model.push(Reply::text("one"));
    turn(&mut first, "hi").await;
    let tools_once = first.model.requests()[0].body["tools"].to_string();
    first.daemon.stop();
    let mut again = first.home.start();
    let mut client = first.home.connect("terminal", None).await;
    first.model.push(Reply::text("two"));
    let (id, _) = client.submit("hi again", "terminal", None).await;
    client.reply_to(id).await;
    let tools_twice = first.model.requests()[1].body["tools"].to_string();
    assert_eq!(tools_once, tools_twice);
    assert!(tools_once.contains("mcp__fs__list_directory"));
    assert!(tools_once.contains("mcp__ev__echo"));
    again.stop();
}

/// The snapshot of the misbehaving server's tools as a request carries them.
const SNAPSHOT: &str = "tests/mcp/tools.snapshot.json";

#[tokio::test]
async fn the_serialized_tools_of_a_fixed_server_match_the_snapshot() {
    let mut t = start(&misbehaving("")).await;
    t.model.push(Reply::text("hi"));
    turn(&mut t, "hi").await;
    let tools: Vec<serde_json::Value> = t.model.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|tool| {
            tool["function"]["name"]
                .as_str()
                .is_some_and(|name| name.starts_with("mcp__"))
        })
        .cloned()
        .collect();
    // The bytes as sent, one tool a line, so a change reads well in review.
    let lines: Vec<String> = tools.iter().map(|tool| tool.to_string()).collect();
    let text = format!("{}\n", lines.join("\n"));
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(SNAPSHOT);
    if std::env::var_os("HEARTH_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let pinned = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        text, pinned,
        "the MCP tools changed; if that is meant, rerun with HEARTH_UPDATE_SNAPSHOTS=1 and review {SNAPSHOT}"
    );
}

#[tokio::test]
async fn status_names_a_running_call_and_a_crash_of_hearthd_logs_it_as_interrupted() {
    let starts = tempfile::NamedTempFile::new().unwrap();
    let log = format!(", \"--log\", \"{}\"", starts.path().display());
    let config =
        misbehaving(&log).replace("timeout_secs = 2", "trust = \"read\"\ntimeout_secs = 600");
    let mut t = start(&config).await;
    t.model.push(Reply::tool_call("mcp__bad__hang", "{}"));
    t.client.submit("wait forever", "terminal", None).await;
    // Attached clients see the running MCP call as the agent's activity.
    t.client
        .wait_for(|e| {
            e.kind == EventKind::Activity
                && e.activity.as_ref().is_some_and(|a| {
                    matches!(&a.doing, hearth_protocol::Doing::Tool { name, .. } if name == "mcp__bad__hang")
                        && a.describe().starts_with("mcp__bad__hang")
                })
        })
        .await;
    let status = eventually("the call shows in hearth status", || async {
        let output = t.home.hearth_async(&["status"]).await;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.contains("mcp call hearth: bad hang").then_some(text)
    })
    .await;
    assert!(status.contains("mcp call hearth: bad hang ("), "{status}");
    // A SIGKILL of hearthd takes the server with it.
    let server = last_started(starts.path());
    t.daemon.kill9();
    eventually("the server ended with hearthd", || async {
        (!alive(server)).then_some(())
    })
    .await;
    t.model.push(Reply::text("it was cut off"));
    let _again = t.home.start();
    let tool =
        eventually("the cut call is logged", || async {
            t.home.history().await.into_iter().find(|m| {
                m.kind == hearth_protocol::Kind::Tool && m.text.starts_with("mcp__bad__hang")
            })
        })
        .await;
    assert_eq!(tool.status.as_deref(), Some("interrupted"), "{}", tool.text);
}

/// The texts of the notes in the log.
async fn notes(home: &hearth_tests::harness::TestHome) -> Vec<String> {
    home.history()
        .await
        .into_iter()
        .filter(|m| m.kind == hearth_protocol::Kind::Note)
        .map(|m| m.text)
        .collect()
}

/// The misbehaving server as `name`, trusted to only read, each start
/// logged to `starts`.
fn logged_as(name: &str, starts: &std::path::Path, timeout: u64) -> String {
    format!(
        "[[mcp]]\nname = \"{name}\"\ncommand = \"node\"\nargs = [\"{}\", \"--log\", \"{}\"]\n\
         trust = \"read\"\ntimeout_secs = {timeout}\n",
        servers().join("misbehaving.js").display(),
        starts.display()
    )
}

#[tokio::test]
async fn a_reload_starts_new_servers_stops_removed_ones_and_restarts_changed_ones() {
    let (one_log, gone_log, two_log) = (
        tempfile::NamedTempFile::new().unwrap(),
        tempfile::NamedTempFile::new().unwrap(),
        tempfile::NamedTempFile::new().unwrap(),
    );
    let one = logged_as("one", one_log.path(), 5);
    let gone = logged_as("gone", gone_log.path(), 5);
    let mut t = start(&format!("{one}{gone}")).await;
    t.model.push(Reply::text("hello"));
    turn(&mut t, "hello").await;
    let first = tool_names(&t.model, 0);
    assert!(first.contains(&"mcp__gone__echo".to_string()), "{first:?}");
    let (one_pid, gone_pid) = (last_started(one_log.path()), last_started(gone_log.path()));

    // `gone` removed, `one` changed, `two` added.
    let config_file = t.home.path().join("config.toml");
    let config = std::fs::read_to_string(&config_file).unwrap();
    let changed = config
        .replace(&gone, &logged_as("two", two_log.path(), 5))
        .replace(&one, &logged_as("one", one_log.path(), 6));
    t.home.write_config(&changed);
    let output = t.home.hearth_async(&["reload"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("mcp"), "{stdout}");
    eventually("the removed and the changed servers ended", || async {
        (!alive(gone_pid) && !alive(one_pid)).then_some(())
    })
    .await;
    let status = eventually("the new and the changed servers are ready", || async {
        let status = mcp_status(&t.home).await;
        (status.contains("two: ready") && status.contains("one: ready")).then_some(status)
    })
    .await;
    assert!(!status.contains("gone"), "{status}");
    assert_ne!(last_started(one_log.path()), one_pid, "`one` restarted");

    // The next turn is offered the new set, calls the new server, and its
    // note says why the tools changed.
    let seen = t.model.request_count();
    t.model
        .push(Reply::tool_call("mcp__two__echo", r#"{"text": "new"}"#));
    t.model.push(Reply::text("done"));
    let tools = turn(&mut t, "echo").await;
    assert!(
        tools[0].text.as_deref().unwrap().contains("echo: new"),
        "{tools:?}"
    );
    let offered_now = tool_names(&t.model, seen);
    assert!(
        offered_now.contains(&"mcp__two__echo".to_string()),
        "{offered_now:?}"
    );
    assert!(
        offered_now.contains(&"mcp__one__echo".to_string()),
        "{offered_now:?}"
    );
    assert!(!offered_now
        .iter()
        .any(|name| name.starts_with("mcp__gone__")));
    let notes = notes(&t.home).await;
    let said = |words: &str| notes.iter().any(|n| n.contains(words));
    assert!(
        said("`gone` was removed from the configuration"),
        "{notes:?}"
    );
    assert!(said("`two` now offers 5 tool(s)"), "{notes:?}");

    // A table that is wrong is refused whole: the servers run on.
    t.home.write_config(&format!(
        "{changed}[[mcp]]\nname = \"bad__name\"\ncommand = \"node\"\n"
    ));
    let output = t.home.hearth_async(&["reload"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("bad__name") && stderr.contains("keeps the configuration"),
        "{stderr}"
    );
    assert!(alive(last_started(two_log.path())));
    assert!(t.daemon.is_running());
}
