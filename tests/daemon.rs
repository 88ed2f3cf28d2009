//! End-to-end: a real `hearthd` on a temporary home, real clients on its
//! socket, and a fake model server speaking the OpenAI wire formats.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{ClientFrame, ErrorCode, EventKind, Kind, MessageStatus, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{clock_turn, Client, TestHome};

fn home() -> TestHome {
    TestHome::new(bins!())
}

#[tokio::test]
async fn two_clients_see_each_others_messages_and_the_reply() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    let mut terminal = home.connect("terminal", None).await;
    let mut phone = home.connect("phone", None).await;

    model.push(Reply::Text("Hello from the model.".into()));
    let (id, duplicate) = terminal.submit("hi there", "terminal", None).await;
    assert!(!duplicate);
    for client in [&mut terminal, &mut phone] {
        let user = client.wait_for(|e| e.id == Some(id)).await;
        assert_eq!(user.kind, EventKind::User);
        assert_eq!(user.source.as_deref(), Some("terminal"));
        assert_eq!(user.text.as_deref(), Some("hi there"));
        let reply = client.reply_to(id).await;
        assert_eq!(reply.text.as_deref(), Some("Hello from the model."));
        assert_eq!(reply.source.as_deref(), Some("hearth"));
    }
    assert!(terminal.events.iter().any(|e| e.kind == EventKind::Busy));
    terminal.wait_for(|e| e.kind == EventKind::Idle).await;

    model.push(Reply::Text("Second answer.".into()));
    let (second, _) = phone.submit("from my phone", "telegram", None).await;
    for client in [&mut terminal, &mut phone] {
        let user = client.wait_for(|e| e.id == Some(second)).await;
        assert_eq!(user.source.as_deref(), Some("telegram"));
        assert_eq!(
            client.reply_to(second).await.text.as_deref(),
            Some("Second answer.")
        );
    }
    // The second request carries the first exchange in its view.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let body = requests[1].body.to_string();
    assert!(body.contains("hi there"), "{body}");
    assert!(body.contains("Hello from the model."), "{body}");
}

#[tokio::test]
async fn reconnect_with_since_misses_nothing_and_receives_nothing_twice() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();

    let mut first = home.connect("first", None).await;
    model.push(Reply::Text("one".into()));
    let (id, _) = first.submit("message one", "terminal", None).await;
    let reply = first.reply_to(id).await;
    let seen = reply.id.unwrap();
    first.connection.close().await;

    // While the first client is away, another talks to the agent.
    let mut other = home.connect("other", None).await;
    model.push(Reply::Text("two".into()));
    let (missed, _) = other.submit("message two", "terminal", None).await;
    let missed_reply = other.reply_to(missed).await.id.unwrap();

    let mut again = home.connect("first", Some(seen)).await;
    model.push(Reply::Text("three".into()));
    let (live, _) = again.submit("message three", "terminal", None).await;
    let live_reply = again.reply_to(live).await.id.unwrap();
    let ids = again.message_ids();
    let expected: Vec<u64> = (seen + 1..=live_reply).collect();
    assert_eq!(
        ids, expected,
        "every message after {seen}, once each, in order"
    );
    assert!(ids.contains(&missed) && ids.contains(&missed_reply));
}

#[tokio::test]
async fn interrupt_ends_a_slow_streaming_answer() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::Hang {
        text_before: "I am thinking about".into(),
    });
    let (id, _) = client.submit("think hard", "terminal", None).await;
    client.wait_for(|e| e.kind == EventKind::Delta).await;
    match client.request(ClientFrame::Interrupt).await {
        ServerFrame::Interrupted { running } => assert!(running),
        other => panic!("expected interrupted, got {other:?}"),
    }
    client.wait_for(|e| e.kind == EventKind::Idle).await;
    let note = client.wait_for(|e| e.kind == EventKind::Note).await;
    // How the turn ended is the note's status, not its words.
    assert_eq!(
        note.status.as_deref(),
        Some(MessageStatus::Interrupted.as_str())
    );
    assert!(!client
        .events
        .iter()
        .any(|e| e.kind == EventKind::Reply && e.answers.contains(&id)));

    // The agent is free again: the next message gets an answer.
    model.push(Reply::Text("ready again".into()));
    let (next, _) = client.submit("are you there?", "terminal", None).await;
    assert_eq!(
        client.reply_to(next).await.text.as_deref(),
        Some("ready again")
    );
}

