//! End-to-end: the Matrix bridge against a real homeserver. A real
//! `hearthd` starts `hearth matrix` from its `[matrix]` table; the bridge's
//! hearth-matrix logs the agent's account in to Synapse (started once for
//! these tests, see `tests/support/synapse.rs`), and the owner talks to it
//! from a second Matrix client in an end-to-end encrypted direct room; the
//! agent talks to a fake model.
//!
//! Without Synapse installed these tests say so and pass; under CI they
//! fail, and `.ci/run` installs it.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_bridges::bridge::people::REFUSAL;
use hearth_bridges::matrix::sidecar::Event;
use hearth_protocol::{EventKind, Kind};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::fake_transcription::{Answer, FakeTranscription};
use hearth_tests::harness::{
    bridge_failed, bridge_pid, cursor_at_log_end, eventually, logged_user_message_with,
    process_gone, setup_args, transcription_table, until, Daemon, TestHome,
};
use hearth_tests::synapse::{hearth_matrix, Person, Synapse, PASSWORD};
use serde_json::json;
use std::process::Command;

/// A home whose bridge runs as a fresh account, and its owner in an
/// encrypted direct room with it.
struct Setup {
    home: TestHome,
    daemon: Daemon,
    /// The agent's account.
    bot: String,
    owner: Person,
    /// The owner's direct room with the agent.
    room: String,
    /// A registered user nobody allowed.
    stranger: String,
}

/// Registers the agent, its owner and a stranger; starts the daemon with
/// `[matrix]` allowing the owner (and `extra` after the model's table);
/// the owner opens an encrypted direct room with the agent and waits until
/// the agent has joined it. `None` without Synapse (outside CI).
async fn setup(model: &FakeModel, extra: &str) -> Option<Setup> {
    let synapse = Synapse::shared()?;
    let users = synapse.register(&["hearth", "owner", "eve"]).await;
    let (bot, owner, stranger) = (users[0].clone(), users[1].clone(), users[2].clone());
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n{extra}\n\n\
         [matrix]\nhomeserver = \"{}\"\nuser = \"{bot}\"\nallow = [\"{owner}\"]\ncommand = \"{}\"\n",
        model.base_url(),
        synapse.base_url,
        hearth_matrix().display(),
    ));
    home.write_secrets(&format!("MATRIX_PASSWORD={PASSWORD}\n"));
    let daemon = home.start();
    let mut owner = Person::login(synapse, &owner).await;
    let room = owner.create_dm(&bot).await;
    let joined = |e: &Event| matches!(e, Event::Member { room: r, user, membership } if *r == room && *user == bot && membership == "join");
    owner.wait_for("the agent to join", joined).await;
    Some(Setup {
        home,
        daemon,
        bot,
        owner,
        room,
        stranger,
    })
}

/// The agent's messages in the room so far: (event id, body, HTML, encrypted).
fn from_agent(setup: &Setup) -> Vec<(String, String, Option<String>, bool)> {
    setup
        .owner
        .seen
        .iter()
        .filter_map(|event| match event {
            Event::Message {
                room,
                sender,
                event_id,
                body,
                html,
                encrypted,
                ..
            } if *room == setup.room && *sender == setup.bot => {
                Some((event_id.clone(), body.clone(), html.clone(), *encrypted))
            }
            _ => None,
        })
        .collect()
}

/// Waits until the agent has sent `count` messages in the room; their bodies.
async fn agent_bodies(setup: &mut Setup, what: &str, count: usize) -> Vec<String> {
    let (room, bot) = (setup.room.clone(), setup.bot.clone());
    setup
        .owner
        .wait_until(what, |seen| {
            let from_agent = seen.iter().filter(|e| {
                matches!(e, Event::Message { room: r, sender, .. } if *r == room && *sender == bot)
            });
            from_agent.count() >= count
        })
        .await;
    from_agent(setup).into_iter().map(|m| m.1).collect()
}

