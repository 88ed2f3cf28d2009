//! Subagents: named children of the top agent, each with its own log,
//! memory, prompt, folder and turn loop.
//!
//! The parent starts a run of a child with a task: the task is logged in the
//! child's log as a `user` message (source: the parent) and wakes the child.
//! When the child's turn that took the task ends, its answer is logged in the
//! parent as `work` — text starting with the child's name, status `finished`
//! or `failed` — and wakes the parent. A run the parent stops is reported as
//! `stopped` and does not wake it. Runs are stored, so a run that a daemon
//! stop cut off resumes at the next start (the child's turn continues) and
//! the parent gets exactly one report: reporting and marking the run done
//! are one transaction.
//!
//! Words keep their provenance across the family: a task given in a
//! tainted turn is an untrusted message in the child's log (its turn is
//! tainted from its start), and a report of a child's tainted turn is an
//! untrusted message in the parent's (the parent's turn that takes it is
//! tainted), so neither side launders the other's taint.

use crate::inputs::AgentInputs;
use crate::log::{append as append_in, Log, LogError, MessageData, NewMessage, Provenance};
use hearth_protocol::{Event, EventKind, Kind, Message, MessageStatus};
use rusqlite::{params, OptionalExtension};
use std::collections::BTreeMap;
use tokio::sync::broadcast;

/// One declared child.
pub struct Child {
    pub responsibility: String,
    /// Reaches its loop (made before the child, so the map is whole from
    /// the start).
    pub inputs: AgentInputs,
}

/// A stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    pub id: i64,
    pub child: String,
    /// The task's id in the child's log.
    pub task_id: u64,
}

/// How a child's turn ended, as its run reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    Replied(String),
    Failed(String),
    Interrupted,
}

#[derive(Debug, thiserror::Error)]
pub enum SubagentError {
    #[error("there is no subagent `{name}`; the subagents are: {known}")]
    Unknown { name: String, known: String },
    #[error("`{0}` is already running a task; stop it first or wait for its report")]
    Busy(String),
    #[error("`{0}` is not running a task")]
    Idle(String),
    #[error(transparent)]
    Log(#[from] LogError),
}

/// The top agent's children and their runs.
pub struct Subagents {
    parent: String,
    log: Log,
    events: broadcast::Sender<Event>,
    children: BTreeMap<String, Child>,
    /// Woken when a run it started ends.
    parent_inputs: AgentInputs,
}

impl Subagents {
    /// The top agent `parent` (reached by `parent_inputs`) and its
    /// `children`, by name; every loop's inputs exist before any agent.
    pub fn new(
        parent: &str,
        parent_inputs: AgentInputs,
        children: BTreeMap<String, Child>,
        log: Log,
        events: broadcast::Sender<Event>,
    ) -> Subagents {
        Subagents {
            parent: parent.to_string(),
            log,
            events,
            children,
            parent_inputs,
        }
    }

    pub fn parent(&self) -> &str {
        &self.parent
    }

    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }

    fn inputs(&self, name: &str) -> Result<&AgentInputs, SubagentError> {
        match self.children.get(name) {
            Some(child) => Ok(&child.inputs),
            None => Err(SubagentError::Unknown {
                name: name.to_string(),
                known: self.children.keys().cloned().collect::<Vec<_>>().join(", "),
            }),
        }
    }

    /// Starts a run: logs the task in the child's log and wakes it.
    /// `tainted`: what tainted the parent's turn that gives the task; the
    /// task keeps it, so the child's turn is tainted from its start.
    pub async fn start(
        &self,
        name: &str,
        task: &str,
        tainted: Option<&str>,
    ) -> Result<Run, SubagentError> {
        let child = self.inputs(name)?;
        if self.log.running_run(&self.parent, name).await?.is_some() {
            return Err(SubagentError::Busy(name.to_string()));
        }
        let provenance = tainted.map(|after| crate::provenance::carried(&self.parent, after));
        let run = self
            .log
            .start_run(&self.parent, name, task, provenance)
            .await?;
        let mut event = Event::signal(
            EventKind::Subagent,
            &self.parent,
            Some(format!("{name} started: {task}")),
        );
        event.source = Some(name.to_string());
        let _ = self.events.send(event);
        child.wake();
        Ok(run)
    }

