//! Search: SQLite full-text (FTS5) over every message and every summary
//! line, in the log's own database.
//!
//! The index is kept by triggers on `messages` and `nodes`, so a row is
//! indexed by the same statement — and so in the same transaction — that
//! writes it: a search never misses an acknowledged message, and a line is
//! found from the moment it is stored. The index is derived data beside the
//! append-only tables: no trigger updates or deletes a message to keep it in
//! step (messages never change, so none is needed), and SQLite allows no
//! trigger on a virtual table, so nothing done to the index can reach the
//! log. It can always be rebuilt from `messages` and `nodes`, which is what
//! the migration to schema 2 does for a database written before it.
//!
//! Left out of the index, because they only repeat what it holds: the
//! results of `search` and `zoom` calls, level-0 lines that are their
//! message verbatim or cut, and lines that join two lines for free (they
//! hold a line break; their halves are indexed).

use crate::log::{Log, LogError};
use hearth_protocol::memory::MAX_SEARCH_HITS;
use hearth_protocol::SearchHit;
use rusqlite::{params, Connection};

/// Hits returned when a search names no limit.
pub const DEFAULT_HITS: u32 = 10;

/// Words of context a snippet shows around its matches.
const SNIPPET_WORDS: i64 = 16;

/// Creates the index and the triggers that keep it (schema version 2).
pub(crate) fn create(connection: &Connection) -> Result<(), rusqlite::Error> {
    connection.execute_batch(&format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS memory_index USING fts5(
            text,
            agent UNINDEXED,
            kind UNINDEXED,
            source UNINDEXED,
            first UNINDEXED,
            span UNINDEXED,
            tokenize = 'porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER IF NOT EXISTS messages_are_indexed AFTER INSERT ON messages
            WHEN {MESSAGE_INDEXED}
            BEGIN
                INSERT INTO memory_index (text, agent, kind, source, first, span)
                VALUES (new.text, new.agent, new.kind, new.source, new.id, 1);
            END;
        CREATE TRIGGER IF NOT EXISTS lines_are_indexed AFTER INSERT ON nodes
            WHEN {LINE_INDEXED}
            BEGIN
                INSERT INTO memory_index (text, agent, kind, source, first, span)
                VALUES (new.text, new.agent, 'line', '', new.idx << new.level, 1 << new.level);
            END;"
    ))
}

/// Which new messages are indexed: all but the results of `search` and
/// `zoom`, whose text repeats what the index already holds.
const MESSAGE_INDEXED: &str = "NOT (new.kind = 'tool'
    AND (substr(new.text, 1, 7) = 'search(' OR substr(new.text, 1, 5) = 'zoom('))";

/// Which new lines are indexed: the compactor's own lines. Not a free
/// join (it holds a line break), not a message's line that is the message
/// itself or its text cut.
const LINE_INDEXED: &str = "instr(new.text, char(10)) = 0 AND NOT (new.level = 0 AND (
    new.mechanical OR EXISTS (SELECT 1 FROM messages m
        WHERE m.agent = new.agent AND m.id = new.idx
        AND new.text = m.kind || ': ' || replace(replace(m.text, char(10), ' '), char(13), ' '))))";

/// Fills the index from the tables, for a database written before it
/// existed (the migration to schema 2). Runs in the migration's transaction.
pub(crate) fn backfill(connection: &Connection) -> Result<(), rusqlite::Error> {
    let messages = MESSAGE_INDEXED.replace("new.", "");
    let lines = LINE_INDEXED.replace("new.", "n.");
    connection.execute_batch(&format!(
        "INSERT INTO memory_index (text, agent, kind, source, first, span)
            SELECT text, agent, kind, source, id, 1 FROM messages WHERE {messages} ORDER BY agent, id;
         INSERT INTO memory_index (text, agent, kind, source, first, span)
            SELECT n.text, n.agent, 'line', '', n.idx << n.level, 1 << n.level FROM nodes n
            WHERE {lines} ORDER BY n.agent, n.level, n.idx;"
    ))
}

/// A search as the tool and the `search` frame ask for it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub words: String,
    /// Only what was logged before this time (RFC 3339, as the log writes it).
    pub before: Option<String>,
    /// Only what was logged at or after this time.
    pub after: Option<String>,
    /// A message kind, or `line`.
    pub kind: Option<String>,
    pub source: Option<String>,
    pub limit: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("the query has no words to look for")]
    NoWords,
    #[error("`{0}` is not a date; write it as 2026-11-30 or 2026-11-30 18:00 (local time)")]
    BadDate(String),
    #[error("`{0}` is not a kind; the kinds are user, reply, echo, tool, note, work and line")]
    BadKind(String),
    #[error("{0}")]
    Log(#[from] LogError),
}

