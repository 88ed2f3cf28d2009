//! Schedules and the notify queue: what enters an agent's log from outside
//! a conversation, between chains.
//!
//! A schedule is a one-off time or a 5-field cron expression with the text
//! to deliver, stored in SQLite; `when.rs` reads the forms a person types
//! (`07:30`, `tomorrow 9am`, `in 20 minutes`, …). When due it is logged as a `user`
//! message with source `schedule`; one missed while the daemon was down fires
//! once at the next start, with a `note` saying when it was due. A schedule
//! made in a tainted turn keeps what tainted it (`untrusted`), and fires as
//! an untrusted message, so its turn is tainted too: a page cannot launder
//! its words into a later, clean turn through a schedule.
//!
//! A notify event is pushed by another program with an idempotency key. It is
//! stored durably and acknowledged to its sender alone (`accepted` with its
//! queue sequence, or `duplicate`); keys are remembered forever, so an event
//! is processed once even when it arrives again after a restart. Events enter
//! the log as `user` messages between chains.

use crate::log::{append as append_in, Log, LogError, NewMessage};
use chrono::{DateTime, Local, TimeZone, Utc};
use hearth_protocol::{Kind, Message};
use rusqlite::params;

mod when;

pub use when::{parse_in, ScheduleError, When};

/// A due time this far in the past means the daemon was down: say so.
const MISSED_AFTER_SECS: i64 = 60;

/// A stored schedule, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub id: i64,
    /// The cron expression, or the one-off time (RFC 3339, local).
    pub when: String,
    pub text: String,
    /// The next firing, local RFC 3339.
    pub next: String,
    /// What tainted the turn that made it (`after reading …`); none: a
    /// clean turn's.
    pub untrusted: Option<String>,
}

fn local(at: i64) -> String {
    Utc.timestamp_opt(at, 0)
        .single()
        .map(|at| at.with_timezone(&Local).to_rfc3339())
        .unwrap_or_default()
}

impl Log {
    /// Stores a schedule; returns it with its id and next firing.
    /// `untrusted`: what tainted the turn that made it.
    pub async fn add_schedule(
        &self,
        agent: &str,
        when: When,
        text: &str,
        untrusted: Option<&str>,
    ) -> Result<Schedule, LogError> {
        let agent = agent.to_string();
        let text = text.to_string();
        let untrusted = untrusted.map(crate::provenance::bounded);
        let next = when
            .next_after(Utc::now())
            .map_or(i64::MAX, |at| at.timestamp());
        let spec = when.spec();
        self.run(move |tx, _| {
            tx.execute(
                "INSERT INTO schedules (agent, spec, text, next_at, active, untrusted) VALUES (?1, ?2, ?3, ?4, 1, ?5)",
                params![agent, spec, text, next, untrusted],
            )?;
            Ok(Schedule {
                id: tx.last_insert_rowid(),
                when: spec,
                text,
                next: local(next),
                untrusted,
            })
        })
        .await
    }

