//! End-to-end: the WhatsApp bridge. A real `hearthd` starts `hearth
//! whatsapp` from its `[whatsapp]` table; the test plays Meta towards the
//! bridge's webhook, the bridge sends through a fake Graph API on
//! 127.0.0.1, and the agent talks to a fake model.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_bridges::bridge::people::REFUSAL;
use hearth_bridges::whatsapp::graph::{Failure as GraphFailure, Graph};
use hearth_bridges::whatsapp::outbound::OUTSIDE_WINDOW_NOTE;
use hearth_bridges::whatsapp::webhook::signature;
use hearth_protocol::{ClientFrame, EventKind, Kind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_graph::{
    whatsapp_secrets, Failure, FakeGraph, Sent, ACCESS_TOKEN, PHONE_NUMBER_ID,
};
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::harness::{
    bridge_pid, cursor_at_log_end, eventually, model_table, notes_by, texts, TestHome,
};
use hearth_tests::meta_webhook::{
    self, delivery, image, text, Webhook, APP_SECRET, VERIFY_TOKEN, WA_OWNER as OWNER,
    WA_STRANGER as STRANGER,
};
use std::process::Command;

fn home() -> TestHome {
    TestHome::new(bins!())
}

/// The fake model, and a `[whatsapp]` table for the fake Graph API that
/// allows the owner (written as people write numbers) and listens on a port
/// the system picks; the secrets in `secrets.env`, as a service finds them.
fn configure(home: &TestHome, model: &FakeModel, graph: &FakeGraph, access_token: &str) {
    home.write_config(&format!(
        "{}\n{}",
        model_table("openai-chat", &model.base_url()),
        graph.whatsapp_table("\"+1 555 123 4567\"")
    ));
    home.write_secrets(&whatsapp_secrets(access_token));
}

#[tokio::test]
async fn meta_verifies_the_webhook_with_the_verify_token() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;

    let answer = webhook
        .verify("subscribe", VERIFY_TOKEN, "1158201444")
        .await;
    assert_eq!((answer.status, answer.body.as_str()), (200, "1158201444"));
    let wrong = webhook.verify("subscribe", "guessed", "1158201444").await;
    assert_eq!(wrong.status, 403);
    let unsubscribe = webhook.verify("unsubscribe", VERIFY_TOKEN, "1").await;
    assert_eq!(unsubscribe.status, 403);
}

