//! The crash suite: a seeded workload — clients submitting concurrently
//! (some with idempotency keys, some sending a key again after a crash),
//! turns with tool calls and failures, notify events with repeated keys,
//! schedules — while `hearthd` is killed with SIGKILL at pseudo-random
//! moments and restarted. After each round, once the daemon is quiet, the
//! log is held to its invariants through the protocol and by reading the
//! database.
//!
//! `HEARTH_CRASH_ROUNDS` sets the number of rounds (10 by default, for CI),
//! `HEARTH_CRASH_SEED` the seed of the plan; the moment of each kill is a
//! number of acknowledgements and events observed, never a wall-clock time.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{Kind, Message, ReceiptStatus};
use hearth_tests::bins;
use hearth_tests::crash::{
    env_number, notifier, observer, scheduler, submitter, Lcg, Planned, Progress, Receipt, Seen,
    SharedLedger, Steady, Tally, SLOW_CALL_ECHO,
};
use hearth_tests::fake_model::{FakeModel, Recorded, Reply};
use hearth_tests::harness::{Daemon, TestHome, DEADLINE};
use rusqlite::{Connection, OpenFlags};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The model that answers turns; summaries go to another.
const TURN_MODEL: &str = "turn-model";

/// Clients submitting at once in each round.
const CLIENTS: usize = 3;