    /// The active schedules, soonest first.
    pub async fn schedules(&self, agent: &str) -> Result<Vec<Schedule>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT id, spec, text, next_at, untrusted FROM schedules WHERE agent = ?1 AND active = 1 ORDER BY next_at, id",
            )?;
            let rows = statement.query_map(params![agent], |row| {
                Ok(Schedule {
                    id: row.get(0)?,
                    when: row.get(1)?,
                    text: row.get(2)?,
                    next: local(row.get(3)?),
                    untrusted: row.get(4)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    /// Cancels a schedule; returns whether an active one had that id.
    pub async fn cancel_schedule(&self, agent: &str, id: i64) -> Result<bool, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            tx.execute(
                "UPDATE schedules SET active = 0 WHERE agent = ?1 AND id = ?2 AND active = 1",
                params![agent, id],
            )
            .map(|changed| changed > 0)
        })
        .await
    }

    /// When the next schedule of `agent` falls due.
    pub async fn next_due(&self, agent: &str) -> Result<Option<DateTime<Utc>>, LogError> {
        let agent = agent.to_string();
        let at: Option<i64> = self
            .run(move |tx, _| {
                tx.query_row(
                    "SELECT MIN(next_at) FROM schedules WHERE agent = ?1 AND active = 1",
                    params![agent],
                    |row| row.get(0),
                )
            })
            .await?;
        Ok(at.and_then(|at| Utc.timestamp_opt(at, 0).single()))
    }

    /// Logs every schedule due at `now` as a `user` message (source
    /// `schedule`), with a note for one that was missed while the daemon was
    /// down, and moves each to its next firing — in one transaction, so a
    /// schedule fires once.
    pub async fn fire_due(
        &self,
        agent: &str,
        now: DateTime<Utc>,
    ) -> Result<Vec<Message>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, appended| {
            type Due = (i64, String, String, i64, Option<String>);
            let due: Vec<Due> = {
                let mut statement = tx.prepare_cached(
                    "SELECT id, spec, text, next_at, untrusted FROM schedules
                     WHERE agent = ?1 AND active = 1 AND next_at <= ?2 ORDER BY next_at, id",
                )?;
                let rows = statement.query_map(params![agent, now.timestamp()], |row| {
                    Ok((
                        row.get(0)?,
                        row.get(1)?,
                        row.get(2)?,
                        row.get(3)?,
                        row.get(4)?,
                    ))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            let mut logged = Vec::new();
            for (id, spec, text, due_at, untrusted) in due {
                if now.timestamp() - due_at > MISSED_AFTER_SECS {
                    let note = format!(
                        "schedule #{id} was due at {} while hearthd was down; delivered now",
                        local(due_at)
                    );
                    logged.push(append_in(
                        tx,
                        &agent,
                        NewMessage::daemon_note(note),
                        appended,
                    )?);
                }
                let mut message = NewMessage::new(Kind::User, "schedule", text);
                // Made in a tainted turn: its words are as untrusted as
                // what tainted that turn.
                if let Some(after) = &untrusted {
                    message.data.provenance = Some(crate::provenance::scheduled(id, &agent, after));
                }
                logged.push(append_in(tx, &agent, message, appended)?);
                let next = When::from_stored(&spec).and_then(|when| when.next_after(now));
                match next {
                    Some(next) => tx.execute(
                        "UPDATE schedules SET next_at = ?2 WHERE id = ?1",
                        params![id, next.timestamp()],
                    )?,
                    None => {
                        tx.execute("UPDATE schedules SET active = 0 WHERE id = ?1", params![id])?
                    }
                };
            }
            Ok(logged)
        })
        .await
    }

    /// Stores a notify event unless its key was seen; returns its queue
    /// sequence and whether it was a duplicate.
    pub async fn notify(
        &self,
        agent: &str,
        key: &str,
        text: &str,
        source: &str,
    ) -> Result<(i64, bool), LogError> {
        let (agent, key, text, source) = (
            agent.to_string(),
            key.to_string(),
            text.to_string(),
            source.to_string(),
        );
        self.run(move |tx, _| {
            let inserted = tx.execute(
                "INSERT OR IGNORE INTO notify (agent, key, text, source, delivered) VALUES (?1, ?2, ?3, ?4, 0)",
                params![agent, key, text, source],
            )?;
            let seq: i64 = tx.query_row(
                "SELECT seq FROM notify WHERE agent = ?1 AND key = ?2",
                params![agent, key],
                |row| row.get(0),
            )?;
            Ok((seq, inserted == 0))
        })
        .await
    }

    /// Logs the waiting notify events as `user` messages, in queue order,
    /// marking them delivered in the same transaction.
    pub async fn deliver_notify(&self, agent: &str) -> Result<Vec<Message>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, appended| {
            let waiting: Vec<(i64, String, String)> = {
                let mut statement = tx.prepare_cached(
                    "SELECT seq, text, source FROM notify WHERE agent = ?1 AND delivered = 0 ORDER BY seq",
                )?;
                let rows = statement.query_map(params![agent], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
                rows.collect::<Result<_, _>>()?
            };
            let mut logged = Vec::new();
            for (seq, text, source) in waiting {
                // Another program's words: untrusted, as a page is.
                let mut message = NewMessage::new(Kind::User, &source, text);
                message.data.provenance = Some(crate::provenance::notify(&source));
                logged.push(append_in(tx, &agent, message, appended)?);
                tx.execute("UPDATE notify SET delivered = 1 WHERE seq = ?1", params![seq])?;
            }
            Ok(logged)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::broadcast;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text)
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn cron_fires_at_its_next_minute() {
        let when = When::Cron("*/15 * * * *".into());
        let next = when.next_after(at("2026-11-30T10:07:30Z")).unwrap();
        assert_eq!(next.timestamp() % (15 * 60), 0);
        assert!(next > at("2026-11-30T10:07:30Z"));
        assert!(next <= at("2026-11-30T10:15:00Z") + chrono::Duration::hours(14));
    }

    #[tokio::test]
    async fn a_due_schedule_fires_once_and_a_missed_one_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        let soon = Utc::now() + chrono::Duration::hours(1);
        let schedule = log
            .add_schedule("a", When::Once(soon), "water the plants", None)
            .await
            .unwrap();
        assert_eq!(log.schedules("a").await.unwrap().len(), 1);
        assert!(log.fire_due("a", Utc::now()).await.unwrap().is_empty());
        // Three hours later: it was missed by two.
        let late = soon + chrono::Duration::hours(2);
        let fired = log.fire_due("a", late).await.unwrap();
        assert_eq!(fired.len(), 2);
        assert_eq!(fired[0].kind, Kind::Note);
        assert!(fired[0]
            .text
            .contains(&format!("schedule #{}", schedule.id)));
        assert_eq!(
            (fired[1].kind, fired[1].source.as_str()),
            (Kind::User, "schedule")
        );
        assert!(
            log.fire_due("a", late).await.unwrap().is_empty(),
            "once only"
        );
        let entries = log.range("a", 0, u64::MAX, 10).await.unwrap();
        assert!(
            entries[1].data.provenance.is_none(),
            "a clean turn's schedule is trusted"
        );
        assert!(log.schedules("a").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_notify_key_is_processed_once() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        let (seq, duplicate) = log
            .notify("a", "k1", "build failed", "notify")
            .await
            .unwrap();
        assert!(!duplicate);
        assert_eq!(
            log.notify("a", "k1", "build failed", "notify")
                .await
                .unwrap(),
            (seq, true)
        );
        assert_eq!(log.deliver_notify("a").await.unwrap().len(), 1);
        assert_eq!(
            log.notify("a", "k1", "again", "notify").await.unwrap(),
            (seq, true)
        );
        assert!(log.deliver_notify("a").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_schedule_made_in_a_tainted_turn_fires_untrusted() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        let soon = Utc::now() + chrono::Duration::hours(1);
        let schedule = log
            .add_schedule(
                "a",
                When::Once(soon),
                "run the page's command",
                Some("after reading https://evil.example"),
            )
            .await
            .unwrap();
        let listed = log.schedules("a").await.unwrap();
        assert_eq!(
            listed[0].untrusted.as_deref(),
            Some("after reading https://evil.example")
        );
        assert_eq!(log.fire_due("a", soon).await.unwrap().len(), 1);
        let entries = log.range("a", 0, u64::MAX, 10).await.unwrap();
        assert_eq!(
            crate::provenance::untrusted_origin(&entries[0].data).as_deref(),
            Some(
                format!(
                    "schedule #{}, which `a` made after reading https://evil.example",
                    schedule.id
                )
                .as_str()
            )
        );
    }
}