#[tokio::test]
async fn an_owners_signed_message_reaches_the_agent_and_the_reply_goes_back() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;
    let mut watcher = home.connect("watcher", None).await;

    let gate = Gate::new();
    model.push(Reply::gated(
        Reply::text("Hello, **Ada**! Try `x < y`:\n\n3. this\n   - and *that*"),
        &gate,
    ));
    webhook
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.A1", "hi from my phone")])
        .await;
    let user = watcher.wait_for(|e| e.kind == EventKind::User).await;
    assert_eq!(user.source.as_deref(), Some("whatsapp"));
    assert_eq!(user.text.as_deref(), Some("hi from my phone"));

    // While the agent works, the message is marked read with "typing…".
    graph
        .wait_until("a read mark with typing", |calls| {
            calls.reads.contains(&("wamid.A1".to_string(), true))
        })
        .await;
    gate.open();
    let calls = graph
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(
        calls.sent,
        vec![Sent {
            to: OWNER.wa_id.into(),
            text: "Hello, *Ada*! Try ```x < y```:\n\n3. this\n   ◦ and _that_".into()
        }],
        "only the reply goes out, in WhatsApp's formatting, never the owner's own words"
    );
    assert_eq!(calls.reads.len(), 1, "at most one read mark per 20 s");
    assert_eq!(calls.unauthorized, 0);

    // A turn the terminal starts is relayed, without "typing…" for the
    // owner's old message.
    model.push(Reply::text("Done at the desk."));
    let (id, _) = watcher.submit("from the desk", "terminal", None).await;
    watcher.reply_to(id).await;
    let calls = graph
        .wait_until("the terminal's reply", |calls| calls.sent.len() == 2)
        .await;
    assert_eq!(calls.sent[1].text, "Done at the desk.");
    assert_eq!(calls.reads.len(), 1);

    // Meta delivers the same message again: acknowledged, logged once.
    webhook
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.A1", "hi from my phone")])
        .await;
    let (id, duplicate) = watcher
        .submit("again", "whatsapp", Some("whatsapp:wamid.A1"))
        .await;
    assert!(duplicate);
    assert_eq!(Some(id), user.id);
    // Status reports are taken and ignored.
    let answer = webhook
        .deliver(&meta_webhook::statuses(
            PHONE_NUMBER_ID,
            "wamid.out.1",
            OWNER.wa_id,
        ))
        .await;
    assert_eq!(answer.status, 200);

    // A photo's caption goes in, or a placeholder: MEDIA1 cannot be
    // downloaded here, so no image goes along (tests/images.rs has one that can).
    for (n, (wamid, caption, answer)) in [
        ("wamid.A2", Some("my cat"), "Nice cat."),
        ("wamid.A3", None, "Another one."),
    ]
    .into_iter()
    .enumerate()
    {
        model.push(Reply::text(answer));
        webhook
            .deliver_from(&OWNER, vec![image(&OWNER, wamid, "MEDIA1", caption)])
            .await;
        let calls = graph
            .wait_until("the photo's reply", |calls| calls.sent.len() == 3 + n)
            .await;
        assert_eq!(calls.sent[2 + n].text, answer);
    }
    let log = home.history().await;
    assert_eq!(
        texts(&log, Kind::User),
        vec!["hi from my phone", "from the desk", "my cat", "[photo]"]
    );
}

#[tokio::test]
async fn a_badly_signed_delivery_is_refused_and_nothing_is_logged() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;

    let body = delivery(
        PHONE_NUMBER_ID,
        &OWNER,
        vec![text(&OWNER, "wamid.B1", "send all my money to Mallory")],
    );
    let good = signature(APP_SECRET.as_bytes(), &body);
    let forged = signature(b"not the app secret", &body);
    let sha1 = good.replace("sha256=", "sha1=");
    let tampered = String::from_utf8(body.clone())
        .unwrap()
        .replace("Mallory", "Eve")
        .into_bytes();
    for (what, body, header) in [
        ("no signature", &body, None),
        ("another secret's", &body, Some(forged.as_str())),
        ("the wrong prefix", &body, Some(sha1.as_str())),
        ("a changed body", &tampered, Some(good.as_str())),
    ] {
        let answer = webhook.post(body, header).await;
        assert_eq!(answer.status, 401, "{what}: {answer:?}");
    }
    let log = home.history().await;
    assert!(log.iter().all(|m| m.kind != Kind::User), "{log:?}");
    assert!(log.iter().all(|m| m.source != "whatsapp"), "{log:?}");
    assert!(!daemon.log_text().contains("Mallory"));
    assert!(model.requests().is_empty());

    // The refused deliveries left no trace: the real one is taken.
    model.push(Reply::text("I will not."));
    assert_eq!(webhook.post(&body, Some(&good)).await.status, 200);
    graph
        .wait_until("the reply", |calls| {
            calls.sent_to(OWNER.wa_id) == ["I will not."]
        })
        .await;
    assert_eq!(
        texts(&home.history().await, Kind::User),
        vec!["send all my money to Mallory"]
    );
}

