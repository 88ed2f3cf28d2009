//! The pinned facts inside what the chain protects: the record of their
//! changes.
//!
//! The facts live in the `facts` table (`memory/facts.rs`), which every
//! turn shows. Each change writes, in its own transaction, a row of
//! `facts_record`: the SHA-256 of the agent's whole block as stored after
//! the change. The record's newest row is anchored outside the database
//! with the chain (`log/anchor.rs`, a `facts=N` line). A start and
//! `hearth verify` compare the live table with the newest digest, and the
//! anchored row with the anchor: a `facts` table edited with sqlite3 (or a
//! record rebuilt after such an edit) no longer matches, and both say so.
//!
//! A home from before the record has its facts recorded once, as they are,
//! by the migration [`RECORDED`]; after it, facts without a record are
//! facts written outside hearth.

use super::anchor::Anchored;
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// The migration that records the facts of a home from before the record.
pub const RECORDED: &str = "facts_record";

/// Creates the facts table (schema version 2), and adds the `untrusted`
/// column (what tainted the turn that pinned a fact; NULL for every older
/// row, which the owner or a clean turn pinned) to one made before it.
pub fn create_table(connection: &Connection) -> Result<(), rusqlite::Error> {
    connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS facts (
            agent     TEXT NOT NULL,
            seq       INTEGER NOT NULL,
            text      TEXT NOT NULL,
            untrusted TEXT,
            PRIMARY KEY (agent, seq)
        );",
    )?;
    let has_column: bool = connection.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info('facts') WHERE name = 'untrusted'",
        [],
        |row| row.get(0),
    )?;
    if !has_column {
        connection.execute_batch("ALTER TABLE facts ADD COLUMN untrusted TEXT")?;
    }
    Ok(())
}

/// Creates the record (append-only, as the chain).
pub(super) fn create(connection: &Connection) -> Result<(), rusqlite::Error> {
    connection.execute_batch(
        "CREATE TABLE IF NOT EXISTS facts_record (
            agent  TEXT NOT NULL,
            seq    INTEGER NOT NULL,
            digest TEXT NOT NULL,
            PRIMARY KEY (agent, seq)
        ) WITHOUT ROWID;
        CREATE TRIGGER IF NOT EXISTS facts_record_is_never_updated BEFORE UPDATE ON facts_record
            BEGIN SELECT RAISE(ABORT, 'the record of the facts is append-only'); END;
        CREATE TRIGGER IF NOT EXISTS facts_record_is_never_deleted BEFORE DELETE ON facts_record
            BEGIN SELECT RAISE(ABORT, 'the record of the facts is append-only'); END;",
    )
}

/// The digest of `agent`'s facts as the `facts` table holds them now.
pub fn digest(connection: &Connection, agent: &str) -> Result<String, rusqlite::Error> {
    let mut statement = connection
        .prepare_cached("SELECT seq, text, untrusted FROM facts WHERE agent = ?1 ORDER BY seq")?;
    let rows = statement.query_map(params![agent], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
    })?;
    Ok(digest_of(agent, &rows.collect::<Result<Vec<_>, _>>()?))
}

/// The digest of a block of facts: every stored field of every row, in
/// order, length-prefixed (absent distinct from empty), so that no two
/// different blocks hash the same bytes.
fn digest_of(agent: &str, rows: &[(i64, String, Option<String>)]) -> String {
    let mut hash = Sha256::new();
    hash.update(b"hearth pinned facts v1\0");
    let mut field = |bytes: Option<&[u8]>| match bytes {
        Some(bytes) => {
            hash.update([1u8]);
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        }
        None => hash.update([0u8]),
    };
    field(Some(agent.as_bytes()));
    for (seq, text, untrusted) in rows {
        field(Some(&seq.to_le_bytes()));
        field(Some(text.as_bytes()));
        field(untrusted.as_deref().map(str::as_bytes));
    }
    super::chain::hex(&hash.finalize())
}

/// Records `agent`'s facts as they are now: in the transaction of the
/// change that made them so.
pub fn record(connection: &Connection, agent: &str) -> Result<(), rusqlite::Error> {
    let digest = digest(connection, agent)?;
    connection
        .prepare_cached(
            "INSERT INTO facts_record (agent, seq, digest)
             SELECT ?1, COALESCE(MAX(seq), -1) + 1, ?2 FROM facts_record WHERE agent = ?1",
        )?
        .execute(params![agent, digest])?;
    Ok(())
}

