//! The full-text index of messages and lines: two FTS5 tables whose text
//! is the log's own (external content), kept by triggers.
//!
//! `message_words` indexes `messages` and `line_words` indexes `nodes`;
//! neither keeps a copy of the text: FTS5 reads a row's columns from its
//! table by rowid when a snippet or a filter needs them. That holds because
//! neither table ever changes or loses a row (triggers refuse it), so the
//! rowids SQLite gave them stay theirs — dense from 1, and `VACUUM INTO`
//! (`hearth backup`) copies them as they are
//! (`a_backup_is_searched_as_the_log_it_copies`).
//!
//! A message is indexed in the transaction that appends it, so a search
//! never misses an acknowledged message: the writer indexes a group's new
//! messages with one statement before it commits ([`index_appended`]), not
//! a trigger per row. FTS5 writes its pending terms out at every savepoint,
//! and each job runs in one (`log.rs`), so a trigger made a segment per
//! message and most of an append's cost (BENCHMARKS.md, "What an append
//! costs the writer"). A line is indexed by the trigger of the statement
//! that writes it. SQLite allows no trigger on a virtual table, so nothing
//! done to the index can reach the log.
//!
//! Left out, because they only repeat what it holds: the results of
//! `search` and `zoom` calls, level-0 lines that are their message verbatim
//! or cut, lines that join two lines for free (they hold a line break;
//! their halves are indexed), and mechanical merges, which store no text
//! of their own (`memory/store/lines.rs`).

use rusqlite::Connection;

/// The migration that moved the index from one table holding a copy of
/// every text (`memory_index`, schema 2) to the two external-content tables.
pub const WORDS_WITHOUT_COPIES: &str = "index-words-without-copies";

/// Creates the index tables and the triggers that keep them.
pub fn create(connection: &Connection) -> Result<(), rusqlite::Error> {
    connection.execute_batch(&format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS message_words USING fts5(
            text,
            agent UNINDEXED,
            id UNINDEXED,
            kind UNINDEXED,
            source UNINDEXED,
            at UNINDEXED,
            content = 'messages',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE VIRTUAL TABLE IF NOT EXISTS line_words USING fts5(
            text,
            agent UNINDEXED,
            level UNINDEXED,
            idx UNINDEXED,
            content = 'nodes',
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        -- Messages are indexed by the writer, a group at a time
        -- (`index_appended`); an older hearthd's trigger would index them twice.
        DROP TRIGGER IF EXISTS messages_are_indexed_by_words;
        -- Replaced by the trigger below, which leaves out the lines stored
        -- as a length of what they repeat.
        DROP TRIGGER IF EXISTS lines_are_indexed_by_words;
        CREATE TRIGGER IF NOT EXISTS own_lines_are_indexed AFTER INSERT ON nodes
            WHEN {LINE_INDEXED}
            BEGIN
                INSERT INTO line_words (rowid, text, agent, level, idx)
                VALUES (new.rowid, new.text, new.agent, new.level, new.idx);
            END;
        -- The index of schema 2, with its copy of every text: gone, also
        -- when an older hearthd made it again (the tables above indexed
        -- what it appended meanwhile, their triggers still in place).
        DROP TRIGGER IF EXISTS messages_are_indexed;
        DROP TRIGGER IF EXISTS lines_are_indexed;
        DROP TABLE IF EXISTS memory_index;"
    ))
}

/// Which messages are indexed: all but the results of `search` and `zoom`,
/// whose text repeats what the index already holds.
const MESSAGE_INDEXED: &str = "NOT (kind = 'tool'
    AND (substr(text, 1, 7) = 'search(' OR substr(text, 1, 5) = 'zoom('))";

/// The last rowid of `messages`: what a group's appends come after
/// (SQLite gives a new row the largest rowid plus one, and no row is ever
/// deleted).
pub fn last_message_row(connection: &Connection) -> Result<i64, rusqlite::Error> {
    connection
        .prepare_cached("SELECT COALESCE(MAX(rowid), 0) FROM messages")?
        .query_row([], |row| row.get(0))
}

/// Indexes the messages appended after rowid `after`, in the caller's
/// transaction: the writer calls it once a group's jobs have run, before
/// the commit.
pub fn index_appended(connection: &Connection, after: i64) -> Result<(), rusqlite::Error> {
    connection
        .prepare_cached(&format!(
            "INSERT INTO message_words (rowid, text, agent, id, kind, source, at)
                SELECT rowid, text, agent, id, kind, source, at FROM messages
                WHERE rowid > ?1 AND {MESSAGE_INDEXED} ORDER BY rowid"
        ))?
        .execute([after])?;
    Ok(())
}

/// Which new lines are indexed: the compactor's own lines. Not a line
/// stored as a length of what it repeats (`memory/store/lines.rs`: a
/// message's line, a free join, a mechanical merge), not a free join (it
/// holds a line break), not a message's line that is the message itself or
/// its text cut.
const LINE_INDEXED: &str =
    "new.prefix IS NULL AND instr(new.text, char(10)) = 0 AND NOT (new.level = 0 AND (
    new.mechanical OR EXISTS (SELECT 1 FROM messages m
        WHERE m.agent = new.agent AND m.id = new.idx
        AND new.text = m.kind || ': ' || replace(replace(m.text, char(10), ' '), char(13), ' '))))";

/// Fills the new tables from the log (the index of schema 2, which held a
/// copy of every text, was dropped by [`create`]), in the caller's
/// transaction: run once, recorded by the caller as
/// [`WORDS_WITHOUT_COPIES`].
pub fn migrate(connection: &Connection) -> Result<(), rusqlite::Error> {
    backfill(connection)
}

/// Fills the index from the tables (a database from before it). Runs in
/// the caller's transaction.
fn backfill(connection: &Connection) -> Result<(), rusqlite::Error> {
    let messages = MESSAGE_INDEXED;
    let lines = LINE_INDEXED.replace("new.", "n.");
    connection.execute_batch(&format!(
        "INSERT INTO message_words (message_words) VALUES ('delete-all');
         INSERT INTO line_words (line_words) VALUES ('delete-all');
         INSERT INTO message_words (rowid, text, agent, id, kind, source, at)
            SELECT rowid, text, agent, id, kind, source, at FROM messages
            WHERE {messages} ORDER BY rowid;
         INSERT INTO line_words (rowid, text, agent, level, idx)
            SELECT n.rowid, n.text, n.agent, n.level, n.idx FROM nodes n
            WHERE {lines} ORDER BY n.rowid;"
    ))
}
