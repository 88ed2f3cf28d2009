//! End-to-end: the Telegram bridge. A real `hearthd` starts `hearth
//! telegram` from its `[telegram]` table; the bridge talks to a fake Bot API
//! on 127.0.0.1, and the agent to a fake model.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_bridges::telegram::inbound::{REFUSAL, WEBHOOK_NOTE};
use hearth_protocol::{EventKind, Kind};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::fake_telegram::{read_html, Failure, FakeTelegram, Sent, OWNER, STRANGER};
use hearth_tests::harness::{
    bridge_failed, bridge_pid, eventually, model_table, notes_by, TestHome,
};
use serde_json::json;
use std::process::Command;

fn home() -> TestHome {
    TestHome::new(bins!())
}

/// The fake model, and a `[telegram]` table for the fake Bot API that allows
/// the owner; the token in `secrets.env`, as a service would find it.
fn configure(home: &TestHome, model: &FakeModel, telegram: &FakeTelegram) {
    configure_with(home, model, telegram, "");
}

/// As [`configure`], with `extra` lines in the `[telegram]` table.
fn configure_with(home: &TestHome, model: &FakeModel, telegram: &FakeTelegram, extra: &str) {
    home.write_config(&format!(
        "{}\n{}{extra}",
        model_table("openai-chat", &model.base_url()),
        telegram.telegram_table()
    ));
    home.write_secrets(&hearth_tests::fake_telegram::secrets());
}

#[tokio::test]
async fn an_owners_message_reaches_the_agent_and_the_reply_comes_back() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();
    let mut watcher = home.connect("watcher", None).await;

    let gate = Gate::new();
    model.push(Reply::gated(
        Reply::text("Hello, **Ada**! Note that `x < y`."),
        &gate,
    ));
    let message_id = telegram.write(&OWNER, "hi from my phone");
    let user = watcher.wait_for(|e| e.kind == EventKind::User).await;
    assert_eq!(user.source.as_deref(), Some("telegram"));
    assert_eq!(user.text.as_deref(), Some("hi from my phone"));

    // While the agent works, the chat shows "typing…".
    telegram
        .wait_until("typing in the owner's chat", |calls| {
            calls.actions.contains(&(OWNER.id, "typing".to_string()))
        })
        .await;
    gate.open();
    let calls = telegram
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(
        calls.sent,
        vec![Sent {
            chat_id: OWNER.id,
            text: "Hello, <b>Ada</b>! Note that <code>x &lt; y</code>.".into(),
            parse_mode: Some("HTML".into()),
        }],
        "only the reply goes out, never the owner's own words"
    );
    assert_eq!(
        calls.polls[0].allowed_updates,
        json!(["message", "callback_query"])
    );
    assert_eq!(calls.polls[0].timeout, Some(30));

    // The update is confirmed after the daemon acknowledged it, and the
    // platform's message id is the idempotency key.
    let calls = telegram
        .wait_until("the next poll confirms the update", |calls| {
            calls.polls.iter().any(|poll| poll.offset.is_some())
        })
        .await;
    assert_eq!(calls.polls[0].offset, None);
    let key = format!("telegram:{}:{message_id}", OWNER.id);
    let (id, duplicate) = watcher.submit("again", "telegram", Some(&key)).await;
    assert!(duplicate);
    assert_eq!(Some(id), user.id);

    // A photo's caption goes in, the photo beside it (see tests/images.rs).
    model.push(Reply::text("Nice cat."));
    telegram.send_photo(&OWNER, Some("my cat"));
    let photo = watcher
        .wait_for(|e| e.kind == EventKind::User && e.id > user.id)
        .await;
    assert_eq!(photo.text.as_deref(), Some("my cat"));
    let calls = telegram
        .wait_until("the second reply", |calls| calls.sent.len() == 2)
        .await;
    assert_eq!(calls.sent[1].text, "Nice cat.");
}

