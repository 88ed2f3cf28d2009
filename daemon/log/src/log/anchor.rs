//! The chain's anchor, and the last whole check's result: two small
//! private files beside the database, outside it.
//!
//! `hearth.db.anchor` holds, for each agent, how many messages its chain
//! had and the link of the last one (and how many changes of its pinned
//! facts were recorded, with the newest digest: `log/facts_record.rs`),
//! written at every start whose check found nothing wrong, every
//! [`ANCHOR_EVERY`] messages and at every stop.
//! A chain rebuilt inside the database (an edit, then `DELETE FROM chain`
//! and a start that links everything anew) no longer has the anchored link
//! at the anchored message: start and `hearth verify` say so. The anchor is
//! also where the start's check begins: what was anchored was checked (or
//! written) by the daemon that anchored it, so a start checks from there to
//! the end (and the newest links), never the whole history.
//!
//! `hearth.db.verified` holds the result of the last `hearth verify`, for
//! `hearth status`.
//!
//! Someone who can write the home can rewrite both; the shell's commands
//! cannot (Landlock keeps them out of the home), and neither can another
//! user (the files are private).

use rusqlite::Connection;
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Messages appended between two anchors at most (besides start and stop).
pub const ANCHOR_EVERY: usize = 1024;

/// An agent's anchored chain: its length and its last link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchored {
    pub count: i64,
    pub head: String,
}

fn beside(database: &Path, suffix: &str) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// `hearth.db.anchor` beside the database.
pub fn anchor_file(database: &Path) -> PathBuf {
    beside(database, ".anchor")
}

/// `hearth.db.verified` beside the database.
pub fn verified_file(database: &Path) -> PathBuf {
    beside(database, ".verified")
}

/// The chain's anchor as written (`agent count head` lines); empty when
/// there is none (a home from before it: the first start anchors it).
pub fn read(database: &Path) -> BTreeMap<String, Anchored> {
    read_lines(database, false)
}

/// The anchored record of the pinned facts (`agent facts=N digest` lines,
/// which a hearthd from before them skips, as their count is no number):
/// each agent's number of recorded changes and the newest digest.
pub fn read_facts(database: &Path) -> BTreeMap<String, Anchored> {
    read_lines(database, true)
}

fn read_lines(database: &Path, facts: bool) -> BTreeMap<String, Anchored> {
    let Ok(text) = std::fs::read_to_string(anchor_file(database)) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|line| {
            let (rest, head) = line.rsplit_once(' ')?;
            let (agent, count) = rest.rsplit_once(' ')?;
            let count = match (facts, count.strip_prefix(FACTS)) {
                (true, Some(count)) => count,
                (false, None) => count,
                _ => return None,
            };
            let anchored = Anchored {
                count: count.parse().ok()?,
                head: head.to_string(),
            };
            Some((agent.to_string(), anchored))
        })
        .collect()
}

/// What marks a line of the facts' record in the anchor.
const FACTS: &str = "facts=";

/// Each agent's chain as it ends now: its length and last link.
pub fn heads(connection: &Connection) -> Result<BTreeMap<String, Anchored>, rusqlite::Error> {
    // Each agent's end through the key (`log/ends.rs`), not a GROUP BY
    // that reads every message, at each start and anchor.
    let mut statement = connection.prepare_cached(&format!(
        "{} SELECT c.agent, c.id + 1, c.hash FROM agents a
         JOIN chain c ON c.agent = a.agent
           AND c.id = (SELECT MAX(m.id) FROM messages m WHERE m.agent = a.agent)
         WHERE a.agent IS NOT NULL",
        super::ends::AGENTS
    ))?;
    let rows = statement.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            Anchored {
                count: row.get(1)?,
                head: row.get(2)?,
            },
        ))
    })?;
    rows.collect()
}

/// Writes the anchor of the chain as it ends now. A failure is logged: the
/// next anchor or start tries again.
pub fn write(connection: &Connection, database: &Path) {
    let heads = match heads(connection) {
        Ok(heads) => heads,
        Err(err) => {
            tracing::warn!("cannot read the chain's end to anchor it: {err}");
            return;
        }
    };
    let facts = match super::facts_record::heads(connection) {
        Ok(facts) => facts,
        Err(err) => {
            tracing::warn!("cannot read the record of the pinned facts to anchor it: {err}");
            return;
        }
    };
    let chains = heads
        .iter()
        .map(|(agent, anchored)| format!("{agent} {} {}\n", anchored.count, anchored.head));
    let facts = facts
        .iter()
        .map(|(agent, anchored)| format!("{agent} {FACTS}{} {}\n", anchored.count, anchored.head));
    let text: String = chains.chain(facts).collect();
    if let Err(err) = write_private(&anchor_file(database), &text) {
        tracing::warn!(
            "cannot anchor the log's chain in {}: {err}",
            anchor_file(database).display()
        );
    }
}

/// Writes `text` to `file` whole or not at all, readable by its owner only.
pub fn write_private(file: &Path, text: &str) -> std::io::Result<()> {
    let mut temporary = file.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    out.write_all(text.as_bytes())?;
    out.sync_all()?;
    std::fs::rename(&temporary, file)
}

/// Records what a whole check found, for `hearth status`.
pub fn record_verified(database: &Path, checked: u64, first_problem: Option<&str>) {
    let at = chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, false);
    let text = match first_problem {
        None => format!("{at} ok {checked}\n"),
        Some(problem) => format!("{at} broken {checked} {}\n", problem.replace('\n', " ")),
    };
    // Best effort: the check's result is printed either way.
    let _ = write_private(&verified_file(database), &text);
}

/// The last whole check in words: when, and what it found; `None` when
/// `hearth verify` never ran on this database.
pub fn last_verified(database: &Path) -> Option<String> {
    let text = std::fs::read_to_string(verified_file(database)).ok()?;
    let mut parts = text.trim_end().splitn(4, ' ');
    let at = parts.next()?;
    let outcome = parts.next()?;
    let checked = parts.next()?;
    Some(match outcome {
        "ok" => format!("{at}: ok, {checked} messages each linked to the one before"),
        _ => format!(
            "{at}: broken, {}",
            parts.next().unwrap_or("see `hearth verify`")
        ),
    })
}
