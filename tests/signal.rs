//! End-to-end: the Signal bridge. A real `hearthd` starts `hearth signal`
//! from its `[signal]` table; the bridge talks JSON-RPC to a fake
//! signal-cli daemon (on a Unix socket, or TCP on 127.0.0.1), and the agent
//! to a fake model.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_bridges::bridge::people::REFUSAL;
use hearth_protocol::{EventKind, Kind};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::fake_signal::{FakeSignal, Person, ACCOUNT};
use hearth_tests::fake_transcription::{Answer, FakeTranscription};
use hearth_tests::harness::{
    bridge_failed, bridge_pid, cursor_at_log_end, logged_user_message, logged_user_message_with,
    transcription_table, TestHome,
};
use std::process::Command;

const OWNER: Person = Person {
    number: "+15551234567",
    uuid: "0a1b2c3d-0000-4000-8000-00000000abcd",
    name: "Ada",
};

const STRANGER: Person = Person {
    number: "+15559990000",
    uuid: "0a1b2c3d-0000-4000-8000-00000000dead",
    name: "Mallory",
};

/// How the bridge reaches the fake.
enum Via {
    Socket,
    Tcp,
}

/// The fake model, and a `[signal]` table for the fake signal-cli that
/// allows the owner; `extra` goes after the model's table.
fn home_for(model: &FakeModel, signal: &FakeSignal, via: Via, extra: &str) -> TestHome {
    let home = TestHome::new(bins!());
    let reach = match via {
        Via::Socket => format!("socket = \"{}\"", signal.socket().display()),
        Via::Tcp => format!("tcp = \"{}\"", signal.tcp()),
    };
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n{extra}\n\n\
         [signal]\naccount = \"{ACCOUNT}\"\nallow = [\"{}\"]\n{reach}\n",
        model.base_url(),
        OWNER.number,
    ));
    home
}

/// The notes the Signal bridge left in the log.
async fn signal_notes(home: &TestHome) -> Vec<String> {
    home.history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::Note && m.source == "signal")
        .map(|m| m.text)
        .collect()
}

#[tokio::test]
async fn an_owners_message_reaches_the_agent_and_the_reply_comes_back_styled() {
    let model = FakeModel::start().await;
    let signal = FakeSignal::start().await;
    let home = home_for(&model, &signal, Via::Socket, "");
    let _daemon = home.start();
    let mut watcher = home.connect("watcher", None).await;

    let gate = Gate::new();
    model.push(Reply::gated(
        Reply::text("# Plan\n\nHello, **Ada**! Run `x < y`, *carefully*:\n\n1. one\n2. two"),
        &gate,
    ));
    let sent_at = signal.write(&OWNER, "hi from my phone");
    let user = watcher.wait_for(|e| e.kind == EventKind::User).await;
    assert_eq!(user.source.as_deref(), Some("signal"));
    assert_eq!(user.text.as_deref(), Some("hi from my phone"));

    // While the agent works, the chat shows "typing…".
    signal
        .wait_until("typing to the owner", |calls| {
            calls.typing.contains(&OWNER.number.to_string())
        })
        .await;
    gate.open();
    let calls = signal
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(
        calls.sent.len(),
        1,
        "only the reply, never the owner's words"
    );
    let reply = &calls.sent[0];
    assert_eq!(reply.recipient, OWNER.number);
    // Markdown as Signal shows it: no marks, styles over the words.
    assert_eq!(
        reply.message,
        "Plan\n\nHello, Ada! Run x < y, carefully:\n\n1. one\n2. two"
    );
    assert_eq!(
        reply.styles,
        vec!["0:4:BOLD", "13:3:BOLD", "22:5:MONOSPACE", "29:9:ITALIC"]
    );
    let methods: Vec<&str> = calls.requests.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods[0], "subscribeReceive");

    // Signal's timestamp of the message is its idempotency key.
    let key = format!("signal:{}:{sent_at}", OWNER.number);
    let (id, duplicate) = watcher.submit("again", "signal", Some(&key)).await;
    assert!(duplicate);
    assert_eq!(Some(id), user.id);

    // A long reply goes in parts Signal shows whole, in order.
    let paragraph = "word ".repeat(300).trim_end().to_string();
    model.push(Reply::text([paragraph.as_str(); 3].join("\n\n")));
    signal.write(&OWNER, "tell me more");
    let calls = signal
        .wait_until("the long reply", |calls| calls.sent.len() == 4)
        .await;
    for part in &calls.sent[1..] {
        assert_eq!(part.message, paragraph);
    }
}