/// The notes the Telegram bridge left in the log.
async fn telegram_notes(home: &TestHome) -> Vec<String> {
    home.history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::Note && m.source == "telegram")
        .map(|m| m.text)
        .collect()
}

#[tokio::test]
async fn a_webhook_that_blocks_polling_is_noted_once_and_polling_resumes_without_it() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    telegram.set_webhook(true);
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();

    telegram
        .wait_until("two refused polls", |calls| calls.webhook_conflicts >= 2)
        .await;
    assert_eq!(telegram_notes(&home).await, vec![WEBHOOK_NOTE.to_string()]);
    assert!(telegram.calls().webhook_deletions.is_empty());
    // `hearth status` says it too, beside the running bridge.
    let status = home.hearth_async(&["status"]).await;
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(
        status.contains(&format!("bridge   telegram running: {WEBHOOK_NOTE}")),
        "{status}"
    );

    // The user deletes the webhook themselves; the bridge polls again.
    telegram.set_webhook(false);
    model.push(Reply::text("Hi Ada."));
    telegram.write(&OWNER, "hello");
    telegram
        .wait_until("the reply", |calls| calls.sent_to(OWNER.id) == ["Hi Ada."])
        .await;
    assert_eq!(telegram_notes(&home).await, vec![WEBHOOK_NOTE.to_string()]);
    let status = home.hearth_async(&["status"]).await;
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(status.contains("bridge   telegram running\n"), "{status}");
}

#[tokio::test]
async fn with_delete_webhook_the_bridge_deletes_it_at_start_and_after_a_conflict() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    telegram.set_webhook(true);
    let home = home();
    configure_with(&home, &model, &telegram, "delete_webhook = true\n");
    let _daemon = home.start();

    model.push(Reply::text("First."));
    telegram.write(&OWNER, "one");
    let calls = telegram
        .wait_until("the first reply", |calls| {
            calls.sent_to(OWNER.id) == ["First."]
        })
        .await;
    assert_eq!(
        calls.webhook_deletions,
        vec![json!({"drop_pending_updates": false})]
    );
    assert_eq!(calls.webhook_conflicts, 0, "deleted before the first poll");

    // Someone sets a webhook again while the bridge runs.
    telegram.set_webhook(true);
    telegram
        .wait_until("a refused poll", |calls| calls.webhook_conflicts >= 1)
        .await;
    model.push(Reply::text("Second."));
    telegram.write(&OWNER, "two");
    let calls = telegram
        .wait_until("the second reply", |calls| {
            calls.sent_to(OWNER.id) == ["First.", "Second."]
        })
        .await;
    assert_eq!(calls.webhook_deletions.len(), 2);
    assert!(telegram_notes(&home).await.is_empty());
}

#[tokio::test]
async fn a_stranger_is_refused_once_and_the_agent_never_sees_the_message() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();

    telegram.write(&STRANGER, "let me in");
    telegram.write(&STRANGER, "pretty please");
    model.push(Reply::text("Hi Ada."));
    telegram.write(&OWNER, "hello");
    // The bridge takes updates in order: once the owner is answered, both
    // of the stranger's messages were handled.
    let calls = telegram
        .wait_until("the owner's reply", |calls| {
            calls.sent_to(OWNER.id) == ["Hi Ada."]
        })
        .await;
    assert_eq!(calls.sent_to(STRANGER.id), vec![REFUSAL.to_string()]);

    let log = home.history().await;
    let notes = notes_by(&log, "telegram");
    assert_eq!(
        notes,
        vec!["telegram: refused a message from user 999 (@mallory)"]
    );
    let users: Vec<&str> = log
        .iter()
        .filter(|m| m.kind == Kind::User)
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(users, vec!["hello"]);
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
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();

    let paragraph = "All work and no play makes Jack a dull boy. "
        .repeat(40)
        .trim_end()
        .to_string();
    let story = vec![paragraph.clone(); 5].join("\n\n");
    assert!(story.chars().count() > 2 * 4096);
    model.push(Reply::text(story.clone()));
    telegram.write(&OWNER, "tell me a long story");
    let calls = telegram
        .wait_until("three parts", |calls| calls.sent.len() == 3)
        .await;
    let parts = calls.sent_to(OWNER.id);
    for part in &parts {
        assert!(part.chars().count() <= 4096);
    }
    assert_eq!(parts[0], format!("{paragraph}\n\n{paragraph}"));
    assert_eq!(parts.join("\n\n"), story);
}

