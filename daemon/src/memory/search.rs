//! Search: SQLite full-text (FTS5) over every message and every summary
//! line, in the log's own database (the index: the log's `log/words.rs`).
//!
//! A search can never hold up the log: it runs on a read-only connection
//! of its own, on a blocking thread (`Log::read`), so submits are
//! acknowledged while it reads; a query is bounded in size and in words
//! before it runs; only the newest matches are ranked (a word found in
//! most messages is not ranked over all of them); and a search that still
//! runs past its deadline is stopped with an error that says so.

use crate::log::{Log, LogError};
use hearth_protocol::memory::MAX_SEARCH_HITS;
use hearth_protocol::SearchHit;
use rusqlite::{params, Connection};
use std::time::Duration;

/// Hits returned when a search names no limit.
pub const DEFAULT_HITS: u32 = 10;

/// Words of context a snippet shows around its matches.
const SNIPPET_WORDS: i64 = 16;

/// The longest query taken, in bytes: a question or a pasted sentence,
/// not a document (the agent once searched with 24 kB of text).
pub const MAX_QUERY_BYTES: usize = 1_000;

/// The most distinct words and phrases one query looks for.
pub const MAX_TERMS: usize = 24;

/// Matches ranked at most, of each of messages and lines: the newest.
/// Ranking every match of a word that most messages hold would read the
/// whole index; past this many, the older ones are not ranked.
pub const RANKED: i64 = 400;

/// How long a search may run before it is stopped.
const DEADLINE: Duration = Duration::from_secs(5);

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
    #[error("the query is {bytes} bytes long; a search takes at most {MAX_QUERY_BYTES}: look for a few telling words, not a whole text")]
    TooLong { bytes: usize },
    #[error("the query looks for {terms} different words or phrases; a search takes at most {MAX_TERMS}: keep the telling ones")]
    TooManyTerms { terms: usize },
    #[error("the search ran for {} s and was stopped; look for rarer words, or narrow it with before, after, kind or source", DEADLINE.as_secs())]
    TooSlow,
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
        if words.len() > MAX_QUERY_BYTES {
            return Err(SearchError::TooLong { bytes: words.len() });
        }
        match terms(words).len() {
            0 => return Err(SearchError::NoWords),
            terms if terms > MAX_TERMS => return Err(SearchError::TooManyTerms { terms }),
            _ => {}
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
    let terms = terms(query);
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

/// The quoted words and phrases of a query, each once (a word written
/// again, in any case, adds nothing to look for).
fn terms(query: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut add = |term: String| {
        if seen.insert(term.to_lowercase()) {
            terms.push(term);
        }
    };
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
            add(format!("\"{}\"", words.join(" ")));
        } else {
            for word in words {
                add(format!("\"{word}\""));
            }
        }
    }
    terms
}

/// A match before it is ranked against the others.
struct Candidate {
    /// Which table, and the row in it: for the snippet.
    line: bool,
    rowid: i64,
    score: f64,
    hit: SearchHit,
}

/// The search itself, on a read-only connection (see `Log::search`): the
/// newest [`RANKED`] matches of messages and of lines are ranked with bm25,
/// and the best `limit` get their snippets.
pub fn run(
    connection: &Connection,
    agent: &str,
    query: &Query,
) -> Result<Vec<SearchHit>, rusqlite::Error> {
    run_observed(connection, agent, query, &mut |_| {})
}

