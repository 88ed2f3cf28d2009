//! The log's schema: every table, index and trigger, created when missing,
//! and the columns added since, added to an older database.

use rusqlite::Connection;

/// Creates every table that does not exist yet (schema version 1), and
/// adds the columns added since to a database that lacks them.
pub(super) fn create(connection: &Connection) -> Result<(), rusqlite::Error> {
    create_tables(connection)?;
    add_column(
        connection,
        "usage",
        "estimated",
        "INTEGER NOT NULL DEFAULT 0",
    )?;
    // What tainted the turn that made a schedule (`schedule.rs`); NULL: a
    // clean turn's, as every older row is.
    add_column(connection, "schedules", "untrusted", "TEXT")?;
    // A line that repeats its message or its halves: how many bytes it
    // takes of them, its text left empty (`memory/store/lines.rs`); NULL:
    // the line is its text, as every older row is.
    add_column(connection, "nodes", "prefix", "INTEGER")?;
    // Beside `prefix`, for a mechanical merge within its left half: the
    // level of the node on its left edge whose line it starts; NULL: its
    // halves, as `memory/store/lines.rs` says.
    add_column(connection, "nodes", "source", "INTEGER")
}

/// Adds `column` to `table` unless it has it: columns added within schema
/// version 1 with a default, so an older database reads the same.
fn add_column(
    connection: &Connection,
    table: &str,
    column: &str,
    definition: &str,
) -> Result<(), rusqlite::Error> {
    let exists: bool = connection.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
        rusqlite::params![table, column],
        |row| row.get(0),
    )?;
    if !exists {
        connection.execute_batch(&format!(
            "ALTER TABLE {table} ADD COLUMN {column} {definition}"
        ))?;
    }
    Ok(())
}

/// The migration that indexes voice notes: the ones marked pending, and
/// the transcripts by the note they transcribe. Without them a start with
/// transcription on read every message, and every transcript for each
/// note (`Log::untranscribed`).
pub(super) const VOICE_NOTES_INDEXED: &str = "voice-notes-indexed";

/// Creates the indexes of [`VOICE_NOTES_INDEXED`]: partial, so a message
/// that is neither costs its append no entry. The queries that use them
/// repeat their conditions word for word (SQLite uses a partial index only
/// for a query whose terms imply its own).
pub(super) fn index_voice_notes(connection: &Connection) -> Result<(), rusqlite::Error> {
    connection.execute_batch(
        "CREATE INDEX IF NOT EXISTS messages_voice_pending ON messages (agent, id)
            WHERE kind = 'user' AND json_extract(data, '$.transcription') = 'pending';
        CREATE INDEX IF NOT EXISTS messages_transcripts
            ON messages (agent, json_extract(data, '$.transcript_of'))
            WHERE json_extract(data, '$.transcript_of') IS NOT NULL;",
    )
}

