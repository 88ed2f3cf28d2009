//! `hearth backup FILE`: a consistent copy of the database, made while the
//! daemon runs.
//!
//! A new file is the whole database (`VACUUM INTO`). An earlier backup of
//! the same home is brought up to date instead, with only what is new: the
//! tables that are never updated or deleted (`messages`, `chain`, `nodes`,
//! `facts_record`, held so by their triggers) take the rows after the ones
//! the backup has, the search index takes those new messages (the lines
//! index themselves, by the backup's own trigger), and the small tables that
//! change in place (views, schedules, turns, states…) are copied whole. The
//! cost follows what was added since, not the log's length (BENCHMARKS.md,
//! "The endless conversation").
//!
//! The update is one transaction on the backup, reading one snapshot of the
//! live database (a deferred transaction over both: the daemon's writer is
//! never locked out), so a backup is always either the earlier copy or the
//! new one, never half. It is an earlier backup of this home only when its
//! chain is a beginning of this log's: each agent's last link there is the
//! link at the same message here. A backup made by a hearthd of another
//! schema is replaced by a whole new copy, written beside it and renamed
//! over it.

use super::words;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// What became of the file.
#[derive(Debug, PartialEq, Eq)]
pub enum Backup {
    /// The whole database was written to a new file.
    Whole,
    /// An earlier backup took what was new: `messages` of them.
    Updated { messages: u64 },
}

/// Why an existing file was not brought up to date.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("it is not a hearth database (it has no log's chain); choose a new name, or an earlier backup of this home")]
    NotHearth,
    #[error("it is a backup of another home, or of a log that differs from this one at message {id} of `{agent}`; choose a new name")]
    OtherLog { agent: String, id: i64 },
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot put the new copy in place: {0}")]
    Io(#[from] std::io::Error),
    #[error("the log's writer thread has stopped")]
    Stopped,
}

/// The tables no row of which is ever updated or deleted (their triggers
/// abort both), with the column that orders an agent's rows in them when
/// they have no rowid. A row the backup lacks is one after its last.
const APPEND_ONLY: [(&str, Order); 4] = [
    ("messages", Order::Rowid),
    ("nodes", Order::Rowid),
    ("chain", Order::Agent("id")),
    ("facts_record", Order::Agent("seq")),
];

#[derive(Clone, Copy)]
enum Order {
    /// SQLite gives a new row the largest rowid plus one, and none is
    /// deleted: the new rows are those after the backup's largest.
    Rowid,
    /// A `WITHOUT ROWID` table keyed by `(agent, column)`.
    Agent(&'static str),
}

/// Writes a consistent copy of the database at `source` to `target`: a
/// whole copy to a new file, or an earlier backup brought up to date.
pub fn backup(source: &Path, target: &Path) -> Result<Backup, Refused> {
    if !target.exists() {
        whole(source, target)?;
        return Ok(Backup::Whole);
    }
    let outcome = open_and_update(source, target);
    let outcome = match outcome {
        Err(Refused::Sqlite(err))
            if err.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) =>
        {
            Err(Refused::NotHearth)
        }
        outcome => outcome,
    };
    match outcome? {
        Some(messages) => Ok(Backup::Updated { messages }),
        None => {
            replace(source, target)?;
            Ok(Backup::Whole)
        }
    }
}

