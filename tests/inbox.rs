//! End-to-end: schedules and notify events enter the log between chains,
//! once each, across restarts.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::EventKind;
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::harness::TestHome;
use std::process::Output;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

#[tokio::test]
async fn a_notify_key_is_processed_once_even_after_a_restart() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let mut daemon = home.start();
    let mut client = home.connect("watcher", None).await;

    model.push(Reply::Text("I saw the failed build.".into()));
    let first = home
        .hearth_async(&["notify", "--key", "ci-991", "build", "991", "failed"])
        .await;
    assert!(first.status.success(), "{}", stderr(&first));
    let seq = stdout(&first);
    assert!(seq.starts_with("accepted "), "{seq}");
    let event = client
        .wait_for(|e| e.kind == EventKind::User && e.source.as_deref() == Some("notify"))
        .await;
    assert_eq!(event.text.as_deref(), Some("build 991 failed"));
    client.reply_to(event.id.unwrap()).await;

    let again = home
        .hearth_async(&["notify", "--key", "ci-991", "build", "991", "failed"])
        .await;
    assert_eq!(stdout(&again), seq.replace("accepted", "duplicate"));
    assert!(daemon.stop());
    let _daemon = home.start();
    let after = home
        .hearth_async(&["notify", "--key", "ci-991", "once", "more"])
        .await;
    assert_eq!(stdout(&after), seq.replace("accepted", "duplicate"));

    let log = home.hearth_async(&["log", "--json"]).await;
    let notified = stdout(&log)
        .lines()
        .filter(|l| l.contains("\"source\":\"notify\""))
        .count();
    assert_eq!(notified, 1);
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn a_schedule_fires_as_a_user_message_and_wakes_the_agent() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::Text("Time to stretch!".into()));
    let soon = (chrono::Local::now() + chrono::Duration::seconds(2))
        .format("%Y-%m-%d %H:%M:%S")
        .to_string();
    let added = home
        .hearth_async(&["schedule", "add", &soon, "stretch"])
        .await;
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(stdout(&added).starts_with("added #"), "{}", stdout(&added));
    let listed = home.hearth_async(&["schedule", "list"]).await;
    assert!(stdout(&listed).contains("stretch"));

    let fired = client
        .wait_for(|e| e.kind == EventKind::User && e.source.as_deref() == Some("schedule"))
        .await;
    assert_eq!(fired.text.as_deref(), Some("stretch"));
    assert_eq!(
        client.reply_to(fired.id.unwrap()).await.text.as_deref(),
        Some("Time to stretch!")
    );
    let listed = home.hearth_async(&["schedule", "list"]).await;
    assert_eq!(stdout(&listed), "no schedules", "a one-off fires once");
}

#[tokio::test]
async fn a_schedule_missed_while_the_daemon_was_down_fires_once_with_a_note() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let mut daemon = home.start();
    let added = home
        .hearth_async(&["schedule", "add", "0 9 * * *", "morning", "briefing"])
        .await;
    assert!(added.status.success(), "{}", stderr(&added));
    assert!(daemon.stop());

    // While the daemon is down, its 09:00 passes: rewind the stored due time.
    let db = rusqlite::Connection::open(home.path().join("hearth.db")).unwrap();
    let past = chrono::Utc::now().timestamp() - 3 * 3600;
    db.execute("UPDATE schedules SET next_at = ?1", [past])
        .unwrap();
    drop(db);

    // The answer waits until the client listens, so it cannot be missed.
    let gate = Gate::new();
    model.push(Reply::gated(
        Reply::Text("Here is your briefing.".into()),
        &gate,
    ));
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    gate.open();
    client
        .wait_for(|e| {
            e.kind == EventKind::Reply && e.text.as_deref() == Some("Here is your briefing.")
        })
        .await;
    let log = stdout(&home.hearth_async(&["log", "--json"]).await);
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        lines[0].contains("\"kind\":\"note\"") && lines[0].contains("was due at"),
        "{log}"
    );
    assert!(
        lines[1].contains("\"source\":\"schedule\"") && lines[1].contains("morning briefing"),
        "{log}"
    );
    assert!(daemon.stop());

    // It moved on to tomorrow's 09:00: another start fires nothing.
    let _daemon = home.start();
    let listed = home.hearth_async(&["schedule", "list"]).await;
    assert!(stdout(&listed).contains("morning briefing"));
    let log = home.hearth_async(&["log", "--json"]).await;
    let fired = stdout(&log)
        .lines()
        .filter(|l| l.contains("\"source\":\"schedule\""))
        .count();
    assert_eq!(fired, 1);
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn a_schedule_time_needs_no_quotes() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    let cases = [
        (
            vec!["tomorrow", "9am", "water", "the", "plants"],
            "09:00  once  water the plants",
        ),
        (vec!["07:30", "stretch"], "07:30  once  stretch"),
        (
            vec!["tomorrow 18:00", "call", "mum"],
            "18:00  once  call mum",
        ),
        (
            vec!["30 8 * * 1-5", "plan", "the", "day"],
            "30 8 * * 1-5  plan the day",
        ),
    ];
    for (words, shown) in cases {
        let mut args = vec!["schedule", "add"];
        args.extend(&words);
        let added = home.hearth_async(&args).await;
        assert!(added.status.success(), "{words:?}: {}", stderr(&added));
        assert!(
            stdout(&added).contains(shown),
            "{words:?}: {}",
            stdout(&added)
        );
    }
    let listed = stdout(&home.hearth_async(&["schedule", "list"]).await);
    let rows: Vec<String> = listed
        .lines()
        .map(|row| row.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(
        rows.iter()
            .any(|row| row.ends_with("09:00 once water the plants")),
        "{listed}"
    );
    assert!(!listed.contains("9am"), "{listed}");
}

#[tokio::test]
async fn a_bad_schedule_gets_a_clear_error() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    let output = home
        .hearth_async(&["schedule", "add", "61 * * * *", "never"])
        .await;
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("cron"), "{}", stderr(&output));
    let output = home
        .hearth_async(&["schedule", "add", "2001-01-01 10:00", "past"])
        .await;
    assert!(
        stderr(&output).contains("in the past"),
        "{}",
        stderr(&output)
    );
    let output = home.hearth_async(&["schedule", "rm", "42"]).await;
    assert!(
        stderr(&output).contains("no active schedule #42"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn the_configured_time_zone_is_the_agents_clock() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"m\"\nbase_url = \"{}\"\n\n[agent]\ntimezone = \"Asia/Tokyo\"\n",
        model.base_url()
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::Text("It is evening in Tokyo.".into()));
    let (id, _) = client.submit("what time is it?", "terminal", None).await;
    client.reply_to(id).await;
    let body = model.requests()[0].body.to_string();
    assert!(body.contains("+09:00"), "{body}");

    let broken = TestHome::new(bins!());
    broken.write_config("[agent]\ntimezone = \"Mars/Olympus\"\n");
    let output = broken.run_daemon_to_end();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("unknown time zone"),
        "{}",
        stderr(&output)
    );
}