/// How a turn that did not reply ends: the notes `turn.rs` logs.
const FAILED_ENDINGS: [&str; 3] = [
    "turn failed: ",
    "interrupted by the user",
    "the turn stopped after ",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_keeps_its_invariants_however_often_the_daemon_is_killed() {
    let rounds = env_number("HEARTH_CRASH_ROUNDS", 10);
    let seed = env_number("HEARTH_CRASH_SEED", 0x5EED_CAFE);
    let began = Instant::now();
    let mut rng = Lcg::new(seed);
    let model = FakeModel::start().await;
    model.set_default(Reply::text("Noted."));
    let home = TestHome::new(bins!());
    // Summaries name their own model, so the scripted replies go to turns.
    // Notify events are untrusted and taint the turn that takes them; this
    // workload is about what a kill can lose, not approvals, so its shell
    // calls run without asking (no client here answers an approval).
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"{TURN_MODEL}\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\n\n[memory]\nmodel = \"summarizer\"\n\n\
         [approvals]\nuntrusted_ok = [\"shell\"]\n",
        model.base_url()
    ));
    // Where the clients find the daemon: its socket and owner key.
    let at = home.hearth_home();
    let ledger = SharedLedger::default();
    let seen = Seen::default();
    let mut tally = Tally::default();
    let mut notify_keys: Vec<String> = Vec::new();
    let mut unacked_done = 0;
    let mut unreceipted_done = 0;

    let mut daemon = home.start();
    // A client that follows the log across every kill.
    let mut following = tokio::spawn(async {});
    for round in 0..rounds {
        // Its events, with the workload's acks, decide the moment of the kill;
        // it reconnects with `since` each time.
        let progress = Progress::default();
        following.abort();
        following = tokio::spawn(observer(at.clone(), seen.clone(), progress.clone()));

        // Some turns call a tool first — the clock, or a short shell command
        // that a kill may cut off — some fail; the rest answer at once. In
        // some rounds the kill waits for such a command to start.
        // Scripted only once the last round's script is used up, so that
        // the first turn of the round takes the first reply.
        let at_a_tool_call = rng.chance(30);
        let scripted = rng.below(4) + u64::from(at_a_tool_call);
        let scripted = if model.pending_replies_for(TURN_MODEL) == 0 {
            scripted
        } else {
            0
        };
        let at_a_tool_call = at_a_tool_call && scripted > 0;
        for n in 0..scripted {
            let choice = if at_a_tool_call && n == 0 {
                5
            } else {
                rng.below(10)
            };
            if choice < 5 {
                model.push_for(
                    TURN_MODEL,
                    Reply::ToolCalls {
                        text: rng.chance(50).then(|| "Checking the clock.".to_string()),
                        calls: vec![("date".into(), "{}".into())],
                    },
                );
            } else if choice < 7 {
                model.push_for(
                    TURN_MODEL,
                    Reply::ToolCalls {
                        text: Some(SLOW_CALL_ECHO.into()),
                        calls: vec![("shell".into(), r#"{"command": "sleep 0.2"}"#.into())],
                    },
                );
            } else {
                model.push_for(
                    TURN_MODEL,
                    Reply::error(400, "invalid_request_error", "scripted failure"),
                );
            }
        }

        let mut workload = tokio::task::JoinSet::new();
        let mut planned = 0;
        for client in 0..CLIENTS {
            let bursts = plan_bursts(&mut rng, round, client);
            planned += bursts.iter().map(Vec::len).sum::<usize>();
            workload.spawn(submitter(
                at.clone(),
                format!("c{client}"),
                bursts,
                ledger.clone(),
                progress.clone(),
            ));
        }
        let mut keys = Vec::new();
        for n in 0..1 + rng.below(4) {
            match notify_keys.get(rng.below(notify_keys.len() as u64 * 3) as usize) {
                // About a third of the keys already sent are sent again.
                Some(old) => keys.push(old.clone()),
                None => keys.push(format!("n{round}-{n}")),
            }
        }
        notify_keys.extend(keys.iter().cloned());
        workload.spawn(notifier(at.clone(), keys, ledger.clone(), progress.clone()));
        // Whole seconds, a few ahead: never in the past when they arrive.
        let when = (chrono::Local::now() + chrono::Duration::seconds(5))
            .format("%Y-%m-%d %H:%M:%S")
            .to_string();
        let schedules = (0..rng.below(3))
            .map(|n| (when.clone(), format!("schedule r{round} #{n}")))
            .collect();
        workload.spawn(scheduler(
            at.clone(),
            schedules,
            rng.chance(25),
            ledger.clone(),
            progress.clone(),
        ));

        // The kill: after a drawn number of acknowledgements and events, or
        // as soon as a slow tool call starts, or once the workload is done
        // if it ends first.
        let target = 1 + rng.below(planned as u64 * 2);
        let mut workload = tokio::spawn(async move {
            while let Some(task) = workload.join_next().await {
                task.expect("no workload task panicked");
            }
        });
        let finished = if at_a_tool_call {
            // The round's first turn takes the scripted slow call.
            tokio::time::timeout(DEADLINE, progress.echoed())
                .await
                .expect("the scripted slow tool call starts");
            None
        } else {
            tokio::select! {
                () = progress.reached(target) => None,
                done = &mut workload => Some(done),
            }
        };
        daemon.kill9();
        let killed_at = progress.count();
        let when = match (&finished, at_a_tool_call) {
            (Some(_), _) => "once the workload was done".to_string(),
            (None, true) => "as a slow tool call started".to_string(),
            (None, false) => format!("after {killed_at} observations (target {target})"),
        };
        let done = match finished {
            Some(done) => done,
            None => tokio::time::timeout(DEADLINE, workload)
                .await
                .expect("the workload stops once the daemon is gone"),
        };
        done.expect("the workload ran");

        // Schedules not yet fired are made due while the daemon is down:
        // some as just due, some as missed long ago (fired with a note).
        let missed = rng.chance(50);
        rewind_schedules(&home, missed);

        daemon = home.start();
        following.abort();
        following = tokio::spawn(observer(at.clone(), seen.clone(), Progress::default()));
        let mut steady = Steady::connect(&at, "checker").await;

        // What was sent when the daemon died is sent again with its key;
        // a key already acknowledged is sent again too.
        let (again, renotify) = {
            let ledger = ledger.lock();
            let again: Vec<Planned> = ledger.unacked[unacked_done..]
                .iter()
                .filter(|message| message.key.is_some())
                .cloned()
                .collect();
            let old = ledger
                .all_acked()
                .filter(|acked| acked.message.key.is_some())
                .nth(rng.below(8) as usize)
                .map(|acked| acked.message.clone());
            let renotify: Vec<String> = ledger.unreceipted[unreceipted_done..].to_vec();
            unacked_done = ledger.unacked.len();
            unreceipted_done = ledger.unreceipted.len();
            (again.into_iter().chain(old).collect::<Vec<_>>(), renotify)
        };
        for message in again {
            let (id, duplicate) = steady.submit(&message).await;
            ledger.lock().record_ack("again", id, duplicate, message);
        }
        for key in renotify {
            let text = format!("notify {key}");
            let (status, seq) = steady.notify(&key, &text).await;
            ledger.lock().receipts.push(Receipt { key, seq, status });
        }
        wait_until_quiet(&home, &mut steady, &daemon).await;

        // The memory view loads after the crash and shows what came before.
        let probe = Planned {
            text: format!("probe r{round}"),
            source: "terminal".into(),
            key: None,
        };
        let requests_before = model.request_count();
        let (probe_id, _) = steady.submit(&probe).await;
        ledger
            .lock()
            .record_ack("probe", probe_id, false, probe.clone());
        wait_until_quiet(&home, &mut steady, &daemon).await;

        let log = steady.whole_log().await;
        if std::env::var("DEBUG_TOOLS").is_ok() {
            for m in log
                .iter()
                .filter(|m| m.kind == Kind::Tool || m.kind == Kind::Echo)
            {
                eprintln!(
                    "DBG {} {:?} {:?} {}",
                    m.id,
                    m.kind,
                    m.status,
                    m.text.chars().take(120).collect::<String>()
                );
            }
        }
        check_log(&home, &log, &ledger, &mut tally);
        let requests = model.requests_from(requests_before);
        check_probe(&requests, &log, probe_id, &probe.text, &mut tally);
        check_observer(&seen, &log, &mut tally).await;
        eprintln!(
            "crash round {}/{rounds}: killed {when}; log has {} messages",
            round + 1,
            log.len()
        );
    }
    following.abort();
    assert!(daemon.stop(), "a clean exit after the last round");

    let ledger = ledger.lock();
    eprintln!(
        "crash suite: seed {seed:#x}, {rounds} rounds in {:.1?}; {} acks ({} unacked at a kill), \
         {} notify receipts, {} schedules",
        began.elapsed(),
        ledger.all_acked().count(),
        ledger.unacked.len(),
        ledger.receipts.len(),
        ledger.schedules.len(),
    );
    for (invariant, times) in &tally.0 {
        if invariant.starts_with('(') {
            eprintln!("  {invariant}: {times}");
        } else {
            eprintln!("  {invariant}: checked {times} times");
        }
    }
}

/// One client's submits for a round: bursts of one to four, half with a
/// key, now and then a key of this round sent again at once.
fn plan_bursts(rng: &mut Lcg, round: u64, client: usize) -> Vec<Vec<Planned>> {
    let mut bursts = Vec::new();
    let mut planned: Vec<Planned> = Vec::new();
    let mut n = 0;
    for _ in 0..2 + rng.below(3) {
        let mut burst = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let keyed: Vec<&Planned> = planned.iter().filter(|p| p.key.is_some()).collect();
            if !keyed.is_empty() && rng.chance(10) {
                let again = keyed[rng.below(keyed.len() as u64) as usize].clone();
                burst.push(again);
                continue;
            }
            let message = Planned {
                text: format!("c{client} r{round} m{n}"),
                source: if rng.chance(50) {
                    "terminal"
                } else {
                    "telegram"
                }
                .into(),
                key: rng.chance(50).then(|| format!("k-c{client}-r{round}-m{n}")),
            };
            n += 1;
            planned.push(message.clone());
            burst.push(message);
        }
        bursts.push(burst);
    }
    bursts
}