fn open_and_update(source: &Path, target: &Path) -> Result<Option<u64>, Refused> {
    let connection = Connection::open_with_flags(
        target,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    connection.execute(
        "ATTACH DATABASE ?1 AS live",
        params![source.to_string_lossy()],
    )?;
    let outcome = update(&connection);
    let _ = connection.execute("DETACH DATABASE live", []);
    outcome
}

fn whole(source: &Path, target: &Path) -> Result<(), rusqlite::Error> {
    // VACUUM cannot run inside the writer's transactions; a second
    // connection reads one consistent snapshot of the WAL database.
    let connection = Connection::open(source)?;
    connection.execute("VACUUM INTO ?1", params![target.to_string_lossy()])?;
    Ok(())
}

/// A whole copy beside `target`, renamed over it once complete.
fn replace(source: &Path, target: &Path) -> Result<(), Refused> {
    let name = target
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let partial = target.with_file_name(format!(".{name}.hearth-partial"));
    let _ = std::fs::remove_file(&partial);
    whole(source, &partial)?;
    std::fs::rename(&partial, target).map_err(|err| {
        let _ = std::fs::remove_file(&partial);
        Refused::Io(err)
    })
}

/// Brings the backup (`main`) up to the live database (`live`) in one
/// transaction. `None`: their schemas differ, and only a whole copy will do.
fn update(connection: &Connection) -> Result<Option<u64>, Refused> {
    // Deferred: the live database is only read, so its writer goes on; its
    // snapshot is taken at the first read and held to the commit.
    let tx = connection.unchecked_transaction()?;
    if !has_table(&tx, "main", "chain")? {
        return Err(Refused::NotHearth);
    }
    if schema(&tx, "main")? != schema(&tx, "live")? {
        return Ok(None);
    }
    for (agent, id, hash) in last_links(&tx)? {
        let live: Option<String> = tx
            .query_row(
                "SELECT hash FROM live.chain WHERE agent = ?1 AND id = ?2",
                params![agent, id],
                |row| row.get(0),
            )
            .optional()?;
        if live.as_deref() != Some(hash.as_str()) {
            return Err(Refused::OtherLog { agent, id });
        }
    }
    let last_message = words::last_message_row(&tx)?;
    let mut messages = 0;
    for (table, order) in APPEND_ONLY {
        let added = append_new(&tx, table, order)?;
        if table == "messages" {
            messages = added;
        }
    }
    // The new messages into the backup's index, as the writer indexes a
    // group's; the new lines were indexed by the backup's trigger on `nodes`.
    words::index_appended(&tx, last_message)?;
    // AUTOINCREMENT's counters last: the copies above move them.
    let mut tables = changing_tables(&tx)?;
    tables.sort_by_key(|name| name == "sqlite_sequence");
    for table in tables {
        tx.execute_batch(&format!(
            "DELETE FROM main.\"{table}\"; INSERT INTO main.\"{table}\" SELECT * FROM live.\"{table}\";"
        ))?;
    }
    tx.commit()?;
    Ok(Some(messages as u64))
}

fn has_table(tx: &Connection, schema: &str, name: &str) -> Result<bool, rusqlite::Error> {
    tx.query_row(
        &format!(
            "SELECT COUNT(*) > 0 FROM {schema}.sqlite_schema WHERE type = 'table' AND name = ?1"
        ),
        [name],
        |row| row.get(0),
    )
}

/// Everything the schema is: its tables, indexes, triggers and version.
fn schema(tx: &Connection, schema: &str) -> Result<(i64, Vec<String>), rusqlite::Error> {
    let version = tx.query_row(&format!("PRAGMA {schema}.user_version"), [], |row| {
        row.get(0)
    })?;
    let mut statement = tx.prepare(&format!(
        "SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM {schema}.sqlite_schema ORDER BY type, name"
    ))?;
    let rows = statement.query_map([], |row| row.get(0))?;
    Ok((version, rows.collect::<Result<_, _>>()?))
}

/// A common table expression `agents(agent)` over `table` (schema
/// qualified): each agent in it, a few index lookups per agent, and one
/// NULL row after the last (`log/ends.rs` steps through the log's agents
/// the same way).
fn agents(table: &str) -> String {
    format!(
        "WITH RECURSIVE agents(agent) AS (
            SELECT MIN(agent) FROM {table}
            UNION ALL
            SELECT (SELECT MIN(t.agent) FROM {table} t WHERE t.agent > agents.agent)
            FROM agents WHERE agents.agent IS NOT NULL
        )"
    )
}

/// Each agent's last link in the backup's chain.
fn last_links(tx: &Connection) -> Result<Vec<(String, i64, String)>, rusqlite::Error> {
    let mut statement = tx.prepare(&format!(
        "{}
        SELECT c.agent, c.id, c.hash FROM agents JOIN main.chain c ON c.agent = agents.agent
        WHERE c.id = (SELECT MAX(id) FROM main.chain m WHERE m.agent = agents.agent)",
        agents("main.chain")
    ))?;
    let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
    rows.collect()
}

/// Copies the rows of an append-only table that come after the backup's;
/// how many.
fn append_new(tx: &Connection, table: &str, order: Order) -> Result<usize, rusqlite::Error> {
    match order {
        Order::Rowid => {
            let columns = columns(tx, table)?;
            tx.execute(
                &format!(
                    "INSERT INTO main.{table} (rowid, {columns})
                     SELECT rowid, {columns} FROM live.{table}
                     WHERE rowid > (SELECT COALESCE(MAX(rowid), 0) FROM main.{table})
                     ORDER BY rowid"
                ),
                [],
            )
        }
        // Every agent of the live table, each from after the backup's last
        // row of it (all of it for an agent the backup lacks).
        Order::Agent(column) => tx.execute(
            &format!(
                "{}
                INSERT INTO main.{table}
                SELECT t.* FROM agents JOIN live.{table} t ON t.agent = agents.agent
                WHERE t.{column} > COALESCE(
                    (SELECT MAX(b.{column}) FROM main.{table} b WHERE b.agent = agents.agent), -1)
                ORDER BY t.agent, t.{column}",
                agents(&format!("live.{table}"))
            ),
            [],
        ),
    }
}

