//! The exposures in the log's database: the windows of time in which a
//! tool call that may have brought outside words into files ran, kept so a
//! file changed in one is outside text after a restart too (the rule is
//! `tools/exposure.rs`'s).
//!
//! Times are nanoseconds since the Unix epoch on the wall clock, as the
//! kernel stamps a file's ctime. A window still open has no end: a file
//! changed at any time after its start falls in it.

use super::{Log, LogError};
use rusqlite::{params, Connection, OptionalExtension};

/// What a window a stopped daemon left open is closed to at the next start,
/// past that start: the keeper kills what a command left when hearthd dies,
/// within its own 10 seconds' limit.
const LEFT_OPEN_NS: i64 = 15_000_000_000;

/// A window a file changed in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposure {
    /// The agent whose call it was.
    pub agent: String,
    /// What ran, in words that follow "changed while" (`` `shell` ran with
    /// the network: `curl …` ``).
    pub why: String,
}

impl Log {
    /// Records a window that opens at `started` (see the module's doc);
    /// returns its id, for [`Log::close_exposure`]. Durable before it
    /// returns, so the call it covers starts only once it is kept.
    pub async fn open_exposure(
        &self,
        agent: &str,
        why: &str,
        started: i64,
    ) -> Result<i64, LogError> {
        let (agent, why) = (agent.to_string(), why.to_string());
        self.run(move |tx, _| {
            tx.execute(
                "INSERT INTO exposures (agent, why, started) VALUES (?1, ?2, ?3)",
                params![agent, why, started],
            )?;
            Ok(tx.last_insert_rowid())
        })
        .await
    }

    /// Closes window `id` at `ended`.
    pub async fn close_exposure(&self, id: i64, ended: i64) -> Result<(), LogError> {
        self.run(move |tx, _| {
            tx.execute(
                "UPDATE exposures SET ended = ?2 WHERE seq = ?1",
                params![id, ended],
            )
            .map(|_| ())
        })
        .await
    }

    /// The newest window a change at `at` falls in, if any. Read on a
    /// connection of its own, never the writer's.
    pub async fn exposure_at(&self, at: i64) -> Result<Option<Exposure>, LogError> {
        self.read(move |connection| {
            connection
                .query_row(
                    "SELECT agent, why FROM exposures
                     WHERE started <= ?1 AND (ended IS NULL OR ended >= ?1)
                     ORDER BY seq DESC LIMIT 1",
                    params![at],
                    |row| {
                        Ok(Exposure {
                            agent: row.get(0)?,
                            why: row.get(1)?,
                        })
                    },
                )
                .optional()
        })
        .await
    }
}

/// At start: closes the windows the last daemon left open (it stopped while
/// a call ran) at `now` and a margin for the keeper to finish its killing.
pub(super) fn close_left_open(connection: &Connection, now: i64) -> Result<(), rusqlite::Error> {
    connection.execute(
        "UPDATE exposures SET ended = ?1 WHERE ended IS NULL",
        params![now.saturating_add(LEFT_OPEN_NS)],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_falls_in_a_window_from_its_start_to_its_end_or_on_while_open() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = tokio::sync::broadcast::channel(16);
        let path = dir.path().join("hearth.db");
        let log = Log::open(&path, events.clone()).unwrap();
        let closed = log.open_exposure("a", "first", 100).await.unwrap();
        log.close_exposure(closed, 200).await.unwrap();
        assert_eq!(log.exposure_at(99).await.unwrap(), None);
        for at in [100, 150, 200] {
            let found = log.exposure_at(at).await.unwrap().unwrap();
            assert_eq!((found.agent.as_str(), found.why.as_str()), ("a", "first"));
        }
        assert_eq!(log.exposure_at(201).await.unwrap(), None);
        log.open_exposure("b", "second", 1_000).await.unwrap();
        let later = log.exposure_at(i64::MAX).await.unwrap().unwrap();
        assert_eq!(later.why, "second");
        drop(log);
        // A restart closes the open window: a change long after it is clean.
        let log = Log::open(&path, events).unwrap();
        assert_eq!(log.exposure_at(i64::MAX).await.unwrap(), None);
        assert!(log.exposure_at(1_000).await.unwrap().is_some());
    }
}
