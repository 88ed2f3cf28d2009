//! The log's tamper-evident chain, and the guard against a log that
//! vanished or shrank.
//!
//! Each message has a link in the `chain` table, written in the same
//! transaction as the message: the SHA-256 of the previous link of the same
//! agent and of every stored field of the message. Changing, removing or
//! replacing an acknowledged message (with the triggers dropped, by another
//! program) breaks the chain from that message on, and `hearthd --verify`
//! (`hearth verify`) finds where. The chain is anchored outside the
//! database (`log/anchor.rs`): a start checks that the anchored links are
//! still there, then the links from the anchor (or the newest 256, when
//! they begin before it) to the end, never the whole history, and says so
//! when something is broken; `hearth verify` checks everything. Both also
//! check the pinned facts against the record of their changes
//! (`log/facts_record.rs`).
//!
//! The chain cannot stop someone who can write the database and the home
//! from rewriting both; it makes an edit from inside the database visible,
//! a chain rebuilt after it included (its anchored link changes). What the
//! schema itself refuses (UPDATE, DELETE, `INSERT OR REPLACE` of a message
//! or a summary node) is refused by triggers in `log.rs`.
//!
//! The guard: `hearth.db.seen` beside the database records how many messages
//! each agent had at the last start and stop. A start that finds fewer (a
//! database deleted, truncated to 0 bytes, or replaced by an older copy)
//! refuses, and says how to restore a backup or how to start anew on purpose.

use super::anchor;
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The links checked at every start, per agent (the newest ones).
pub const CHECKED_AT_START: i64 = 256;

/// The fields of a stored message that its link covers, as stored.
pub struct Stored<'a> {
    pub agent: &'a str,
    pub id: i64,
    pub kind: &'a str,
    pub source: &'a str,
    pub text: &'a str,
    pub status: Option<&'a str>,
    pub at: &'a str,
    pub data: Option<&'a str>,
    pub key: Option<&'a str>,
}

/// The link of a message whose predecessor's link is `previous`.
fn link_of(previous: &str, message: &Stored) -> String {
    let mut hash = Sha256::new();
    let mut field = |bytes: Option<&[u8]>| match bytes {
        // Length-prefixed, and absent distinct from empty, so no two
        // different messages hash the same bytes.
        Some(bytes) => {
            hash.update([1u8]);
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        }
        None => hash.update([0u8]),
    };
    field(Some(previous.as_bytes()));
    field(Some(message.agent.as_bytes()));
    field(Some(&message.id.to_le_bytes()));
    field(Some(message.kind.as_bytes()));
    field(Some(message.source.as_bytes()));
    field(Some(message.text.as_bytes()));
    field(message.status.map(str::as_bytes));
    field(Some(message.at.as_bytes()));
    field(message.data.map(str::as_bytes));
    field(message.key.map(str::as_bytes));
    hex(&hash.finalize())
}

/// The link before an agent's first message.
fn genesis(agent: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(b"hearth log chain v1\0");
    hash.update(agent.as_bytes());
    hex(&hash.finalize())
}

pub(super) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

/// The link of `(agent, id)`, when it has one.
fn link(tx: &Connection, agent: &str, id: i64) -> Result<Option<String>, rusqlite::Error> {
    tx.prepare_cached("SELECT hash FROM chain WHERE agent = ?1 AND id = ?2")?
        .query_row(params![agent, id], |row| row.get(0))
        .optional()
}

/// The link before message `id` of `agent`: its predecessor's, or the
/// chain's start for the first message (or one whose predecessor has no
/// link, as the chain began).
pub fn previous(tx: &Connection, agent: &str, id: i64) -> Result<String, rusqlite::Error> {
    Ok(match id {
        0 => genesis(agent),
        id => link(tx, agent, id - 1)?.unwrap_or_else(|| genesis(agent)),
    })
}

/// Writes the link of a message just inserted, in its transaction, after
/// `previous` (the link of the message before it); returns it.
pub fn extend(
    tx: &Connection,
    previous: &str,
    message: &Stored,
) -> Result<String, rusqlite::Error> {
    let link = link_of(previous, message);
    tx.prepare_cached("INSERT INTO chain (agent, id, hash) VALUES (?1, ?2, ?3)")?
        .execute(params![message.agent, message.id, link])?;
    Ok(link)
}

/// What a check of the chain found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Messages whose link was checked.
    pub checked: u64,
    /// What is wrong, in words, oldest first; empty when all is well.
    pub problems: Vec<String>,
    /// The agents whose pinned facts were changed outside hearth
    /// (`log/facts_record.rs`): shown as untrusted.
    pub facts_changed: BTreeSet<String>,
}

