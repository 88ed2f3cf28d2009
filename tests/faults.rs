//! Faults: a model that stalls, resets connections, answers garbage or
//! fails for a while; a database that cannot be written; a client that
//! stops reading; a flood of submits. Each time the daemon fails what it
//! must, loses nothing it acknowledged and goes on serving.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::{SinkExt, StreamExt};
use hearth_protocol::home::Home;
use hearth_protocol::{ErrorCode, EventKind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::crash::submit_frame;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{Client, TestHome, DEADLINE};
use hearth_tests::raw::Raw;
use rusqlite::{Connection, OpenFlags};
use tokio::net::UnixStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;

/// A config for the fake model with these `[model]` settings added.
fn use_model(home: &TestHome, model: &FakeModel, extra: &str) {
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\n{extra}",
        model.base_url()
    ));
}

/// Submits `text` and waits for its turn to end: the reply's text, or the
/// error's.
async fn turn(client: &mut Client, text: &str) -> Result<String, String> {
    let (id, _) = client.submit(text, "terminal", None).await;
    let ending = client
        .wait_for(|e| {
            (e.kind == EventKind::Reply || e.kind == EventKind::Error) && e.answers.contains(&id)
        })
        .await;
    let said = ending.text.unwrap_or_default();
    match ending.kind {
        EventKind::Reply => Ok(said),
        _ => Err(said),
    }
}

fn open_read_only(home: &TestHome) -> Connection {
    Connection::open_with_flags(
        home.path().join("hearth.db"),
        OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("the database opens read-only")
}

#[tokio::test]
async fn a_stalled_model_times_out_and_the_next_message_is_answered() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    use_model(&home, &model, "timeout_secs = 2\nmax_retries = 0\n");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::hang(""));
    let why = turn(&mut client, "are you there?").await.unwrap_err();
    assert!(
        why.contains("no progress from the model for 2 seconds"),
        "{why}"
    );
    client.wait_for(|e| e.kind == EventKind::Idle).await;

    model.push(Reply::text("Back again."));
    assert_eq!(
        turn(&mut client, "and now?").await.as_deref(),
        Ok("Back again.")
    );
    assert_eq!(model.requests().len(), 2, "a timeout is not retried here");
}

#[tokio::test]
async fn a_stream_reset_mid_answer_is_a_cut_answer_not_a_server_out_of_reach() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    use_model(&home, &model, "stream = true\nmax_retries = 0\n");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::broken("Half an ans"));
    let why = turn(&mut client, "tell me").await.unwrap_err();
    assert!(why.contains("ended before it was complete"), "{why}");
    assert!(!why.contains("cannot reach"), "{why}");

    model.push(Reply::text("Whole this time."));
    assert_eq!(
        turn(&mut client, "again").await.as_deref(),
        Ok("Whole this time.")
    );
}

#[tokio::test]
async fn a_misbehaving_model_fails_or_retries_by_the_rules_and_the_agent_recovers() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    use_model(&home, &model, "max_retries = 2\nretry_delay_ms = 10\n");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    // A reset connection is a passing failure: tried again.
    model.push(Reply::Reset);
    model.push(Reply::text("After a reset."));
    assert_eq!(
        turn(&mut client, "one").await.as_deref(),
        Ok("After a reset.")
    );
    assert_eq!(model.request_count(), 2);

    // Garbage is not: the turn fails at once.
    model.push(Reply::Garbage("{\"choices\": [tru".into()));
    let why = turn(&mut client, "two").await.unwrap_err();
    assert!(why.contains("unreadable"), "{why}");
    assert_eq!(model.request_count(), 3);

    // Server errors are tried again, up to the retries, then the turn fails.
    for _ in 0..3 {
        model.push(Reply::error(500, "server_error", "the server is on fire"));
    }
    let why = turn(&mut client, "three").await.unwrap_err();
    assert!(why.contains("500"), "{why}");
    assert_eq!(model.request_count(), 6);

    // Resets that last fail the turn too.
    for _ in 0..3 {
        model.push(Reply::Reset);
    }
    assert!(turn(&mut client, "four").await.is_err());
    assert_eq!(model.request_count(), 9);

    // A server that recovers within the retries answers the turn.
    model.push(Reply::error(503, "server_error", "overloaded"));
    model.push(Reply::error(500, "server_error", "still on fire"));
    model.push(Reply::text("Recovered."));
    assert_eq!(turn(&mut client, "five").await.as_deref(), Ok("Recovered."));

    // And the next message is answered without a restart.
    model.push(Reply::text("All well."));
    assert_eq!(turn(&mut client, "six").await.as_deref(), Ok("All well."));
    assert_eq!(model.request_count(), 13);

    // Every message is in the log once; the failures left notes, not replies.
    let db = open_read_only(&home);
    let users: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE kind = 'user'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let replies: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE kind = 'reply'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let failed: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE kind = 'note' AND text LIKE 'turn failed:%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((users, replies, failed), (6, 3, 3));
}

