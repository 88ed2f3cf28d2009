//! End-to-end: the Discord bridge. A real `hearthd` starts `hearth
//! discord` from its `[discord]` table; the bridge talks to a fake Discord
//! (its REST API and its Gateway WebSocket, on 127.0.0.1), and the agent to
//! a fake model.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_bridges::bridge::people::REFUSAL;
use hearth_protocol::{EventKind, Kind};
use hearth_tests::bins;
use hearth_tests::fake_discord::{
    secrets, FakeDiscord, CHANNEL_ID, FRIEND, OTHER_CHANNEL_ID, OWNER, STRANGER,
};
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::fake_transcription::{Answer, FakeTranscription};
use hearth_tests::harness::{
    bridge_failed, bridge_pid, cursor_at_log_end, eventually, logged_user_message,
    logged_user_message_with, setup_args, transcription_table, TestHome,
};
use std::process::Command;
use std::time::Duration;

mod catch_up;

/// The fake model, and a `[discord]` table for the fake Discord that
/// allows the owner (`table_extra` inside it); `extra` goes after the
/// model's table.
fn home_for(model: &FakeModel, discord: &FakeDiscord, table_extra: &str, extra: &str) -> TestHome {
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n{extra}\n\n{}",
        model.base_url(),
        discord.discord_table(table_extra),
    ));
    home.write_secrets(&secrets());
    home
}

/// The notes the Discord bridge left in the log.
async fn discord_notes(home: &TestHome) -> Vec<String> {
    home.history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::Note && m.source == "discord")
        .map(|m| m.text)
        .collect()
}

/// The texts of the people's messages the agent got, in order.
async fn users(home: &TestHome) -> Vec<String> {
    home.history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::User)
        .map(|m| m.text)
        .collect()
}

#[tokio::test]
async fn a_direct_message_reaches_the_agent_and_the_reply_comes_back_in_discords_markdown() {
    let model = FakeModel::start().await;
    let discord = FakeDiscord::start().await;
    let home = home_for(&model, &discord, "", "");
    let _daemon = home.start();
    let mut watcher = home.connect("watcher", None).await;
    let dm = discord.dm_of(&OWNER);

    let gate = Gate::new();
    model.push(Reply::gated(
        Reply::text("# Plan\n\nHello, **Ada**! Run `x < y` on snake_case_files, *carefully*:\n\n1. one\n2. two\n\n@everyone"),
        &gate,
    ));
    let message_id = discord.write(&OWNER, "hi from Discord");
    let user = watcher.wait_for(|e| e.kind == EventKind::User).await;
    assert_eq!(user.source.as_deref(), Some("discord"));
    assert_eq!(user.text.as_deref(), Some("hi from Discord"));

    // The bot identified with the message content intent (1 << 15), beside
    // direct messages (1 << 12) and server messages (1 << 9).
    let calls = discord.calls();
    let intents = calls.identifies[0]["intents"].as_u64().unwrap();
    assert_eq!(intents, (1 << 15) | (1 << 12) | (1 << 9));

    // While the agent works, the chat shows "typing…".
    discord
        .wait_until("typing in the owner's DMs", |calls| {
            calls.typing.contains(&dm)
        })
        .await;
    gate.open();
    let calls = discord
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(
        calls.sent.len(),
        1,
        "only the reply, never the owner's words"
    );
    let reply = &calls.sent[0];
    assert_eq!(reply.channel, dm);
    // Markdown as Discord shows it: its own marks, text escaped where
    // Discord would read one, nobody pinged.
    assert_eq!(
        reply.content,
        "**Plan**\n\nHello, **Ada**! Run `x < y` on snake\\_case\\_files, *carefully*:\n\n1. one\n2. two\n\n@everyone"
    );
    assert_eq!(reply.allowed_mentions["parse"], serde_json::json!([]));
    assert_eq!(calls.dms_opened, vec![OWNER.id]);

    // Discord's id of the message is its idempotency key.
    let key = format!("discord:{message_id}");
    let (id, duplicate) = watcher.submit("again", "discord", Some(&key)).await;
    assert!(duplicate);
    assert_eq!(Some(id), user.id);

    // A long reply goes in parts of at most 2,000 characters, in order.
    let paragraph = "word ".repeat(300).trim_end().to_string();
    model.push(Reply::text([paragraph.as_str(); 3].join("\n\n")));
    discord.write(&OWNER, "tell me more");
    // Each paragraph is 1,499 characters: two do not fit in one message.
    let calls = discord
        .wait_until("the long reply", |calls| calls.sent.len() == 4)
        .await;
    for part in &calls.sent[1..] {
        assert_eq!(part.content, paragraph);
    }
    // The Gateway's heart beats and is answered.
    discord
        .wait_until("a heartbeat", |calls| calls.heartbeats > 0)
        .await;
}