#[tokio::test]
async fn a_stranger_is_refused_once_and_the_agent_never_sees_the_message() {
    let model = FakeModel::start().await;
    let signal = FakeSignal::start().await;
    let home = home_for(&model, &signal, Via::Tcp, "");
    let _daemon = home.start();

    signal.write(&STRANGER, "let me in");
    signal.write(&STRANGER, "pretty please");
    model.push(Reply::text("Hi Ada."));
    signal.write(&OWNER, "hello");
    // Messages are taken in order: once the owner is answered, both of the
    // stranger's were handled.
    let calls = signal
        .wait_until("the owner's reply", |calls| {
            calls.sent_to(OWNER.number) == ["Hi Ada."]
        })
        .await;
    assert_eq!(calls.sent_to(STRANGER.number), vec![REFUSAL.to_string()]);
    assert_eq!(
        signal_notes(&home).await,
        vec!["signal: refused a message from +15559990000 (Mallory)"]
    );
    let log = home.history().await;
    let users: Vec<&str> = log
        .iter()
        .filter(|m| m.kind == Kind::User)
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(users, vec!["hello"]);
    let body = model.requests()[0].body.to_string();
    assert!(!body.contains("let me in") && !body.contains("pretty please"));
}

#[tokio::test]
async fn a_restart_mid_delivery_loses_and_doubles_nothing() {
    let model = FakeModel::start().await;
    let signal = FakeSignal::start().await;
    let home = home_for(&model, &signal, Via::Socket, "");
    let daemon = home.start();

    // The reply is on its way when the bridge is killed.
    signal.hold_sends(true);
    model.push(Reply::text("Noted."));
    signal.write(&OWNER, "remember the milk");
    signal
        .wait_until("the reply held", |calls| !calls.held.is_empty())
        .await;
    let first = bridge_pid(&daemon, "signal").await;
    let killed = Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    signal
        .wait_until("the killed bridge gone", |calls| {
            calls.held.is_empty() && calls.subscribers == 0
        })
        .await;
    signal.hold_sends(false);

    // What is written while no bridge runs waits for the next one.
    model.push(Reply::text("Eggs too, noted."));
    signal.write(&OWNER, "and eggs");
    let calls = signal
        .wait_until("both replies", |calls| {
            calls.sent_to(OWNER.number).len() == 2
        })
        .await;
    assert_eq!(
        calls.sent_to(OWNER.number),
        vec!["Noted.".to_string(), "Eggs too, noted.".to_string()]
    );
    assert_ne!(bridge_pid(&daemon, "signal").await, first);
    cursor_at_log_end(&home, "signal.cursor").await;

    // A clean restart of everything repeats nothing either.
    let mut daemon = daemon;
    assert!(daemon.stop());
    signal
        .wait_until("the stopped bridge gone", |calls| calls.subscribers == 0)
        .await;
    let _daemon = home.start();
    model.push(Reply::text("Bread, noted."));
    signal.write(&OWNER, "and bread");
    let calls = signal
        .wait_until("the third reply", |calls| {
            calls.sent_to(OWNER.number).len() >= 3
        })
        .await;
    assert_eq!(
        calls.sent_to(OWNER.number),
        vec!["Noted.", "Eggs too, noted.", "Bread, noted."]
    );
    let users: Vec<String> = home
        .history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::User)
        .map(|m| m.text)
        .collect();
    assert_eq!(users, vec!["remember the milk", "and eggs", "and bread"]);
    assert_eq!(model.requests().len(), 3, "each message answered once");
}

const WRITE: &str = r#"{"path": "a.txt", "content": "hello"}"#;