impl Report {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks the links of every agent's messages from `from_newest` messages
/// before its end (all when `None`).
pub fn check(connection: &Connection, from_newest: Option<i64>) -> Result<Report, rusqlite::Error> {
    check_from(connection, |_, count| {
        from_newest.map_or(0, |newest| (count - newest).max(0))
    })
}

/// Checks the links of every agent's messages from the id `start` gives
/// (for the agent and its number of messages) to its end.
fn check_from(
    connection: &Connection,
    start: impl Fn(&str, i64) -> i64,
) -> Result<Report, rusqlite::Error> {
    let mut report = Report::default();
    for (agent, count) in counts(connection)? {
        let start = start(&agent, count as i64);
        let mut previous = match start {
            0 => genesis(&agent),
            start => match link(connection, &agent, start - 1)? {
                Some(link) => link,
                None => {
                    report.problems.push(format!(
                        "agent `{agent}`: message {} has no link",
                        start - 1
                    ));
                    continue;
                }
            },
        };
        let mut statement = connection.prepare(
            "SELECT m.id, m.kind, m.source, m.text, m.status, m.at, m.data, m.key, c.hash
             FROM messages m LEFT JOIN chain c ON c.agent = m.agent AND c.id = m.id
             WHERE m.agent = ?1 AND m.id >= ?2 ORDER BY m.id",
        )?;
        let mut rows = statement.query(params![agent, start])?;
        let mut expected_id = start;
        while let Some(row) = rows.next()? {
            let id: i64 = row.get(0)?;
            if id != expected_id {
                report.problems.push(format!(
                    "agent `{agent}`: message {expected_id} is missing (the next is {id})"
                ));
                break;
            }
            let (kind, source, text): (String, String, String) =
                (row.get(1)?, row.get(2)?, row.get(3)?);
            let (status, at, data, key): (Option<String>, String, Option<String>, Option<String>) =
                (row.get(4)?, row.get(5)?, row.get(6)?, row.get(7)?);
            let stored: Option<String> = row.get(8)?;
            let computed = link_of(
                &previous,
                &Stored {
                    agent: &agent,
                    id,
                    kind: &kind,
                    source: &source,
                    text: &text,
                    status: status.as_deref(),
                    at: &at,
                    data: data.as_deref(),
                    key: key.as_deref(),
                },
            );
            report.checked += 1;
            match stored {
                Some(stored) if stored == computed => previous = stored,
                Some(_) => {
                    report.problems.push(format!(
                        "agent `{agent}`: message {id} was changed after it was written (its link does not match)"
                    ));
                    break;
                }
                None => {
                    report
                        .problems
                        .push(format!("agent `{agent}`: message {id} has no link"));
                    break;
                }
            }
            expected_id += 1;
        }
    }
    Ok(report)
}

/// The migration that makes the chain's table `WITHOUT ROWID` (as a new
/// database creates it): the same rows, one B-tree rather than two.
pub(super) const WITHOUT_ROWID: &str = "chain_without_rowid";

/// The migration [`WITHOUT_ROWID`]: copies the links into the new table,
/// in the start's transaction, then `recreate` puts back its triggers.
pub(super) fn rebuild_without_rowid(
    tx: &Connection,
    recreate: impl FnOnce(&Connection) -> Result<(), rusqlite::Error>,
) -> Result<(), rusqlite::Error> {
    let rowid: bool = tx.query_row(
        "SELECT COUNT(*) > 0 FROM sqlite_master
         WHERE type = 'table' AND name = 'chain' AND sql NOT LIKE '%WITHOUT ROWID%'",
        [],
        |row| row.get(0),
    )?;
    if !rowid {
        return Ok(());
    }
    // Dropping a table fires none of its triggers; the links are copied
    // first, in the same transaction.
    tx.execute_batch(
        "CREATE TABLE chain_without_rowid (
            agent TEXT NOT NULL,
            id    INTEGER NOT NULL,
            hash  TEXT NOT NULL,
            PRIMARY KEY (agent, id)
        ) WITHOUT ROWID;
        INSERT INTO chain_without_rowid (agent, id, hash)
            SELECT agent, id, hash FROM chain ORDER BY agent, id;
        DROP TABLE chain;
        ALTER TABLE chain_without_rowid RENAME TO chain;",
    )?;
    recreate(tx)
}

