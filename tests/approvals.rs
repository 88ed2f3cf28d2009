//! End-to-end: tool calls that wait for a person's approval, in a real
//! `hearthd` with a fake model. A second protocol client (or the Telegram
//! bridge, on a fake Bot API) receives the `approval` event and answers it.
//!
//! The timeouts under test are real: `timeout_secs = 1` where the timeout
//! itself is the behaviour, a long one everywhere else.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{ClientFrame, ErrorCode, Event, EventKind, Kind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_model::{results_sent, FakeModel, Reply};
use hearth_tests::fake_telegram::{FakeTelegram, OWNER, STRANGER};
use hearth_tests::harness::{asks_approval, until, Client, Daemon, TestHome, DEADLINE};

/// A home for `model` with `approvals` as the `[approvals]` table and
/// `extra` appended to the config.
fn home(model: &FakeModel, approvals: &str, extra: &str) -> TestHome {
    let home = TestHome::new(bins!());
    home.use_model_without_summaries(
        &model.base_url(),
        &format!("\n[approvals]\n{approvals}\n{extra}"),
    );
    home
}

struct Running {
    model: FakeModel,
    home: TestHome,
    _daemon: Daemon,
    /// Submits the owner's messages.
    terminal: Client,
    /// Another client, which answers approvals.
    phone: Client,
}

/// A running daemon with `approvals` as `[approvals]`, and `extra` after it.
async fn start(approvals: &str, extra: &str) -> Running {
    let model = FakeModel::start().await;
    let home = home(&model, approvals, extra);
    let daemon = home.start();
    let terminal = home.connect("terminal", None).await;
    let phone = home.connect("phone", None).await;
    Running {
        model,
        home,
        _daemon: daemon,
        terminal,
        phone,
    }
}

/// The next approval request (not a decision) a client receives.
async fn request(client: &mut Client) -> Event {
    client.approval_asked().await
}

/// The event that closes approval `id`.
async fn decision(client: &mut Client, id: &str) -> Event {
    client
        .wait_for(|e| {
            e.kind == EventKind::Approval
                && e.approval
                    .as_ref()
                    .is_some_and(|a| a.id == id && a.allowed.is_some())
        })
        .await
}

async fn answer(client: &mut Client, id: &str, allow: bool) -> ServerFrame {
    client.approve(id, allow).await
}

/// The approval notes of the log, in order.
async fn approval_notes(home: &TestHome) -> Vec<String> {
    home.history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::Note && m.text.starts_with("approval "))
        .map(|m| m.text)
        .collect()
}

const WRITE: &str = r#"{"path": "a.txt", "content": "hello"}"#;