fn open_read_only(home: &TestHome) -> Connection {
    Connection::open_with_flags(
        home.path().join("hearth.db"),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("the database opens read-only")
}

/// Makes every active schedule due, while the daemon is down: a one-off's
/// stored time with it, or it would be armed again for its old time.
fn rewind_schedules(home: &TestHome, missed: bool) {
    let db = Connection::open(home.path().join("hearth.db")).expect("the database opens");
    let ago = if missed { 3600 } else { 1 };
    let due = chrono::Utc::now() - chrono::Duration::seconds(ago);
    db.execute(
        "UPDATE schedules SET next_at = ?1, spec = ?2 WHERE active = 1",
        rusqlite::params![due.timestamp(), due.to_rfc3339()],
    )
    .expect("schedules rewound");
}

/// Whether the database shows nothing left to do: every turn finished, no
/// message waiting for a turn, no notify event undelivered, no schedule due.
fn log_is_settled(home: &TestHome) -> bool {
    let db = open_read_only(home);
    let count = |sql: &str| -> i64 {
        db.query_row(sql, [], |row| row.get(0))
            .unwrap_or_else(|err| panic!("{sql}: {err}"))
    };
    let now = chrono::Utc::now().timestamp();
    count("SELECT COUNT(*) FROM turns WHERE finished = 0") == 0
        && count(
            "SELECT COUNT(*) FROM messages WHERE kind = 'user' AND id > \
             COALESCE((SELECT MAX(taken_through) FROM turns), -1)",
        ) == 0
        && count("SELECT COUNT(*) FROM notify WHERE delivered = 0") == 0
        && count(&format!(
            "SELECT COUNT(*) FROM schedules WHERE active = 1 AND next_at <= {now}"
        )) == 0
}

/// Waits until `status` shows the agent idle with nothing waiting and the
/// database shows nothing left to do, polling between events.
async fn wait_until_quiet(home: &TestHome, steady: &mut Steady, daemon: &Daemon) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let status = steady.status().await;
        if !status.busy && status.waiting == 0 && log_is_settled(home) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the daemon did not settle: {status:?}\n{}",
            daemon.log_text()
        );
        steady.next_event_or(Duration::from_millis(50)).await;
    }
}

