//! Another agent's history brought into the log (`hearth import`).
//!
//! Imported messages are appended like any other: they get the next ids,
//! a link in the chain and a row in the full-text index, in the writer's
//! transaction; the memory summarizes them as it does every message. Two
//! things differ: each keeps its original time as its `at`, and each has a
//! key (`import:FROM:KEY`) so that an import run again logs nothing twice.
//!
//! The log's times grow with its ids, and the memory reads idle gaps from
//! them; so new messages are refused, and nothing is written, when the log
//! already holds a message newer than the oldest of them (the daemon's own
//! notes aside: a first start may log one before anything is said), unless
//! the owner forces it. Into a new home, or one whose words are all older,
//! an import is history that comes first.

use super::{next_id, Log, LogError, NewMessage, DAEMON_SOURCE};
use chrono::{DateTime, FixedOffset};
use hearth_protocol::Kind;
use rusqlite::{params, Connection, OptionalExtension};

/// What an import did, or with a dry run would do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImportOutcome {
    /// Messages logged now (would be, with a dry run).
    pub imported: u64,
    /// Messages whose key had been imported before: skipped.
    pub known: u64,
    /// The ids the logged messages got.
    pub first_id: Option<u64>,
    pub last_id: Option<u64>,
}

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportRefusal {
    #[error(
        "the log already has a message from {newest}, newer than the oldest one to import \
         ({oldest}): imported history must come before what was said here. Import into a new \
         home (--home), or pass --force to add it after the newer messages anyway"
    )]
    Newer { newest: String, oldest: String },
    #[error("the messages to import must come oldest first ({at} comes after a later one)")]
    OutOfOrder { at: String },
    #[error(transparent)]
    Log(#[from] LogError),
}

impl Log {
    /// Appends the messages whose keys are new, in order, in one
    /// transaction; with `dry_run` writes nothing and says what it would
    /// do. Each message must carry its key and its time (`at`).
    pub async fn import(
        &self,
        agent: &str,
        messages: Vec<NewMessage>,
        force: bool,
        dry_run: bool,
    ) -> Result<ImportOutcome, ImportRefusal> {
        check_order(&messages)?;
        let agent = agent.to_string();
        self.run(move |tx, appended| {
            let mut outcome = ImportOutcome::default();
            let mut fresh = Vec::new();
            let mut keys = std::collections::HashSet::new();
            for message in messages {
                let key = message.key.clone().unwrap_or_default();
                if !keys.insert(key.clone()) || known(tx, &agent, &key)? {
                    outcome.known += 1;
                } else {
                    fresh.push(message);
                }
            }
            if let (false, Some(oldest)) = (force, fresh.first().and_then(|m| m.at.clone())) {
                if let Some(newest) = newest_said(tx, &agent)? {
                    if time(&newest) > time(&oldest) {
                        return Ok(Err(ImportRefusal::Newer { newest, oldest }));
                    }
                }
            }
            outcome.imported = fresh.len() as u64;
            if dry_run || fresh.is_empty() {
                return Ok(Ok(outcome));
            }
            outcome.first_id = Some(next_id(tx, &agent)?);
            for message in fresh {
                outcome.last_id = Some(super::append(tx, &agent, message, appended)?.id);
            }
            Ok(Ok(outcome))
        })
        .await?
    }
}

/// Refuses messages that do not come oldest first: the log's times would
/// go back.
fn check_order(messages: &[NewMessage]) -> Result<(), ImportRefusal> {
    for pair in messages.windows(2) {
        let (Some(before), Some(after)) = (&pair[0].at, &pair[1].at) else {
            continue;
        };
        if time(after) < time(before) {
            return Err(ImportRefusal::OutOfOrder { at: after.clone() });
        }
    }
    Ok(())
}

/// A stored or imported time, for comparing; one that does not parse (no
/// row the log wrote, and the handler checks the imported ones) as the
/// earliest.
fn time(at: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(at).ok()
}

fn known(tx: &Connection, agent: &str, key: &str) -> Result<bool, rusqlite::Error> {
    tx.prepare_cached("SELECT 1 FROM messages WHERE agent = ?1 AND key = ?2")?
        .query_row(params![agent, key], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// The time of the newest message that is not one of the daemon's own
/// notes.
fn newest_said(tx: &Connection, agent: &str) -> Result<Option<String>, rusqlite::Error> {
    tx.prepare_cached(
        "SELECT at FROM messages WHERE agent = ?1 AND NOT (kind = ?2 AND source = ?3)
         ORDER BY id DESC LIMIT 1",
    )?
    .query_row(params![agent, Kind::Note.as_str(), DAEMON_SOURCE], |row| {
        row.get(0)
    })
    .optional()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::MessageStatus;

    fn message(text: &str, at: &str, key: &str) -> NewMessage {
        let mut message =
            NewMessage::new(Kind::User, "openclaw", text).with_status(MessageStatus::Imported);
        message.at = Some(at.to_string());
        message.key = Some(key.to_string());
        message
    }

    fn log() -> (tempfile::TempDir, Log) {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = tokio::sync::broadcast::channel(64);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        (dir, log)
    }

    #[tokio::test]
    async fn an_import_keeps_its_times_logs_each_key_once_and_waits_for_no_turn() {
        let (_dir, log) = log();
        let batch = vec![
            message("first", "2025-01-02T10:00:00+00:00", "import:openclaw:a"),
            message("second", "2025-01-02T10:01:00+00:00", "import:openclaw:b"),
        ];
        let outcome = log.import("a", batch.clone(), false, false).await.unwrap();
        assert_eq!((outcome.imported, outcome.known), (2, 0));
        assert_eq!((outcome.first_id, outcome.last_id), (Some(0), Some(1)));
        let again = log.import("a", batch, false, false).await.unwrap();
        assert_eq!((again.imported, again.known), (0, 2));
        let page = log.page("a", None, 10).await.unwrap();
        assert_eq!(page.len(), 2);
        assert_eq!(
            time(&page[0].at),
            time("2025-01-02T10:00:00+00:00"),
            "{}",
            page[0].at
        );
        assert_eq!(log.waiting("a", None).await.unwrap(), Vec::<u64>::new());
    }

    #[tokio::test]
    async fn an_import_older_than_the_log_is_refused_unless_forced_and_a_dry_run_writes_nothing() {
        let (_dir, log) = log();
        log.append("a", NewMessage::new(Kind::User, "terminal", "now"))
            .await
            .unwrap();
        log.append("a", NewMessage::daemon_note("a note"))
            .await
            .unwrap();
        let old = vec![message("old", "2020-01-01T00:00:00Z", "import:hermes:x")];
        let refused = log.import("a", old.clone(), false, false).await;
        assert!(
            matches!(refused, Err(ImportRefusal::Newer { .. })),
            "{refused:?}"
        );
        let dry = log.import("a", old.clone(), true, true).await.unwrap();
        assert_eq!((dry.imported, dry.first_id), (1, None));
        assert_eq!(log.next_id("a").await.unwrap(), 2);
        let forced = log.import("a", old, true, false).await.unwrap();
        assert_eq!(forced.first_id, Some(2));
    }

    #[tokio::test]
    async fn messages_out_of_order_are_refused() {
        let (_dir, log) = log();
        let batch = vec![
            message("later", "2025-01-02T10:01:00Z", "k1"),
            message("earlier", "2025-01-02T10:00:00Z", "k2"),
        ];
        let refused = log.import("a", batch, false, false).await;
        assert!(matches!(refused, Err(ImportRefusal::OutOfOrder { .. })));
    }
}
