use super::*;
use crate::log::NewMessage;
use crate::memory::FactsLog;
use crate::memory::MemoryLog;
use crate::memory::{Built, Node};
use hearth_protocol::Kind;
use tokio::sync::broadcast;

fn open(dir: &tempfile::TempDir) -> Log {
    let (events, _) = broadcast::channel(64);
    Log::open(&dir.path().join("hearth.db"), events).unwrap()
}

fn query(words: &str) -> Query {
    Query::read(words, None, None, None, None, None).unwrap()
}

fn ids(hits: &[SearchHit]) -> Vec<(u64, u64)> {
    hits.iter().map(|hit| (hit.id, hit.n)).collect()
}

#[test]
fn what_someone_writes_is_quoted_word_by_word() {
    assert_eq!(
        match_expression("plumber's number?").as_deref(),
        Some("\"plumber\" OR \"s\" OR \"number\"")
    );
    assert_eq!(
        match_expression("the \"green door\" AND x*").as_deref(),
        Some("\"the\" OR \"green door\" OR \"AND\" OR \"x\"")
    );
    assert_eq!(match_expression(" -- \"\" * "), None);
    assert!(matches!(
        Query::read("?!", None, None, None, None, None),
        Err(SearchError::NoWords)
    ));
    assert!(matches!(
        Query::read("a", None, None, Some("mail"), None, None),
        Err(SearchError::BadKind(_))
    ));
    assert_eq!(
        Query::read("a", None, None, None, None, Some(500))
            .unwrap()
            .limit,
        MAX_SEARCH_HITS
    );
}

#[test]
fn dates_are_read_as_local_times_in_the_logs_form() {
    let midnight = local_time("2026-11-30").unwrap();
    assert!(
        midnight.starts_with("2026-11-30T00:00:00.000"),
        "{midnight}"
    );
    let evening = local_time("2026-11-30 18:05").unwrap();
    assert!(evening.starts_with("2026-11-30T18:05:00.000"), "{evening}");
    assert!(midnight < evening);
    assert!(local_time("2026-11-30T18:05:00+00:00").is_some());
    assert!(local_time("yesterday").is_none());
}

#[tokio::test]
async fn an_acknowledged_message_is_found_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    log.append("a", NewMessage::new(Kind::User, "terminal", "hello there"))
        .await
        .unwrap();
    let (id, _) = log
        .submit(
            "a",
            NewMessage::new(Kind::User, "telegram", "The plumber's number is 0176 555"),
        )
        .await
        .unwrap();
    let hits = log.search("a", query("plumber number")).await.unwrap();
    assert_eq!(ids(&hits), [(id, 1)]);
    assert_eq!(hits[0].kind, "user");
    assert_eq!(hits[0].source, "telegram");
    assert!(hits[0].snippet.contains("[plumber"), "{}", hits[0].snippet);
    // Stemmed: plumbers finds plumber; another agent's log is not searched.
    assert_eq!(log.search("a", query("plumbers")).await.unwrap().len(), 1);
    assert!(log.search("b", query("plumber")).await.unwrap().is_empty());
}

#[tokio::test]
async fn filters_narrow_by_kind_source_and_date() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    log.append(
        "a",
        NewMessage::new(Kind::User, "terminal", "lease renewal"),
    )
    .await
    .unwrap();
    log.append(
        "a",
        NewMessage::new(Kind::Reply, "a", "the lease is renewed"),
    )
    .await
    .unwrap();
    let only = |kind: Option<&str>, source: Option<&str>| {
        Query::read("lease", None, None, kind, source, None).unwrap()
    };
    let search = |q| log.search("a", q);
    assert_eq!(ids(&search(only(None, None)).await.unwrap()).len(), 2);
    assert_eq!(
        ids(&search(only(Some("reply"), None)).await.unwrap()),
        [(1, 1)]
    );
    assert_eq!(
        ids(&search(only(None, Some("terminal"))).await.unwrap()),
        [(0, 1)]
    );
    let past = Query::read("lease", Some("2000-01-01"), None, None, None, None).unwrap();
    assert!(search(past).await.unwrap().is_empty());
    let since = Query::read("lease", None, Some("2000-01-01"), None, None, None).unwrap();
    assert_eq!(search(since).await.unwrap().len(), 2);
}

