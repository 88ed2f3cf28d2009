//! End-to-end: the heartbeat through a real hearthd with the fake model.
//! A beat fires only between turns, after a turn warmed the cache; its
//! "nothing to do" answer is logged with the status `quiet`, which no
//! bridge sends. (When a beat fires, and that missed beats are one, is
//! pinned without a clock in `daemon/src/heartbeat.rs`.)

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_bridges::bridge::delivery::outgoing_text;
use hearth_protocol::bridge_tables::Outgoing;
use hearth_protocol::{EventKind, Kind};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::TestHome;

#[tokio::test]
async fn a_beat_fires_after_a_turn_and_its_quiet_answer_reaches_no_bridge() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model_without_summaries(
        &model.base_url(),
        "\n[heartbeat]\nevery = \"1s\"\nwithin = \"1h\"\n",
    );
    let agent_dir = home.path().join("agents/hearth");
    std::fs::create_dir_all(&agent_dir).unwrap();
    std::fs::write(agent_dir.join("HEARTBEAT.md"), "- is the backup done?\n").unwrap();
    model.push(Reply::text("hello"));
    model.set_default(Reply::text("HEARTBEAT_OK"));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let (id, _) = client.submit("hi", "terminal", None).await;
    client.reply_to(id).await;
    let quiet = client
        .wait_for(|e| e.kind == EventKind::Reply && e.status.as_deref() == Some("quiet"))
        .await;
    assert_eq!(quiet.text.as_deref(), Some("HEARTBEAT_OK"));
    let everything = [
        Outgoing::Reply,
        Outgoing::Echo,
        Outgoing::Work,
        Outgoing::Error,
        Outgoing::Note,
    ];
    assert_eq!(
        outgoing_text(&quiet, &everything, "telegram"),
        None,
        "no bridge sends a quiet answer"
    );

    let log = home.history().await;
    let beat = log.iter().find(|m| m.source == "heartbeat").unwrap();
    assert_eq!(beat.kind, Kind::User);
    assert!(
        beat.text.contains("- is the backup done?")
            && beat.text.contains("answer exactly HEARTBEAT_OK"),
        "{}",
        beat.text
    );
    // Only when idle: after the turn's reply, never inside the turn.
    let hello = log.iter().find(|m| m.text == "hello").unwrap();
    assert!(beat.id > hello.id, "{log:?}");
    let requests = model.requests();
    let beat_request = requests
        .iter()
        .position(|r| {
            r.contents()
                .iter()
                .any(|c| c.contains("is the backup done"))
        })
        .unwrap();
    assert_eq!(beat_request, 1, "the beat is the request after the turn's");
}