#[tokio::test]
async fn a_full_disk_stops_the_agent_with_an_error_and_loses_nothing_acknowledged() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    // Not streamed: a long answer arrives whole, not as thousands of deltas.
    use_model(&home, &model, "max_retries = 0\nstream = false\n");
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::text("Fine."));
    let (first, _) = client
        .submit("before the disk fills", "terminal", None)
        .await;
    client.reply_to(first).await;
    assert!(daemon.stop());

    // A few pages to spare: small writes fit, a long reply does not.
    let pages: i64 = open_read_only(&home)
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    let cap = (pages + 3).to_string();
    let mut daemon = hearth_tests::harness::Daemon::start_with_env(
        &home,
        &[(hearth_daemon::log::TEST_MAX_PAGES_ENV, cap.as_str())],
    );
    assert!(
        daemon.log_text().contains("the database is capped"),
        "the cap is in force: {}",
        daemon.log_text()
    );
    let mut client = home.connect("terminal", Some(first)).await;
    let long_reply = "This answer does not fit on the disk. ".repeat(2000);
    model.push(Reply::text(long_reply.clone()));
    let (second, _) = client
        .submit("this one is acknowledged", "terminal", None)
        .await;
    let stopped = client
        .wait_for_text(EventKind::Error, "cannot be written")
        .await;
    let said = stopped.text.unwrap_or_default();
    assert!(said.contains("the log cannot be written"), "{said}");
    assert!(said.contains("stopped"), "{said}");

    match client.request(hearth_protocol::ClientFrame::Status).await {
        ServerFrame::Status(status) => assert!(!status.busy, "{status:?}"),
        other => panic!("expected status, got {other:?}"),
    }

    // Writes that still fit are acknowledged; those that do not are refused,
    // never acknowledged and lost.
    let mut acknowledged = vec![(first, "before the disk fills".to_string())];
    acknowledged.push((second, "this one is acknowledged".to_string()));
    for n in 0..3 {
        let text = format!("while the disk is full {n}");
        let frame = submit_frame(&text, "terminal", None);
        match client.request(frame).await {
            ServerFrame::Ack { id, .. } => acknowledged.push((id, text)),
            ServerFrame::Error { code, .. } => assert_eq!(code, ErrorCode::Storage),
            other => panic!("expected an ack or a storage error, got {other:?}"),
        }
    }
    daemon.kill9();

    // With room again, the cut turn continues and everything is answered.
    model.set_default(Reply::text("Answered after the disk was freed."));
    let _daemon = home.start();
    let mut client = home.connect("terminal", Some(first)).await;
    for (id, _) in &acknowledged {
        client.reply_to(*id).await;
    }
    let db = open_read_only(&home);
    for (id, text) in &acknowledged {
        let logged: Vec<(i64, String)> = db
            .prepare("SELECT id, kind FROM messages WHERE text = ?1")
            .unwrap()
            .query_map([text], |row| Ok((row.get(0)?, row.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(logged, vec![(*id as i64, "user".to_string())], "{text}");
    }
    let long: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE length(text) > 10000",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(long, 0, "the reply that did not fit left nothing behind");
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}

/// Connects and says hello with the owner key; the welcome is left unread.
async fn raw_hello(home: &Home, name: &str) -> Raw<UnixStream> {
    let mut raw = Raw::connect(home).await;
    let key = hearth_protocol::owner_key::read(&home.owner_key())
        .expect("the owner key is readable")
        .expect("a daemon wrote the owner key");
    raw.hello(name, &format!(r#","owner_key":"{key}""#)).await;
    raw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_does_not_hold_up_the_others() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    use_model(&home, &model, "");
    // Streamed in many small deltas, so the silent client's socket fills.
    model.set_default(Reply::text(
        "A reply long enough to stream in many small pieces. ".repeat(5),
    ));
    let _daemon = home.start();
    let mut silent = raw_hello(&home.hearth_home(), "silent").await;
    let mut client = home.connect("terminal", None).await;

    let mut last = 0;
    for n in 0..200 {
        let (id, _) = client
            .submit(&format!("message {n}"), "terminal", None)
            .await;
        last = client.reply_to(id).await.id.expect("a logged reply");
        // Only the latest events are of use; keep the record small.
        client.events.clear();
    }

    // The silent client was never dropped: once it reads, it catches up
    // from the log, every message once and in order.
    assert!(matches!(
        silent.next_frame().await.expect("the connection is open"),
        ServerFrame::Welcome { .. }
    ));
    let mut ids = Vec::new();
    while ids.last() != Some(&last) {
        if let ServerFrame::Event(event) =
            silent.next_frame().await.expect("the connection is open")
        {
            if let (Some(id), Some(_)) = (event.id, event.kind.message_kind()) {
                ids.push(id);
            }
        }
    }
    assert_eq!(ids, (0..=last).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_submits_are_logged_in_order_and_acknowledged_once() {
    // Each connection's submits are committed one after another (group
    // commit shares a transaction across connections), so the flood's pace
    // is the disk's: a few thousand commits.
    const CLIENTS: usize = 4;
    const EACH: usize = 2500;
    // The agent stays busy on one stalled answer, so the log holds only
    // the flood.
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    use_model(&home, &model, "timeout_secs = 600\nmax_retries = 0\n");
    model.push(Reply::hang(""));
    let _daemon = home.start();
    let mut first = home.connect("first", None).await;
    let (first_id, _) = first.submit("hold on", "terminal", None).await;
    model.wait_for_requests(1).await;
    // Summaries of the flood, which the compactor writes as it arrives.
    model.set_default(Reply::text("a stretch of numbered messages"));

    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let hearth_home = home.hearth_home();
        clients.push(tokio::spawn(async move {
            let raw = raw_hello(&hearth_home, &format!("flood{client}")).await;
            let (mut sink, mut source) = raw.0.split();
            let sender = tokio::spawn(async move {
                for n in 0..EACH {
                    let key = (n % 2 == 0).then(|| format!("c{client}-{n}"));
                    let frame = submit_frame(&format!("c{client} {n}"), "terminal", key.as_deref());
                    sink.send(WsMessage::Text(frame.encode().into()))
                        .await
                        .expect("sent");
                }
                sink
            });
            let mut acks = Vec::with_capacity(EACH);
            while acks.len() < EACH {
                let next = tokio::time::timeout(DEADLINE, source.next())
                    .await
                    .expect("a frame in time");
                let Some(Ok(WsMessage::Text(text))) = next else {
                    panic!("flood{client}: the connection ended: {next:?}");
                };
                // Every client gets every message as an event: read past
                // them without decoding.
                if text.starts_with(r#"{"type":"event""#) {
                    continue;
                }
                match ServerFrame::decode(&text).expect("readable") {
                    ServerFrame::Ack { id, duplicate } => acks.push((id, duplicate)),
                    ServerFrame::Welcome { .. } => {}
                    other => panic!("flood{client}: expected acks, got {other:?}"),
                }
            }
            let _sink = sender.await.expect("the sender ran");
            acks
        }));
    }
    let mut acked = Vec::new();
    for client in clients {
        acked.push(client.await.expect("a flooding client ran"));
    }

    let db = open_read_only(&home);
    let logged: Vec<(u64, String, Option<String>)> = db
        .prepare("SELECT id, text, key FROM messages WHERE kind = 'user' ORDER BY id")
        .unwrap()
        .query_map([], |row| {
            Ok((row.get::<_, i64>(0)? as u64, row.get(1)?, row.get(2)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        logged.len(),
        CLIENTS * EACH + 1,
        "every submit is logged once"
    );
    let by_id: std::collections::BTreeMap<u64, (&str, Option<&str>)> = logged
        .iter()
        .map(|(id, text, key)| (*id, (text.as_str(), key.as_deref())))
        .collect();
    for (client, acks) in acked.iter().enumerate() {
        assert!(acks.iter().all(|(_, duplicate)| !duplicate));
        let ids: Vec<u64> = acks.iter().map(|(id, _)| *id).collect();
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "flood{client}'s messages are logged in the order it sent them"
        );
        for (n, id) in ids.iter().enumerate() {
            let key = format!("c{client}-{n}");
            assert_eq!(
                by_id.get(id).copied(),
                Some((
                    format!("c{client} {n}").as_str(),
                    (n % 2 == 0).then_some(key.as_str())
                )),
                "ack {n} of flood{client}"
            );
        }
    }
    let others: Vec<(i64, String, String)> = db
        .prepare("SELECT id, kind, text FROM messages WHERE kind != 'user'")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(others.is_empty(), "nothing else was logged: {others:?}");
    assert_eq!(logged[0], (first_id, "hold on".to_string(), None));
}

#[tokio::test]
async fn a_daemon_whose_disk_is_full_refuses_work_and_says_so_rather_than_exit() {
    let home = TestHome::new(bins!());
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let (first, _) = client
        .submit("before the disk filled", "terminal", None)
        .await;
    drop(client);
    assert!(daemon.stop());

    // The whole disk is full, as when `hearth` starts the daemon there with
    // its output going to hearthd.log: the daemon's output cannot be
    // written (/dev/full answers every write with ENOSPC), and the database
    // has not one page to spare.
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let pages: i64 = open_read_only(&home)
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    let mut daemon = home
        .command(&home.bins.hearthd, &[])
        .env("RUST_LOG", "info")
        .env(hearth_daemon::log::TEST_MAX_PAGES_ENV, pages.to_string())
        .stdout(full())
        .stderr(full())
        .spawn()
        .unwrap();
    let socket = home.path().join("hearth.sock");
    let started = std::time::Instant::now();
    while UnixStream::connect(&socket).await.is_err() {
        assert!(started.elapsed() < DEADLINE, "hearthd did not listen");
        assert!(
            daemon.try_wait().unwrap().is_none(),
            "hearthd exited at start"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut client = home.connect("terminal", Some(first)).await;
    let long = "words that do not fit on a full disk ".repeat(1_000);
    for _ in 0..3 {
        match client.request(submit_frame(&long, "terminal", None)).await {
            ServerFrame::Error { code, message } => {
                assert_eq!(code, ErrorCode::Storage, "{message}");
                assert!(message.contains("full"), "{message}");
            }
            other => panic!("expected a storage error, got {other:?}"),
        }
    }
    match client.request(hearth_protocol::ClientFrame::Status).await {
        ServerFrame::Status(status) => assert!(status.last_id >= Some(first), "{status:?}"),
        other => panic!("expected status, got {other:?}"),
    }
    let history = home.history().await;
    assert!(history.iter().any(|m| m.id == first), "{history:?}");
    assert!(daemon.try_wait().unwrap().is_none(), "hearthd runs on");
    drop(client);
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(daemon.id().to_string())
        .status();
    let exit = daemon.wait().unwrap();
    assert!(exit.success(), "a clean stop, not a crash: {exit:?}");
}