#[tokio::test]
async fn a_stranger_is_refused_once_and_other_channels_are_not_read() {
    let model = FakeModel::start().await;
    let discord = FakeDiscord::start().await;
    let table = format!("channel = {CHANNEL_ID}");
    let home = home_for(&model, &discord, &table, "");
    let _daemon = home.start();

    discord.write(&STRANGER, "let me in");
    discord.write(&STRANGER, "pretty please");
    discord.write_in(&STRANGER, CHANNEL_ID, "me too, in the channel");
    discord.write_in(&OWNER, OTHER_CHANNEL_ID, "not for the bot");
    model.push(Reply::text("Hi Ada."));
    discord.write(&OWNER, "hello");
    // Messages are taken in order: once the owner is answered, the ones
    // before were handled.
    let calls = discord
        .wait_until("the owner's reply", |calls| {
            calls.sent_in(discord.dm_of(&OWNER)) == ["Hi Ada."]
        })
        .await;
    assert_eq!(
        calls.sent_in(discord.dm_of(&STRANGER)),
        vec![REFUSAL.to_string()]
    );
    assert_eq!(calls.sent_in(CHANNEL_ID), vec![REFUSAL.to_string()]);
    assert!(calls.sent_in(OTHER_CHANNEL_ID).is_empty());
    let stranger = format!("discord: refused a message from {} (mallory)", STRANGER.id);
    assert_eq!(discord_notes(&home).await, vec![stranger.clone(), stranger]);
    assert_eq!(users(&home).await, vec!["hello"]);
    let body = model.requests()[0].body.to_string();
    assert!(!body.contains("let me in") && !body.contains("not for the bot"));

    // The owner in the allowlisted channel is answered there, as well as in
    // their direct messages.
    model.push(Reply::text("Hi all."));
    discord.write_in(&OWNER, CHANNEL_ID, "hello channel");
    let calls = discord
        .wait_until("the reply in the channel", |calls| {
            calls.sent_in(CHANNEL_ID).contains(&"Hi all.".to_string())
        })
        .await;
    assert_eq!(
        calls.sent_in(discord.dm_of(&OWNER)),
        vec!["Hi Ada.", "Hi all."]
    );
}

#[tokio::test]
async fn a_restart_mid_delivery_loses_and_doubles_nothing() {
    let model = FakeModel::start().await;
    let discord = FakeDiscord::start().await;
    let home = home_for(&model, &discord, "", "");
    let daemon = home.start();
    let dm = discord.dm_of(&OWNER);

    // The reply is on its way when the bridge is killed.
    discord.hold_sends(true);
    model.push(Reply::text("Noted."));
    discord.write(&OWNER, "remember the milk");
    discord
        .wait_until("the reply held", |calls| calls.held == 1)
        .await;
    let first = bridge_pid(&daemon, "discord").await;
    let killed = Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    // hearthd starts it again; it identifies anew.
    discord
        .wait_until("a new session", |calls| calls.identifies.len() == 2)
        .await;
    discord.hold_sends(false);

    model.push(Reply::text("Eggs too, noted."));
    discord.write(&OWNER, "and eggs");
    let calls = discord
        .wait_until("both replies", |calls| calls.sent_in(dm).len() == 2)
        .await;
    assert_eq!(calls.sent_in(dm), vec!["Noted.", "Eggs too, noted."]);
    assert_ne!(bridge_pid(&daemon, "discord").await, first);
    cursor_at_log_end(&home, "discord.cursor").await;

    // A clean restart of everything repeats nothing either.
    let mut daemon = daemon;
    assert!(daemon.stop());
    discord
        .wait_until("the stopped bridge gone", |calls| calls.sessions == 0)
        .await;
    let _daemon = home.start();
    discord
        .wait_until("the third session", |calls| calls.identifies.len() == 3)
        .await;
    model.push(Reply::text("Bread, noted."));
    discord.write(&OWNER, "and bread");
    let calls = discord
        .wait_until("the third reply", |calls| calls.sent_in(dm).len() >= 3)
        .await;
    assert_eq!(
        calls.sent_in(dm),
        vec!["Noted.", "Eggs too, noted.", "Bread, noted."]
    );
    assert_eq!(
        users(&home).await,
        vec!["remember the milk", "and eggs", "and bread"]
    );
    assert_eq!(model.requests().len(), 3, "each message answered once");
}