#[tokio::test]
async fn a_stranger_is_refused_once_with_a_note_and_the_agent_never_sees_them() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;

    webhook
        .deliver_from(&STRANGER, vec![text(&STRANGER, "wamid.S1", "let me in")])
        .await;
    webhook
        .deliver_from(
            &STRANGER,
            vec![text(&STRANGER, "wamid.S2", "pretty please")],
        )
        .await;
    model.push(Reply::text("Hi Ada."));
    webhook
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.O1", "hello")])
        .await;
    // Deliveries are taken in order, each stranger told before the next:
    // once the owner is answered, the stranger was handled.
    let calls = graph
        .wait_until("the owner's reply", |calls| {
            calls.sent_to(OWNER.wa_id) == ["Hi Ada."]
        })
        .await;
    assert_eq!(calls.sent_to(STRANGER.wa_id), vec![REFUSAL.to_string()]);

    let log = home.history().await;
    let notes = notes_by(&log, "whatsapp");
    assert_eq!(
        notes,
        vec!["whatsapp: refused a message from +4915100000000 (Mallory)"]
    );
    assert_eq!(texts(&log, Kind::User), vec!["hello"]);
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].body.to_string();
    assert!(
        !body.contains("let me in") && !body.contains("pretty please"),
        "{body}"
    );
}

#[tokio::test]
async fn a_long_reply_is_split_on_paragraphs() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;

    let paragraph = "All work and no play makes Jack a dull boy. "
        .repeat(40)
        .trim_end()
        .to_string();
    let story = vec![paragraph.clone(); 5].join("\n\n");
    assert!(story.chars().count() > 2 * 4096);
    model.push(Reply::text(story.clone()));
    webhook
        .deliver_from(
            &OWNER,
            vec![text(&OWNER, "wamid.L1", "tell me a long story")],
        )
        .await;
    let calls = graph
        .wait_until("three parts", |calls| calls.sent.len() == 3)
        .await;
    let parts = calls.sent_to(OWNER.wa_id);
    for part in &parts {
        assert!(part.chars().count() <= 4096);
    }
    assert_eq!(parts[0], format!("{paragraph}\n\n{paragraph}"));
    assert_eq!(parts.join("\n\n"), story);
    assert_eq!(calls.attempts.len(), 3, "none refused");
}

#[tokio::test]
async fn outside_the_24_hour_window_a_note_says_why_and_delivery_goes_on() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;
    let mut watcher = home.connect("watcher", None).await;

    graph.fail_next_send(Failure::OutsideWindow);
    model.push(Reply::text("You will not see this."));
    webhook
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.W1", "one")])
        .await;
    let reply = watcher.wait_for(|e| e.kind == EventKind::Reply).await;
    let note = watcher
        .wait_for(|e| e.kind == EventKind::Note && e.source.as_deref() == Some("whatsapp"))
        .await;
    assert_eq!(
        note.text.unwrap_or_default(),
        format!(
            "whatsapp: could not deliver message #{} to +{}: {OUTSIDE_WINDOW_NOTE}",
            reply.id.unwrap(),
            OWNER.wa_id
        )
    );
    assert!(OUTSIDE_WINDOW_NOTE.contains("more than 24 hours after the user last wrote"));

    // Another refusal (a 4xx other than the window) is skipped with a note too.
    graph.fail_next_send(Failure::Undeliverable);
    model.push(Reply::text("Nor this."));
    webhook
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.W2", "two")])
        .await;
    let undeliverable = watcher
        .wait_for(|e| {
            e.kind == EventKind::Note && e.text.as_deref().is_some_and(|t| t.contains("131026"))
        })
        .await;
    let said = undeliverable.text.unwrap_or_default();
    assert!(
        said.contains("Message Undeliverable") && said.ends_with("; skipped"),
        "{said}"
    );

    model.push(Reply::text("But this."));
    webhook
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.W3", "three")])
        .await;
    let calls = graph
        .wait_until("the next reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(calls.sent_to(OWNER.wa_id), vec!["But this.".to_string()]);
    assert_eq!(calls.attempts.len(), 3, "each refused message tried once");
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_and_the_reply_sent_once() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;

    graph.fail_next_send(Failure::TooManyRequests);
    graph.fail_next_send(Failure::ServerError);
    model.push(Reply::text("Slowly now."));
    webhook
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.R1", "hurry")])
        .await;
    let calls = graph
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(calls.attempts.len(), 3, "two refused, one sent");
    assert_eq!(calls.sent_to(OWNER.wa_id), vec!["Slowly now.".to_string()]);
    let notes = texts(&home.history().await, Kind::Note);
    assert!(
        notes.iter().all(|note| !note.contains("could not deliver")),
        "{notes:?}"
    );
}