fn users(log: &[hearth_protocol::Message]) -> Vec<String> {
    log.iter()
        .filter(|m| m.kind == Kind::User)
        .map(|m| m.text.clone())
        .collect()
}

#[tokio::test]
async fn an_owners_encrypted_message_reaches_the_agent_and_the_reply_comes_back_as_html() {
    let model = FakeModel::start().await;
    let Some(mut setup) = setup(&model, "").await else {
        return;
    };
    let mut watcher = setup.home.connect("watcher", None).await;
    let markdown = "# Plan\n\nHello, **Ada**! Run `x < y`, *carefully*:\n\n1. one\n2. two";
    model.push(Reply::text(markdown));
    let sent = setup
        .owner
        .send(&setup.room, "hi from my phone", None)
        .await;
    let user = watcher.wait_for(|e| e.kind == EventKind::User).await;
    assert_eq!(user.source.as_deref(), Some("matrix"));
    assert_eq!(user.text.as_deref(), Some("hi from my phone"));

    let bodies = agent_bodies(&mut setup, "the reply", 1).await;
    assert_eq!(bodies, vec![markdown.to_string()], "only the reply");
    let (_, _, html, encrypted) = from_agent(&setup).remove(0);
    assert!(encrypted, "the reply is end-to-end encrypted");
    // Markdown as Matrix shows it: the formatted body beside the plain one.
    assert_eq!(
        html.as_deref(),
        Some("<h3>Plan</h3><p>Hello, <strong>Ada</strong>! Run <code>x &lt; y</code>, <em>carefully</em>:</p><ol><li>one</li><li>two</li></ol>")
    );

    // The event id of the owner's message is its idempotency key.
    let key = format!("matrix:{sent}");
    let (id, duplicate) = watcher.submit("again", "matrix", Some(&key)).await;
    assert!(duplicate);
    assert_eq!(Some(id), user.id);

    // A message in a thread is answered in that thread.
    model.push(Reply::text("In the thread."));
    let asked = json!({ "room": setup.room, "body": "and here?", "thread": sent });
    setup.owner.call("send", asked).await;
    agent_bodies(&mut setup, "the reply in the thread", 2).await;
    let threaded = setup.owner.seen.iter().find_map(|event| match event {
        Event::Message { body, thread, .. } if body == "In the thread." => Some(thread.clone()),
        _ => None,
    });
    assert_eq!(threaded, Some(Some(sent.clone())));

    // The store is the user's alone.
    let store = setup.home.path().join("matrix");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&store).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{}", store.display());
    let session = std::fs::metadata(store.join("session.json")).unwrap();
    assert_eq!(session.permissions().mode() & 0o777, 0o600);
}

