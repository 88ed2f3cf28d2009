//! Hermes Agent's session store.
//!
//! The format read, from Hermes Agent's own schema (NousResearch/
//! hermes-agent, `hermes_state_common.py`, `SCHEMA_SQL` at schema version
//! 30, read in December 2026): one SQLite database, `state.db` in the
//! Hermes home (`~/.hermes`, or `HERMES_HOME`). Its `messages` table has a
//! row per message: `id` (growing), `session_id`, `role` (`user`,
//! `assistant`, `tool`, `system`), `content`, `tool_calls` (JSON, on an
//! assistant's row), `timestamp` (epoch seconds, REAL); later versions add
//! `active` and `compacted` (a compaction keeps the rows it folded as
//! `compacted = 1` and copies the kept tail as new rows with the same role,
//! content and time; rows with neither flag are turns the person rewound)
//! and `_compressed_summary` (the summary Hermes wrote for its model). The
//! columns are read as the database has them (`PRAGMA table_info`), so an
//! older store reads too.
//!
//! Imported: `user` and `assistant` rows with words, oldest first, each
//! once (a copy of a row, same session, role, time and words, is the same
//! message). Not imported: rewound turns, Hermes's summaries, system
//! prompts, tool calls and tool results. The database is opened read-only.

use super::{message, History, ImportError};
use chrono::{SecondsFormat, TimeZone, Utc};
use hearth_protocol::Kind;
use rusqlite::{Connection, OpenFlags};
use std::collections::HashSet;
use std::path::Path;

/// Reads the store at `path`: a `state.db`, or the Hermes home holding it.
pub fn read(path: &Path) -> Result<History, ImportError> {
    let database = if path.is_dir() {
        path.join("state.db")
    } else {
        path.to_path_buf()
    };
    if !database.is_file() {
        return Err(ImportError::NotFound(format!(
            "no Hermes database at {}: give the Hermes home (~/.hermes) or its state.db",
            database.display()
        )));
    }
    let failed = |err: rusqlite::Error| ImportError::Database {
        path: database.display().to_string(),
        message: err.to_string(),
    };
    let connection = Connection::open_with_flags(
        &database,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(failed)?;
    connection
        .busy_timeout(std::time::Duration::from_secs(5))
        .map_err(failed)?;
    read_database(&connection).map_err(failed)
}

/// Reads the messages of an open Hermes database.
pub fn read_database(connection: &Connection) -> Result<History, rusqlite::Error> {
    let columns: HashSet<String> = connection
        .prepare("SELECT name FROM pragma_table_info('messages')")?
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    let needed = ["id", "session_id", "role", "content", "timestamp"];
    if let Some(missing) = needed.iter().find(|name| !columns.contains(**name)) {
        return Err(rusqlite::Error::InvalidColumnName(format!(
            "messages.{missing} (is this Hermes's state.db?)"
        )));
    }
    let column = |name: &str, absent: &str| {
        if columns.contains(name) {
            name.to_string()
        } else {
            absent.to_string()
        }
    };
    // Rows still in the conversation, or folded by a compaction; not
    // rewound ones.
    let kept = if columns.contains("active") && columns.contains("compacted") {
        "active = 1 OR compacted = 1"
    } else {
        "1"
    };
    let sql = format!(
        "SELECT id, session_id, role, COALESCE(content, ''), timestamp, {summary}, {calls}
         FROM messages WHERE {kept} ORDER BY timestamp, id",
        summary = column("_compressed_summary", "0"),
        calls = column("tool_calls", "NULL"),
    );
    let mut statement = connection.prepare(&sql)?;
    let mut rows = statement.query([])?;
    let mut history = History::default();
    let mut seen = HashSet::new();
    while let Some(row) = rows.next()? {
        let read = (
            row.get::<_, i64>(0),
            row.get::<_, String>(1),
            row.get::<_, String>(2),
            row.get::<_, String>(3),
            row.get::<_, f64>(4),
            row.get::<_, Option<i64>>(5),
            row.get::<_, Option<String>>(6),
        );
        let (Ok(_id), Ok(session), Ok(role), Ok(text), Ok(seconds), Ok(summary), Ok(calls)) = read
        else {
            history.skipped.unreadable += 1;
            continue;
        };
        let Some(at) = Utc
            .timestamp_micros((seconds * 1e6) as i64)
            .single()
            .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true))
        else {
            history.skipped.unreadable += 1;
            continue;
        };
        let kind = match role.as_str() {
            "user" => Kind::User,
            "assistant" => Kind::Reply,
            "tool" => {
                history.skipped.tool_results += 1;
                continue;
            }
            _ => {
                history.skipped.other += 1;
                continue;
            }
        };
        let calls = calls.as_deref().map_or(0, count_calls);
        history.skipped.tool_calls += calls;
        if summary.unwrap_or(0) != 0 || text.trim().is_empty() {
            if calls == 0 {
                history.skipped.other += 1;
            }
            continue;
        }
        // Keyed by time, not id: a compaction's copy of a row is the same
        // message under a new id.
        let imported = message(kind, &text, at.clone(), &session, &at);
        if seen.insert(imported.key.clone()) {
            history.messages.push(imported);
        }
    }
    Ok(history)
}

/// How many calls an assistant row's `tool_calls` names.
fn count_calls(calls: &str) -> u64 {
    match serde_json::from_str::<serde_json::Value>(calls) {
        Ok(serde_json::Value::Array(calls)) => calls.len() as u64,
        Ok(serde_json::Value::Null) => 0,
        _ if calls.trim().is_empty() => 0,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conversation_is_read_once_without_tools_summaries_or_rewound_turns() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL,
                role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
                timestamp REAL NOT NULL, _compressed_summary INTEGER NOT NULL DEFAULT 0,
                active INTEGER NOT NULL DEFAULT 1, compacted INTEGER NOT NULL DEFAULT 0);
             INSERT INTO messages (session_id, role, content, timestamp) VALUES
                ('s', 'system', 'You are Hermes', 1740000000.0),
                ('s', 'user', 'What is the capital of Peru?', 1740000001.5);
             INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES
                ('s', 'assistant', '', '[{\"id\":\"c\",\"type\":\"function\"}]', 1740000002.0);
             INSERT INTO messages (session_id, role, content, timestamp) VALUES
                ('s', 'tool', 'Lima is the capital', 1740000003.0),
                ('s', 'assistant', 'Lima.', 1740000004.0);
             INSERT INTO messages (session_id, role, content, timestamp, active, compacted) VALUES
                ('s', 'user', 'rewound', 1740000005.0, 0, 0),
                ('s', 'user', 'What is the capital of Peru?', 1740000001.5, 0, 1);
             INSERT INTO messages (session_id, role, content, timestamp, _compressed_summary) VALUES
                ('s', 'user', 'Summary of earlier turns', 1740000006.0, 1);",
        )
        .unwrap();
        let history = read_database(&db).unwrap();
        let read: Vec<(Kind, &str, &str)> = history
            .messages
            .iter()
            .map(|m| (m.kind, m.text.as_str(), m.at.as_str()))
            .collect();
        assert_eq!(
            read,
            vec![
                (
                    Kind::User,
                    "What is the capital of Peru?",
                    "2025-02-19T21:20:01.500Z"
                ),
                (Kind::Reply, "Lima.", "2025-02-19T21:20:04.000Z"),
            ]
        );
        let skipped = history.skipped;
        assert_eq!(
            (skipped.tool_calls, skipped.tool_results, skipped.other),
            (1, 1, 2)
        );
    }
}
