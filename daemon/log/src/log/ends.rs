//! Where each agent's log ends, read without reading the log: a start and
//! every anchor ask, and a `GROUP BY agent` over `messages` reads every
//! entry of its key (a million at a million messages, at each start).
//!
//! The agents are found by stepping through the key's index one agent at a
//! time (the smallest agent, then the smallest after it, …), and each
//! agent's end is the largest id under it: a few index lookups per agent,
//! whatever the log's length.

use rusqlite::Connection;
use std::collections::BTreeMap;

/// A common table expression `agents(agent)`: every agent with messages,
/// and one NULL row after the last (filter it with `agent IS NOT NULL`).
pub(super) const AGENTS: &str = "WITH RECURSIVE agents(agent) AS (
        SELECT MIN(agent) FROM messages
        UNION ALL
        SELECT (SELECT MIN(m.agent) FROM messages m WHERE m.agent > agents.agent)
        FROM agents WHERE agents.agent IS NOT NULL
    )";

/// Each agent's number of messages (ids are dense from 0: its last id + 1).
pub(super) fn lengths(connection: &Connection) -> Result<BTreeMap<String, u64>, rusqlite::Error> {
    let mut statement = connection.prepare_cached(&format!(
        "{AGENTS}
         SELECT agent, (SELECT MAX(m.id) FROM messages m WHERE m.agent = agents.agent) + 1
         FROM agents WHERE agent IS NOT NULL"
    ))?;
    let rows = statement.query_map([], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)? as u64))
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database() -> Connection {
        let connection = Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE messages (agent TEXT NOT NULL, id INTEGER NOT NULL,
                 text TEXT NOT NULL, PRIMARY KEY (agent, id));",
            )
            .unwrap();
        connection
    }

    #[test]
    fn every_agent_ends_after_its_last_id() {
        let connection = database();
        assert!(lengths(&connection).unwrap().is_empty(), "an empty log");
        for (agent, count) in [("hearth", 5), ("scout", 1), ("a", 3), ("hearth-2", 2)] {
            for id in 0..count {
                connection
                    .execute(
                        "INSERT INTO messages VALUES (?1, ?2, 'x')",
                        rusqlite::params![agent, id],
                    )
                    .unwrap();
            }
        }
        let expected: BTreeMap<String, u64> =
            [("a", 3), ("hearth", 5), ("hearth-2", 2), ("scout", 1)]
                .into_iter()
                .map(|(agent, count)| (agent.to_string(), count))
                .collect();
        assert_eq!(lengths(&connection).unwrap(), expected);
    }

    #[test]
    fn the_ends_are_found_through_the_key_not_by_reading_every_message() {
        let connection = database();
        let plan: Vec<String> = connection
            .prepare(&format!(
                "EXPLAIN QUERY PLAN {AGENTS}
                 SELECT agent, (SELECT MAX(m.id) FROM messages m WHERE m.agent = agents.agent) + 1
                 FROM agents WHERE agent IS NOT NULL"
            ))
            .unwrap()
            .query_map([], |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter()
                .all(|step| !step.starts_with("SCAN m") && !step.contains("SCAN messages")),
            "a step reads every message: {plan:?}"
        );
    }
}