#[tokio::test]
async fn a_strangers_invite_is_declined_and_nothing_of_theirs_reaches_the_agent() {
    let model = FakeModel::start().await;
    let Some(mut setup) = setup(&model, "").await else {
        return;
    };
    let synapse = Synapse::shared().unwrap();
    let mut eve = Person::login(synapse, &setup.stranger).await;
    let eves_room = eve.create_dm(&setup.bot).await;
    let bot = setup.bot.clone();
    eve.wait_for("the invite declined", |e| {
        matches!(e, Event::Member { room, user, membership } if *room == eves_room && *user == bot && membership == "leave")
    })
    .await;

    // In a room the owner shares with the agent and with her, Eve is
    // refused once, and her words never reach the agent.
    setup
        .owner
        .call(
            "invite",
            json!({ "room": setup.room, "user": setup.stranger }),
        )
        .await;
    let room = setup.room.clone();
    eve.wait_for(
        "the owner's invite",
        |e| matches!(e, Event::Invite { room: r, .. } if *r == room),
    )
    .await;
    eve.call("join", json!({ "room": setup.room })).await;
    let (stranger, bot) = (setup.stranger.clone(), setup.bot.clone());
    setup
        .owner
        .wait_for("Eve in the room", |e| {
            matches!(e, Event::Member { room: r, user, membership } if *r == room && *user == stranger && membership == "join")
        })
        .await;
    eve.wait_for("the agent's membership", |e| {
        matches!(e, Event::Member { room: r, user, membership } if *r == room && *user == bot && membership == "join")
    })
    .await;
    eve.send(&setup.room, "let me in", None).await;
    eve.send(&setup.room, "pretty please", None).await;
    let bodies = agent_bodies(&mut setup, "the refusal", 1).await;
    assert_eq!(bodies, vec![REFUSAL.to_string()]);

    model.push(Reply::text("Hi Ada."));
    setup.owner.send(&setup.room, "hello", None).await;
    let bodies = agent_bodies(&mut setup, "the owner's reply", 2).await;
    assert_eq!(bodies, vec![REFUSAL.to_string(), "Hi Ada.".to_string()]);
    let log = setup.home.history().await;
    assert_eq!(users(&log), vec!["hello"]);
    let notes = hearth_tests::harness::notes_by(&log, "matrix");
    assert_eq!(
        notes,
        vec![
            format!(
                "matrix: declined an invite from {}, who is not allowed",
                setup.stranger
            ),
            format!("matrix: refused a message from {}", setup.stranger),
        ]
    );
    let body = model.requests()[0].body.to_string();
    assert!(!body.contains("let me in") && !body.contains("pretty please"));
}

#[tokio::test]
async fn a_restart_mid_delivery_loses_and_doubles_nothing() {
    let model = FakeModel::start().await;
    let Some(mut setup) = setup(&model, "").await else {
        return;
    };
    // The reply is on its way when the bridge is killed.
    let gate = Gate::new();
    model.push(Reply::gated(Reply::text("Noted."), &gate));
    setup
        .owner
        .send(&setup.room, "remember the milk", None)
        .await;
    let home = &setup.home;
    eventually("the owner's message in the log", || async move {
        users(&home.history().await)
            .contains(&"remember the milk".to_string())
            .then_some(())
    })
    .await;
    let first = bridge_pid(&setup.daemon, "matrix").await;
    let killed = Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    until("the killed bridge gone", || process_gone(first)).await;
    gate.open();

    // What is written while no bridge runs waits for the next one.
    model.push(Reply::text("Eggs too, noted."));
    setup.owner.send(&setup.room, "and eggs", None).await;
    let bodies = agent_bodies(&mut setup, "both replies", 2).await;
    assert_eq!(bodies, vec!["Noted.", "Eggs too, noted."]);
    assert_ne!(bridge_pid(&setup.daemon, "matrix").await, first);
    cursor_at_log_end(&setup.home, "matrix.cursor").await;

    // A clean restart of everything repeats nothing either.
    assert!(setup.daemon.stop());
    setup.daemon = setup.home.start();
    model.push(Reply::text("Bread, noted."));
    setup.owner.send(&setup.room, "and bread", None).await;
    let bodies = agent_bodies(&mut setup, "the third reply", 3).await;
    assert_eq!(bodies, vec!["Noted.", "Eggs too, noted.", "Bread, noted."]);
    assert_eq!(
        users(&setup.home.history().await),
        vec!["remember the milk", "and eggs", "and bread"]
    );
    assert_eq!(model.requests().len(), 3, "each message answered once");
}

const WRITE: &str = r#"{"path": "a.txt", "content": "hello"}"#;

