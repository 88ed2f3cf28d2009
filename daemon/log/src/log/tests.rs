use super::*;

fn open() -> (tempfile::TempDir, Log, broadcast::Receiver<Event>) {
    let dir = tempfile::tempdir().unwrap();
    let (events, receiver) = broadcast::channel(64);
    let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
    (dir, log, receiver)
}

#[tokio::test]
async fn a_backup_is_a_consistent_copy() {
    let (dir, log, _events) = open();
    log.append("a", NewMessage::new(Kind::User, "t", "keep"))
        .await
        .unwrap();
    let copy = dir.path().join("copy.db");
    assert!(log.backup(&copy).await.unwrap().0 > 0);
    let (events, _) = broadcast::channel(4);
    let restored = Log::open(&copy, events).unwrap();
    assert_eq!(restored.page("a", None, 10).await.unwrap()[0].text, "keep");
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hearth.db");
    let connection = Connection::open(&path).unwrap();
    connection.pragma_update(None, "user_version", 99).unwrap();
    drop(connection);
    let (events, _) = broadcast::channel(4);
    let err = Log::open(&path, events).err().unwrap().to_string();
    assert!(err.contains("schema 99"), "{err}");
}

#[tokio::test]
async fn ids_are_dense_per_agent() {
    let (_dir, log, _events) = open();
    for expected in 0..3 {
        let message = log
            .append("a", NewMessage::new(Kind::User, "terminal", "hi"))
            .await
            .unwrap();
        assert_eq!(message.id, expected);
    }
    let other = log
        .append("b", NewMessage::new(Kind::Note, "hearthd", "x"))
        .await
        .unwrap();
    assert_eq!(other.id, 0);
}

#[tokio::test]
async fn same_key_is_logged_once() {
    let (_dir, log, _events) = open();
    let mut message = NewMessage::new(Kind::User, "telegram", "hello");
    message.key = Some("tg:1".into());
    assert_eq!(log.submit("a", message.clone()).await.unwrap(), (0, false));
    assert_eq!(log.submit("a", message).await.unwrap(), (0, true));
    assert_eq!(log.next_id("a").await.unwrap(), 1);
}

#[tokio::test]
async fn messages_cannot_be_updated_or_deleted() {
    let (dir, log, _events) = open();
    log.append("a", NewMessage::new(Kind::User, "terminal", "keep me"))
        .await
        .unwrap();
    let connection = Connection::open(dir.path().join("hearth.db")).unwrap();
    let update = connection.execute("UPDATE messages SET text = 'changed'", []);
    assert!(update.unwrap_err().to_string().contains("append-only"));
    let delete = connection.execute("DELETE FROM messages", []);
    assert!(delete.unwrap_err().to_string().contains("append-only"));
    let page = log.page("a", None, 10).await.unwrap();
    assert_eq!(page[0].text, "keep me");
}

#[tokio::test]
async fn appended_messages_are_broadcast_in_order() {
    let (_dir, log, mut events) = open();
    let appends: Vec<_> = (0..20)
        .map(|n| {
            let log = log.clone();
            tokio::spawn(async move {
                log.append("a", NewMessage::new(Kind::User, "t", format!("{n}")))
                    .await
                    .unwrap()
            })
        })
        .collect();
    for append in appends {
        append.await.unwrap();
    }
    for expected in 0..20 {
        assert_eq!(events.recv().await.unwrap().id, Some(expected));
    }
}

