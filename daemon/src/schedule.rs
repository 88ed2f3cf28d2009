//! Schedules and the notify queue: what enters an agent's log from outside
//! a conversation, between chains.
//!
//! A schedule is a one-off local time or a 5-field cron expression with the
//! text to deliver, stored in SQLite. When due it is logged as a `user`
//! message with source `schedule`; one missed while the daemon was down fires
//! once at the next start, with a `note` saying when it was due.
//!
//! A notify event is pushed by another program with an idempotency key. It is
//! stored durably and acknowledged to its sender alone (`accepted` with its
//! queue sequence, or `duplicate`); keys are remembered forever, so an event
//! is processed once even when it arrives again after a restart. Events enter
//! the log as `user` messages between chains.

use crate::log::{append as append_in, Log, LogError, NewMessage};
use chrono::{DateTime, Local, NaiveDateTime, TimeZone, Utc};
use croner::Cron;
use hearth_protocol::{Kind, Message};
use rusqlite::params;
use std::str::FromStr;

/// A due time this far in the past means the daemon was down: say so.
const MISSED_AFTER_SECS: i64 = 60;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("`{spec}` is neither a time (like 2026-12-24 18:00) nor a 5-field cron expression (like `0 9 * * 1-5`): {why}")]
    Unreadable { spec: String, why: String },
    #[error("{0} is in the past")]
    Past(String),
    #[error("the cron expression `{0}` never fires")]
    Never(String),
}

/// When a schedule fires.
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    Once(DateTime<Utc>),
    Cron(String),
}

impl When {
    /// Reads a one-off local time (`2026-12-24 18:00`, `2026-12-24T18:00:00`,
    /// or RFC 3339 with an offset) or a 5-field cron expression in local time.
    pub fn parse(spec: &str, now: DateTime<Utc>) -> Result<When, ScheduleError> {
        let spec = spec.trim();
        let unreadable = |why: String| ScheduleError::Unreadable {
            spec: spec.to_string(),
            why,
        };
        if spec.split_whitespace().count() == 5 {
            let cron = Cron::from_str(spec).map_err(|err| unreadable(err.to_string()))?;
            let when = When::Cron(spec.to_string());
            if when.next_after(now).is_none() {
                return Err(ScheduleError::Never(spec.to_string()));
            }
            drop(cron);
            return Ok(when);
        }
        let at = if let Ok(at) = DateTime::parse_from_rfc3339(spec) {
            at.with_timezone(&Utc)
        } else {
            let naive = [
                "%Y-%m-%d %H:%M",
                "%Y-%m-%d %H:%M:%S",
                "%Y-%m-%dT%H:%M",
                "%Y-%m-%dT%H:%M:%S",
            ]
            .iter()
            .find_map(|format| NaiveDateTime::parse_from_str(spec, format).ok())
            .ok_or_else(|| unreadable("expected YYYY-MM-DD HH:MM or 5 cron fields".into()))?;
            Local
                .from_local_datetime(&naive)
                .earliest()
                .ok_or_else(|| {
                    unreadable("that local time does not exist (a clock change?)".into())
                })?
                .with_timezone(&Utc)
        };
        if at <= now {
            return Err(ScheduleError::Past(spec.to_string()));
        }
        Ok(When::Once(at))
    }

    /// The first firing strictly after `after`; none when it never fires again.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            When::Once(at) => (*at > after).then_some(*at),
            When::Cron(spec) => {
                let cron = Cron::from_str(spec).ok()?;
                let local = after.with_timezone(&Local);
                cron.find_next_occurrence(&local, false)
                    .ok()
                    .map(|next| next.with_timezone(&Utc))
            }
        }
    }

    fn spec(&self) -> String {
        match self {
            When::Once(at) => at.with_timezone(&Local).to_rfc3339(),
            When::Cron(spec) => spec.clone(),
        }
    }

    fn from_stored(spec: &str) -> Option<When> {
        if spec.split_whitespace().count() == 5 {
            Some(When::Cron(spec.to_string()))
        } else {
            DateTime::parse_from_rfc3339(spec)
                .ok()
                .map(|at| When::Once(at.with_timezone(&Utc)))
        }
    }
}