    /// Stops a run: reports it `stopped` (without waking the parent) and
    /// interrupts the child's turn.
    pub async fn stop(&self, name: &str) -> Result<Message, SubagentError> {
        let child = self.inputs(name)?;
        let run = self
            .log
            .running_run(&self.parent, name)
            .await?
            .ok_or_else(|| SubagentError::Idle(name.to_string()))?;
        let text = format!("stopped by {} before it finished", self.parent);
        let report = self
            .log
            .finish_run(&self.parent, &run, &text, MessageStatus::Stopped, None)
            .await?
            .ok_or_else(|| SubagentError::Idle(name.to_string()))?;
        child.interrupt();
        Ok(report)
    }

    /// Each child, its responsibility and whether it runs, as the parent's
    /// per-turn state shows them.
    pub async fn describe(&self) -> Result<String, LogError> {
        let running: Vec<String> = self
            .log
            .running_runs(&self.parent)
            .await?
            .into_iter()
            .map(|run| run.child)
            .collect();
        let children: Vec<(String, String)> = self
            .children
            .iter()
            .map(|(name, child)| (name.clone(), child.responsibility.clone()))
            .collect();
        let mut text = String::from("Your subagents (start them with subagent_start):");
        for (name, responsibility) in children {
            let state = if running.contains(&name) {
                "running"
            } else {
                "idle"
            };
            text.push_str(&format!("\n- {name} ({state}): {responsibility}"));
        }
        Ok(text)
    }

    /// Called by a child's loop when one of its turns ended: reports the run
    /// whose task that turn took. `tainted`: what tainted that turn; the
    /// report keeps it.
    pub async fn turn_ended(
        &self,
        child: &str,
        taken: &[u64],
        outcome: TurnOutcome,
        tainted: Option<&str>,
    ) -> Result<(), LogError> {
        let Some(run) = self.log.running_run(&self.parent, child).await? else {
            return Ok(());
        };
        if !taken.contains(&run.task_id) {
            return Ok(());
        }
        let (text, status) = match outcome {
            TurnOutcome::Replied(text) => (text, MessageStatus::Finished),
            TurnOutcome::Failed(why) => (format!("failed: {why}"), MessageStatus::Failed),
            TurnOutcome::Interrupted => (
                "interrupted before it finished".to_string(),
                MessageStatus::Stopped,
            ),
        };
        let provenance = tainted.map(|after| crate::provenance::carried(child, after));
        if self
            .log
            .finish_run(&self.parent, &run, &text, status, provenance)
            .await?
            .is_some()
            && status != MessageStatus::Stopped
        {
            self.parent_inputs.wake();
        }
        Ok(())
    }

    /// At start: reports runs whose child turn already ended before a crash
    /// cut the report off. Runs still in progress resume in the child's loop.
    pub async fn recover(&self) -> Result<(), LogError> {
        for run in self.log.running_runs(&self.parent).await? {
            let entries = self
                .log
                .range(&run.child, run.task_id, u64::MAX, u32::MAX)
                .await?;
            // The turn's taint is gone with the process that ran it: the
            // report is untrusted when anything its turn read was.
            let tainted = entries
                .iter()
                .find_map(|entry| crate::provenance::untrusted_origin(&entry.data))
                .map(|origin| format!("after {origin}"));
            let tainted = tainted.as_deref();
            let reply = entries.iter().find(|entry| {
                entry.message.kind == Kind::Reply && entry.message.answers.contains(&run.task_id)
            });
            if let Some(reply) = reply {
                let text = reply.message.text.clone();
                let outcome = TurnOutcome::Replied(text);
                self.turn_ended(&run.child, &[run.task_id], outcome, tainted)
                    .await?;
                continue;
            }
            if let Some((turn, true)) = self.log.last_turn(&run.child).await? {
                let took = turn.taken_after.is_none_or(|after| after < run.task_id)
                    && run.task_id <= turn.taken_through;
                if took {
                    let outcome = TurnOutcome::Failed("the run ended without a report".into());
                    self.turn_ended(&run.child, &[run.task_id], outcome, tainted)
                        .await?;
                }
            }
        }
        Ok(())
    }
}

impl Log {
    /// Logs a task in the child's log and records the run, in one
    /// transaction. `provenance`: where the task's words came from, when
    /// not from a clean turn of the parent.
    pub async fn start_run(
        &self,
        parent: &str,
        child: &str,
        task: &str,
        provenance: Option<Provenance>,
    ) -> Result<Run, LogError> {
        let (parent, child, task) = (parent.to_string(), child.to_string(), task.to_string());
        self.run(move |tx, appended| {
            let mut task = NewMessage::new(Kind::User, &parent, task);
            task.data.provenance = provenance;
            let message = append_in(tx, &child, task, appended)?;
            tx.execute(
                "INSERT INTO runs (parent, child, task_id, status) VALUES (?1, ?2, ?3, 'running')",
                params![parent, child, message.id as i64],
            )?;
            Ok(Run {
                id: tx.last_insert_rowid(),
                child,
                task_id: message.id,
            })
        })
        .await
    }