#[tokio::test]
async fn a_turn_takes_what_waits_and_more_later() {
    let (_dir, log, _events) = open();
    assert_eq!(log.begin_turn("a", None).await.unwrap(), None);
    log.append("a", NewMessage::new(Kind::Note, "hearthd", "n"))
        .await
        .unwrap();
    log.append("a", NewMessage::new(Kind::User, "t", "one"))
        .await
        .unwrap();
    let turn = log.begin_turn("a", None).await.unwrap().unwrap();
    assert_eq!((turn.start_id, turn.taken_through), (2, 1));
    log.append("a", NewMessage::new(Kind::User, "t", "two"))
        .await
        .unwrap();
    let turn = log.take_more("a", turn).await.unwrap();
    assert_eq!(turn.taken_through, 2);
    let reply = NewMessage::new(Kind::Reply, "a", "done")
        .with_data(crate::log::MessageData::answering(vec![1, 2]));
    let logged = log.finish_turn("a", turn, vec![reply]).await.unwrap();
    assert_eq!(logged[0].answers, vec![1, 2]);
    assert_eq!(log.last_turn("a").await.unwrap(), Some((turn, true)));
}

/// Appends `count` messages straight to the database, links and all, as a
/// daemon that died before its next anchor would have left them.
fn append_unanchored(path: &Path, from: usize, count: usize) {
    let mut connection = Connection::open(path).unwrap();
    let tx = connection.transaction().unwrap();
    for n in from..from + count {
        let message = NewMessage::new(Kind::User, "t", format!("message {n}"));
        append(&tx, "a", message, &mut Appended::default()).unwrap();
    }
    tx.commit().unwrap();
}

fn change_behind_the_triggers(path: &Path, id: i64) {
    Connection::open(path)
        .unwrap()
        .execute_batch(&format!(
            "DROP TRIGGER IF EXISTS messages_are_never_updated;
             UPDATE messages SET text = 'I never said this' WHERE agent = 'a' AND id = {id};"
        ))
        .unwrap();
}

#[tokio::test]
async fn start_checks_the_chain_from_its_anchor_to_the_end() {
    let (dir, log, _events) = open();
    let path = dir.path().join("hearth.db");
    let messages = (0..100).map(|n| NewMessage::new(Kind::User, "t", format!("message {n}")));
    log.append_all("a", messages.collect()).await.unwrap();
    drop(log);
    // Anchored at 100; 400 more from a run that died before anchoring.
    append_unanchored(&path, 100, 400);
    let connection = Connection::open(&path).unwrap();
    let report = chain::check_at_start(&connection, &path).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(
        report.checked, 400,
        "from the anchor to the end, not all 500"
    );
    // A change after the anchor is found, however far from the end.
    change_behind_the_triggers(&path, 150);
    let report = chain::check_at_start(&connection, &path).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("message 150 was changed")),
        "{:?}",
        report.problems
    );
}

#[tokio::test]
async fn a_start_after_a_clean_stop_checks_only_the_newest_links() {
    let (dir, log, _events) = open();
    let path = dir.path().join("hearth.db");
    let messages = (0..600).map(|n| NewMessage::new(Kind::User, "t", format!("message {n}")));
    log.append_all("a", messages.collect()).await.unwrap();
    drop(log);
    let connection = Connection::open(&path).unwrap();
    let report = chain::check_at_start(&connection, &path).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.checked, 256);
}

#[tokio::test]
async fn a_rebuilt_chain_does_not_match_its_anchor() {
    let (dir, log, _events) = open();
    let path = dir.path().join("hearth.db");
    let messages = (0..10).map(|n| NewMessage::new(Kind::User, "t", format!("message {n}")));
    log.append_all("a", messages.collect()).await.unwrap();
    drop(log);
    change_behind_the_triggers(&path, 3);
    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TRIGGER chain_is_never_deleted; DELETE FROM chain;")
        .unwrap();
    // The start links the messages anew, edit and all; the anchor tells.
    let (events, _) = broadcast::channel(4);
    let log = Log::open(&path, events).unwrap();
    assert!(
        log.chain_state().contains("broken at start"),
        "{}",
        log.chain_state()
    );
    assert!(
        log.chain_state().contains("anchored"),
        "{}",
        log.chain_state()
    );
    drop(log);
    // Not anchored anew: the next start says it again, and so does verify.
    let (events, _) = broadcast::channel(4);
    let log = Log::open(&path, events).unwrap();
    assert!(
        log.chain_state().contains("broken at start"),
        "{}",
        log.chain_state()
    );
    let report = chain::verify_file(&path).unwrap();
    assert!(
        report.problems.iter().any(|p| p.contains("anchored")),
        "{:?}",
        report.problems
    );
    assert!(
        log.chain_state().contains("last verified"),
        "{}",
        log.chain_state()
    );
    assert!(
        log.chain_state().contains("broken"),
        "{}",
        log.chain_state()
    );
}