#[tokio::test]
async fn markup_telegram_cannot_parse_is_sent_again_as_plain_text() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();

    telegram.fail_next_send(Failure::CantParseEntities);
    model.push(Reply::text("Use **bold** here."));
    telegram.write(&OWNER, "format something");
    let calls = telegram
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(calls.attempts.len(), 2);
    assert_eq!(calls.attempts[0].text, "Use <b>bold</b> here.");
    assert_eq!(calls.attempts[0].parse_mode.as_deref(), Some("HTML"));
    assert_eq!(
        calls.sent,
        vec![Sent {
            chat_id: OWNER.id,
            text: "Use **bold** here.".into(),
            parse_mode: None,
        }]
    );
}

/// A reply with most of what the agent writes: a quote, a numbered list
/// starting at 3 with a nested one, a table, code with `<` in it, a link.
const RICH_REPLY: &str = "> *Quoted* & kept\n\n3. three\n4. four\n   - inner\n\n| name | n |\n|------|--:|\n| Ada | 36 |\n\n```rust\nif a < b {}\n```\n\nSee [the docs](https://example.org/?a=1&b=2).";

#[tokio::test]
async fn markdown_goes_as_html_telegram_accepts_and_shows_as_written() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();

    model.push(Reply::text(RICH_REPLY));
    telegram.write(&OWNER, "show me everything");
    let calls = telegram
        .wait_until("the reply", |calls| !calls.attempts.is_empty())
        .await;
    let html = "<blockquote><i>Quoted</i> &amp; kept</blockquote>\n\n\
        3. three\n4. four\n   ◦ inner\n\n\
        <pre>name |  n\n-----+---\nAda  | 36</pre>\n\n\
        <pre><code class=\"language-rust\">if a &lt; b {}</code></pre>\n\n\
        See <a href=\"https://example.org/?a=1&amp;b=2\">the docs</a>.";
    assert_eq!(
        calls.sent,
        vec![Sent {
            chat_id: OWNER.id,
            text: html.into(),
            parse_mode: Some("HTML".into()),
        }],
        "sent once, accepted by the fake's reading of Telegram's HTML"
    );
    let shown = read_html(html).unwrap();
    assert!(shown.starts_with("Quoted & kept\n\n3. three"), "{shown}");
    assert!(shown.contains("if a < b {}"), "{shown}");
}

#[tokio::test]
async fn long_markdown_goes_in_parts_each_whole_html() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();

    let code: Vec<String> = (0..400).map(|n| format!("let x{n} = a < b;")).collect();
    let reply = format!(
        "**Here** it is:\n\n```\n{}\n```\n\n_Done._",
        code.join("\n")
    );
    model.push(Reply::text(reply));
    telegram.write(&OWNER, "a lot of code");
    let calls = telegram
        .wait_until("the last part", |calls| {
            calls
                .sent
                .last()
                .is_some_and(|sent| sent.text.contains("Done."))
        })
        .await;
    assert_eq!(
        calls.attempts.len(),
        calls.sent.len(),
        "Telegram took every part"
    );
    let parts = calls.sent_to(OWNER.id);
    assert!(parts.len() >= 3, "{parts:?}");
    let lines: Vec<String> = parts
        .iter()
        .flat_map(|part| {
            let shown = read_html(part).unwrap();
            assert!(shown.encode_utf16().count() <= 4096);
            shown.lines().map(str::to_string).collect::<Vec<_>>()
        })
        .filter(|line| line.starts_with("let x"))
        .collect();
    assert_eq!(lines, code, "every line once, in order");
    for part in &parts[1..parts.len() - 1] {
        assert!(
            part.starts_with("<pre>") && part.ends_with("</pre>"),
            "{part}"
        );
    }
}

