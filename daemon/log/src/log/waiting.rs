//! Which messages wait for a turn: the rule, once, and the SQL made from it.
//!
//! A person's message (`user`) waits until a turn takes it, unless it was
//! imported from another agent's history (answered there already); so does
//! a subagent's report (`work`), unless its run was stopped — the parent
//! asked for the stop and is not woken by it. Every other kind is the agent's own
//! or the daemon's and starts no turn. The turn loop reads the rule as
//! [`waits_for_turn`]; the log's queries as [`WAITS_FOR_TURN_SQL`]; a test
//! proves the two agree on every kind, status and source.

use hearth_protocol::{Kind, MessageStatus};
use rusqlite::{params, Connection};
use std::sync::LazyLock;

/// Whether a message of this kind and stored status waits for a turn.
pub fn waits_for_turn(kind: Kind, status: Option<&str>) -> bool {
    match kind {
        Kind::User => status != Some(MessageStatus::Imported.as_str()),
        Kind::Work => status != Some(MessageStatus::Stopped.as_str()),
        Kind::Reply | Kind::Echo | Kind::Tool | Kind::Note => false,
    }
}

/// [`waits_for_turn`] as an SQL condition on a `messages` row, made from the
/// same names.
pub static WAITS_FOR_TURN_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "((kind = '{user}' AND COALESCE(status, '') != '{imported}') \
         OR (kind = '{work}' AND COALESCE(status, '') != '{stopped}'))",
        user = Kind::User.as_str(),
        imported = MessageStatus::Imported.as_str(),
        work = Kind::Work.as_str(),
        stopped = MessageStatus::Stopped.as_str(),
    )
});

/// The ids after `after` (from the start when none) that wait, in order.
pub(super) fn waiting(
    tx: &Connection,
    agent: &str,
    after: Option<u64>,
) -> Result<Vec<u64>, rusqlite::Error> {
    let sql = format!(
        "SELECT id FROM messages WHERE agent = ?1 AND id > ?2 AND {} ORDER BY id",
        *WAITS_FOR_TURN_SQL
    );
    let mut statement = tx.prepare_cached(&sql)?;
    let after = after.map_or(-1, |id| id as i64);
    let rows = statement.query_map(params![agent, after], |row| {
        row.get::<_, i64>(0).map(|id| id as u64)
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sql_and_the_rust_agree_on_every_kind_status_and_source() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE messages (agent TEXT, id INTEGER, kind TEXT, source TEXT, status TEXT)",
        )
        .unwrap();
        let mut statuses: Vec<Option<&str>> = vec![None, Some(""), Some("from-a-newer-hearth")];
        statuses.extend(MessageStatus::ALL.map(|status| Some(status.as_str())));
        let mut expected = Vec::new();
        let mut id = 0;
        for kind in Kind::ALL {
            for status in &statuses {
                for source in ["terminal", "hearthd", "scout", "top"] {
                    db.execute(
                        "INSERT INTO messages VALUES ('top', ?1, ?2, ?3, ?4)",
                        params![id, kind.as_str(), source, status],
                    )
                    .unwrap();
                    if waits_for_turn(kind, *status) {
                        expected.push(id as u64);
                    }
                    id += 1;
                }
            }
        }
        assert_eq!(waiting(&db, "top", None).unwrap(), expected);
        // Some of each: the rule is not trivially all or nothing.
        assert!(!expected.is_empty() && expected.len() < id as usize);
        let after = expected[2];
        let later: Vec<u64> = expected.iter().copied().filter(|&e| e > after).collect();
        assert_eq!(waiting(&db, "top", Some(after)).unwrap(), later);
    }
}
