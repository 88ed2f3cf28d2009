//! A search is bounded and never holds up the log.

use super::*;
use crate::log::words::WORDS_WITHOUT_COPIES;
use crate::memory::MemoryLog;
use std::time::Duration;

/// How long the tests wait for what must happen (a failure, never a pace).
const WAIT: Duration = Duration::from_secs(20);

#[test]
fn a_huge_query_is_refused_with_a_clear_error() {
    let huge = "alpha ".repeat(8_000);
    let err = Query::read(&huge, None, None, None, None, None).unwrap_err();
    assert!(
        matches!(err, SearchError::TooLong { bytes: 48_000 }),
        "{err}"
    );
    assert!(err.to_string().contains("at most 1000"), "{err}");
    let many: String = (0..MAX_TERMS + 1).map(|n| format!("word{n} ")).collect();
    let err = Query::read(&many, None, None, None, None, None).unwrap_err();
    assert!(
        matches!(err, SearchError::TooManyTerms { terms: 25 }),
        "{err}"
    );
    assert!(err.to_string().contains("at most 24"), "{err}");
    // A word written again is one word to look for, in any case.
    let repeated = "alpha Alpha ".repeat(80);
    assert!(repeated.len() <= MAX_QUERY_BYTES);
    let query = Query::read(&repeated, None, None, None, None, None).unwrap();
    assert_eq!(match_expression(&query.words).as_deref(), Some("\"alpha\""));
}

#[tokio::test]
async fn a_search_held_mid_way_does_not_hold_up_a_submit() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    for n in 0..3 {
        log.append(
            "a",
            NewMessage::new(Kind::User, "terminal", format!("alpha {n}")),
        )
        .await
        .unwrap();
    }
    // The search says when it has read its first match, then waits to be
    // let go (every later match goes on at once: the sender is dropped).
    let (held, is_held) = std::sync::mpsc::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let search = query("alpha");
    let searching = tokio::spawn({
        let log = log.clone();
        async move {
            log.read(move |connection| {
                run_observed(connection, "a", &search, &mut |_| {
                    let _ = held.send(());
                    let _ = released.recv();
                })
            })
            .await
        }
    });
    tokio::task::spawn_blocking(move || is_held.recv_timeout(WAIT))
        .await
        .unwrap()
        .expect("the search reached its first match");
    let submitted = tokio::time::timeout(
        WAIT,
        log.submit("a", NewMessage::new(Kind::User, "terminal", "alpha again")),
    )
    .await
    .expect("a submit is acknowledged while a search is held mid-way")
    .unwrap();
    assert_eq!(submitted, (3, false));
    drop(release);
    // The search read the log as it was when it began.
    let hits = searching.await.unwrap().unwrap();
    assert_eq!(hits.len(), 3);
    assert_eq!(log.search("a", query("alpha")).await.unwrap().len(), 4);
}

#[tokio::test]
async fn a_word_in_more_messages_than_are_ranked_is_answered_from_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    // The oldest message matches best, but it is past the newest RANKED.
    let mut messages = vec![NewMessage::new(
        Kind::User,
        "terminal",
        "alpha alpha alpha alpha",
    )];
    let ranked = RANKED as usize;
    messages.extend((0..ranked + 20).map(|n| {
        NewMessage::new(
            Kind::User,
            "terminal",
            format!("alpha and a few other words {n}"),
        )
    }));
    log.append_all("a", messages).await.unwrap();
    let hits = log.search("a", query("alpha")).await.unwrap();
    assert_eq!(hits.len(), DEFAULT_HITS as usize);
    assert!(hits.iter().all(|hit| hit.id > 20), "{:?}", ids(&hits));
    // A rarer word is still found however old.
    log.append("a", NewMessage::new(Kind::User, "terminal", "alpha"))
        .await
        .unwrap();
    let rare = log.search("a", query("alpha alpha zebra")).await.unwrap();
    assert!(rare.len() <= DEFAULT_HITS as usize);
    let old = log
        .search(
            "a",
            Query::read("alpha", Some("2000-01-01"), None, None, None, None).unwrap(),
        )
        .await
        .unwrap();
    assert!(old.is_empty());
}