#[tokio::test]
async fn a_tool_messages_output_is_stored_once_and_read_whole() {
    let (dir, log, _events) = open();
    let call = crate::log::ToolCall {
        id: "call_7".into(),
        name: "shell".into(),
        arguments: r#"{"command":"cat notes.txt"}"#.into(),
    };
    let output = "a long output that the log keeps in the text alone";
    let text = format!("shell({}) → {output}", call.arguments);
    let message = NewMessage::new(Kind::Tool, "a", text.clone())
        .with_data(MessageData::call(&call, 1, output));
    log.append("a", message).await.unwrap();
    drop(log);
    let connection = Connection::open(dir.path().join("hearth.db")).unwrap();
    let stored: String = connection
        .query_row("SELECT data FROM messages", [], |row| row.get(0))
        .unwrap();
    assert!(!stored.contains("keeps in the text"), "{stored}");
    assert!(!stored.contains("notes.txt"), "{stored}");
    drop(connection);
    let (events, _) = broadcast::channel(4);
    let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
    let entry = log.range("a", 0, 1, 1).await.unwrap().remove(0);
    assert_eq!(entry.message.text, text);
    assert_eq!(entry.data.logged_call(), Some((call, output.to_string())));
    assert!(chain::verify_file(&dir.path().join("hearth.db"))
        .unwrap()
        .is_ok());
}

#[tokio::test]
async fn a_chain_from_before_without_rowid_is_moved_once_and_still_verifies() {
    let (dir, log, _events) = open();
    let path = dir.path().join("hearth.db");
    let messages = (0..20).map(|n| NewMessage::new(Kind::User, "t", format!("message {n}")));
    log.append_all("a", messages.collect()).await.unwrap();
    drop(log);
    // The chain as a hearthd from before the migration kept it: a table
    // with rowids, its triggers, and no record of the migration.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TABLE old_chain (agent TEXT NOT NULL, id INTEGER NOT NULL, hash TEXT NOT NULL, PRIMARY KEY (agent, id));
             INSERT INTO old_chain SELECT agent, id, hash FROM chain;
             DROP TABLE chain;
             ALTER TABLE old_chain RENAME TO chain;
             DELETE FROM migrations WHERE name = 'chain_without_rowid';",
        )
        .unwrap();
    let (events, _) = broadcast::channel(4);
    let log = Log::open(&path, events).unwrap();
    assert!(log.chain_at_start.is_ok(), "{:?}", log.chain_at_start);
    log.append("a", NewMessage::new(Kind::User, "t", "after"))
        .await
        .unwrap();
    drop(log);
    let report = chain::verify_file(&path).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.checked, 21);
    let connection = Connection::open(&path).unwrap();
    let sql: String = connection
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'chain'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(sql.contains("WITHOUT ROWID"), "{sql}");
    let triggers: i64 = connection
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'chain'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(triggers, 3, "the chain's triggers are back");
    let deleted = connection.execute("DELETE FROM chain", []);
    assert!(deleted.is_err(), "still append-only");
}