const WRITE: &str = r#"{"path": "a.txt", "content": "hello"}"#;

#[tokio::test]
async fn an_approval_is_answered_with_a_button() {
    let model = FakeModel::start().await;
    let discord = FakeDiscord::start().await;
    let home = home_for(
        &model,
        &discord,
        "",
        "[approvals]\ntools = [\"write_file\"]\n",
    );
    let _daemon = home.start();
    let workdir = home.path().join("agents/hearth/work");
    let dm = discord.dm_of(&OWNER);

    model.push(Reply::tool_call("write_file", WRITE));
    model.push(Reply::text("written"));
    discord.write(&OWNER, "write it, please");
    let calls = discord
        .wait_until("the request", |calls| !calls.sent.is_empty())
        .await;
    let request = calls.sent[0].clone();
    assert_eq!(request.channel, dm);
    assert!(
        request
            .content
            .starts_with("hearth asks to run write\\_file "),
        "{}",
        request.content
    );
    assert_eq!(request.buttons.len(), 2, "Allow and Deny");
    assert!(!workdir.join("a.txt").exists());

    // A stranger's press is refused, to them alone; the owner's answers.
    let refused = discord.press(&STRANGER, &request, &request.buttons[0]);
    let allowed = discord.press(&OWNER, &request, &request.buttons[0]);
    let calls = discord
        .wait_until("the reply", |calls| {
            calls.sent_in(dm).contains(&"written".to_string()) && calls.callbacks.len() == 2
        })
        .await;
    let stranger = &calls.callbacks[0];
    assert_eq!(stranger.interaction, refused);
    assert!(stranger.ephemeral && stranger.kind == 4);
    assert_eq!(stranger.content, REFUSAL);
    let owner = &calls.callbacks[1];
    assert_eq!(owner.interaction, allowed);
    assert_eq!(owner.kind, 7, "the request's message is updated");
    assert!(owner.buttons_removed);
    assert!(
        owner.content.starts_with(&request.content)
            && owner.content.ends_with("**Allowed by ada.**"),
        "{}",
        owner.content
    );
    assert_eq!(
        std::fs::read_to_string(workdir.join("a.txt")).unwrap(),
        "hello"
    );

    // The next request is denied.
    model.push(Reply::tool_call("write_file", WRITE));
    model.push(Reply::text("not written"));
    discord.write(&OWNER, "write it again");
    let calls = discord
        .wait_until("the second request", |calls| {
            calls.sent.iter().filter(|s| !s.buttons.is_empty()).count() == 2
        })
        .await;
    let second = calls
        .sent
        .iter()
        .rfind(|s| !s.buttons.is_empty())
        .unwrap()
        .clone();
    discord.press(&OWNER, &second, &second.buttons[1]);
    let calls = discord
        .wait_until("the denial and the reply", |calls| {
            calls.sent_in(dm).contains(&"not written".to_string()) && calls.callbacks.len() == 3
        })
        .await;
    assert!(calls.callbacks[2].content.ends_with("**Denied by ada.**"));
    // Pressed again, a decided request says so and changes nothing.
    discord.press(&OWNER, &second, &second.buttons[0]);
    let calls = discord
        .wait_until("the late press answered", |calls| {
            calls.callbacks.len() == 4
        })
        .await;
    assert!(
        !calls.callbacks[3].content.contains("Allowed"),
        "{:?}",
        calls.callbacks[3]
    );
    let notes: Vec<String> = home
        .history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::Note && m.text.starts_with("approval "))
        .map(|m| m.text)
        .collect();
    let by = format!("by discord ({})", OWNER.id);
    assert!(
        notes.iter().any(|n| n.ends_with(&format!("allowed {by}"))),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.ends_with(&format!("denied {by}"))),
        "{notes:?}"
    );
    assert_eq!(
        discord_notes(&home).await,
        vec![format!(
            "discord: refused a message from {} (mallory)",
            STRANGER.id
        )]
    );
    assert_eq!(
        users(&home).await,
        vec!["write it, please", "write it again"]
    );
}