#[tokio::test]
async fn a_message_acknowledged_before_a_crash_is_answered_exactly_once() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::Hang {
        text_before: String::new(),
    });
    let (id, _) = client.submit("do not lose me", "terminal", None).await;
    model.wait_for_requests(1).await;
    daemon.kill9();

    model.push(Reply::Text("answered after the crash".into()));
    let daemon = home.start();
    let mut client = home.connect("terminal", Some(id)).await;
    let reply = client.reply_to(id).await;
    assert_eq!(reply.text.as_deref(), Some("answered after the crash"));
    drop(daemon);

    // Another process laid out the same request, byte for byte, but for the
    // state message (the time).
    let requests = model.requests();
    let without_state = |body: &serde_json::Value| {
        let mut body = body.clone();
        for message in body["messages"].as_array_mut().unwrap() {
            if message["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("</chat>"))
            {
                message["content"] = "</chat>".into();
            }
        }
        serde_json::to_string(&body).unwrap()
    };
    assert_eq!(
        without_state(&requests[0].body),
        without_state(&requests[1].body)
    );

    // Another restart answers nothing again; the next message is the next turn.
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::Text("next".into()));
    let (next, _) = client.submit("and now?", "terminal", None).await;
    client.reply_to(next).await;
    assert_eq!(model.requests().len(), 3);
    let replies: Vec<_> = home
        .history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::Reply && m.answers.contains(&id))
        .collect();
    assert_eq!(replies.len(), 1, "answered exactly once: {replies:?}");
}

#[tokio::test]
async fn tool_calls_run_and_their_results_go_back_to_the_model() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai", &model.base_url());
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    clock_turn(&model, &mut client).await;

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[0].path.ends_with("/responses"));
    let input = requests[1].body["input"].as_array().unwrap().clone();
    let output = input
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .expect("the tool result goes back");
    assert!(output["output"].as_str().unwrap().contains(':'));
    // The first request is a prefix of the second: the chain extends it.
    let first = requests[0].body["input"].as_array().unwrap().clone();
    assert_eq!(&input[..first.len()], &first[..]);
}

#[tokio::test]
async fn the_same_key_is_logged_once() {
    let home = home();
    let _daemon = home.start();
    let mut client = home.connect("bridge", None).await;
    let first = client.submit("hello", "telegram", Some("tg:42")).await;
    let again = client.submit("hello", "telegram", Some("tg:42")).await;
    assert_eq!(again, (first.0, true));
    let users: Vec<_> = home
        .history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::User)
        .collect();
    assert_eq!(users.len(), 1);
}

#[tokio::test]
async fn without_a_model_a_turn_fails_with_how_to_configure_one() {
    let home = home();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let (id, _) = client.submit("hello?", "terminal", None).await;
    let error = client
        .wait_for(|e| e.kind == EventKind::Error && e.answers.contains(&id))
        .await;
    let text = error.text.unwrap();
    assert!(text.contains("[model]"), "{text}");
    assert!(text.contains("config.toml"), "{text}");
    client.wait_for(|e| e.kind == EventKind::Idle).await;
    // Nothing was invented, and the failure does not spin.
    let log = home.history().await;
    assert!(log.iter().all(|m| m.kind != Kind::Reply));
    match client.request(ClientFrame::Status).await {
        ServerFrame::Status(status) => {
            assert!(!status.busy);
            assert_eq!(status.waiting, 0);
            assert_eq!(status.model, None);
        }
        other => panic!("expected status, got {other:?}"),
    }
}