#[tokio::test]
async fn an_approval_is_answered_by_a_reaction_or_a_reply() {
    let model = FakeModel::start().await;
    let Some(mut setup) = setup(&model, "[approvals]\ntools = [\"write_file\"]\n").await else {
        return;
    };
    let workdir = setup.home.work_dir();
    model.push(Reply::text("hello Ada"));
    setup.owner.send(&setup.room, "hi", None).await;
    agent_bodies(&mut setup, "the first reply", 1).await;

    model.push(Reply::tool_call("write_file", WRITE));
    model.push(Reply::text("written"));
    setup
        .owner
        .send(&setup.room, "write it, please", None)
        .await;
    agent_bodies(&mut setup, "the request", 2).await;
    let (request_id, request, _, _) = from_agent(&setup).remove(1);
    assert!(
        request.starts_with("hearth asks to run write_file "),
        "{request}"
    );
    assert!(request.contains("React 👍 to allow or 👎 to deny"));
    assert!(!workdir.join("a.txt").exists());

    setup.owner.react(&setup.room, &request_id, "👍").await;
    let bodies = agent_bodies(&mut setup, "the answer and the reply", 4).await;
    assert!(bodies[2..].contains(&"Allowed.".to_string()), "{bodies:?}");
    assert!(bodies[2..].contains(&"written".to_string()), "{bodies:?}");
    assert_eq!(
        std::fs::read_to_string(workdir.join("a.txt")).unwrap(),
        "hello"
    );

    // The next request is denied by a reply to it.
    model.push(Reply::tool_call("write_file", WRITE));
    model.push(Reply::text("not written"));
    setup.owner.send(&setup.room, "write it again", None).await;
    agent_bodies(&mut setup, "the second request", 5).await;
    let (second_id, second, _, _) = from_agent(&setup).remove(4);
    assert!(second.starts_with("hearth asks"), "{second}");
    setup.owner.send(&setup.room, "No", Some(&second_id)).await;
    let bodies = agent_bodies(&mut setup, "the denial and the reply", 7).await;
    assert!(bodies[5..].contains(&"Denied.".to_string()), "{bodies:?}");
    assert!(
        bodies[5..].contains(&"not written".to_string()),
        "{bodies:?}"
    );
    let log = setup.home.history().await;
    let owner = setup.owner.user.clone();
    let notes: Vec<&str> = log
        .iter()
        .filter(|m| m.kind == Kind::Note && m.text.starts_with("approval "))
        .map(|m| m.text.as_str())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.ends_with(&format!("allowed by matrix ({owner})"))),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.ends_with(&format!("denied by matrix ({owner})"))),
        "{notes:?}"
    );
    // The answers were never the agent's messages.
    assert_eq!(
        users(&log),
        vec!["hi", "write it, please", "write it again"]
    );
}

const VOICE: &[u8] = b"\0\0\0\x18ftypM4A \0\0\0\0 a voice note from the phone";