/// A stored schedule, as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub id: i64,
    /// The cron expression, or the one-off time (RFC 3339, local).
    pub when: String,
    pub text: String,
    /// The next firing, local RFC 3339.
    pub next: String,
}

fn local(at: i64) -> String {
    Utc.timestamp_opt(at, 0)
        .single()
        .map(|at| at.with_timezone(&Local).to_rfc3339())
        .unwrap_or_default()
}

impl Log {
    /// Stores a schedule; returns it with its id and next firing.
    pub async fn add_schedule(
        &self,
        agent: &str,
        when: When,
        text: &str,
    ) -> Result<Schedule, LogError> {
        let agent = agent.to_string();
        let text = text.to_string();
        let next = when
            .next_after(Utc::now())
            .map_or(i64::MAX, |at| at.timestamp());
        let spec = when.spec();
        self.run(move |tx, _| {
            tx.execute(
                "INSERT INTO schedules (agent, spec, text, next_at, active) VALUES (?1, ?2, ?3, ?4, 1)",
                params![agent, spec, text, next],
            )?;
            Ok(Schedule {
                id: tx.last_insert_rowid(),
                when: spec,
                text,
                next: local(next),
            })
        })
        .await
    }

    /// The active schedules, soonest first.
    pub async fn schedules(&self, agent: &str) -> Result<Vec<Schedule>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT id, spec, text, next_at FROM schedules WHERE agent = ?1 AND active = 1 ORDER BY next_at, id",
            )?;
            let rows = statement.query_map(params![agent], |row| {
                Ok(Schedule {
                    id: row.get(0)?,
                    when: row.get(1)?,
                    text: row.get(2)?,
                    next: local(row.get(3)?),
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
            let due: Vec<(i64, String, String, i64)> = {
                let mut statement = tx.prepare_cached(
                    "SELECT id, spec, text, next_at FROM schedules
                     WHERE agent = ?1 AND active = 1 AND next_at <= ?2 ORDER BY next_at, id",
                )?;
                let rows = statement.query_map(params![agent, now.timestamp()], |row| {
                    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
                })?;
                rows.collect::<Result<_, _>>()?
            };
            let mut logged = Vec::new();
            for (id, spec, text, due_at) in due {
                if now.timestamp() - due_at > MISSED_AFTER_SECS {
                    let note = format!(
                        "schedule #{id} was due at {} while hearthd was down; delivered now",
                        local(due_at)
                    );
                    logged.push(append_in(
                        tx,
                        &agent,
                        NewMessage::new(Kind::Note, "hearthd", note),
                        appended,
                    )?);
                }
                logged.push(append_in(
                    tx,
                    &agent,
                    NewMessage::new(Kind::User, "schedule", text),
                    appended,
                )?);
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
                logged.push(append_in(tx, &agent, NewMessage::new(Kind::User, &source, text), appended)?);
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
    fn times_and_cron_expressions_read() {
        let now = at("2026-11-30T10:00:00Z");
        assert_eq!(
            When::parse("2026-12-01T09:00:00+00:00", now),
            Ok(When::Once(at("2026-12-01T09:00:00Z")))
        );
        assert!(matches!(
            When::parse("2026-12-01 09:00", now),
            Ok(When::Once(_))
        ));
        assert_eq!(
            When::parse("0 9 * * 1-5", now),
            Ok(When::Cron("0 9 * * 1-5".into()))
        );
        assert!(matches!(
            When::parse("2020-01-01 09:00", now),
            Err(ScheduleError::Past(_))
        ));
        let err = When::parse("61 9 * * *", now).unwrap_err().to_string();
        assert!(err.contains("cron"), "{err}");
        assert!(matches!(
            When::parse("tomorrow-ish", now),
            Err(ScheduleError::Unreadable { .. })
        ));
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
            .add_schedule("a", When::Once(soon), "water the plants")
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
}