/// [`run`], calling `observe` with each candidate as it is read (the tests
/// hold a search mid-way with it).
pub(crate) fn run_observed(
    connection: &Connection,
    agent: &str,
    query: &Query,
    observe: &mut dyn FnMut(u64),
) -> Result<Vec<SearchHit>, rusqlite::Error> {
    let Some(expression) = match_expression(&query.words) else {
        return Ok(Vec::new());
    };
    let _watchdog = Watchdog::start(connection);
    let mut candidates = Vec::new();
    if query.kind.as_deref() != Some("line") {
        let mut statement = connection.prepare_cached(
            "SELECT rowid, bm25(message_words), id, kind, source, at FROM message_words
             WHERE message_words MATCH ?1 AND agent = ?2
               AND (?3 IS NULL OR at < ?3) AND (?4 IS NULL OR at >= ?4)
               AND (?5 IS NULL OR kind = ?5) AND (?6 IS NULL OR source = ?6)
             ORDER BY rowid DESC LIMIT ?7",
        )?;
        let mut rows = statement.query(params![
            expression,
            agent,
            query.before,
            query.after,
            query.kind,
            query.source,
            RANKED
        ])?;
        while let Some(row) = rows.next()? {
            let hit = SearchHit {
                id: row.get::<_, i64>(2)? as u64,
                n: 1,
                kind: row.get(3)?,
                source: row.get(4)?,
                at: row.get(5)?,
                snippet: String::new(),
            };
            observe(hit.id);
            candidates.push(Candidate {
                line: false,
                rowid: row.get(0)?,
                score: row.get(1)?,
                hit,
            });
        }
    }
    if query.source.is_none() && query.kind.as_deref().is_none_or(|kind| kind == "line") {
        let mut statement = connection.prepare_cached(
            "SELECT rowid, bm25(line_words), idx << level, 1 << level,
                    (SELECT m.at FROM messages m WHERE m.agent = ?2 AND m.id = idx << level)
             FROM line_words WHERE line_words MATCH ?1 AND agent = ?2
               AND (?3 IS NULL
                    OR (SELECT m.at FROM messages m WHERE m.agent = ?2 AND m.id = idx << level) < ?3)
               AND (?4 IS NULL
                    OR (SELECT m.at FROM messages m WHERE m.agent = ?2 AND m.id = idx << level) >= ?4)
             ORDER BY rowid DESC LIMIT ?5",
        )?;
        let mut rows = statement.query(params![
            expression,
            agent,
            query.before,
            query.after,
            RANKED
        ])?;
        while let Some(row) = rows.next()? {
            let hit = SearchHit {
                id: row.get::<_, i64>(2)? as u64,
                n: row.get::<_, i64>(3)? as u64,
                kind: "line".to_string(),
                source: String::new(),
                at: row.get::<_, Option<String>>(4)?.unwrap_or_default(),
                snippet: String::new(),
            };
            observe(hit.id);
            candidates.push(Candidate {
                line: true,
                rowid: row.get(0)?,
                score: row.get(1)?,
                hit,
            });
        }
    }
    // bm25 is lower for a better match; then the newest, then the finest.
    candidates.sort_by(|a, b| {
        a.score
            .total_cmp(&b.score)
            .then(b.hit.id.cmp(&a.hit.id))
            .then(a.hit.n.cmp(&b.hit.n))
    });
    candidates.truncate(query.limit as usize);
    // Snippets only for the hits returned: the watchdog still runs.
    candidates
        .into_iter()
        .map(|mut candidate| {
            candidate.hit.snippet = snippet(connection, &expression, &candidate)?;
            Ok(candidate.hit)
        })
        .collect()
}

/// Interrupts the connection's statement if the search is still running at
/// its deadline; dropped when the search ends, which ends its thread.
struct Watchdog {
    _done: std::sync::mpsc::Sender<()>,
}

impl Watchdog {
    fn start(connection: &Connection) -> Watchdog {
        let (done, ended) = std::sync::mpsc::channel::<()>();
        let interrupt = connection.get_interrupt_handle();
        let spawned = std::thread::Builder::new()
            .name("hearth-search-deadline".into())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    ended.recv_timeout(DEADLINE)
                {
                    interrupt.interrupt();
                }
            });
        if let Err(err) = spawned {
            tracing::warn!("a search runs without its deadline: {err}");
        }
        Watchdog { _done: done }
    }
}

/// A candidate's text around its matches, on one line.
fn snippet(
    connection: &Connection,
    expression: &str,
    candidate: &Candidate,
) -> Result<String, rusqlite::Error> {
    let sql = if candidate.line {
        "SELECT snippet(line_words, 0, '[', ']', '…', ?3) FROM line_words
         WHERE line_words MATCH ?1 AND rowid = ?2"
    } else {
        "SELECT snippet(message_words, 0, '[', ']', '…', ?3) FROM message_words
         WHERE message_words MATCH ?1 AND rowid = ?2"
    };
    let text: String = connection
        .prepare_cached(sql)?
        .query_row(params![expression, candidate.rowid, SNIPPET_WORDS], |row| {
            row.get(0)
        })?;
    Ok(crate::memory::one_line(&text))
}

/// Search over the log's full-text index.
#[allow(async_fn_in_trait)] // called on `Log` itself, whose futures are `Send`
pub trait SearchLog {
    /// Messages and lines of `agent` that match, best first. Runs on a
    /// read-only connection of its own, never on the writer's: appends go
    /// on while it reads.
    async fn search(&self, agent: &str, query: Query) -> Result<Vec<SearchHit>, SearchError>;
}

impl SearchLog for Log {
    async fn search(&self, agent: &str, query: Query) -> Result<Vec<SearchHit>, SearchError> {
        let agent = agent.to_string();
        let found = self
            .read(move |connection| run(connection, &agent, &query))
            .await;
        match found {
            Err(LogError::Sqlite(rusqlite::Error::SqliteFailure(failure, _)))
                if failure.code == rusqlite::ErrorCode::OperationInterrupted =>
            {
                Err(SearchError::TooSlow)
            }
            found => Ok(found?),
        }
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