#[tokio::test]
async fn an_approval_is_answered_by_a_reaction_or_a_reply() {
    let model = FakeModel::start().await;
    let signal = FakeSignal::start().await;
    let home = home_for(
        &model,
        &signal,
        Via::Socket,
        "[approvals]\ntools = [\"write_file\"]\n",
    );
    let _daemon = home.start();
    let workdir = home.path().join("agents/hearth/work");

    // Once the owner has written, the bridge knows where to ask.
    model.push(Reply::text("hello Ada"));
    signal.write(&OWNER, "hi");
    signal
        .wait_until("the first reply", |calls| {
            calls.sent_to(OWNER.number) == ["hello Ada"]
        })
        .await;

    model.push(Reply::tool_call("write_file", WRITE));
    model.push(Reply::text("written"));
    signal.write(&OWNER, "write it, please");
    let calls = signal
        .wait_until("the request", |calls| calls.sent.len() == 2)
        .await;
    let request = calls.sent[1].clone();
    assert!(
        request
            .message
            .starts_with("hearth asks to run write_file "),
        "{}",
        request.message
    );
    assert!(request.message.contains("React 👍 to allow or 👎 to deny"));
    assert!(!workdir.join("a.txt").exists());

    // A stranger's reaction is refused; the owner's answers.
    signal.react(&STRANGER, "👍", request.timestamp);
    signal.react(&OWNER, "👍🏽", request.timestamp);
    let calls = signal
        .wait_until("the reply", |calls| {
            calls.sent_to(OWNER.number).contains(&"written".to_string())
        })
        .await;
    // The bridge says how it went (beside the reply, in either order).
    assert_eq!(calls.sent_to(OWNER.number).len(), 4);
    assert!(calls
        .sent_to(OWNER.number)
        .contains(&"Allowed.".to_string()));
    assert_eq!(
        std::fs::read_to_string(workdir.join("a.txt")).unwrap(),
        "hello"
    );

    // The next request is denied by a reply that quotes it.
    model.push(Reply::tool_call("write_file", WRITE));
    model.push(Reply::text("not written"));
    signal.write(&OWNER, "write it again");
    let calls = signal
        .wait_until("the second request", |calls| {
            calls
                .sent
                .iter()
                .filter(|sent| sent.message.starts_with("hearth asks"))
                .count()
                == 2
        })
        .await;
    let second = calls.sent.last().unwrap().clone();
    signal.reply(&OWNER, "No", second.timestamp);
    let calls = signal
        .wait_until("the denial and the reply", |calls| {
            let sent = calls.sent_to(OWNER.number);
            sent.contains(&"not written".to_string()) && sent.contains(&"Denied.".to_string())
        })
        .await;
    assert_eq!(calls.sent_to(STRANGER.number), vec![REFUSAL.to_string()]);
    let notes: Vec<String> = home
        .history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::Note && m.text.starts_with("approval "))
        .map(|m| m.text)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.ends_with(&format!("allowed by signal ({})", OWNER.number))),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.ends_with(&format!("denied by signal ({})", OWNER.number))),
        "{notes:?}"
    );
    // The answers were never the agent's messages.
    let users: Vec<String> = home
        .history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::User)
        .map(|m| m.text)
        .collect();
    assert_eq!(users, vec!["hi", "write it, please", "write it again"]);
}

const VOICE: &[u8] = b"\0\0\0\x18ftypM4A \0\0\0\0 a voice note from the phone";

#[tokio::test]
async fn a_voice_note_is_transcribed_and_a_photo_and_a_document_go_in() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("on it"));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::Text {
        text: "remind me to water the plants".into(),
        seconds: 4.0,
    });
    let signal = FakeSignal::start().await;
    let extra = transcription_table(&transcription.base_url());
    let home = home_for(&model, &signal, Via::Socket, &extra);
    let _daemon = home.start();

    // Signal's voice notes are AAC in an MP4 box, without a file name.
    signal.send_file(&OWNER, "audio/aac", None, VOICE, None);
    let heard = logged_user_message_with(&home, "water the plants").await;
    assert!(heard.text.starts_with("[voice"), "{}", heard.text);
    let received = transcription.wait_for(1).await;
    assert_eq!(received[0].file, VOICE);
    signal
        .wait_until("the reply", |calls| {
            calls.sent_to(OWNER.number) == ["on it"]
        })
        .await;

    let photo = hearth_tests::fake_telegram::photo_bytes();
    signal.send_file(&OWNER, "image/png", Some("cat.png"), &photo, Some("my cat"));
    let pdf = hearth_daemon::documents::tiny_pdf(&["Deposit: two months' rent."]);
    signal.send_file(
        &OWNER,
        "application/pdf",
        Some("lease.pdf"),
        &pdf,
        Some("what is the deposit?"),
    );
    let document = logged_user_message(&home, "[file: \"lease.pdf\"").await;
    assert_eq!(
        document.text,
        "[file: \"lease.pdf\", 1 page] what is the deposit?"
    );
    let log = home.history().await;
    let cat = log
        .iter()
        .find(|m| m.kind == Kind::User && m.text == "my cat")
        .expect("the photo's caption");
    assert_eq!(cat.images.len(), 1, "the photo goes in as an image");
    assert_eq!(signal.calls().fetched.len(), 3);
    assert!(signal_notes(&home).await.is_empty());
}

#[tokio::test]
async fn a_bridge_that_cannot_start_signal_cli_says_why_in_status_not_the_conversation() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\n\n[signal]\naccount = \"{ACCOUNT}\"\n\
         allow = [\"{}\"]\ncommand = \"/nonexistent/signal-cli\"\n",
        model.base_url(),
        OWNER.number
    ));
    let mut daemon = home.start();
    let bridge = bridge_failed(&home, "signal").await;
    let why = bridge.error.unwrap_or_default();
    assert!(why.contains("install signal-cli"), "{why}");
    assert!(home.history().await.iter().all(|m| m.source != "signal"));
    assert!(daemon.is_running());
}
