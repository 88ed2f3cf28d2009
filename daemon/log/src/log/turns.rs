//! The turns' records in the log's database: what each turn took, whether it
//! finished, and which of its tool calls were running — so a crash loses no
//! taken message and runs no cut-off call again.

use super::{append, next_id, waiting, Log, LogError, NewMessage, RunningCall, TurnRecord};
use hearth_protocol::Message;
use rusqlite::{params, OptionalExtension};

impl Log {
    /// The newest turn, and whether it finished.
    pub async fn last_turn(&self, agent: &str) -> Result<Option<(TurnRecord, bool)>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            tx.query_row(
                "SELECT seq, start_id, taken_after, taken_through, finished FROM turns
                 WHERE agent = ?1 ORDER BY seq DESC LIMIT 1",
                params![agent],
                |row| {
                    Ok((
                        TurnRecord {
                            seq: row.get(0)?,
                            start_id: row.get::<_, i64>(1)? as u64,
                            // Stored as -1 for none.
                            taken_after: u64::try_from(row.get::<_, i64>(2)?).ok(),
                            taken_through: row.get::<_, i64>(3)? as u64,
                        },
                        row.get::<_, bool>(4)?,
                    ))
                },
            )
            .optional()
        })
        .await
    }

    /// Starts a turn that takes the waiting messages after `taken_after`, if
    /// any wait. Its chain starts at the log's current end.
    pub async fn begin_turn(
        &self,
        agent: &str,
        taken_after: Option<u64>,
    ) -> Result<Option<TurnRecord>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            let waiting = waiting(tx, &agent, taken_after)?;
            let Some(&taken_through) = waiting.last() else {
                return Ok(None);
            };
            let seq: i64 = tx.query_row(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM turns WHERE agent = ?1",
                params![agent],
                |row| row.get(0),
            )?;
            let start_id = next_id(tx, &agent)?;
            tx.execute(
                "INSERT INTO turns (agent, seq, start_id, taken_after, taken_through, finished)
                 VALUES (?1, ?2, ?3, ?4, ?5, 0)",
                params![
                    agent,
                    seq,
                    start_id as i64,
                    taken_after.map_or(-1, |id| id as i64),
                    taken_through as i64
                ],
            )?;
            Ok(Some(TurnRecord {
                seq,
                start_id,
                taken_after,
                taken_through,
            }))
        })
        .await
    }

    /// Takes the messages that arrived since the turn last took, so they join
    /// its next request. Returns the updated record.
    pub async fn take_more(&self, agent: &str, turn: TurnRecord) -> Result<TurnRecord, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            let waiting = waiting(tx, &agent, Some(turn.taken_through))?;
            let Some(&through) = waiting.last() else {
                return Ok(turn);
            };
            tx.execute(
                "UPDATE turns SET taken_through = ?3 WHERE agent = ?1 AND seq = ?2",
                params![agent, turn.seq, through as i64],
            )?;
            Ok(TurnRecord {
                taken_through: through,
                ..turn
            })
        })
        .await
    }

    /// Ends a turn, appending its last messages (a reply, a note) in the same
    /// transaction, so a crash never leaves a reply with its turn unfinished.
    pub async fn finish_turn(
        &self,
        agent: &str,
        turn: TurnRecord,
        last: Vec<NewMessage>,
    ) -> Result<Vec<Message>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, appended| {
            let mut logged = Vec::new();
            for message in last {
                logged.push(append(tx, &agent, message, appended)?);
            }
            tx.execute(
                "UPDATE turns SET finished = 1 WHERE agent = ?1 AND seq = ?2",
                params![agent, turn.seq],
            )?;
            tx.execute(
                "DELETE FROM tool_calls WHERE agent = ?1 AND turn = ?2",
                params![agent, turn.seq],
            )?;
            Ok(logged)
        })
        .await
    }

    /// Records a step's tool calls as running, after the echo beside them.
    pub async fn start_calls(
        &self,
        agent: &str,
        turn: TurnRecord,
        echo: Option<NewMessage>,
        calls: Vec<RunningCall>,
    ) -> Result<(), LogError> {
        let agent = agent.to_string();
        self.run(move |tx, appended| {
            if let Some(echo) = echo {
                append(tx, &agent, echo, appended)?;
            }
            for call in calls {
                tx.execute(
                    "INSERT OR REPLACE INTO tool_calls (agent, call_id, turn, step, name, arguments)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![agent, call.call_id, turn.seq, call.step, call.name, call.arguments],
                )?;
            }
            Ok(())
        })
        .await
    }

    /// Logs a finished call's `tool` message and forgets it as running.
    pub async fn finish_call(
        &self,
        agent: &str,
        call_id: &str,
        message: NewMessage,
    ) -> Result<Message, LogError> {
        let agent = agent.to_string();
        let call_id = call_id.to_string();
        self.run(move |tx, appended| {
            let logged = append(tx, &agent, message, appended)?;
            tx.execute(
                "DELETE FROM tool_calls WHERE agent = ?1 AND call_id = ?2",
                params![agent, call_id],
            )?;
            Ok(logged)
        })
        .await
    }

    /// The calls recorded as running, in the order they were started.
    pub async fn running_calls(&self, agent: &str) -> Result<Vec<RunningCall>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT call_id, step, name, arguments FROM tool_calls WHERE agent = ?1 ORDER BY rowid",
            )?;
            let rows = statement.query_map(params![agent], |row| {
                Ok(RunningCall {
                    call_id: row.get(0)?,
                    step: row.get(1)?,
                    name: row.get(2)?,
                    arguments: row.get(3)?,
                })
            })?;
            rows.collect()
        })
        .await
    }
}