#[tokio::test]
async fn a_rate_limit_is_waited_out_and_a_refused_message_is_noted() {
    let model = FakeModel::start().await;
    let discord = FakeDiscord::start().await;
    let home = home_for(&model, &discord, "", "");
    let _daemon = home.start();
    let dm = discord.dm_of(&OWNER);

    // Discord answers 429: the send goes again only once the wait it asked
    // for is over, and then once.
    discord.rate_limit_next(0.8);
    model.push(Reply::text("After the wait."));
    discord.write(&OWNER, "hello");
    let calls = discord
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    assert_eq!(calls.sent_in(dm), vec!["After the wait."]);
    assert_eq!(calls.rate_limited_at.len(), 1);
    assert_eq!(calls.sends_at.len(), 2);
    let waited = calls.sends_at[1] - calls.rate_limited_at[0];
    assert!(
        waited >= Duration::from_millis(800),
        "sent again after {waited:?}"
    );

    // A message Discord will not take is skipped with a note, and the
    // next goes out.
    discord.refuse_next(403, 50007, "Cannot send messages to this user");
    model.push(Reply::text("Never shown."));
    discord.write(&OWNER, "one");
    let note = eventually("the note", || async {
        discord_notes(&home).await.into_iter().next()
    })
    .await;
    assert!(
        note.starts_with("discord: could not deliver message #")
            && note.contains(&format!("to user {}", OWNER.id))
            && note.contains("Cannot send messages to this user"),
        "{note}"
    );
    model.push(Reply::text("Shown."));
    discord.write(&OWNER, "two");
    let calls = discord
        .wait_until("the next reply", |calls| calls.sent_in(dm).len() == 2)
        .await;
    assert_eq!(calls.sent_in(dm), vec!["After the wait.", "Shown."]);
}

const VOICE: &[u8] = b"OggS\0\x02 a voice message from the app";

#[tokio::test]
async fn a_voice_message_is_transcribed_and_a_photo_and_a_document_go_in() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("on it"));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::Text {
        text: "remind me to water the plants".into(),
        seconds: 4.0,
    });
    let discord = FakeDiscord::start().await;
    let extra = transcription_table(&transcription.base_url());
    let home = home_for(&model, &discord, "", &extra);
    let _daemon = home.start();

    discord.send_file(&OWNER, "audio/ogg", "voice-message.ogg", VOICE, true, "");
    let heard = logged_user_message_with(&home, "water the plants").await;
    assert!(heard.text.starts_with("[voice"), "{}", heard.text);
    let received = transcription.wait_for(1).await;
    assert_eq!(received[0].file, VOICE);

    let photo = hearth_tests::fake_telegram::photo_bytes();
    discord.send_file(&OWNER, "image/png", "cat.png", &photo, false, "my cat");
    let pdf = hearth_daemon::documents::tiny_pdf(&["Deposit: two months' rent."]);
    discord.send_file(
        &OWNER,
        "application/pdf",
        "lease.pdf",
        &pdf,
        false,
        "what is the deposit?",
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
    assert_eq!(discord.calls().fetched.len(), 3);
    assert!(discord_notes(&home).await.is_empty());
}