#[tokio::test]
async fn a_voice_note_is_transcribed_and_a_photo_goes_in_as_an_image() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("on it"));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::Text {
        text: "remind me to water the plants".into(),
        seconds: 4.0,
    });
    let extra = transcription_table(&transcription.base_url());
    let Some(setup) = setup(&model, &extra).await else {
        return;
    };
    // Encrypted in the room: hearth-matrix fetches and decrypts it.
    setup
        .owner
        .send_file(&setup.room, "voice.m4a", "audio/mp4", "voice", VOICE)
        .await;
    let home = &setup.home;
    let heard = logged_user_message_with(home, "water the plants").await;
    assert!(heard.text.starts_with("[voice"), "{}", heard.text);
    let received = transcription.wait_for(1).await;
    assert_eq!(received[0].file, VOICE);

    let photo = hearth_tests::fake_telegram::photo_bytes();
    setup
        .owner
        .send_file(&setup.room, "cat.png", "image/png", "image", &photo)
        .await;
    let cat = eventually("the photo", || async move {
        home.history()
            .await
            .into_iter()
            .find(|m| m.kind == Kind::User && !m.images.is_empty())
    })
    .await;
    assert_eq!(cat.images.len(), 1, "the photo goes in as an image");
    let notes = hearth_tests::harness::notes_by(&setup.home.history().await, "matrix");
    assert!(notes.is_empty(), "{notes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_the_agent_shows_reaches_the_room_encrypted_as_it_is() {
    let model = FakeModel::start().await;
    let Some(mut setup) = setup(&model, "").await else {
        return;
    };
    let photo = hearth_tests::fake_telegram::photo_bytes();
    std::fs::write(setup.home.work_dir().join("cat.png"), &photo).unwrap();
    model.push(Reply::tool_call("show_image", r#"{"path": "cat.png"}"#));
    model.push(Reply::text("That is the cat."));
    setup.owner.send(&setup.room, "show me the cat", None).await;

    let (room, bot) = (setup.room.clone(), setup.bot.clone());
    let image = setup
        .owner
        .wait_for("the agent's image", |event| {
            matches!(event, Event::Message { room: r, sender, kind, .. }
                if *r == room && *sender == bot && kind == "image")
        })
        .await;
    let Event::Message {
        encrypted, media, ..
    } = image
    else {
        unreachable!("waited for a message");
    };
    assert!(encrypted, "an image in an encrypted room goes encrypted");
    let media = media.expect("the image's file");
    assert_eq!(media.media_type.as_deref(), Some("image/png"));
    let data = media
        .data
        .expect("the owner's client fetched and decrypted it");
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    assert_eq!(bytes, photo, "Matrix takes the image as it is");
    let replies = agent_bodies(&mut setup, "the reply after the image", 2).await;
    assert!(
        replies.iter().any(|body| body.contains("That is the cat.")),
        "{replies:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_proves_the_password_with_one_login_and_writes_the_table() {
    let Some(synapse) = Synapse::shared() else {
        return;
    };
    let users = synapse.register(&["hearth", "owner"]).await;
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let base_url = model.base_url();
    let command = hearth_matrix().display().to_string();
    let matrix = [
        "--yes",
        "--no-service",
        "--matrix-homeserver",
        synapse.base_url.as_str(),
        "--matrix-user",
        users[0].as_str(),
        "--matrix-allow",
        users[1].as_str(),
        "--matrix-command",
        command.as_str(),
    ];
    let args = [vec!["setup"], setup_args(&base_url, &matrix)].concat();

    // A wrong password is said now, and nothing about Matrix is written.
    home.write_secrets("HEARTH_TEST_KEY=sk-test\nMATRIX_PASSWORD=wrong\n");
    model.push(Reply::text("ready"));
    let output = home.hearth_async(&args).await;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!output.status.success(), "{said}");
    assert!(
        said.contains(&format!("refused to log {} in", users[0])),
        "{said}"
    );
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(!config.contains("[matrix]"), "{config}");

    home.write_secrets(&format!(
        "HEARTH_TEST_KEY=sk-test\nMATRIX_PASSWORD={PASSWORD}\n"
    ));
    model.push(Reply::text("ready"));
    let output = home.hearth_async(&args).await;
    let said = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{said}");
    assert!(said.contains("✓ saved [matrix]"), "{said}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let written =
        hearth_bridges::matrix::MatrixConfig::parse(&home.path().join("config.toml"), &config)
            .unwrap();
    assert_eq!(written.homeserver, synapse.base_url);
    assert_eq!(written.user, users[0]);
    assert_eq!(written.allow, vec![users[1].clone()]);
    assert!(config.contains("[matrix]"), "{config}");
}

#[tokio::test]
async fn a_bridge_without_hearth_matrix_says_why_in_status_not_the_conversation() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\n\n[matrix]\nhomeserver = \"http://127.0.0.1:9\"\n\
         user = \"@hearth:localhost\"\nallow = [\"@you:localhost\"]\n\
         command = \"/nonexistent/hearth-matrix\"\n",
        model.base_url()
    ));
    home.write_secrets("MATRIX_PASSWORD=unused\n");
    let mut daemon = home.start();
    let bridge = bridge_failed(&home, "matrix").await;
    let why = bridge.error.unwrap_or_default();
    assert!(
        why.contains("cargo install --path client/matrix-client"),
        "{why}"
    );
    assert!(home.history().await.iter().all(|m| m.source != "matrix"));
    assert!(daemon.is_running());
}