#[tokio::test]
async fn a_backup_is_searched_as_the_log_it_copies() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    for n in 0..40 {
        log.append(
            "a",
            NewMessage::new(Kind::User, "terminal", format!("note {n} of many")),
        )
        .await
        .unwrap();
    }
    log.append(
        "a",
        NewMessage::new(Kind::User, "terminal", "the harbour gate code"),
    )
    .await
    .unwrap();
    log.insert_nodes(
        "a",
        vec![Built {
            node: Node::new(1, 20),
            text: "they talked about the harbour".into(),
            mechanical: false,
        }],
    )
    .await
    .unwrap();
    let copy = dir.path().join("copy.db");
    log.backup(&copy).await.unwrap();
    let (events, _) = broadcast::channel(4);
    let restored = Log::open(&copy, events).unwrap();
    let mut hits = restored.search("a", query("harbour")).await.unwrap();
    hits.sort_by_key(|hit| (hit.id, hit.n));
    assert_eq!(ids(&hits), [(40, 1), (40, 2)]);
    assert!(
        hits[0].snippet.contains("[harbour] gate code"),
        "{}",
        hits[0].snippet
    );
    assert!(
        hits[1].snippet.contains("about the [harbour]"),
        "{}",
        hits[1].snippet
    );
}

#[tokio::test]
async fn the_index_keeps_no_copy_of_the_texts_and_its_migration_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hearth.db");
    let log = open(&dir);
    log.append(
        "a",
        NewMessage::new(Kind::User, "terminal", "the violet lamp"),
    )
    .await
    .unwrap();
    drop(log);
    // Schema 2 as it was: one index table holding a copy of every text.
    let connection = Connection::open(&path).unwrap();
    connection
        .execute_batch(
            "DROP TRIGGER own_lines_are_indexed;
             DROP TABLE message_words; DROP TABLE line_words; DELETE FROM migrations;
             CREATE VIRTUAL TABLE memory_index USING fts5(text, agent UNINDEXED,
                kind UNINDEXED, source UNINDEXED, first UNINDEXED, span UNINDEXED);
             CREATE TRIGGER messages_are_indexed AFTER INSERT ON messages BEGIN
                INSERT INTO memory_index (text, agent, kind, source, first, span)
                VALUES (new.text, new.agent, new.kind, new.source, new.id, 1); END;
             INSERT INTO memory_index (text, agent, kind, source, first, span)
                SELECT text, agent, kind, source, id, 1 FROM messages;",
        )
        .unwrap();
    drop(connection);
    let log = open(&dir);
    assert_eq!(
        ids(&log.search("a", query("lamp")).await.unwrap()),
        [(0, 1)]
    );
    log.append("a", NewMessage::new(Kind::User, "terminal", "a lamp again"))
        .await
        .unwrap();
    assert_eq!(log.search("a", query("lamp")).await.unwrap().len(), 2);
    drop(log);
    let connection = Connection::open(&path).unwrap();
    let tables: Vec<String> = connection
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table'
             AND (name LIKE 'memory_index%' OR name LIKE '%content')",
        )
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(
        tables.is_empty(),
        "no copy of the texts is kept: {tables:?}"
    );
    let ran: String = connection
        .query_row(
            "SELECT at FROM migrations WHERE name = ?1",
            [WORDS_WITHOUT_COPIES],
            |row| row.get(0),
        )
        .unwrap();
    drop(connection);
    // Recorded: the next start does not run it again.
    let log = open(&dir);
    assert_eq!(log.search("a", query("lamp")).await.unwrap().len(), 2);
    drop(log);
    let again: String = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT at FROM migrations WHERE name = ?1",
            [WORDS_WITHOUT_COPIES],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(again, ran);
    // An older hearthd that makes its index again: the next start drops it.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE VIRTUAL TABLE memory_index USING fts5(text, agent UNINDEXED,
                kind UNINDEXED, source UNINDEXED, first UNINDEXED, span UNINDEXED);",
        )
        .unwrap();
    drop(open(&dir));
    let left: i64 = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'memory_index%'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
}