/// The invariants of the log against the ledger, the protocol's view of
/// the log against the database, and the database's own consistency.
fn check_log(home: &TestHome, log: &[Message], ledger: &SharedLedger, tally: &mut Tally) {
    let db = open_read_only(home);
    let ledger = ledger.lock();

    // The database is whole.
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    tally.add("integrity_check is ok", 1);

    // The protocol shows exactly the database's log, ids dense from 0.
    let rows: Vec<(u64, String, String, String, Option<String>)> = {
        let mut statement = db
            .prepare("SELECT id, kind, source, text, key FROM messages ORDER BY id")
            .unwrap();
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get::<_, i64>(0)? as u64,
                    row.get(1)?,
                    row.get(2)?,
                    row.get(3)?,
                    row.get(4)?,
                ))
            })
            .unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    assert_eq!(
        rows.len(),
        log.len(),
        "history and database agree in length"
    );
    for (at, (row, message)) in rows.iter().zip(log).enumerate() {
        assert_eq!(row.0, at as u64, "ids are dense");
        assert_eq!(
            (row.0, row.1.as_str(), row.2.as_str(), row.3.as_str()),
            (
                message.id,
                message.kind.as_str(),
                message.source.as_str(),
                message.text.as_str()
            ),
        );
    }
    tally.add("ids dense; history equals the database", 1);

    let users: BTreeMap<&str, Vec<u64>> =
        log.iter()
            .filter(|m| m.kind == Kind::User)
            .fold(BTreeMap::new(), |mut by_text, m| {
                by_text.entry(m.text.as_str()).or_default().push(m.id);
                by_text
            });
    let occurrences = |text: &str| users.get(text).map_or(0, Vec::len);

    // Every acknowledged message is logged exactly once, as acknowledged.
    for acked in ledger.all_acked() {
        let row = &rows[acked.id as usize];
        assert_eq!(row.1, "user", "ack {acked:?} points at {row:?}");
        assert_eq!(
            (row.2.as_str(), row.3.as_str(), row.4.as_deref()),
            (
                acked.message.source.as_str(),
                acked.message.text.as_str(),
                acked.message.key.as_deref()
            ),
            "ack {acked:?}"
        );
        assert_eq!(occurrences(&acked.message.text), 1, "{acked:?}");
        if acked.duplicate {
            let key = acked
                .message
                .key
                .as_deref()
                .expect("only keyed submits are duplicates");
            if let Some(first) = ledger.acked_key(key) {
                assert_eq!(first.id, acked.id, "a duplicate is acked with the first id");
            }
        }
    }
    tally.add(
        "acknowledged message logged exactly once",
        ledger.all_acked().count() as u64,
    );
    for message in &ledger.unacked {
        assert!(occurrences(&message.text) <= 1, "{message:?} logged twice");
    }
    tally.add(
        "unacknowledged message logged at most once",
        ledger.unacked.len() as u64,
    );

    // Per client, in the order of the acks.
    for (client, acks) in &ledger.acked {
        let ids: Vec<u64> = acks.iter().filter(|a| !a.duplicate).map(|a| a.id).collect();
        assert!(
            ids.windows(2).all(|pair| pair[0] < pair[1]),
            "{client}'s messages are logged in the order of their acks: {ids:?}"
        );
        tally.add("per-client ack order", 1);
    }

    // No key twice.
    let twice: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM (SELECT key FROM messages WHERE key IS NOT NULL \
             GROUP BY agent, key HAVING COUNT(*) > 1)",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(twice, 0, "no idempotency key is logged twice");
    tally.add("no key logged twice", 1);

    // Notify events: once per key, all delivered, receipts consistent.
    let mut seqs: BTreeMap<&str, i64> = BTreeMap::new();
    for receipt in &ledger.receipts {
        let first = *seqs.entry(receipt.key.as_str()).or_insert(receipt.seq);
        assert_eq!(first, receipt.seq, "one queue entry per key: {receipt:?}");
        let text = &ledger.notify_texts[&receipt.key];
        assert_eq!(
            occurrences(text),
            1,
            "notify {receipt:?} enters the log once"
        );
    }
    let accepted: BTreeMap<&str, usize> = ledger
        .receipts
        .iter()
        .filter(|r| r.status == ReceiptStatus::Accepted)
        .fold(BTreeMap::new(), |mut count, r| {
            *count.entry(r.key.as_str()).or_default() += 1;
            count
        });
    assert!(
        accepted.values().all(|n| *n == 1),
        "a key is accepted once: {accepted:?}"
    );
    for key in &ledger.unreceipted {
        assert!(
            occurrences(&ledger.notify_texts[key]) <= 1,
            "notify {key} twice"
        );
    }
    let undelivered: i64 = db
        .query_row("SELECT COUNT(*) FROM notify WHERE delivered = 0", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(undelivered, 0);
    let notified: Vec<String> = {
        let mut statement = db.prepare("SELECT text FROM notify").unwrap();
        let rows = statement.query_map([], |row| row.get(0)).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    for text in &notified {
        assert_eq!(occurrences(text), 1, "stored notify `{text}` logged once");
    }
    tally.add(
        "notify key enters the log once",
        (ledger.receipts.len() + notified.len()) as u64,
    );

    // Schedules: each acknowledged one fired once; none is left due.
    for text in &ledger.schedules {
        let fired = log
            .iter()
            .filter(|m| m.kind == Kind::User && m.source == "schedule" && &m.text == text)
            .count();
        assert_eq!(fired, 1, "schedule `{text}` fired once");
    }
    for text in &ledger.unanswered_schedules {
        assert!(occurrences(text) <= 1, "schedule `{text}` fired twice");
    }
    let active: i64 = db
        .query_row("SELECT COUNT(*) FROM schedules WHERE active = 1", [], |r| {
            r.get(0)
        })
        .unwrap();
    let schedules: Vec<(i64, String, i64)> = {
        let mut statement = db
            .prepare("SELECT id, text, next_at FROM schedules WHERE active = 1")
            .unwrap();
        let rows = statement
            .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    assert_eq!(
        active,
        0,
        "every one-off schedule fired: {schedules:?} now {}",
        chrono::Utc::now().timestamp()
    );
    tally.add("schedule fires once", ledger.schedules.len() as u64);

    check_turns(&db, log, tally);
}

/// The turns: each took the user messages after the one before took its
/// last, each ended exactly once — a reply answering exactly what it took,
/// or a note saying why not — no message is answered twice, and nothing
/// is left waiting or running.
fn check_turns(db: &Connection, log: &[Message], tally: &mut Tally) {
    let turns: Vec<(i64, u64, i64, u64, bool)> = {
        let mut statement = db
            .prepare(
                "SELECT seq, start_id, taken_after, taken_through, finished FROM turns \
                 ORDER BY seq",
            )
            .unwrap();
        let rows = statement
            .query_map([], |row| {
                Ok((
                    row.get(0)?,
                    row.get::<_, i64>(1)? as u64,
                    row.get(2)?,
                    row.get::<_, i64>(3)? as u64,
                    row.get(4)?,
                ))
            })
            .unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    let running: i64 = db
        .query_row("SELECT COUNT(*) FROM tool_calls", [], |r| r.get(0))
        .unwrap();
    assert_eq!(running, 0, "no tool call is left running");
    tally.add("no tool call left running", 1);
    let cut: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE kind = 'tool' AND status = 'interrupted'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let calls: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM messages WHERE kind = 'tool'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    tally.0.insert("(tool calls logged)", calls as u64);
    tally
        .0
        .insert("(tool calls cut off, logged interrupted)", cut as u64);

    let mut answered: BTreeMap<u64, u64> = BTreeMap::new();
    for reply in log.iter().filter(|m| m.kind == Kind::Reply) {
        for id in &reply.answers {
            if let Some(first) = answered.insert(*id, reply.id) {
                panic!(
                    "message {id} is answered by replies {first} and {}",
                    reply.id
                );
            }
        }
    }
    tally.add("no message answered twice", answered.len() as u64);

    let is_ending = |m: &Message| {
        m.kind == Kind::Reply
            || (m.kind == Kind::Note
                && m.source == "hearthd"
                && FAILED_ENDINGS.iter().any(|start| m.text.starts_with(start)))
    };
    let mut ended: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut taken_after = -1i64;
    let mut taken_users = BTreeSet::new();
    for (n, &(seq, start_id, after, through, finished)) in turns.iter().enumerate() {
        assert_eq!(seq, n as i64, "turn numbers are dense");
        assert!(finished, "turn {seq} finished");
        assert_eq!(
            after,
            taken_after,
            "turn {seq} takes on where turn {} stopped",
            seq - 1
        );
        taken_after = through as i64;
        let taken: Vec<u64> = log
            .iter()
            .filter(|m| m.kind == Kind::User && m.id as i64 > after && m.id <= through)
            .map(|m| m.id)
            .collect();
        assert!(!taken.is_empty(), "turn {seq} took something");
        taken_users.extend(taken.iter().copied());
        let end = turns.get(n + 1).map_or(log.len() as u64, |next| next.1);
        let endings: Vec<&Message> = log[start_id as usize..end as usize]
            .iter()
            .filter(|m| is_ending(m))
            .collect();
        assert_eq!(
            endings.len(),
            1,
            "turn {seq} (messages {start_id}..{end}) ends exactly once: {endings:?}"
        );
        *ended.entry(ending_kind(endings[0])).or_default() += 1;
        if endings[0].kind == Kind::Reply {
            assert_eq!(
                endings[0].answers, taken,
                "turn {seq}'s reply answers what it took"
            );
        }
    }
    // How the turns so far ended: totals of the log, not checks.
    tally.0.extend(ended);
    tally.add("turn ends exactly once", turns.len() as u64);
    tally.add(
        "reply answers exactly what its turn took",
        turns.len() as u64,
    );
    let users: BTreeSet<u64> = log
        .iter()
        .filter(|m| m.kind == Kind::User)
        .map(|m| m.id)
        .collect();
    assert_eq!(
        users, taken_users,
        "every user message is taken by exactly one turn, which replied or noted why not"
    );
    tally.add("no taken message left unanswered", users.len() as u64);
    // Every ending is some turn's: nothing replies outside a turn.
    let endings = log.iter().filter(|m| is_ending(m)).count();
    assert_eq!(endings, turns.len(), "no ending outside a turn");
}

/// How a turn ended, as the report counts it.
fn ending_kind(ending: &Message) -> &'static str {
    match ending.kind {
        Kind::Reply => "(turns that replied)",
        _ if ending.text.starts_with("interrupted") => "(turns interrupted)",
        _ => "(turns failed)",
    }
}

/// The probe's turn got a request whose `<chat>` view holds the messages
/// before it: the memory view loaded and rendered after the crash.
fn check_probe(
    requests: &[Recorded],
    log: &[Message],
    probe_id: u64,
    probe: &str,
    tally: &mut Tally,
) {
    let request = requests
        .iter()
        .find(|r| {
            r.body
                .to_string()
                .contains(&format!("{probe_id}+0|user from terminal: {probe}"))
        })
        .unwrap_or_else(|| panic!("no model request took the probe `{probe}`"));
    let body = request.body.to_string();
    assert!(body.contains("<chat>"), "{body}");
    let recent = log[..probe_id as usize]
        .iter()
        .rev()
        .find(|m| m.kind == Kind::User)
        .expect("messages before the probe");
    // In the view as a line, or, when the probe's turn took it too (it came
    // in after the last turn began), whole after the state, as taken.
    // A notify event's line carries the untrusted marker before its kind.
    let line = format!("|user: {}", recent.text);
    let marked = format!("|[untrusted] user: {}", recent.text);
    let taken = format!("|user from {}: {}", recent.source, recent.text);
    assert!(
        body.contains(&line) || body.contains(&marked) || body.contains(&taken),
        "the request shows the latest message before the probe, `{line}`: {body}"
    );
    tally.add("memory view renders recent messages", 1);
}

/// The observer, reconnecting with `since` after every kill, received every
/// message once, in order.
async fn check_observer(seen: &Seen, log: &[Message], tally: &mut Tally) {
    let last = log.last().map(|m| m.id);
    let deadline = Instant::now() + DEADLINE;
    while seen.last() != last {
        assert!(Instant::now() < deadline, "the observer did not catch up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let expected: Vec<u64> = (0..log.len() as u64).collect();
    assert_eq!(
        seen.ids(),
        expected,
        "a reconnecting client misses nothing, sees nothing twice"
    );
    tally.add("reconnecting observer saw every message once", 1);
}

#[test]
fn the_plan_is_a_function_of_the_seed() {
    let plan = |seed| {
        let mut rng = Lcg::new(seed);
        (0..3)
            .map(|client| plan_bursts(&mut rng, 0, client))
            .collect::<Vec<_>>()
    };
    assert_eq!(plan(7), plan(7));
    assert_ne!(plan(7), plan(8));
}