#[tokio::test]
async fn html_telegram_refuses_is_sent_again_as_the_markdown_written() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();

    telegram.fail_next_send(Failure::CantParseEntities);
    model.push(Reply::text(RICH_REPLY));
    telegram.write(&OWNER, "show me everything");
    let calls = telegram
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(calls.attempts[0].parse_mode.as_deref(), Some("HTML"));
    assert_eq!(
        calls.sent,
        vec![Sent {
            chat_id: OWNER.id,
            text: RICH_REPLY.into(),
            parse_mode: None,
        }],
        "nothing lost: the reply as the agent wrote it"
    );
}

#[tokio::test]
async fn flood_control_is_waited_out_and_the_reply_sent_once() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();

    telegram.fail_next_send(Failure::TooManyRequests { retry_after: 1 });
    model.push(Reply::text("Slowly now."));
    telegram.write(&OWNER, "hurry");
    let calls = telegram
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(calls.attempts.len(), 2, "one refused, one sent");
    assert_eq!(calls.sent_to(OWNER.id), vec!["Slowly now.".to_string()]);
}

#[tokio::test]
async fn a_chat_that_blocked_the_bot_is_skipped_with_a_note() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);
    let _daemon = home.start();
    let mut watcher = home.connect("watcher", None).await;

    telegram.fail_next_send(Failure::Blocked);
    model.push(Reply::text("You will not see this."));
    telegram.write(&OWNER, "one");
    let reply = watcher.wait_for(|e| e.kind == EventKind::Reply).await;
    let note = watcher
        .wait_for(|e| e.kind == EventKind::Note && e.source.as_deref() == Some("telegram"))
        .await;
    let text = note.text.unwrap_or_default();
    assert!(
        text.contains(&format!("could not deliver message #{}", reply.id.unwrap()))
            && text.contains("blocked"),
        "{text}"
    );

    model.push(Reply::text("But this."));
    telegram.write(&OWNER, "two");
    let calls = telegram
        .wait_until("the next reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(calls.sent_to(OWNER.id), vec!["But this.".to_string()]);
}

#[tokio::test]
async fn a_message_acknowledged_before_its_offset_was_stored_is_logged_and_answered_once() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();
    configure(&home, &model, &telegram);

    // One batch: the owner's message is acknowledged, then the bridge is
    // stuck refusing the stranger, before it stores the batch's offset.
    telegram.hold_sends(true);
    telegram.write(&OWNER, "remember the milk");
    telegram.write(&STRANGER, "hello?");
    model.push(Reply::text("Noted."));
    let daemon = home.start();
    telegram
        .wait_until("the refusal held", |calls| {
            calls.held.iter().any(|sent| sent.chat_id == STRANGER.id)
        })
        .await;
    let first = bridge_pid(&daemon, "telegram").await;
    let killed = Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    telegram
        .wait_until("the killed bridge's sends dropped", |calls| {
            calls.held.is_empty()
        })
        .await;
    telegram.hold_sends(false);

    // hearthd starts the bridge again; it gets the same batch once more:
    // the owner's message is a duplicate, the stranger is refused again.
    let calls = telegram
        .wait_until("the batch taken again", |calls| {
            calls.sent_to(STRANGER.id).len() == 1 && calls.sent_to(OWNER.id) == ["Noted."]
        })
        .await;
    let unconfirmed = calls.polls.iter().filter(|poll| poll.offset.is_none());
    assert_eq!(
        unconfirmed.count(),
        2,
        "neither bridge had an offset stored"
    );
    assert_ne!(bridge_pid(&daemon, "telegram").await, first);

    model.push(Reply::text("Eggs too, noted."));
    telegram.write(&OWNER, "and eggs");
    let calls = telegram
        .wait_until("the second reply", |calls| {
            calls.sent_to(OWNER.id).len() == 2
        })
        .await;
    assert_eq!(
        calls.sent_to(OWNER.id),
        vec!["Noted.".to_string(), "Eggs too, noted.".to_string()]
    );
    let users: Vec<String> = home
        .history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::User)
        .map(|m| m.text)
        .collect();
    assert_eq!(users, vec!["remember the milk", "and eggs"]);
    assert_eq!(model.requests().len(), 2, "each message answered once");
}