impl Query {
    /// A query from what a person or the model wrote: dates read as local
    /// times, the kind checked, the limit bounded.
    pub fn read(
        words: &str,
        before: Option<&str>,
        after: Option<&str>,
        kind: Option<&str>,
        source: Option<&str>,
        limit: Option<u32>,
    ) -> Result<Query, SearchError> {
        if match_expression(words).is_none() {
            return Err(SearchError::NoWords);
        }
        if let Some(kind) = kind {
            if kind != "line" && hearth_protocol::Kind::parse(kind).is_none() {
                return Err(SearchError::BadKind(kind.to_string()));
            }
        }
        let date = |text: Option<&str>| -> Result<Option<String>, SearchError> {
            text.map(|text| local_time(text).ok_or_else(|| SearchError::BadDate(text.into())))
                .transpose()
        };
        Ok(Query {
            words: words.to_string(),
            before: date(before)?,
            after: date(after)?,
            kind: kind.map(str::to_string),
            source: source.filter(|s| !s.is_empty()).map(str::to_string),
            limit: limit.unwrap_or(DEFAULT_HITS).clamp(1, MAX_SEARCH_HITS),
        })
    }
}

/// A local date (`2026-11-30`, its midnight), date and time
/// (`2026-11-30 18:00`, `2026-11-30T18:00:00`) or RFC 3339 time, in the
/// form the log writes `at`, so that the two compare as strings.
pub fn local_time(text: &str) -> Option<String> {
    use chrono::{Local, NaiveDate, NaiveDateTime, TimeZone};
    let text = text.trim();
    let format =
        |time: chrono::DateTime<Local>| time.to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
    if let Ok(time) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(format(time.with_timezone(&Local)));
    }
    let naive = [
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
    ]
    .iter()
    .find_map(|pattern| NaiveDateTime::parse_from_str(text, pattern).ok())
    .or_else(|| {
        NaiveDate::parse_from_str(text, "%Y-%m-%d")
            .ok()
            .and_then(|date| date.and_hms_opt(0, 0, 0))
    })?;
    Local.from_local_datetime(&naive).earliest().map(format)
}

/// The FTS5 expression for what someone wrote: each word (or "a phrase"
/// in double quotes) quoted, so no character of theirs is query syntax,
/// and joined with OR — the ranking puts what matches most words first.
/// None when nothing is left to look for.
pub fn match_expression(query: &str) -> Option<String> {
    let mut terms: Vec<String> = Vec::new();
    for (at, part) in query.split('"').enumerate() {
        let words: Vec<&str> = part
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| !word.is_empty())
            .collect();
        if words.is_empty() {
            continue;
        }
        // Odd parts were between quotes: one phrase.
        if at % 2 == 1 {
            terms.push(format!("\"{}\"", words.join(" ")));
        } else {
            terms.extend(words.iter().map(|word| format!("\"{word}\"")));
        }
    }
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

/// The search itself, on the writer's connection.
pub fn run(
    connection: &Connection,
    agent: &str,
    query: &Query,
) -> Result<Vec<SearchHit>, rusqlite::Error> {
    let Some(expression) = match_expression(&query.words) else {
        return Ok(Vec::new());
    };
    let mut statement = connection.prepare_cached(
        "SELECT i.first, i.span, i.kind, i.source, m.at,
                snippet(memory_index, 0, '[', ']', '…', ?8)
         FROM memory_index i JOIN messages m ON m.agent = i.agent AND m.id = i.first
         WHERE memory_index MATCH ?1 AND i.agent = ?2
           AND (?3 IS NULL OR m.at < ?3) AND (?4 IS NULL OR m.at >= ?4)
           AND (?5 IS NULL OR i.kind = ?5) AND (?6 IS NULL OR i.source = ?6)
         ORDER BY bm25(memory_index), i.first DESC, i.span
         LIMIT ?7",
    )?;
    let rows = statement.query_map(
        params![
            expression,
            agent,
            query.before,
            query.after,
            query.kind,
            query.source,
            query.limit,
            SNIPPET_WORDS
        ],
        |row| {
            Ok(SearchHit {
                id: row.get::<_, i64>(0)? as u64,
                n: row.get::<_, i64>(1)? as u64,
                kind: row.get(2)?,
                source: row.get(3)?,
                at: row.get(4)?,
                snippet: crate::memory::one_line(&row.get::<_, String>(5)?),
            })
        },
    )?;
    rows.collect()
}

impl Log {
    /// Messages and lines of `agent` that match, best first.
    pub async fn search(&self, agent: &str, query: Query) -> Result<Vec<SearchHit>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| run(tx, &agent, &query)).await
    }
}

/// A hit as the `search` tool shows it: `id+n kind from source, date: snippet`.
pub fn render_hit(hit: &SearchHit) -> String {
    let date = hit.at.get(..16).unwrap_or(&hit.at).replace('T', " ");
    let from = if hit.source.is_empty() {
        String::new()
    } else {
        format!(" from {}", hit.source)
    };
    format!(
        "{}+{} {}{from}, {date}: {}",
        hit.id, hit.n, hit.kind, hit.snippet
    )
}

#[cfg(test)]
mod tests;