    /// Reports a run in the parent's log and marks it done — once: a run that
    /// is no longer running is not reported again (returns none).
    /// `provenance`: where the report's words came from, when the child's
    /// turn was tainted.
    pub async fn finish_run(
        &self,
        parent: &str,
        run: &Run,
        text: &str,
        status: MessageStatus,
        provenance: Option<Provenance>,
    ) -> Result<Option<Message>, LogError> {
        let (parent, run) = (parent.to_string(), run.clone());
        let text = format!("{}: {text}", run.child);
        self.run(move |tx, appended| {
            let changed = tx.execute(
                "UPDATE runs SET status = ?2 WHERE id = ?1 AND status = 'running'",
                params![run.id, status.as_str()],
            )?;
            if changed == 0 {
                return Ok(None);
            }
            let report = NewMessage::new(Kind::Work, &run.child, text)
                .with_status(status)
                .with_data(MessageData {
                    run: Some(run.id),
                    provenance,
                    ..MessageData::default()
                });
            append_in(tx, &parent, report, appended).map(Some)
        })
        .await
    }

    pub async fn running_run(&self, parent: &str, child: &str) -> Result<Option<Run>, LogError> {
        let (parent, child) = (parent.to_string(), child.to_string());
        self.run(move |tx, _| {
            tx.query_row(
                "SELECT id, child, task_id FROM runs WHERE parent = ?1 AND child = ?2 AND status = 'running'",
                params![parent, child],
                |row| {
                    Ok(Run {
                        id: row.get(0)?,
                        child: row.get(1)?,
                        task_id: row.get::<_, i64>(2)? as u64,
                    })
                },
            )
            .optional()
        })
        .await
    }

    pub async fn running_runs(&self, parent: &str) -> Result<Vec<Run>, LogError> {
        let parent = parent.to_string();
        self.run(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT id, child, task_id FROM runs WHERE parent = ?1 AND status = 'running' ORDER BY id",
            )?;
            let rows = statement.query_map(params![parent], |row| {
                Ok(Run {
                    id: row.get(0)?,
                    child: row.get(1)?,
                    task_id: row.get::<_, i64>(2)? as u64,
                })
            })?;
            rows.collect()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The top agent with one child, `scout`.
    fn with_scout(log: &Log, events: broadcast::Sender<Event>) -> Subagents {
        let child = Child {
            responsibility: "looks things up".into(),
            inputs: crate::inputs::channel().0,
        };
        let children = BTreeMap::from([("scout".to_string(), child)]);
        let parent = crate::inputs::channel().0;
        Subagents::new("top", parent, children, log.clone(), events)
    }

    #[tokio::test]
    async fn a_run_is_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events.clone()).unwrap();
        let subagents = with_scout(&log, events);
        let run = subagents
            .start("scout", "find the train times", None)
            .await
            .unwrap();
        assert!(matches!(
            subagents.start("scout", "again", None).await,
            Err(SubagentError::Busy(_))
        ));
        assert!(subagents
            .describe()
            .await
            .unwrap()
            .contains("- scout (running): looks things up"));
        subagents
            .turn_ended(
                "scout",
                &[run.task_id],
                TurnOutcome::Replied("the 9:14".into()),
                None,
            )
            .await
            .unwrap();
        subagents
            .turn_ended(
                "scout",
                &[run.task_id],
                TurnOutcome::Replied("the 9:14".into()),
                None,
            )
            .await
            .unwrap();
        let parent = log.page("top", None, 10).await.unwrap();
        assert_eq!(parent.len(), 1);
        assert_eq!(parent[0].kind, Kind::Work);
        assert_eq!(parent[0].text, "scout: the 9:14");
        assert_eq!(parent[0].status.as_deref(), Some("finished"));
        assert!(matches!(
            subagents.start("nobody", "x", None).await,
            Err(SubagentError::Unknown { .. })
        ));
    }

    #[tokio::test]
    async fn a_stopped_run_reports_stopped_and_waits_for_no_turn() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events.clone()).unwrap();
        let subagents = with_scout(&log, events);
        subagents.start("scout", "find it", None).await.unwrap();
        let report = subagents.stop("scout").await.unwrap();
        assert_eq!(report.status.as_deref(), Some("stopped"));
        assert!(log.waiting("top", None).await.unwrap().is_empty());
        assert!(matches!(
            subagents.stop("scout").await,
            Err(SubagentError::Idle(_))
        ));
    }
}