/// The migration [`RECORDED`]: records the facts of every agent that has
/// some and no record yet (a home from before the record), as they are.
pub(super) fn record_unrecorded(connection: &Connection) -> Result<(), rusqlite::Error> {
    let agents: Vec<String> = {
        let mut statement = connection.prepare(
            "SELECT DISTINCT agent FROM facts f
             WHERE NOT EXISTS (SELECT 1 FROM facts_record r WHERE r.agent = f.agent)",
        )?;
        let rows = statement.query_map([], |row| row.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    for agent in agents {
        record(connection, &agent)?;
    }
    Ok(())
}

/// Each agent's newest record: its number of rows and its digest, as the
/// anchor keeps them.
pub(super) fn heads(
    connection: &Connection,
) -> Result<BTreeMap<String, Anchored>, rusqlite::Error> {
    if !exists(connection)? {
        return Ok(BTreeMap::new());
    }
    let mut statement = connection.prepare(
        "SELECT r.agent, r.seq + 1, r.digest FROM facts_record r
         JOIN (SELECT agent, MAX(seq) AS seq FROM facts_record GROUP BY agent) newest
           ON r.agent = newest.agent AND r.seq = newest.seq",
    )?;
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

/// Whether the database has the record (one from before it, never opened
/// by a hearthd that keeps it, has not).
fn exists(connection: &Connection) -> Result<bool, rusqlite::Error> {
    connection.query_row(
        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'facts_record'",
        [],
        |row| row.get(0),
    )
}

/// What a check of the facts found: the problems in words, and the agents
/// whose facts were changed outside hearth.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Found {
    pub problems: Vec<String>,
    pub changed: BTreeSet<String>,
}

/// Checks every agent's live facts against the newest digest recorded, and
/// the anchored row of the record against `anchored`. A database without
/// the record (from before it) is not checked: the next start records it.
pub fn check(
    connection: &Connection,
    anchored: &BTreeMap<String, Anchored>,
) -> Result<Found, rusqlite::Error> {
    let mut found = Found::default();
    if !exists(connection)? {
        return Ok(found);
    }
    let newest = heads(connection)?;
    let mut agents: BTreeSet<String> = newest.keys().chain(anchored.keys()).cloned().collect();
    {
        let mut statement = connection.prepare("SELECT DISTINCT agent FROM facts")?;
        let rows = statement.query_map([], |row| row.get::<_, String>(0))?;
        for agent in rows {
            agents.insert(agent?);
        }
    }
    for agent in agents {
        let live = digest(connection, &agent)?;
        let outside = match newest.get(&agent) {
            // No record: facts without one were written outside hearth;
            // none at all is an agent that never pinned a fact.
            None => live != digest_of(&agent, &[]),
            Some(newest) => newest.head != live,
        };
        if outside {
            found.problems.push(format!(
                "agent `{agent}`: its pinned facts do not match the digest recorded with their last change: they were changed outside hearth (they are shown as untrusted until a change of yours records them)"
            ));
            found.changed.insert(agent.clone());
        }
        if let Some(anchor) = anchored.get(&agent).filter(|anchor| anchor.count > 0) {
            let seq = anchor.count - 1;
            let recorded: Option<String> = connection
                .query_row(
                    "SELECT digest FROM facts_record WHERE agent = ?1 AND seq = ?2",
                    params![agent, seq],
                    |row| row.get(0),
                )
                .optional()?;
            if recorded.as_deref() != Some(anchor.head.as_str()) {
                found.problems.push(format!(
                    "agent `{agent}`: change {seq} of the pinned facts is not the one anchored outside the database (hearth.db.anchor): their record was rewritten"
                ));
                found.changed.insert(agent);
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_covers_every_field_of_every_fact_in_order() {
        let fact = |seq: i64, text: &str, untrusted: Option<&str>| {
            (seq, text.to_string(), untrusted.map(str::to_string))
        };
        let base = digest_of("a", &[fact(0, "likes tea", None), fact(1, "x", None)]);
        assert_eq!(
            base,
            digest_of("a", &[fact(0, "likes tea", None), fact(1, "x", None)])
        );
        assert_ne!(
            base,
            digest_of("b", &[fact(0, "likes tea", None), fact(1, "x", None)])
        );
        assert_ne!(
            base,
            digest_of("a", &[fact(1, "x", None), fact(0, "likes tea", None)])
        );
        assert_ne!(
            base,
            digest_of("a", &[fact(0, "likes tea", Some("")), fact(1, "x", None)])
        );
        assert_ne!(
            base,
            digest_of("a", &[fact(0, "likes tex", None), fact(1, "x", None)])
        );
        assert_ne!(base, digest_of("a", &[fact(0, "likes tea", None)]));
        assert_ne!(digest_of("a", &[]), digest_of("a", &[fact(0, "", None)]));
    }
}