/// Links the messages of agents that have none yet (a database from before
/// the chain), oldest first; they are linked as they are now.
pub fn link_unchained(tx: &Connection) -> Result<u64, rusqlite::Error> {
    let agents: Vec<String> = {
        // The agents through the key (`log/ends.rs`): a start runs this,
        // and a DISTINCT over `messages` read every message.
        let mut statement = tx.prepare(&format!(
            "{} SELECT agent FROM agents WHERE agent IS NOT NULL
             AND NOT EXISTS (SELECT 1 FROM chain c WHERE c.agent = agents.agent)",
            super::ends::AGENTS
        ))?;
        let rows = statement.query_map([], |row| row.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    let mut linked = 0;
    for agent in agents {
        let mut statement = tx.prepare(
            "SELECT id, kind, source, text, status, at, data, key FROM messages
             WHERE agent = ?1 ORDER BY id",
        )?;
        let mut rows = statement.query(params![agent])?;
        let mut previous = None;
        while let Some(row) = rows.next()? {
            let (id, kind, source, text): (i64, String, String, String) =
                (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
            let (status, at, data, key): (Option<String>, String, Option<String>, Option<String>) =
                (row.get(4)?, row.get(5)?, row.get(6)?, row.get(7)?);
            let before = match previous.take() {
                Some(link) => link,
                None => self::previous(tx, &agent, id)?,
            };
            let link = extend(
                tx,
                &before,
                &Stored {
                    agent: &agent,
                    id,
                    kind: &kind,
                    source: &source,
                    text: &text,
                    status: status.as_deref(),
                    at: &at,
                    data: data.as_deref(),
                    key: key.as_deref(),
                },
            )?;
            previous = Some(link);
            linked += 1;
        }
    }
    Ok(linked)
}

/// Checks a database file read-only, whole: its integrity (SQLite's
/// `integrity_check`) and every agent's chain. For `hearthd --verify`.
pub fn verify_file(database: &Path) -> Result<Report, VerifyError> {
    if !database.exists() {
        return Err(VerifyError::Missing(database.display().to_string()));
    }
    let connection =
        Connection::open_with_flags(database, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    let mut report = Report::default();
    let mut statement = connection.prepare("PRAGMA integrity_check")?;
    let findings: Vec<String> = statement
        .query_map([], |row| row.get(0))?
        .collect::<Result<_, _>>()?;
    if findings != ["ok"] {
        report
            .problems
            .extend(findings.into_iter().map(|f| format!("integrity: {f}")));
    }
    check_anchors(&connection, &anchors(database), &mut report)?;
    let chain = check(&connection, None)?;
    report.checked = chain.checked;
    report.problems.extend(chain.problems);
    check_facts(&connection, database, &mut report)?;
    anchor::record_verified(
        database,
        report.checked,
        report.problems.first().map(String::as_str),
    );
    Ok(report)
}

/// The anchor, when it belongs to this log: only while the guard's record
/// is there too. Deleting `hearth.db.seen` begins a new log on purpose (or
/// takes a restored backup as it is), and the next start anchors it anew.
fn anchors(database: &Path) -> BTreeMap<String, anchor::Anchored> {
    if seen_file(database).exists() {
        anchor::read(database)
    } else {
        BTreeMap::new()
    }
}

/// Adds a problem for each agent whose chain no longer has its anchored
/// link at the anchored message: it was rebuilt, or cut.
fn check_anchors(
    connection: &Connection,
    anchors: &BTreeMap<String, anchor::Anchored>,
    report: &mut Report,
) -> Result<(), rusqlite::Error> {
    for (agent, anchored) in anchors {
        if anchored.count == 0 {
            continue;
        }
        let id = anchored.count - 1;
        match link(connection, agent, id)? {
            Some(link) if link == anchored.head => {}
            Some(_) => report.problems.push(format!(
                "agent `{agent}`: the link of message {id} is not the one anchored outside the database (hearth.db.anchor): the chain was rebuilt after messages before it changed"
            )),
            None => report.problems.push(format!(
                "agent `{agent}`: message {id}, anchored outside the database (hearth.db.anchor), has no link"
            )),
        }
    }
    Ok(())
}

/// Why a database could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("there is no database at {0}")]
    Missing(String),
    #[error("cannot read the database: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// The check at start: each anchored link is still there, and the links
/// from the anchor (or the newest [`CHECKED_AT_START`], if they start
/// before it) to the end hold. Never the whole history: what was anchored
/// was checked or written by the daemon that anchored it.
pub fn check_at_start(connection: &Connection, database: &Path) -> Result<Report, rusqlite::Error> {
    let anchors = anchors(database);
    let mut report = Report::default();
    check_anchors(connection, &anchors, &mut report)?;
    let chain = check_from(connection, |agent, count| {
        let newest = (count - CHECKED_AT_START).max(0);
        anchors
            .get(agent)
            .map_or(newest, |anchored| anchored.count.clamp(0, newest))
    })?;
    report.checked = chain.checked;
    report.problems.extend(chain.problems);
    check_facts(connection, database, &mut report)?;
    Ok(report)
}

/// Adds what the check of the pinned facts against their record (and the
/// record against its anchor) found.
fn check_facts(
    connection: &Connection,
    database: &Path,
    report: &mut Report,
) -> Result<(), rusqlite::Error> {
    let anchored = if seen_file(database).exists() {
        anchor::read_facts(database)
    } else {
        BTreeMap::new()
    };
    let found = super::facts_record::check(connection, &anchored)?;
    report.problems.extend(found.problems);
    report.facts_changed.extend(found.changed);
    Ok(())
}

/// Messages per agent, read through the key, not the log (`log/ends.rs`).
fn counts(connection: &Connection) -> Result<BTreeMap<String, u64>, rusqlite::Error> {
    super::ends::lengths(connection)
}

/// Where the guard keeps what the log held: `hearth.db.seen` beside it.
pub fn seen_file(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".seen");
    PathBuf::from(name)
}

/// What the guard found wrong: the log holds less than it did.
#[derive(Debug, thiserror::Error)]
#[error("{database} holds {found} messages for agent `{agent}`, but it held {seen} at the last start or stop ({seen_file}): the database was deleted, truncated or replaced by an older copy. Nothing was started or written. To restore a backup (made with `hearth backup`): copy it to {database} (and remove any {database}-wal and {database}-shm left beside it), then start again. To begin a new, empty log on purpose, delete {seen_file}.")]
pub struct Shrank {
    pub database: String,
    pub seen_file: String,
    pub agent: String,
    pub found: u64,
    pub seen: u64,
}

/// What the guard remembers, read from its file (`agent count` lines).
fn read_seen(file: &Path) -> Option<BTreeMap<String, u64>> {
    let text = std::fs::read_to_string(file).ok()?;
    Some(
        text.lines()
            .filter_map(|line| {
                let (agent, count) = line.rsplit_once(' ')?;
                Some((agent.to_string(), count.parse().ok()?))
            })
            .collect(),
    )
}

/// Refuses a database that holds fewer messages than the guard saw. Run
/// before the database is opened for writing, so that a missing file is
/// not silently created anew.
pub fn guard(database: &Path) -> Result<(), Box<Shrank>> {
    let seen_file = seen_file(database);
    let Some(seen) = read_seen(&seen_file) else {
        return Ok(());
    };
    let found = if database.exists() {
        Connection::open_with_flags(database, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()
            .and_then(|connection| counts(&connection).ok())
            .unwrap_or_default()
    } else {
        BTreeMap::new()
    };
    for (agent, seen) in seen {
        let found = found.get(&agent).copied().unwrap_or(0);
        if found < seen {
            return Err(Box::new(Shrank {
                database: database.display().to_string(),
                seen_file: seen_file.display().to_string(),
                agent,
                found,
                seen,
            }));
        }
    }
    Ok(())
}

/// Records what the log holds now, for the next start's guard.
pub fn record(connection: &Connection, database: &Path) {
    let Ok(counts) = counts(connection) else {
        return;
    };
    let text: String = counts
        .iter()
        .map(|(agent, count)| format!("{agent} {count}\n"))
        .collect();
    let file = seen_file(database);
    let temporary = file.with_extension("seen.tmp");
    let written =
        std::fs::write(&temporary, text).and_then(|()| std::fs::rename(&temporary, &file));
    if let Err(err) = written {
        tracing::warn!(
            "cannot record the log's length in {}: {err}",
            file.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message<'a>(id: i64, text: &'a str) -> Stored<'a> {
        Stored {
            agent: "hearth",
            id,
            kind: "user",
            source: "terminal",
            text,
            status: None,
            at: "2026-12-01T10:00:00.000+00:00",
            data: None,
            key: None,
        }
    }

    #[test]
    fn links_are_written_in_lowercase_hex() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }

    #[test]
    fn a_link_covers_every_field_and_the_previous_link() {
        let base = link_of("p", &message(3, "hello"));
        assert_ne!(base, link_of("q", &message(3, "hello")));
        assert_ne!(base, link_of("p", &message(4, "hello")));
        assert_ne!(base, link_of("p", &message(3, "hellO")));
        let with_status = Stored {
            status: Some(""),
            ..message(3, "hello")
        };
        assert_ne!(base, link_of("p", &with_status), "absent is not empty");
        assert_eq!(base, link_of("p", &message(3, "hello")));
    }
}