#[tokio::test]
async fn a_failing_model_ends_the_turn_with_an_error_and_keeps_the_message() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::Error {
        status: 401,
        body: serde_json::json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
    });
    let (id, _) = client.submit("hello", "terminal", None).await;
    let error = client
        .wait_for(|e| e.kind == EventKind::Error && e.answers.contains(&id))
        .await;
    assert!(error.text.unwrap().contains("Incorrect API key"));
    model.push(Reply::Garbage("<html>bad gateway</html>".into()));
    let (second, _) = client.submit("again", "terminal", None).await;
    client
        .wait_for(|e| e.kind == EventKind::Error && e.answers.contains(&second))
        .await;
    assert_eq!(model.requests().len(), 2, "no retry loop");
    let log = home.history().await;
    assert!(log.iter().any(|m| m.id == id && m.text == "hello"));
    assert!(!daemon_secret_leaked(&log));
}

fn daemon_secret_leaked(log: &[hearth_protocol::Message]) -> bool {
    log.iter().any(|m| m.text.contains("sk-test-secret"))
}

#[tokio::test]
async fn malformed_and_oversized_frames_get_errors_and_the_daemon_stays_up() {
    let home = home();
    let mut daemon = home.start();
    let mut raw = raw::Raw::connect(&home.socket()).await;

    // Before hello.
    raw.send(r#"{"type":"submit","text":"too early"}"#).await;
    assert_eq!(raw.error().await, ErrorCode::Sequence);
    raw.send(r#"{"type":"hello","client":"x","version":99}"#)
        .await;
    assert_eq!(raw.error().await, ErrorCode::Version);
    let hello = format!(
        r#"{{"type":"hello","client":"raw","version":1,"owner_key":"{}"}}"#,
        home.owner_key()
    );
    raw.send(&hello).await;
    assert!(matches!(raw.frame().await, ServerFrame::Welcome { .. }));

    raw.send("this is not json").await;
    assert_eq!(raw.error().await, ErrorCode::BadFrame);
    raw.send(r#"{"type":"launch_missiles"}"#).await;
    assert_eq!(raw.error().await, ErrorCode::UnknownType);
    raw.send(r#"{"type":"submit","text":42}"#).await;
    assert_eq!(raw.error().await, ErrorCode::BadFrame);
    raw.send(r#"[1,2,3]"#).await;
    assert_eq!(raw.error().await, ErrorCode::BadFrame);
    let big = format!(
        r#"{{"type":"submit","text":"{}"}}"#,
        "x".repeat(2 * hearth_protocol::MAX_FRAME_BYTES)
    );
    raw.send(&big).await;
    assert_eq!(raw.error().await, ErrorCode::TooLarge);
    raw.send(r#"{"type":"submit","text":"   "}"#).await;
    assert_eq!(raw.error().await, ErrorCode::Refused);
    raw.binary().await;
    assert_eq!(raw.error().await, ErrorCode::BadFrame);

    // A client that vanishes mid-handshake harms nothing.
    drop(
        tokio::net::UnixStream::connect(home.socket())
            .await
            .unwrap(),
    );

    // Nothing was logged by any of that, and the daemon still serves.
    assert!(home.history().await.is_empty());
    let mut client = home.connect("terminal", None).await;
    let (id, _) = client.submit("still here?", "terminal", None).await;
    assert_eq!(id, 0);
    assert!(daemon.is_running());
}

#[tokio::test]
async fn a_second_daemon_on_the_same_home_refuses_to_start() {
    let home = home();
    let mut daemon = home.start();
    let second = home.run_daemon_to_end();
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(said.contains("already running"), "{said}");
    assert!(daemon.is_running());
    // The first one still answers on its socket.
    home.connect("terminal", None).await;
    // After a crash, the stale socket is replaced and a new daemon starts.
    daemon.kill9();
    assert!(home.socket().exists());
    let _daemon = home.start();
    home.connect("terminal", None).await;
}

#[tokio::test]
async fn the_socket_and_home_are_private_to_their_user() {
    use std::os::unix::fs::PermissionsExt;
    let home = home();
    let _daemon = home.start();
    let mode = std::fs::metadata(home.socket())
        .unwrap()
        .permissions()
        .mode();
    // Bound under umask 077: nothing for group or others, from the start.
    assert_eq!(mode & 0o077, 0, "mode {:o}", mode & 0o777);
    let prompt = home.path().join("agents/hearth/prompt.md");
    assert!(std::fs::read_to_string(prompt).unwrap().contains("hearth"));
}

#[tokio::test]
async fn a_broken_config_stops_the_start_with_file_and_line() {
    let home = home();
    home.write_config("[model]\nprovider = \"opena\"\nmodel = \"x\"\n");
    let output = home.run_daemon_to_end();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("config.toml line 2"), "{said}");
    assert!(said.contains("openai-chat"), "{said}");
    home.write_config("[model\nprovider = ");
    let said = String::from_utf8_lossy(&home.run_daemon_to_end().stderr).to_string();
    assert!(said.contains("config.toml line 1"), "{said}");
}

#[tokio::test]
async fn stopping_the_daemon_mid_turn_continues_the_turn_at_the_next_start() {
    let model = FakeModel::start().await;
    let home = home();
    home.use_model("openai-chat", &model.base_url());
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::Hang {
        text_before: "partial".into(),
    });
    let (id, _) = client.submit("long job", "terminal", None).await;
    model.wait_for_requests(1).await;
    assert!(daemon.stop(), "a clean exit on SIGTERM");
    assert!(!home.socket().exists(), "the socket is removed at exit");

    model.push(Reply::Text("done after restart".into()));
    let _daemon = home.start();
    let mut client: Client = home.connect("terminal", Some(id)).await;
    assert_eq!(
        client.reply_to(id).await.text.as_deref(),
        Some("done after restart")
    );
}

mod raw {
    //! A bare WebSocket client, for frames the real client never sends.
    use futures_util::{SinkExt, StreamExt};
    use hearth_protocol::{ErrorCode, ServerFrame};
    use std::path::Path;
    use tokio::net::UnixStream;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::WebSocketStream;

    pub struct Raw(WebSocketStream<UnixStream>);

    impl Raw {
        pub async fn connect(socket: &Path) -> Raw {
            let stream = UnixStream::connect(socket).await.unwrap();
            let (socket, _) = tokio_tungstenite::client_async("ws://hearthd/", stream)
                .await
                .unwrap();
            Raw(socket)
        }

        pub async fn send(&mut self, text: &str) {
            self.0.send(Message::Text(text.into())).await.unwrap();
        }

        pub async fn binary(&mut self) {
            self.0
                .send(Message::Binary(vec![0, 1, 2].into()))
                .await
                .unwrap();
        }

        pub async fn frame(&mut self) -> ServerFrame {
            loop {
                let next = tokio::time::timeout(hearth_tests::harness::DEADLINE, self.0.next())
                    .await
                    .expect("a frame in time");
                match next {
                    Some(Ok(Message::Text(text))) => return ServerFrame::decode(&text).unwrap(),
                    Some(Ok(_)) => continue,
                    other => panic!("the daemon closed the connection: {other:?}"),
                }
            }
        }

        pub async fn error(&mut self) -> ErrorCode {
            loop {
                match self.frame().await {
                    ServerFrame::Error { code, .. } => return code,
                    // Live events (the activity sent on attach) come between.
                    ServerFrame::Event(_) => continue,
                    other => panic!("expected an error frame, got {other:?}"),
                }
            }
        }
    }
}