fn create_tables(connection: &Connection) -> Result<(), rusqlite::Error> {
    connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS messages (
            agent  TEXT NOT NULL,
            id     INTEGER NOT NULL,
            kind   TEXT NOT NULL,
            source TEXT NOT NULL,
            text   TEXT NOT NULL,
            status TEXT,
            at     TEXT NOT NULL,
            data   TEXT,
            key    TEXT,
            PRIMARY KEY (agent, id)
        );
        CREATE UNIQUE INDEX IF NOT EXISTS messages_key ON messages (agent, key) WHERE key IS NOT NULL;
        CREATE TRIGGER IF NOT EXISTS messages_are_never_updated BEFORE UPDATE ON messages
            BEGIN SELECT RAISE(ABORT, 'the log is append-only: messages are never updated'); END;
        CREATE TRIGGER IF NOT EXISTS messages_are_never_deleted BEFORE DELETE ON messages
            BEGIN SELECT RAISE(ABORT, 'the log is append-only: messages are never deleted'); END;
        CREATE TRIGGER IF NOT EXISTS messages_are_never_replaced BEFORE INSERT ON messages
            WHEN EXISTS (SELECT 1 FROM messages WHERE agent = NEW.agent
                         AND (id = NEW.id OR (NEW.key IS NOT NULL AND key = NEW.key)))
            BEGIN SELECT RAISE(ABORT, 'the log is append-only: messages are never replaced'); END;
        -- WITHOUT ROWID: one B-tree keyed by the message, not a table and
        -- an index beside it (an append writes half the pages).
        CREATE TABLE IF NOT EXISTS chain (
            agent TEXT NOT NULL,
            id    INTEGER NOT NULL,
            hash  TEXT NOT NULL,
            PRIMARY KEY (agent, id)
        ) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS chain_is_never_updated BEFORE UPDATE ON chain
            BEGIN SELECT RAISE(ABORT, 'the log chain is append-only'); END;
        CREATE TRIGGER IF NOT EXISTS chain_is_never_deleted BEFORE DELETE ON chain
            BEGIN SELECT RAISE(ABORT, 'the log chain is append-only'); END;
        CREATE TRIGGER IF NOT EXISTS chain_is_never_replaced BEFORE INSERT ON chain
            WHEN EXISTS (SELECT 1 FROM chain WHERE agent = NEW.agent AND id = NEW.id)
            BEGIN SELECT RAISE(ABORT, 'the log chain is append-only'); END;
        CREATE TABLE IF NOT EXISTS turns (
            agent         TEXT NOT NULL,
            seq           INTEGER NOT NULL,
            start_id      INTEGER NOT NULL,
            taken_after   INTEGER NOT NULL,
            taken_through INTEGER NOT NULL,
            finished      INTEGER NOT NULL,
            PRIMARY KEY (agent, seq)
        );
        CREATE TABLE IF NOT EXISTS tool_calls (
            agent     TEXT NOT NULL,
            call_id   TEXT NOT NULL,
            turn      INTEGER NOT NULL,
            step      INTEGER NOT NULL,
            name      TEXT NOT NULL,
            arguments TEXT NOT NULL,
            PRIMARY KEY (agent, call_id)
        );
        CREATE TABLE IF NOT EXISTS nodes (
            agent      TEXT NOT NULL,
            level      INTEGER NOT NULL,
            idx        INTEGER NOT NULL,
            text       TEXT NOT NULL,
            mechanical INTEGER NOT NULL,
            PRIMARY KEY (agent, level, idx)
        );
        CREATE TRIGGER IF NOT EXISTS nodes_are_never_updated BEFORE UPDATE ON nodes
            BEGIN SELECT RAISE(ABORT, 'summary nodes are written once'); END;
        CREATE TRIGGER IF NOT EXISTS nodes_are_never_deleted BEFORE DELETE ON nodes
            BEGIN SELECT RAISE(ABORT, 'summary nodes are written once'); END;
        -- A second write of a node (INSERT OR REPLACE included) is ignored:
        -- the first line stays.
        CREATE TRIGGER IF NOT EXISTS nodes_are_never_replaced BEFORE INSERT ON nodes
            WHEN EXISTS (SELECT 1 FROM nodes WHERE agent = NEW.agent
                         AND level = NEW.level AND idx = NEW.idx)
            BEGIN SELECT RAISE(IGNORE); END;
        CREATE TABLE IF NOT EXISTS views (
            agent    TEXT NOT NULL,
            name     TEXT NOT NULL,
            applied  INTEGER NOT NULL,
            batching INTEGER NOT NULL,
            nodes    TEXT NOT NULL,
            PRIMARY KEY (agent, name)
        );
        CREATE TABLE IF NOT EXISTS schedules (
            id      INTEGER PRIMARY KEY AUTOINCREMENT,
            agent   TEXT NOT NULL,
            spec    TEXT NOT NULL,
            text    TEXT NOT NULL,
            next_at INTEGER NOT NULL,
            active  INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS notify (
            seq       INTEGER PRIMARY KEY AUTOINCREMENT,
            agent     TEXT NOT NULL,
            key       TEXT NOT NULL,
            text      TEXT NOT NULL,
            source    TEXT NOT NULL,
            delivered INTEGER NOT NULL,
            UNIQUE (agent, key)
        );
        CREATE TABLE IF NOT EXISTS runs (
            id      INTEGER PRIMARY KEY AUTOINCREMENT,
            parent  TEXT NOT NULL,
            child   TEXT NOT NULL,
            task_id INTEGER NOT NULL,
            status  TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS client_state (
            name  TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS usage (
            seq          INTEGER PRIMARY KEY AUTOINCREMENT,
            agent        TEXT NOT NULL,
            purpose      TEXT NOT NULL,
            model        TEXT NOT NULL,
            input        INTEGER NOT NULL,
            cached_input INTEGER NOT NULL,
            cache_write  INTEGER NOT NULL,
            output       INTEGER NOT NULL,
            latency_ms   INTEGER NOT NULL,
            cost_usd     REAL NOT NULL,
            priced       INTEGER NOT NULL,
            day          TEXT NOT NULL,
            at           TEXT NOT NULL,
            estimated    INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX IF NOT EXISTS usage_by_day ON usage (day);
        CREATE TABLE IF NOT EXISTS budget_notes (
            period TEXT PRIMARY KEY,
            at     TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS exposures (
            seq     INTEGER PRIMARY KEY AUTOINCREMENT,
            agent   TEXT NOT NULL,
            why     TEXT NOT NULL,
            started INTEGER NOT NULL,
            ended   INTEGER
        );
        CREATE INDEX IF NOT EXISTS exposures_by_start ON exposures (started);",
    )
}