#[tokio::test]
async fn a_second_client_approves_and_the_call_runs() {
    let mut t = start("tools = [\"write_file\"]\ntimeout_secs = 300", "").await;
    t.model.push(Reply::tool_call("write_file", WRITE));
    t.model.push(Reply::text("written"));
    let (id, _) = t.terminal.submit("write it", "terminal", None).await;

    let asked = request(&mut t.phone).await;
    let approval = asked.approval.clone().unwrap();
    assert_eq!(approval.tool, "write_file");
    assert_eq!(approval.id.len(), 6);
    assert_eq!(approval.timeout_secs, 300);
    assert!(!approval.deadline.is_empty());
    let arguments: serde_json::Value = serde_json::from_str(&approval.arguments).unwrap();
    assert_eq!(arguments["content"], "hello");
    assert!(
        asked.text.as_deref().unwrap().starts_with("write_file "),
        "{asked:?}"
    );
    assert!(!t.home.work_dir().join("a.txt").exists(), "it waits");
    // Every attached client hears of it.
    request(&mut t.terminal).await;

    assert!(matches!(
        answer(&mut t.phone, &approval.id, true).await,
        ServerFrame::Ack { .. }
    ));
    assert_eq!(
        t.terminal.reply_to(id).await.text.as_deref(),
        Some("written")
    );
    assert_eq!(
        std::fs::read_to_string(t.home.work_dir().join("a.txt")).unwrap(),
        "hello"
    );
    let sent = results_sent(&t.model, 1);
    assert!(!sent[0].contains("denied"), "{}", sent[0]);
    let closed = decision(&mut t.terminal, &approval.id).await;
    assert_eq!(closed.text.as_deref(), Some("allowed by phone"));

    // Too late: the first answer decided.
    match answer(&mut t.terminal, &approval.id, false).await {
        ServerFrame::Error { code, message } => {
            assert_eq!(code, ErrorCode::Refused);
            assert!(message.contains("already decided"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    match answer(&mut t.terminal, "nope00", true).await {
        ServerFrame::Error { code, .. } => assert_eq!(code, ErrorCode::Refused),
        other => panic!("expected a refusal, got {other:?}"),
    }
    let notes = approval_notes(&t.home).await;
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].starts_with(&format!("approval {}: write_file ", approval.id)));
    assert_eq!(
        notes[1],
        format!("approval {}: allowed by phone", approval.id)
    );
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_is_told() {
    let mut t = start("tools = [\"write_file\"]", "").await;
    t.model.push(Reply::tool_call("write_file", WRITE));
    t.model.push(Reply::text("as you wish"));
    let (id, _) = t.terminal.submit("write it", "terminal", None).await;
    let approval = request(&mut t.phone).await.approval.unwrap();
    assert!(matches!(
        answer(&mut t.phone, &approval.id, false).await,
        ServerFrame::Ack { .. }
    ));
    t.terminal.reply_to(id).await;
    assert_eq!(results_sent(&t.model, 1), ["the user denied this call"]);
    assert!(!t.home.work_dir().join("a.txt").exists());
    let tool = t.terminal.wait_for(|e| e.kind == EventKind::Tool).await;
    assert_eq!(tool.status.as_deref(), Some("error"));
    assert_eq!(
        approval_notes(&t.home).await[1],
        format!("approval {}: denied by phone", approval.id)
    );
}

#[tokio::test]
async fn an_unanswered_approval_is_denied_at_the_timeout() {
    let mut t = start("tools = [\"write_file\"]\ntimeout_secs = 1", "").await;
    t.model.push(Reply::tool_call("write_file", WRITE));
    t.model.push(Reply::text("nobody answered"));
    let (id, _) = t.terminal.submit("write it", "terminal", None).await;
    let approval = request(&mut t.phone).await.approval.unwrap();
    let closed = decision(&mut t.phone, &approval.id).await;
    assert_eq!(closed.approval.unwrap().allowed, Some(false));
    t.terminal.reply_to(id).await;
    assert_eq!(
        results_sent(&t.model, 1),
        ["no one approved this call within 1 s"]
    );
    assert!(!t.home.work_dir().join("a.txt").exists());
    assert_eq!(
        approval_notes(&t.home).await[1],
        format!(
            "approval {}: denied, no one answered within 1 s",
            approval.id
        )
    );
}

#[tokio::test]
async fn an_interrupt_while_a_call_waits_denies_it_and_ends_the_turn() {
    let mut t = start("tools = [\"write_file\"]", "").await;
    t.model.push(Reply::tool_call("write_file", WRITE));
    t.terminal.submit("write it", "terminal", None).await;
    let approval = request(&mut t.phone).await.approval.unwrap();
    match t.terminal.request(ClientFrame::Interrupt).await {
        ServerFrame::Interrupted { running } => assert!(running),
        other => panic!("expected interrupted, got {other:?}"),
    }
    t.terminal.wait_for(|e| e.kind == EventKind::Idle).await;
    let closed = decision(&mut t.phone, &approval.id).await;
    assert_eq!(closed.approval.unwrap().allowed, Some(false));
    let tool = t.terminal.wait_for(|e| e.kind == EventKind::Tool).await;
    assert_eq!(tool.status.as_deref(), Some("interrupted"));
    match answer(&mut t.phone, &approval.id, true).await {
        ServerFrame::Error { message, .. } => assert!(message.contains("already decided")),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!t.home.work_dir().join("a.txt").exists());
    assert_eq!(
        t.model.requests().len(),
        1,
        "no request after the interrupt"
    );
}

#[tokio::test]
async fn with_no_client_attached_the_call_is_denied_after_the_timeout() {
    let model = FakeModel::start().await;
    let home = home(&model, "tools = [\"write_file\"]\ntimeout_secs = 1", "");
    let _daemon = home.start();
    model.push(Reply::tool_call("write_file", WRITE));
    model.push(Reply::text("nobody was there"));
    // `hearth send` submits and leaves: no client is attached meanwhile.
    let sent = home.hearth_async(&["send", "write it"]).await;
    assert!(sent.status.success(), "{sent:?}");
    tokio::time::timeout(DEADLINE, model.wait_for_requests(2))
        .await
        .expect("the chain goes on after the timeout");
    assert_eq!(
        results_sent(&model, 1),
        ["no one approved this call within 1 s"]
    );
    assert!(!home.work_dir().join("a.txt").exists());
    let notes = approval_notes(&home).await;
    assert!(
        notes[1].ends_with(": denied, no one answered within 1 s"),
        "{notes:?}"
    );
}

#[tokio::test]
async fn a_matching_shell_command_waits_while_the_others_run() {
    // One call at a time: the waiting one must not hold the only place.
    let mut t = start(
        "shell = [\"rm *\", \"*sudo*\"]",
        "\n[tools]\nconcurrency = 1\n",
    )
    .await;
    std::fs::write(t.home.work_dir().join("victim.txt"), "keep me").unwrap();
    t.model.push(Reply::ToolCalls {
        text: None,
        calls: vec![
            ("shell".into(), r#"{"command": "rm victim.txt"}"#.into()),
            (
                "shell".into(),
                r#"{"command": "echo free > free.txt"}"#.into(),
            ),
        ],
    });
    t.model.push(Reply::text("one ran, one did not"));
    let (id, _) = t.terminal.submit("tidy up", "terminal", None).await;
    let asked = request(&mut t.phone).await;
    assert_eq!(asked.text.as_deref(), Some("shell `rm victim.txt`"));
    // The other call of the response runs while this one waits.
    let free = t.home.work_dir().join("free.txt");
    until("the free command ran", || free.exists()).await;
    let approval = asked.approval.unwrap();
    answer(&mut t.phone, &approval.id, false).await;
    t.terminal.reply_to(id).await;
    let sent = results_sent(&t.model, 1);
    assert_eq!(sent[0], "the user denied this call");
    assert!(sent[1].starts_with("exit code 0"), "{}", sent[1]);
    assert!(t.home.work_dir().join("victim.txt").exists());
    let requests = t.phone.events.iter().filter(|e| asks_approval(e)).count();
    assert_eq!(requests, 1, "only the matching command asked");
}

#[tokio::test]
async fn a_telegram_button_press_answers_an_approval() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let table = format!("\n{}", telegram.telegram_table());
    let home = home(&model, "tools = [\"write_file\"]", &table);
    home.write_secrets(&hearth_tests::fake_telegram::secrets());
    let _daemon = home.start();
    // Once the owner has had a reply, the bridge knows their chat.
    model.push(Reply::text("hello Ada"));
    telegram.write(&OWNER, "hi");
    telegram
        .wait_until("the first reply", |calls| {
            calls.sent_to(OWNER.id) == ["hello Ada"]
        })
        .await;

    model.push(Reply::tool_call("write_file", WRITE));
    model.push(Reply::text("written"));
    telegram.write(&OWNER, "write it, please");
    let calls = telegram
        .wait_until("the request with its buttons", |calls| {
            !calls.keyboards.is_empty()
        })
        .await;
    assert_eq!(
        calls.polls[0].allowed_updates,
        serde_json::json!(["message", "callback_query"])
    );
    let (chat, text, keyboard) = calls.keyboards[0].clone();
    assert_eq!(chat, OWNER.id);
    assert!(text.starts_with("hearth asks to run write_file "), "{text}");
    let allow = keyboard["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    let id = allow
        .strip_prefix("approve:")
        .and_then(|rest| rest.strip_suffix(":yes"))
        .unwrap()
        .to_string();
    assert_eq!(
        keyboard["inline_keyboard"][0][1]["callback_data"],
        format!("approve:{id}:no")
    );
    assert!(!home.work_dir().join("a.txt").exists());

    // A stranger's press is ignored; the owner's answers.
    telegram.press(&STRANGER, &allow);
    let press = telegram.press(&OWNER, &allow);
    let calls = telegram
        .wait_until("the reply", |calls| {
            calls.sent_to(OWNER.id).contains(&"written".to_string())
        })
        .await;
    assert_eq!(calls.answered, vec![(press, "Allowed.".to_string())]);
    assert_eq!(
        std::fs::read_to_string(home.work_dir().join("a.txt")).unwrap(),
        "hello"
    );
    let notes = approval_notes(&home).await;
    assert_eq!(
        notes[1],
        format!("approval {id}: allowed by telegram (@ada)")
    );
}