#[tokio::test]
async fn a_refused_token_stops_the_bridge_and_status_says_why_not_the_conversation() {
    let model = FakeModel::start().await;
    let discord = FakeDiscord::start().await;
    let home = home_for(&model, &discord, "", "");
    home.write_secrets("HEARTH_TEST_DISCORD_TOKEN=not-the-token\n");
    let mut daemon = home.start();
    let bridge = bridge_failed(&home, "discord").await;
    let why = bridge.error.unwrap_or_default();
    assert!(why.contains("Discord refused the bot token"), "{why}");
    assert!(
        !why.contains("not-the-token"),
        "the token never shows: {why}"
    );
    assert!(discord.calls().unauthorized >= 1);
    assert!(home.history().await.iter().all(|m| m.source != "discord"));
    assert!(daemon.is_running());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_pairs_the_owner_by_a_code_sent_to_the_bot() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let discord = FakeDiscord::start().await;
    let home = TestHome::new(bins!());
    let api_base = discord.api_base();
    let base_url = model.base_url();
    let channel = CHANNEL_ID.to_string();
    let discord_args = [
        "--discord-token-env",
        "HEARTH_TEST_DISCORD_TOKEN",
        "--discord-api-base",
        &api_base,
        "--discord-pair",
        "--discord-channel",
        &channel,
        "--no-service",
        "--yes",
    ];
    let args = [vec!["setup"], setup_args(&base_url, &discord_args)].concat();
    let mut child = home
        .hearth_command(&args)
        .env("HEARTH_TEST_KEY", "sk-in-env")
        .env(
            "HEARTH_TEST_DISCORD_TOKEN",
            hearth_tests::fake_discord::TOKEN,
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("setup runs");
    let stdout = child.stdout.take().expect("stdout piped");
    // Reads what setup says until it shows the code.
    let (code_tx, code_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let code = line.trim();
            if code.len() == 6 && code.chars().all(|c| c.is_ascii_digit()) {
                let _ = code_tx.send(code.to_string());
            }
            lines.push(line);
        }
        lines.join("\n")
    });
    let code =
        tokio::task::spawn_blocking(move || code_rx.recv_timeout(hearth_tests::harness::DEADLINE))
            .await
            .unwrap()
            .expect("setup shows a code");
    // Setup's own session is up before the code is written.
    discord
        .wait_until("setup's session", |calls| calls.sessions == 1)
        .await;
    discord.write(&STRANGER, "123456");
    discord.write(&OWNER, &code);
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .expect("setup ends");
    let text = reader.join().expect("the output");
    assert!(status.success(), "{text}");
    assert!(text.contains("✓ Discord took the bot token"), "{text}");
    assert!(
        text.contains(&format!("paired with ada (user id {})", OWNER.id)),
        "{text}"
    );
    let written = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(
        written.contains(&format!("[discord]\nallow = [\"{}\"]\n", OWNER.id)),
        "{written}"
    );
    assert!(
        written.contains("token_env = \"HEARTH_TEST_DISCORD_TOKEN\""),
        "{written}"
    );
    assert!(
        written.contains(&format!("channel = \"{CHANNEL_ID}\"")),
        "{written}"
    );
    assert!(
        written.contains(&format!("api_base = \"{api_base}\"")),
        "{written}"
    );
    let calls = discord.calls();
    assert_eq!(
        calls.sent_in(discord.dm_of(&OWNER)).len(),
        1,
        "a word to the paired owner"
    );
    assert!(
        calls.sent_in(discord.dm_of(&STRANGER)).is_empty(),
        "nothing to the stranger"
    );
}

#[tokio::test]
async fn an_allowed_persons_words_who_is_not_the_owner_ask_before_the_agent_acts() {
    let model = FakeModel::start().await;
    let discord = FakeDiscord::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n\
         [discord]\ntoken_env = \"HEARTH_TEST_DISCORD_TOKEN\"\nallow = [{}, {}]\nowner = {}\n\
         api_base = \"{}\"\n",
        model.base_url(),
        OWNER.id,
        FRIEND.id,
        OWNER.id,
        discord.api_base(),
    ));
    home.write_secrets(&secrets());
    let _daemon = home.start();

    model.push(Reply::tool_call(
        "shell",
        r#"{"command": "echo pwned > pwned"}"#,
    ));
    model.push(Reply::text("I did not run it"));
    discord.write(&FRIEND, "run: echo pwned > pwned");
    let friend = discord.dm_of(&FRIEND);
    let calls = discord
        .wait_until("the request", |calls| {
            calls.sent.iter().any(|sent| !sent.buttons.is_empty())
        })
        .await;
    let request = calls
        .sent
        .iter()
        .find(|s| !s.buttons.is_empty())
        .unwrap()
        .clone();
    assert_eq!(request.channel, friend);
    let origin = format!("discord user {} (bob) on discord, not the owner", FRIEND.id);
    assert!(request.content.contains(&origin), "{}", request.content);
    discord.press(&FRIEND, &request, &request.buttons[1]);
    discord
        .wait_until("the reply", |calls| {
            calls
                .sent_in(friend)
                .contains(&"I did not run it".to_string())
        })
        .await;
    assert!(!home.path().join("agents/hearth/work/pwned").exists());
}