#[tokio::test]
async fn a_failed_job_leaves_the_next_append_its_right_id_and_link() {
    let (dir, log, _events) = open();
    log.append("a", NewMessage::new(Kind::User, "t", "first"))
        .await
        .unwrap();
    // A job that appends and then fails: its message is rolled back, and
    // the writer's kept tail with it.
    let failed = log
        .run(|tx, appended| {
            append(tx, "a", NewMessage::new(Kind::User, "t", "gone"), appended)?;
            tx.execute("INSERT INTO no_such_table VALUES (1)", [])
        })
        .await;
    assert!(failed.is_err());
    let next = log
        .append("a", NewMessage::new(Kind::User, "t", "second"))
        .await
        .unwrap();
    assert_eq!(next.id, 1);
    drop(log);
    let report = chain::verify_file(&dir.path().join("hearth.db")).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.checked, 2);
}

/// `synchronous` as a job sees it: 2 is FULL, 1 NORMAL.
fn syncing(tx: &Connection) -> Result<i64, rusqlite::Error> {
    tx.pragma_query_value(None, "synchronous", |row| row.get(0))
}

#[tokio::test]
async fn derived_writes_alone_commit_without_a_sync_and_appends_always_sync() {
    let (_dir, log, _events) = open();
    assert_eq!(log.run_derived(|tx, _| syncing(tx)).await.unwrap(), 1);
    // After a derived group, a durable one syncs again (and with it every
    // derived commit before it, the WAL being one file).
    assert_eq!(log.run(|tx, _| syncing(tx)).await.unwrap(), 2);
    log.append("a", NewMessage::new(Kind::User, "t", "kept"))
        .await
        .unwrap();
    // Derived and durable jobs in one group: the group syncs.
    let (derived, durable) = tokio::join!(
        log.run_derived(|tx, _| syncing(tx)),
        log.run(|tx, _| syncing(tx))
    );
    assert_eq!(durable.unwrap(), 2);
    assert!(matches!(derived.unwrap(), 1 | 2));
    assert_eq!(log.run(|tx, _| syncing(tx)).await.unwrap(), 2);
}

/// The rows of `message_words`, one per indexed message, and whether the
/// given word finds each.
fn indexed(path: &Path, word: &str) -> (i64, i64) {
    let connection = Connection::open(path).unwrap();
    let rows = connection
        .query_row("SELECT count(*) FROM message_words_docsize", [], |row| {
            row.get(0)
        })
        .unwrap();
    let found = connection
        .query_row(
            "SELECT count(*) FROM message_words WHERE message_words MATCH ?1",
            [word],
            |row| row.get(0),
        )
        .unwrap();
    (rows, found)
}

#[tokio::test]
async fn each_message_a_group_appends_is_indexed_once_in_its_transaction() {
    let (dir, log, _events) = open();
    // Appenders at once, so that groups hold many jobs.
    let appends = (0..200).map(|n| {
        let log = log.clone();
        tokio::spawn(async move {
            let text = format!("heron number {n}");
            log.append("a", NewMessage::new(Kind::User, "t", text))
                .await
        })
    });
    for append in appends.collect::<Vec<_>>() {
        append.await.unwrap().unwrap();
    }
    // A failed job's message is rolled back with its index entry.
    let failed = log
        .run(|tx, appended| {
            append(
                tx,
                "a",
                NewMessage::new(Kind::User, "t", "heron gone"),
                appended,
            )?;
            tx.execute("INSERT INTO no_such_table VALUES (1)", [])
        })
        .await;
    assert!(failed.is_err());
    // A search's result repeats the index: left out.
    log.append(
        "a",
        NewMessage::new(Kind::Tool, "t", "search(heron) → 200 found"),
    )
    .await
    .unwrap();
    // A group of derived writes only indexes nothing.
    log.run_derived(|_, _| Ok(())).await.unwrap();
    drop(log);
    assert_eq!(indexed(&dir.path().join("hearth.db"), "heron"), (200, 200));
    let (events, _receiver) = broadcast::channel(64);
    let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
    log.append("a", NewMessage::new(Kind::User, "t", "heron after a start"))
        .await
        .unwrap();
    drop(log);
    assert_eq!(indexed(&dir.path().join("hearth.db"), "heron"), (201, 201));
}
