//! End-to-end: the daemon's life — stop, restart and reload (by frame, by
//! command, by SIGHUP), the close frame every client gets, a lost socket
//! bound again, the exit status of a bad configuration — and what the agent
//! is doing, live (activity events) and in `status`.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::{SinkExt, StreamExt};
use hearth_protocol::{
    ClientFrame, Doing, Event, EventKind, ServerFrame, CLOSE_GOING_AWAY, CLOSE_RESTARTING,
    CLOSE_STOPPING, PROTOCOL_VERSION,
};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::harness::{eventually, Client, TestHome, DEADLINE};
use tokio_tungstenite::tungstenite::Message as WsMessage;

fn home() -> TestHome {
    TestHome::new(bins!())
}

/// A raw WebSocket client, to see the close frame itself.
async fn raw_client(home: &TestHome) -> tokio_tungstenite::WebSocketStream<tokio::net::UnixStream> {
    let stream = tokio::net::UnixStream::connect(home.socket())
        .await
        .unwrap();
    let (mut socket, _) = tokio_tungstenite::client_async("ws://hearthd/", stream)
        .await
        .unwrap();
    let hello = ClientFrame::Hello {
        client: "raw".into(),
        version: PROTOCOL_VERSION,
        since: None,
        agent: None,
        token: None,
        owner_key: Some(home.owner_key()),
    };
    socket
        .send(WsMessage::Text(hello.encode().into()))
        .await
        .unwrap();
    socket
}

/// Reads until the close frame; returns its code and reason.
async fn close_of(
    socket: &mut tokio_tungstenite::WebSocketStream<tokio::net::UnixStream>,
) -> (u16, String) {
    loop {
        let next = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("a frame in time");
        match next {
            Some(Ok(WsMessage::Close(Some(frame)))) => {
                return (u16::from(frame.code), frame.reason.to_string())
            }
            Some(Ok(_)) => continue,
            other => panic!("the connection ended without a close frame: {other:?}"),
        }
    }
}