#[tokio::test]
async fn the_compactors_lines_are_indexed_and_copies_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    for text in ["short words", "a very long story about the harbour"] {
        log.append("a", NewMessage::new(Kind::User, "terminal", text))
            .await
            .unwrap();
    }
    // A search's and a zoom's results repeat the index: not indexed.
    for text in [
        "search({\"query\":\"harbour\"}) → 1+1 harbour",
        "zoom({}) → harbour",
    ] {
        log.append("a", NewMessage::new(Kind::Tool, "a", text))
            .await
            .unwrap();
    }
    let built = |node, text: &str, mechanical| Built {
        node,
        text: text.into(),
        mechanical,
    };
    log.insert_nodes(
        "a",
        vec![
            // Message 0's own line, verbatim: a copy.
            built(Node::message(0), "user: short words", false),
            // Message 1's line from the compactor.
            built(Node::message(1), "user: tale of the harbour", false),
            // A free join: a copy of its halves.
            built(
                Node::new(1, 0),
                "user: short words\nuser: tale of the harbour",
                false,
            ),
            built(Node::new(1, 1), "two tool calls about the harbour", false),
        ],
    )
    .await
    .unwrap();
    let hits = log.search("a", query("harbour")).await.unwrap();
    let mut found = ids(&hits);
    found.sort();
    assert_eq!(found, [(1, 1), (1, 1), (2, 2)]);
    assert!(hits.iter().any(|hit| hit.kind == "line" && hit.n == 2));
    let short = log.search("a", query("short")).await.unwrap();
    assert_eq!(ids(&short), [(0, 1)]);
    assert_eq!(short[0].kind, "user");
}

#[tokio::test]
async fn the_index_leaves_the_log_append_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = open(&dir);
    log.append("a", NewMessage::new(Kind::User, "terminal", "keep me"))
        .await
        .unwrap();
    drop(log);
    let connection = Connection::open(dir.path().join("hearth.db")).unwrap();
    let err = connection
        .execute("UPDATE messages SET text = 'changed'", [])
        .unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
    assert!(connection.execute("DELETE FROM messages", []).is_err());
    // Emptying the index loses no message.
    connection
        .execute(
            "INSERT INTO message_words (message_words) VALUES ('delete-all')",
            [],
        )
        .unwrap();
    let kept: String = connection
        .query_row("SELECT text FROM messages", [], |row| row.get(0))
        .unwrap();
    assert_eq!(kept, "keep me");
}

#[tokio::test]
async fn a_database_from_before_the_index_is_indexed_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hearth.db");
    let log = open(&dir);
    log.insert_nodes(
        "a",
        vec![Built {
            node: Node::new(1, 0),
            text: "they chose the blue boat".into(),
            mechanical: false,
        }],
    )
    .await
    .unwrap();
    drop(log);
    // Schema 1: no index and no triggers; messages written without them.
    let connection = Connection::open(&path).unwrap();
    connection
        .execute_batch(
            "DROP TRIGGER own_lines_are_indexed;
             DROP TABLE message_words; DROP TABLE line_words; DROP TABLE facts;
             DROP TABLE migrations;
             INSERT INTO messages (agent, id, kind, source, text, at)
                VALUES ('a', 0, 'user', 'terminal', 'which boat?', '2026-11-30T10:00:00.000+00:00'),
                       ('a', 1, 'reply', 'a', 'the blue one', '2026-11-30T10:00:01.000+00:00');
             PRAGMA user_version = 1;",
        )
        .unwrap();
    drop(connection);
    let log = open(&dir);
    let hits = log.search("a", query("boat")).await.unwrap();
    let mut found = ids(&hits);
    found.sort();
    assert_eq!(found, [(0, 1), (0, 2)]);
    // And new messages are indexed from then on.
    log.append("a", NewMessage::new(Kind::User, "terminal", "a boat again"))
        .await
        .unwrap();
    assert_eq!(log.search("a", query("boat")).await.unwrap().len(), 3);
    assert!(log.facts("a").await.unwrap().0.is_empty());
}

#[path = "bounds.rs"]
mod bounds;