#[tokio::test]
async fn the_bridge_killed_mid_conversation_loses_nothing_and_sends_nothing_twice() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let first = Webhook::of(&daemon, 1).await;

    // The reply is being sent when the bridge dies.
    graph.hold_sends(true);
    model.push(Reply::text("First answer."));
    first
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.K1", "one")])
        .await;
    graph
        .wait_until("the reply held", |calls| !calls.held.is_empty())
        .await;
    let pid = bridge_pid(&daemon, "whatsapp").await;
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    graph
        .wait_until("the killed bridge's send dropped", |calls| {
            calls.held.is_empty()
        })
        .await;
    graph.hold_sends(false);

    // Meanwhile the terminal talks to the agent: those replies are for the
    // owner too, after the first, in order.
    let mut terminal = home.connect("terminal", None).await;
    for answer in ["Second.", "Third."] {
        model.push(Reply::text(answer));
        let (id, _) = terminal
            .submit(&format!("before the {answer}"), "terminal", None)
            .await;
        terminal.reply_to(id).await;
    }

    // hearthd starts the bridge again. Meta delivers again what it had no
    // answer for, and what was written meanwhile.
    let second = Webhook::of(&daemon, 2).await;
    assert_ne!(bridge_pid(&daemon, "whatsapp").await, pid);
    model.push(Reply::text("Fourth."));
    second
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.K1", "one")])
        .await;
    second
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.K2", "two")])
        .await;
    let calls = graph
        .wait_until("every reply", |calls| calls.sent.len() >= 4)
        .await;
    assert_eq!(
        calls.sent_to(OWNER.wa_id),
        vec!["First answer.", "Second.", "Third.", "Fourth."]
    );
    let log = home.history().await;
    assert_eq!(
        texts(&log, Kind::User),
        vec!["one", "before the Second.", "before the Third.", "two"]
    );
    assert_eq!(model.requests().len(), 4, "each message answered once");
}

#[tokio::test]
async fn a_refused_access_token_stops_the_bridge_with_a_note() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, "EAA-expired");
    let mut daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;

    model.push(Reply::text("Hello."));
    // The reply's send is refused and the bridge stops, which can be before
    // it has written its answer to this delivery (Meta delivers again when
    // a webhook drops the connection): the answer is not what this test
    // checks, so a panic on an empty one is let go with its task.
    let body = delivery(
        PHONE_NUMBER_ID,
        &OWNER,
        vec![text(&OWNER, "wamid.T1", "hi")],
    );
    let hook = Webhook {
        addr: webhook.addr,
        path: webhook.path.clone(),
    };
    let _ = tokio::spawn(async move { hook.deliver(&body).await }).await;
    // A bridge that cannot run says so in the daemon's log and in status,
    // never as a message in the agent's conversation.
    let home_ref = &home;
    let bridge = eventually("the bridge failed in status", || async move {
        let mut client = home_ref.connect("hearth-status", None).await;
        let ServerFrame::Status(status) = client.request(ClientFrame::Status).await else {
            return None;
        };
        status.bridges.into_iter().find(|b| {
            b.name == "whatsapp"
                && b.error
                    .as_deref()
                    .is_some_and(|e| e.contains("access token"))
        })
    })
    .await;
    let why = bridge.error.unwrap_or_default();
    assert!(why.contains("$HEARTH_TEST_WA_TOKEN"), "{why}");
    assert!(!why.contains("EAA-expired"));
    eventually("the daemon to give up on the bridge", || {
        std::future::ready(
            daemon
                .log_text()
                .contains("cannot run as configured")
                .then_some(()),
        )
    })
    .await;
    assert!(daemon.is_running());
    assert!(!daemon.log_text().contains("EAA-expired"));
}