/// A table's columns, in order, for a statement that names them.
fn columns(tx: &Connection, table: &str) -> Result<String, rusqlite::Error> {
    let mut statement =
        tx.prepare("SELECT name FROM pragma_table_info(?1, 'main') ORDER BY cid")?;
    let names = statement
        .query_map([table], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(names
        .iter()
        .map(|name| format!("\"{name}\""))
        .collect::<Vec<_>>()
        .join(", "))
}

/// The ordinary tables that are not append-only: copied whole. Not the
/// search index's tables (virtual, and their shadows), which follow the
/// tables they index.
fn changing_tables(tx: &Connection) -> Result<Vec<String>, rusqlite::Error> {
    let mut statement = tx.prepare(
        "SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table'
         AND (name NOT LIKE 'sqlite\\_%' ESCAPE '\\' OR name = 'sqlite_sequence') ORDER BY name",
    )?;
    let names = statement
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(names
        .into_iter()
        .filter(|name| !APPEND_ONLY.iter().any(|(table, _)| table == name))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::super::{Log, NewMessage};
    use super::*;
    use hearth_protocol::Kind;

    fn open(path: &Path) -> Log {
        let (events, _) = tokio::sync::broadcast::channel(64);
        Log::open(path, events).unwrap()
    }

    async fn say(log: &Log, agent: &str, texts: &[&str]) {
        for text in texts {
            log.append(agent, NewMessage::new(Kind::User, "terminal", *text))
                .await
                .unwrap();
        }
    }

    /// A line of the memory's tree, written as the keeper writes one (its
    /// own words, so the trigger indexes it).
    fn line(path: &Path, agent: &str, level: i64, idx: i64, text: &str) {
        let connection = Connection::open(path).unwrap();
        connection
            .busy_timeout(std::time::Duration::from_secs(5))
            .unwrap();
        connection
            .execute(
                "INSERT INTO nodes (agent, level, idx, text, mechanical) VALUES (?1, ?2, ?3, ?4, 0)",
                params![agent, level, idx, text],
            )
            .unwrap();
    }

    /// Every row of every ordinary table, and what the two indexes find.
    fn contents(path: &Path) -> Vec<String> {
        let connection = Connection::open(path).unwrap();
        let mut out = Vec::new();
        let tables: Vec<String> = connection
            .prepare("SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table' AND name NOT LIKE '%_words_%' AND name <> 'sqlite_schema' ORDER BY name")
            .unwrap()
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for table in tables {
            let mut statement = connection
                .prepare(&format!("SELECT * FROM \"{table}\" ORDER BY 1, 2"))
                .unwrap();
            let width = statement.column_count();
            let rows = statement
                .query_map([], |row| {
                    let values: Vec<String> = (0..width)
                        .map(|i| match row.get_ref(i).unwrap() {
                            rusqlite::types::ValueRef::Text(text) => {
                                String::from_utf8_lossy(text).into_owned()
                            }
                            value => format!("{value:?}"),
                        })
                        .collect();
                    Ok(format!("{table}: {}", values.join(" | ")))
                })
                .unwrap();
            out.extend(rows.map(Result::unwrap));
        }
        for (index, word) in [
            ("message_words", "zebra"),
            ("message_words", "apple"),
            ("line_words", "summary"),
        ] {
            let found: Vec<i64> = connection
                .prepare(&format!(
                    "SELECT rowid FROM {index} WHERE {index} MATCH ?1 ORDER BY rowid"
                ))
                .unwrap()
                .query_map([word], |row| row.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            out.push(format!("{index} {word}: {found:?}"));
            connection
                .execute(
                    &format!("INSERT INTO {index} ({index}) VALUES ('integrity-check')"),
                    [],
                )
                .unwrap();
        }
        out
    }

    #[tokio::test]
    async fn an_earlier_backup_takes_only_what_is_new_and_equals_a_whole_copy() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("hearth.db");
        let log = open(&live);
        say(&log, "a", &["an apple", "a pear"]).await;
        say(&log, "b", &["b's first"]).await;
        line(&live, "a", 1, 0, "a summary of fruit");
        log.set_state("telegram.cursor", "1").await.unwrap();
        let copy = dir.path().join("copy.db");
        assert_eq!(backup(&live, &copy).unwrap(), Backup::Whole);

        // After it: more of both agents, a new agent, new lines, a state moved.
        say(&log, "a", &["a zebra", "another apple"]).await;
        say(&log, "b", &["b's zebra"]).await;
        say(&log, "c", &["c is new"]).await;
        line(&live, "a", 1, 1, "a second summary, of zebras");
        log.set_state("telegram.cursor", "2").await.unwrap();
        assert_eq!(
            backup(&live, &copy).unwrap(),
            Backup::Updated { messages: 4 }
        );
        // Nothing new: nothing taken, and still the same.
        assert_eq!(
            backup(&live, &copy).unwrap(),
            Backup::Updated { messages: 0 }
        );

        let fresh = dir.path().join("fresh.db");
        assert_eq!(backup(&live, &fresh).unwrap(), Backup::Whole);
        let (updated, whole) = (contents(&copy), contents(&fresh));
        assert!(
            updated.iter().any(|row| row.contains("c is new")),
            "{updated:?}"
        );
        assert!(
            updated.contains(&"message_words zebra: [4, 6]".to_string()),
            "{updated:?}"
        );
        assert_eq!(updated, whole);
        // It opens as a log, its chain whole.
        drop(log);
        let restored = open(&copy);
        assert_eq!(
            restored.page("c", None, 10).await.unwrap()[0].text,
            "c is new"
        );
    }

    #[tokio::test]
    async fn a_file_that_is_not_an_earlier_backup_of_this_log_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("hearth.db");
        let log = open(&live);
        say(&log, "a", &["mine"]).await;

        let text = dir.path().join("notes.txt");
        std::fs::write(&text, "not a database").unwrap();
        let refused = backup(&live, &text);
        assert!(matches!(refused, Err(Refused::NotHearth)), "{refused:?}");
        assert_eq!(std::fs::read(&text).unwrap(), b"not a database");
        let empty = dir.path().join("empty.db");
        std::fs::write(&empty, "").unwrap();
        assert!(matches!(backup(&live, &empty), Err(Refused::NotHearth)));
        assert_eq!(std::fs::read(&empty).unwrap(), b"");

        // Another home's log, longer than this one: a different chain.
        let other_path = dir.path().join("other.db");
        let other = open(&other_path);
        say(&other, "a", &["someone else's", "words"]).await;
        let theirs = dir.path().join("theirs.db");
        backup(&other_path, &theirs).unwrap();
        let before = std::fs::read(&theirs).unwrap();
        let refused = backup(&live, &theirs).err().unwrap().to_string();
        assert!(refused.contains("another home"), "{refused}");
        assert_eq!(std::fs::read(&theirs).unwrap(), before);
    }

    #[tokio::test]
    async fn a_backup_of_another_schema_is_replaced_by_a_whole_copy() {
        let dir = tempfile::tempdir().unwrap();
        let live = dir.path().join("hearth.db");
        let log = open(&live);
        say(&log, "a", &["one"]).await;
        let copy = dir.path().join("copy.db");
        backup(&live, &copy).unwrap();
        Connection::open(&copy)
            .unwrap()
            .execute_batch("CREATE TABLE from_an_older_hearth (x)")
            .unwrap();
        say(&log, "a", &["two"]).await;
        assert_eq!(backup(&live, &copy).unwrap(), Backup::Whole);
        assert_eq!(contents(&copy), contents(&live));
    }

    /// Every table a trigger keeps from deletes is copied by its new rows,
    /// never emptied (a delete would abort the whole update).
    #[test]
    fn every_table_kept_from_deletes_is_append_only_here() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        drop(open(&path));
        let connection = Connection::open(&path).unwrap();
        let mut statement = connection
            .prepare("SELECT tbl_name FROM sqlite_schema WHERE type = 'trigger' AND sql LIKE '%BEFORE DELETE%RAISE%'")
            .unwrap();
        let guarded: Vec<String> = statement
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(guarded.len() >= 3, "{guarded:?}");
        for table in guarded {
            assert!(
                APPEND_ONLY.iter().any(|(name, _)| *name == table),
                "`{table}` is kept from deletes but not in APPEND_ONLY"
            );
        }
    }
}