#[tokio::test]
async fn replies_logged_while_the_bridge_was_down_are_delivered_in_order() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = home();

    configure(&home, &model, &telegram);
    let mut daemon = home.start();
    let mut watcher = home.connect("watcher", None).await;
    model.push(Reply::text("hi"));
    telegram.write(&OWNER, "hello");
    let reply = watcher.wait_for(|e| e.kind == EventKind::Reply).await;
    let reply_id = reply.id.unwrap().to_string();
    // Stored right after the send; waited for, so nothing is sent twice.
    let (home_ref, reply_id) = (&home, reply_id.as_str());
    eventually("the cursor stored", || async move {
        (home_ref.stored_state("telegram.cursor").await.as_deref() == Some(reply_id)).then_some(())
    })
    .await;
    assert_eq!(telegram.calls().sent_to(OWNER.id), vec!["hi".to_string()]);
    assert!(daemon.stop());

    // Without the bridge, the terminal talks to the agent.
    home.use_model("openai-chat", &model.base_url());
    let mut daemon = home.start();
    let mut terminal = home.connect("terminal", None).await;
    for answer in ["one", "two", "three"] {
        model.push(Reply::text(answer));
        let (id, _) = terminal
            .submit(&format!("question {answer}"), "terminal", None)
            .await;
        terminal.reply_to(id).await;
    }
    assert!(daemon.stop());

    // The bridge is back: what it missed arrives in order, once.
    configure(&home, &model, &telegram);
    let _daemon = home.start();
    let calls = telegram
        .wait_until("the missed replies", |calls| {
            calls.sent_to(OWNER.id).len() >= 4
        })
        .await;
    assert_eq!(calls.sent_to(OWNER.id), vec!["hi", "one", "two", "three"]);
    model.push(Reply::text("four"));
    telegram.write(&OWNER, "and now?");
    let calls = telegram
        .wait_until("the live reply", |calls| calls.sent_to(OWNER.id).len() >= 5)
        .await;
    assert_eq!(
        calls.sent_to(OWNER.id),
        vec!["hi", "one", "two", "three", "four"]
    );
}

#[test]
fn hearth_telegram_refuses_to_start_without_a_token_or_a_table() {
    let home = home();
    home.write_config("[telegram]\ntoken_env = \"HEARTH_TEST_NO_SUCH_TOKEN\"\nallow = [1]\n");
    let output = home.hearth(&["telegram"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(
        stderr.contains("no Telegram bot token: set $HEARTH_TEST_NO_SUCH_TOKEN")
            && stderr.contains("secrets.env"),
        "{stderr}"
    );

    home.write_config("[model]\nprovider = \"openai\"\nmodel = \"m\"\n");
    let output = home.hearth(&["telegram"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(78), "{stderr}");
    assert!(stderr.contains("has no [telegram] table"), "{stderr}");
}

#[tokio::test]
async fn a_bridge_that_cannot_start_says_why_in_the_log_and_status_not_the_conversation() {
    let home = home();
    home.write_config("[telegram]\ntoken_env = \"HEARTH_TEST_NO_SUCH_TOKEN\"\nallow = [1]\n");
    let mut daemon = home.start();
    let bridge = bridge_failed(&home, "telegram").await;
    let why = bridge.error.unwrap_or_default();
    assert!(why.contains("no Telegram bot token"), "{why}");
    assert!(daemon.log_text().contains("no Telegram bot token"));
    // Operational chatter never becomes the agent's memory.
    assert!(home.history().await.iter().all(|m| m.source != "telegram"));
    assert!(daemon.is_running());
}