#[tokio::test]
async fn media_downloads_with_the_access_token() {
    let graph = FakeGraph::start().await;
    let picture = b"\xff\xd8\xff\xe0 not really a jpeg";
    graph.add_media("1234567890", "image/jpeg", picture);

    let client = Graph::new(&graph.graph_base(), PHONE_NUMBER_ID, ACCESS_TOKEN).unwrap();
    let media = client.media("1234567890").await.unwrap();
    assert_eq!(media.mime_type, "image/jpeg");
    assert_eq!(media.bytes, picture);
    let calls = graph.calls();
    assert_eq!(calls.media_lookups, vec!["1234567890"]);
    assert_eq!(calls.downloads, vec!["1234567890"]);

    let missing = client.media("999").await.unwrap_err();
    assert_eq!(missing.failure(), GraphFailure::Permanent);
    let stranger = Graph::new(&graph.graph_base(), PHONE_NUMBER_ID, "EAA-wrong").unwrap();
    let refused = stranger.media("1234567890").await.unwrap_err();
    assert_eq!(refused.failure(), GraphFailure::Unauthorized);
}

#[test]
fn hearth_whatsapp_refuses_to_start_without_its_secrets_or_a_table() {
    let home = home();
    home.write_config(
        "[whatsapp]\nverify_token_env = \"HEARTH_TEST_NO_SUCH_TOKEN\"\nphone_number_id = \"1\"\nallow = [\"+15551234567\"]\n",
    );
    let output = home.hearth(&["whatsapp"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(
        stderr.contains("no WhatsApp webhook verify token: set $HEARTH_TEST_NO_SUCH_TOKEN")
            && stderr.contains("secrets.env"),
        "{stderr}"
    );

    home.write_config("[model]\nprovider = \"openai\"\nmodel = \"m\"\n");
    let output = home.hearth(&["whatsapp"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(stderr.contains("has no [whatsapp] table"), "{stderr}");
}

#[tokio::test]
async fn whatsapp_send_writes_to_a_named_contact_once_even_across_a_bridge_restart() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    home.write_config(&format!(
        "{config}contacts = {{ Anna = \"+44 7700 900123\" }}\n"
    ));
    let daemon = home.start();
    Webhook::of(&daemon, 1).await;

    // The owner asks from the terminal; the agent writes to Anna, then to a
    // stranger (refused: nobody the config names), then answers.
    let mut terminal = home.connect("terminal", None).await;
    model.push(Reply::tool_call(
        "whatsapp_send",
        r#"{"to": "anna", "text": "Dinner at 8?"}"#,
    ));
    model.push(Reply::tool_call(
        "whatsapp_send",
        r#"{"to": "+15550000000", "text": "hello"}"#,
    ));
    model.push(Reply::text("Asked Anna."));
    let (id, _) = terminal
        .submit("ask Anna about dinner", "terminal", None)
        .await;
    terminal.reply_to(id).await;
    let calls = graph
        .wait_until("the message to Anna", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(calls.sent_to("447700900123"), vec!["Dinner at 8?"]);
    let requests = model.requests();
    assert!(requests[0].body["tools"]
        .to_string()
        .contains("Anna (+447700900123)"));
    let log = home.history().await;
    let tools = texts(&log, Kind::Tool);
    assert!(tools[0].contains("queued for +447700900123"), "{tools:?}");
    assert!(
        tools[1].contains("not someone you may write to"),
        "{tools:?}"
    );

    // A restarted bridge resumes after what it sent: nothing goes out twice.
    // (Killed between a send and storing the cursor, it would send that one
    // again, as the README says; the kill waits until the cursor is stored.)
    cursor_at_log_end(&home, "whatsapp.cursor").await;
    let pid = bridge_pid(&daemon, "whatsapp").await;
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    Webhook::of(&daemon, 2).await;
    model.push(Reply::text("Still here."));
    let (id, _) = terminal.submit("anything else?", "terminal", None).await;
    terminal.reply_to(id).await;
    // The owner never wrote on WhatsApp, so no reply goes to them; a
    // message from them now gets its answer, and Anna got hers only once.
    model.push(Reply::text("Hi Ada."));
    let webhook = Webhook::of(&daemon, 2).await;
    webhook
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.S1", "hi")])
        .await;
    let calls = graph
        .wait_until("the answer to the owner", |calls| {
            !calls.sent_to(OWNER.wa_id).is_empty()
        })
        .await;
    assert_eq!(calls.sent_to(OWNER.wa_id), vec!["Hi Ada."]);
    assert_eq!(calls.sent_to("447700900123"), vec!["Dinner at 8?"]);
}

#[tokio::test]
async fn a_bridge_told_to_stop_finishes_its_send_and_repeats_nothing() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let first = Webhook::of(&daemon, 1).await;

    // WhatsApp has taken the reply but not yet answered when the bridge is
    // told to stop (as hearthd does when it stops).
    graph.answer_late(true);
    model.push(Reply::text("First answer."));
    first
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.T1", "one")])
        .await;
    graph
        .wait_until("the reply taken", |calls| !calls.unanswered.is_empty())
        .await;
    let pid = bridge_pid(&daemon, "whatsapp").await;
    let told = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(told.success());
    graph.answer_late(false);

    // It waited for the answer and stored its cursor before exiting; the
    // bridge hearthd starts again does not send the reply a second time.
    let second = Webhook::of(&daemon, 2).await;
    assert_ne!(bridge_pid(&daemon, "whatsapp").await, pid);
    model.push(Reply::text("Second."));
    second
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.T2", "two")])
        .await;
    let calls = graph
        .wait_until("the second reply", |calls| calls.sent.len() >= 2)
        .await;
    assert_eq!(calls.sent_to(OWNER.wa_id), vec!["First answer.", "Second."]);
}

#[tokio::test]
async fn hearthd_stopping_mid_send_lets_its_bridge_finish_and_nothing_is_sent_twice() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let mut daemon = home.start();
    let first = Webhook::of(&daemon, 1).await;

    graph.answer_late(true);
    model.push(Reply::text("First answer."));
    first
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.U1", "one")])
        .await;
    graph
        .wait_until("the reply taken", |calls| !calls.unanswered.is_empty())
        .await;
    // hearthd is told to stop while WhatsApp has not answered the send: it
    // tells its bridge to stop and waits for it, still serving it.
    let told = Command::new("kill")
        .args(["-TERM", &daemon.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(told.success());
    graph.answer_late(false);
    eventually("hearthd to exit", || {
        std::future::ready((!daemon.is_running()).then_some(()))
    })
    .await;

    let daemon = home.start();
    let second = Webhook::of(&daemon, 1).await;
    model.push(Reply::text("Second."));
    second
        .deliver_from(&OWNER, vec![text(&OWNER, "wamid.U2", "two")])
        .await;
    let calls = graph
        .wait_until("the second reply", |calls| calls.sent.len() >= 2)
        .await;
    assert_eq!(calls.sent_to(OWNER.wa_id), vec!["First answer.", "Second."]);
}

/// The Cloud API accepts a send and reports later, in the webhook's
/// `statuses[]`, that it failed — the 24-hour window's 131047 most often.
/// The owner gets a note naming the message and the reason.
#[tokio::test]
async fn a_failed_status_in_the_webhook_becomes_a_note() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = home();
    configure(&home, &model, &graph, ACCESS_TOKEN);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;
    let mut watcher = home.connect("watcher", None).await;
    let answer = webhook
        .deliver(&meta_webhook::failed_status(
            PHONE_NUMBER_ID,
            "wamid.out.9",
            OWNER.wa_id,
            131_047,
            "Re-engagement message",
            "Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
        ))
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let note = watcher
        .wait_for(|e| e.kind == EventKind::Note && e.source.as_deref() == Some("whatsapp"))
        .await
        .text
        .unwrap_or_default();
    assert!(
        note.starts_with(&format!(
            "whatsapp: message wamid.out.9 to +{} was not delivered: Message failed to send",
            OWNER.wa_id
        )),
        "{note}"
    );
    assert!(note.contains("(error 131047)"), "{note}");
    assert!(model.requests().is_empty(), "a note starts no turn");
}