fn sighup(pid: u32) {
    let status = std::process::Command::new("kill")
        .arg("-HUP")
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

fn activity(event: &Event) -> Option<&Doing> {
    (event.kind == EventKind::Activity).then(|| &event.activity.as_ref().unwrap().doing)
}

#[tokio::test]
async fn a_stop_closes_every_client_with_a_reason_and_the_daemon_exits_cleanly() {
    let home = home();
    let mut daemon = home.start();
    let mut watching = raw_client(&home).await;
    let mut asking = home.connect("hearth-stop", None).await;
    let pid = match asking.request(ClientFrame::Stop { restart: false }).await {
        ServerFrame::Stopping { pid } => pid,
        other => panic!("expected stopping, got {other:?}"),
    };
    assert_eq!(pid, daemon.pid());
    let (code, reason) = close_of(&mut watching).await;
    assert_eq!((code, reason.as_str()), (CLOSE_GOING_AWAY, CLOSE_STOPPING));
    assert!(daemon.stop(), "exit 0:\n{}", daemon.log_text());
}

#[tokio::test]
async fn hearth_restart_says_restarting_to_clients_and_waits_for_the_new_daemon() {
    let home = home();
    let mut daemon = home.start();
    let mut watching = raw_client(&home).await;
    let output = home.hearth_async(&["restart"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (_, reason) = close_of(&mut watching).await;
    assert_eq!(reason, CLOSE_RESTARTING);
    assert!(daemon.stop(), "the first daemon exited 0");
    // The new daemon answers as soon as `restart` returns.
    let mut client = home.connect("after", None).await;
    let ServerFrame::Status(status) = client.request(ClientFrame::Status).await else {
        panic!("a status")
    };
    assert_ne!(status.pid, daemon.pid());
    assert!(
        stdout.contains(&format!("(pid {})", status.pid)),
        "{stdout}"
    );
    let output = home.hearth_async(&["stop"]).await;
    assert!(output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(&format!("pid {}", status.pid)),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    // `stop` returned once the daemon let go of its lock: nothing answers.
    assert!(tokio::net::UnixStream::connect(home.socket())
        .await
        .is_err());
}

#[tokio::test]
async fn hearth_restart_with_a_broken_config_leaves_the_running_daemon_and_says_why_once() {
    let home = home();
    let daemon = home.start();
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap_or_default();
    home.write_config(&format!("{config}\n[budget\ndaily_usd = 1.0\n"));
    let output = home.hearth_async(&["restart"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("config.toml line"), "{stderr}");
    assert!(stderr.contains("was not restarted"), "{stderr}");
    assert_eq!(
        stderr.matches("config.toml line").count(),
        1,
        "the error is said once: {stderr}"
    );
    // The daemon that ran still runs, the same process.
    let mut client = home.connect("after", None).await;
    let ServerFrame::Status(status) = client.request(ClientFrame::Status).await else {
        panic!("a status")
    };
    assert_eq!(status.pid, daemon.pid());
}

#[tokio::test]
async fn reload_applies_a_changed_budget_and_refuses_a_broken_file_keeping_the_old_one() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::text("first answer"));
    let (first, _) = client.submit("one", "terminal", None).await;
    client.reply_to(first).await;

    // A file that does not parse: refused with its line; nothing changes.
    home.write_config(&format!("{config}\n[budget\ndaily_usd = 0.0\n"));
    let output = home.hearth_async(&["reload"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("config.toml line"), "{stderr}");
    assert!(
        stderr.contains("keeps the configuration it runs"),
        "{stderr}"
    );
    model.push(Reply::text("second answer"));
    let (second, _) = client.submit("two", "terminal", None).await;
    client.reply_to(second).await;

    // A budget of nothing applies to the next turn at once.
    home.write_config(&format!("{config}\n[budget]\ndaily_usd = 0.0\n"));
    let output = home.hearth_async(&["reload"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("budget"), "{stdout}");
    let requests = model.request_count();
    let (third, _) = client.submit("three", "terminal", None).await;
    let error = client
        .wait_for(|e| e.kind == EventKind::Error && e.answers.contains(&third))
        .await;
    assert!(
        error
            .text
            .as_deref()
            .unwrap_or_default()
            .contains("daily budget"),
        "{error:?}"
    );
    assert_eq!(model.request_count(), requests, "no request was sent");
}

#[tokio::test]
async fn reload_reads_a_key_fixed_in_secrets_env_with_the_config_unchanged() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    // The key comes from secrets.env, under a name the harness does not set.
    home.write_config(&config.replace("HEARTH_TEST_KEY", "HEARTH_RELOADED_KEY"));
    let secrets = home.path().join("secrets.env");
    let write_secrets = |key: &str| {
        std::fs::write(&secrets, format!("HEARTH_RELOADED_KEY={key}\n")).unwrap();
        std::fs::set_permissions(
            &secrets,
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
    };
    write_secrets("sk-the-mistyped-key-0001");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let bearer =
        |model: &FakeModel| model.requests().pop().unwrap().headers["authorization"].clone();

    model.push(Reply::text("first"));
    let (first, _) = client.submit("one", "terminal", None).await;
    client.reply_to(first).await;
    assert_eq!(bearer(&model), "Bearer sk-the-mistyped-key-0001");

    // The key fixed in secrets.env, config.toml untouched: reload takes it.
    write_secrets("sk-the-right-key-0002");
    let output = home.hearth_async(&["reload"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("the model's key"), "{stdout}");
    model.push(Reply::text("second"));
    let (second, _) = client.submit("two", "terminal", None).await;
    client.reply_to(second).await;
    assert_eq!(bearer(&model), "Bearer sk-the-right-key-0002");

    // Nothing changed since: nothing is applied.
    let output = home.hearth_async(&["reload"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("nothing changed"), "{stdout}");
}

#[tokio::test]
async fn reload_refuses_a_model_whose_window_the_layout_does_not_fit_as_start_does() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    // Another model whose 32k window the default layout does not fit.
    let small = config
        .replace("model = \"fake-model\"", "model = \"local-8b\"")
        .replace("[model]\n", "[model]\ncontext_window = 32768\n");
    home.write_config(&small);
    let output = home.hearth_async(&["reload"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    for said in [
        "layout `default`",
        "32768-token window",
        "layout = \"small\"",
        "keeps the configuration it runs",
    ] {
        assert!(stderr.contains(said), "{said:?} in: {stderr}");
    }
    // The old model still answers.
    model.push(Reply::text("still the old model"));
    let (id, _) = client.submit("hi", "terminal", None).await;
    client.reply_to(id).await;
    let sent = model.requests().pop().unwrap();
    assert_eq!(sent.body["model"], "fake-model");

    // SIGHUP refuses it the same way, and says so in the log: once more
    // than the reload above did, so the next step waits for the signal's.
    let refusals = |log: &str| log.matches("32768-token window").count();
    let before = refusals(&daemon.log_text());
    sighup(daemon.pid());
    eventually("the signal's refusal in the log", || {
        let log = daemon.log_text();
        async move { (refusals(&log) > before).then_some(()) }
    })
    .await;

    // A window the layout fits applies.
    let large = small.replace("context_window = 32768", "context_window = 400000");
    home.write_config(&large);
    let output = home.hearth_async(&["reload"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("model"), "{stdout}");
    model.push(Reply::text("the new model"));
    let (id, _) = client.submit("again", "terminal", None).await;
    client.reply_to(id).await;
    let sent = model.requests().pop().unwrap();
    assert_eq!(sent.body["model"], "local-8b");
}

#[tokio::test]
async fn sighup_reads_the_configuration_again_and_says_what_applied() {
    let home = home();
    home.write_config("");
    let daemon = home.start();
    home.write_config("[limits]\nmax_rounds = 3\n\n[listen]\ntoken_env = \"OTHER\"\n");
    sighup(daemon.pid());
    let log = eventually("the reload in the log", || {
        let log = daemon.log_text();
        async move { log.contains("reloaded").then_some(log) }
    })
    .await;
    assert!(
        log.contains("applied limits; waiting for a restart: listen"),
        "{log}"
    );
}

#[tokio::test]
async fn a_deleted_socket_is_bound_again_with_a_note() {
    let home = home();
    let daemon = home.start();
    std::fs::remove_file(home.socket()).unwrap();
    // The check runs every few seconds; SIGHUP runs it now.
    sighup(daemon.pid());
    let home_ref = &home;
    eventually("the socket back", || async move {
        tokio::net::UnixStream::connect(home_ref.socket())
            .await
            .ok()
    })
    .await;
    home.connect("terminal", None).await;
    assert!(daemon.log_text().contains("was removed or replaced"));
}

#[tokio::test]
async fn a_configuration_that_does_not_parse_exits_78_with_its_line() {
    let home = home();
    home.write_config("[model]\nprovider = \"openai\"\nmodel = 7\n");
    let output = home.run_daemon_to_end();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(stderr.contains("config.toml line 3"), "{stderr}");
}

#[tokio::test]
async fn a_second_daemon_names_the_pid_of_the_one_that_runs() {
    let home = home();
    let daemon = home.start();
    let output = home.run_daemon_to_end();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("another hearthd (pid {})", daemon.pid())),
        "{stderr}"
    );
}

#[tokio::test]
async fn activity_shows_a_slow_turn_and_a_shell_call_and_attaching_mid_turn_gets_it() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    // Idle on attach.
    let first = client.wait_for(|e| e.kind == EventKind::Activity).await;
    assert_eq!(activity(&first), Some(&Doing::Idle));

    let gate = Gate::new();
    model.push(Reply::tool_call(
        "shell",
        r#"{"command": "echo omega-line"}"#,
    ));
    model.push(Reply::gated(Reply::text("all done"), &gate));
    let (id, _) = client.submit("run it", "terminal", None).await;

    let tool = next_activity(&mut client, |doing| matches!(doing, Doing::Tool { .. })).await;
    let Doing::Tool { name, detail, .. } = tool else {
        unreachable!()
    };
    assert_eq!(name, "shell");
    assert_eq!(detail.as_deref(), Some("echo omega-line"));
    next_activity(
        &mut client,
        |doing| matches!(doing, Doing::Tool { line: Some(line), .. } if line == "omega-line"),
    )
    .await;
    // The tool is done and the next request waits at the gate: thinking.
    next_activity(&mut client, |doing| *doing == Doing::Thinking).await;

    // A client that attaches now is told at once.
    let mut late = home.connect("late", None).await;
    let now = late.wait_for(|e| e.kind == EventKind::Activity).await;
    assert_eq!(activity(&now), Some(&Doing::Thinking));
    let ServerFrame::Status(status) = late.request(ClientFrame::Status).await else {
        panic!("a status")
    };
    assert_eq!(status.activity.map(|a| a.doing), Some(Doing::Thinking));

    let mark = client.events.len();
    gate.open();
    client.reply_to(id).await;
    // The reply and the agent's going idle may arrive in either order.
    let idle_already = client.events[mark..]
        .iter()
        .any(|e| activity(e) == Some(&Doing::Idle));
    if !idle_already {
        next_activity(&mut client, |doing| *doing == Doing::Idle).await;
    }
}

/// Reads new frames until an activity event whose state matches.
async fn next_activity(client: &mut Client, wanted: impl Fn(&Doing) -> bool) -> Doing {
    loop {
        if let ServerFrame::Event(event) = client.frame().await {
            client.events.push(event.clone());
            if let Some(doing) = activity(&event).filter(|doing| wanted(doing)) {
                return doing.clone();
            }
        }
    }
}

#[tokio::test]
async fn status_shows_memory_database_and_model_and_does_not_count_itself() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    let mut other = home.connect("terminal", None).await;
    model.push(Reply::text("hello"));
    let (id, _) = other.submit("hi", "terminal", None).await;
    other.reply_to(id).await;

    let mut asking: Client = home.connect("hearth-status", None).await;
    let ServerFrame::Status(status) = asking.request(ClientFrame::Status).await else {
        panic!("a status")
    };
    assert_eq!(status.clients, 1, "the terminal, not the one asking");
    assert_eq!(status.model.as_deref(), Some("openai-chat/fake-model"));
    assert!(status.database_bytes.unwrap_or(0) > 0);
    let memory = status.memory.expect("memory");
    assert!(memory.high_budget > 0);
    assert_eq!(memory.pending, 0);

    let output = home.hearth_async(&["status"]).await;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    for field in ["doing    idle", "memory   ", "database ", "clients  2"] {
        assert!(text.contains(field), "{field:?} in:\n{text}");
    }
}
