//! The turn loop: one per agent.
//!
//! Waiting user messages and reports wake the loop. A turn takes what waits,
//! builds the first request and runs the chain — model request, tool calls,
//! their results, the next request — until the model answers without a tool
//! call: that answer is the `reply`. Messages that arrive mid-turn join the
//! next request after the tool results.
//!
//! What a turn took stays taken: a failed or interrupted turn ends with a
//! note and an `error` or `idle` event, and the next turn starts only with a
//! new message, so a lasting failure does not spin. A turn that a crash or a
//! stop cut off is continued at the next start, and a tool call the crash cut
//! off is logged as interrupted rather than run again.
//!
//! - `turn.rs` (this file): the agent, its handle, and the loop that begins
//!   turns, races a turn's chain against interrupts and stops, and ends it.
//! - `turn/chain.rs`: the chain's steps (begin, one request, the reply, the
//!   calls).

mod chain;

use crate::activity::ActivityBoard;
use crate::config::Limits;
use crate::inputs::{AgentInputs, Inbox, Input};
use crate::log::{Log, LogError, MessageData, NewMessage, RunningCall, TurnRecord};
use crate::memory::Memory;
use crate::model::{Model, ToolCall};
use crate::subagents::{Subagents, TurnOutcome};
use crate::tools::Tools;
use crate::usage::Meter;
use hearth_protocol::{Event, EventKind, Kind, MessageStatus};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::{broadcast, watch};

/// How the rest of the daemon reaches a running agent loop.
#[derive(Clone)]
pub struct AgentHandle {
    pub name: String,
    /// Wakes the loop, interrupts its turn, says whether one runs.
    inputs: AgentInputs,
    /// What the agent is doing now, for a client that attaches and `status`.
    pub activity: ActivityBoard,
    /// The agent's memory, for `status`.
    pub memory: Memory,
    /// Where a reloaded configuration's model and limits are put.
    settings: Arc<watch::Sender<AgentSettings>>,
}

/// What an agent reads from the configuration before each model request,
/// so a reload applies to the next request.
#[derive(Clone)]
pub struct AgentSettings {
    /// None: every turn fails with an error that says how to configure one.
    pub model: Option<Model>,
    pub limits: Limits,
}

impl AgentHandle {
    /// What reaches the agent's loop, for a part of the daemon that only
    /// wakes it (the transcriber).
    pub fn inputs(&self) -> AgentInputs {
        self.inputs.clone()
    }

    pub fn wake(&self) {
        self.inputs.wake();
    }

    /// Interrupts the running turn; returns whether one was running.
    pub fn interrupt(&self) -> bool {
        self.inputs.interrupt()
    }

    pub fn is_busy(&self) -> bool {
        self.inputs.is_busy()
    }

    /// Applies a reloaded configuration from the next model request on.
    pub fn update(&self, settings: AgentSettings) {
        self.settings.send_replace(settings);
    }

    /// The model and limits the agent runs with now.
    pub fn settings(&self) -> AgentSettings {
        self.settings.borrow().clone()
    }
}

/// One agent: its log, model, tools and prompt.
pub struct Agent {
    pub name: String,
    pub log: Log,
    /// The model and limits it starts with; a reload changes them through
    /// its handle.
    pub settings: AgentSettings,
    pub tools: Tools,
    /// The agent's summary tree and view; a turn waits for its view to settle.
    pub memory: Memory,
    /// What the agent is doing, shown to every client.
    pub activity: ActivityBoard,
    /// `agents/NAME/prompt.md`, read at every turn so an edit applies at the next.
    pub prompt_file: PathBuf,
    /// Named in the error when no model is configured.
    pub config_file: PathBuf,
    pub events: broadcast::Sender<Event>,
    /// Lines per view message in requests.
    pub block_lines: usize,
    /// Messages longer than this go into requests as head and tail.
    pub huge_message: usize,
    /// Its place among agents: a parent of subagents, a child, or alone.
    pub family: Family,
    /// Stores what each request cost; refuses requests once a budget is spent.
    pub meter: Meter,
    /// Voice notes waiting for their transcript: a turn that took one waits.
    pub transcripts: crate::transcription::Pending,
    /// When `HEARTBEAT.md` is reviewed (`[heartbeat]`); none: never.
    pub heartbeat: Option<crate::heartbeat::Heartbeat>,
}

/// An agent's place among agents.
#[derive(Clone)]
pub enum Family {
    Alone,
    /// The top agent, with its children.
    Parent(Arc<Subagents>),
    /// A subagent, which reports its runs to its parent.
    Child(Arc<Subagents>),
}

/// How a turn ended.
enum Ending {
    Replied(String),
    Failed(String),
    Interrupted,
    OutOfRounds(u32),
}

/// The loop's own state, built by [`Agent::start`].
pub struct AgentLoop {
    agent: Agent,
    /// Everything the loop wakes for but the chain's own progress.
    inbox: Inbox,
    /// The model and limits now; read before each request.
    settings: watch::Receiver<AgentSettings>,
}

impl Agent {
    /// Returns the loop to run and the handle to reach it. The inputs were
    /// made before the agent (`inputs::channel`), so that a parent and its
    /// children could be given each other's.
    pub fn start(self, (inputs, inbox): (AgentInputs, Inbox)) -> (AgentLoop, AgentHandle) {
        let (settings_tx, settings) = watch::channel(self.settings.clone());
        let handle = AgentHandle {
            name: self.name.clone(),
            inputs,
            activity: self.activity.clone(),
            memory: self.memory.clone(),
            settings: Arc::new(settings_tx),
        };
        let agent_loop = AgentLoop {
            agent: self,
            inbox,
            settings,
        };
        (agent_loop, handle)
    }

    fn emit(&self, kind: EventKind, text: Option<String>, answers: Vec<u64>) {
        let mut event = Event::signal(kind, &self.name, text);
        event.answers = answers;
        let _ = self.events.send(event);
    }

    fn note(text: impl Into<String>) -> NewMessage {
        NewMessage::daemon_note(text)
    }

    /// The messages `turn` took that still wait for its answer, oldest
    /// first.
    async fn taken(&self, turn: &TurnRecord) -> Result<Vec<u64>, LogError> {
        Ok(self
            .log
            .waiting(&self.name, turn.taken_after)
            .await?
            .into_iter()
            .filter(|id| *id <= turn.taken_through)
            .collect())
    }
}

impl AgentLoop {
    /// Runs until `shutdown` turns true. A turn cut off by the shutdown stays
    /// unfinished in the log and is continued at the next start. Returns an
    /// error only when the log cannot be written: the agent then stops rather
    /// than lose messages.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) -> Result<(), LogError> {
        let result = self.serve(&mut shutdown).await;
        if let Err(err) = &result {
            tracing::error!(agent = %self.agent.name, "the agent stopped: {err}");
            // A turn cut off by the failure is not running any more.
            self.inbox.set_busy(false);
            self.agent.activity.idle();
            self.agent.emit(
                EventKind::Error,
                Some(format!(
                    "the log cannot be written ({err}); the agent stopped: messages that are still acknowledged are kept and answered after hearthd restarts with room to write"
                )),
                Vec::new(),
            );
        }
        result
    }

    async fn serve(&mut self, shutdown: &mut watch::Receiver<bool>) -> Result<(), LogError> {
        let name = self.agent.name.clone();
        self.agent.emit(EventKind::Ready, None, Vec::new());
        let mut taken_through: Option<u64> = None;
        if let Some((turn, finished)) = self.agent.log.last_turn(&name).await? {
            taken_through = Some(turn.taken_through);
            if !finished {
                self.recover(turn).await?;
                if self.drive(turn, shutdown).await? {
                    return Ok(());
                }
                // The continued turn may have taken more while it ran: the
                // next turn starts after what it took, or it would take (and
                // answer) those messages again.
                if let Some((turn, _)) = self.agent.log.last_turn(&name).await? {
                    taken_through = Some(turn.taken_through);
                }
            }
        }
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            // External events enter the log between chains.
            self.agent.log.fire_due(&name, chrono::Utc::now()).await?;
            self.agent.log.deliver_notify(&name).await?;
            if let Some(turn) = self.agent.log.begin_turn(&name, taken_through).await? {
                if self.drive(turn, shutdown).await? {
                    return Ok(());
                }
                if let Some(heartbeat) = &mut self.agent.heartbeat {
                    heartbeat.turn_ended(tokio::time::Instant::now());
                }
                // The turn may have taken more while it ran.
                if let Some((turn, _)) = self.agent.log.last_turn(&name).await? {
                    taken_through = Some(turn.taken_through);
                }
                continue;
            }
            // Idle, nothing waiting: a heartbeat due now is a message to take.
            if self.beat().await? {
                continue;
            }
            let next_due = earliest(
                self.agent.log.next_due(&name).await?,
                self.agent.heartbeat.as_ref().and_then(|beat| beat.next()),
            );
            match self.inbox.next(shutdown, next_due).await {
                Input::Stop => return Ok(()),
                // Between turns there is nothing to interrupt; anything
                // else may have made a turn due: look again.
                Input::Wake | Input::Due | Input::Interrupt => {}
            }
        }
    }

    /// Logs the heartbeat's message when a beat is due (and the checklist
    /// has something in it); returns whether it did.
    async fn beat(&mut self) -> Result<bool, LogError> {
        let now = tokio::time::Instant::now();
        let Some(heartbeat) = self.agent.heartbeat.as_mut().filter(|beat| beat.due(now)) else {
            return Ok(false);
        };
        heartbeat.fired(now);
        let agent_dir = self.agent.prompt_file.parent().unwrap_or(Path::new("."));
        let Some(message) = crate::heartbeat::message(agent_dir) else {
            return Ok(false);
        };
        self.agent.log.append(&self.agent.name, message).await?;
        Ok(true)
    }

    /// After a crash: logs the tool calls it cut off as interrupted, so the
    /// continued chain shows them and never runs them again.
    async fn recover(&self, turn: TurnRecord) -> Result<(), LogError> {
        let name = &self.agent.name;
        let calls = self.agent.log.running_calls(name).await?;
        for call in calls {
            let output =
                "interrupted: the daemon stopped while this call ran; its outcome is unknown";
            let message = tool_message(name, &call, output, MessageStatus::Interrupted);
            self.agent
                .log
                .finish_call(name, &call.call_id, message)
                .await?;
        }
        tracing::info!(agent = %name, turn = turn.seq, "continuing a turn cut off by a stop");
        Ok(())
    }

    /// Runs one turn to its end. Returns true when a shutdown cut it off.
    async fn drive(
        &mut self,
        mut turn: TurnRecord,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<bool, LogError> {
        self.inbox.set_busy(true);
        self.agent.emit(EventKind::Busy, None, Vec::new());
        // An interrupt sent before this turn began is not for it.
        self.inbox.forget();
        let ending = {
            let chain = self.agent.chain(&mut turn, &self.settings);
            let mut chain = std::pin::pin!(chain);
            loop {
                tokio::select! {
                    ending = &mut chain => break Some(ending?),
                    input = self.inbox.next(shutdown, None) => match input {
                        Input::Interrupt => break Some(Ending::Interrupted),
                        Input::Stop => break None,
                        // What arrives mid-turn joins the chain's next
                        // request, or the turn after it.
                        Input::Wake | Input::Due => {}
                    },
                }
            }
        };
        // A turn that did not reply leaves its long messages to the
        // ordinary calls (one that replied handed its chain over).
        if !matches!(ending, Some(Ending::Replied(_))) {
            self.agent.memory.turn_ended(None);
        }
        // Whatever ran (a tool, a request) was dropped with the chain.
        self.agent.activity.idle();
        let Some(ending) = ending else {
            self.inbox.set_busy(false);
            return Ok(true);
        };
        self.end_turn(turn, ending).await?;
        Ok(false)
    }

    /// Ends a turn its chain did not cut off: logs how a turn that did not
    /// reply ended (a note, and its calls still running as interrupted),
    /// tells the clients, reports the turn to a subagent's parent, and
    /// shows the agent idle.
    async fn end_turn(&self, mut turn: TurnRecord, ending: Ending) -> Result<(), LogError> {
        let name = self.agent.name.clone();
        let log = &self.agent.log;
        // The record may have taken more while the chain ran.
        if let Some((latest, _)) = log.last_turn(&name).await? {
            turn = latest;
        }
        let taken = self.agent.taken(&turn).await?;
        let outcome = match &ending {
            Ending::Replied(text) => TurnOutcome::Replied(text.clone()),
            Ending::Failed(why) => TurnOutcome::Failed(why.clone()),
            Ending::Interrupted => TurnOutcome::Interrupted,
            Ending::OutOfRounds(rounds) => {
                TurnOutcome::Failed(format!("stopped after {rounds} model requests"))
            }
        };
        match ending {
            Ending::Replied(_) => {}
            Ending::Failed(why) => {
                tracing::warn!(agent = %name, "turn failed: {why}");
                log.finish_turn(
                    &name,
                    turn,
                    vec![Agent::note(format!("turn failed: {why}"))
                        .with_status(MessageStatus::Failed)],
                )
                .await?;
                self.agent.emit(EventKind::Error, Some(why), taken.clone());
            }
            Ending::Interrupted => {
                for call in log.running_calls(&name).await? {
                    let message = tool_message(
                        &name,
                        &call,
                        "interrupted by the user before it finished",
                        MessageStatus::Interrupted,
                    );
                    log.finish_call(&name, &call.call_id, message).await?;
                }
                let note =
                    Agent::note("interrupted by the user").with_status(MessageStatus::Interrupted);
                log.finish_turn(&name, turn, vec![note]).await?;
            }
            Ending::OutOfRounds(rounds) => {
                let why =
                    format!("the turn stopped after {rounds} model requests (limits.max_rounds)");
                let note = Agent::note(why.clone()).with_status(MessageStatus::Failed);
                log.finish_turn(&name, turn, vec![note]).await?;
                self.agent.emit(EventKind::Error, Some(why), taken.clone());
            }
        }
        if let Family::Child(family) = &self.agent.family {
            // The report keeps the turn's taint (a page the child read).
            let tainted = self.agent.tools.tainted();
            family
                .turn_ended(&name, &taken, outcome, tainted.as_deref())
                .await?;
        }
        self.inbox.set_busy(false);
        self.agent.emit(EventKind::Idle, None, Vec::new());
        Ok(())
    }
}

/// A `tool` message: the call and its result, readable as one line.
fn tool_message(
    agent: &str,
    call: &RunningCall,
    output: &str,
    status: MessageStatus,
) -> NewMessage {
    NewMessage::new(
        Kind::Tool,
        agent,
        format!("{}({}) → {}", call.name, call.arguments, output),
    )
    .with_status(status)
    .with_data(MessageData::call(
        &ToolCall {
            id: call.call_id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        },
        call.step,
        output,
    ))
}

/// A call's arguments as the log keeps them: whole when they fit the clip
/// of tool outputs; past it (a 5 MB command), an object holding their head
/// and tail, still JSON, so the request rebuilt from the log stays valid
/// and the model sees its call was cut.
fn logged_arguments(arguments: &str, limit: usize) -> String {
    if arguments.chars().count() <= limit {
        return arguments.to_string();
    }
    serde_json::json!({ "clipped": clip(arguments, limit) }).to_string()
}

/// Keeps the head and tail of a long tool output, at most `limit` characters.
pub fn clip(text: &str, limit: usize) -> String {
    let count = text.chars().count();
    if count <= limit {
        return text.to_string();
    }
    let half = limit / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(count - half).collect();
    format!(
        "{head}\n… [{} characters clipped] …\n{tail}",
        count - 2 * half
    )
}

/// The sooner of a schedule's time and a heartbeat's moment.
fn earliest(
    schedule: Option<chrono::DateTime<chrono::Utc>>,
    beat: Option<tokio::time::Instant>,
) -> Option<chrono::DateTime<chrono::Utc>> {
    let beat = beat.map(|at| {
        let wait = at.saturating_duration_since(tokio::time::Instant::now());
        chrono::Utc::now() + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::MAX)
    });
    match (schedule, beat) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_head_and_tail() {
        let text = "a".repeat(10) + &"b".repeat(10);
        let clipped = clip(&text, 10);
        assert!(clipped.starts_with("aaaaa\n"));
        assert!(clipped.ends_with("\nbbbbb"));
        assert!(clipped.contains("[10 characters clipped]"));
        assert_eq!(clip("short", 10), "short");
    }

    /// Issue 18: a call's arguments are clipped like its output, and stay JSON.
    #[test]
    fn long_arguments_are_logged_clipped_and_still_json() {
        assert_eq!(logged_arguments(r#"{"a":1}"#, 100), r#"{"a":1}"#);
        let long = format!(r#"{{"command":"{}"}}"#, "x".repeat(5000));
        let logged = logged_arguments(&long, 100);
        assert!(logged.len() < 300, "{logged}");
        let value: serde_json::Value = serde_json::from_str(&logged).unwrap();
        assert!(value["clipped"]
            .as_str()
            .unwrap()
            .contains("characters clipped"));
    }
}

#[cfg(test)]
mod recovery_tests {
    use super::*;
    use crate::config::Limits;

    #[tokio::test]
    async fn a_tool_call_cut_off_by_a_crash_is_logged_as_interrupted_not_run_again() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(64);
        let log = Log::open(&dir.path().join("hearth.db"), events.clone()).unwrap();
        log.append("a", NewMessage::new(Kind::User, "terminal", "run it"))
            .await
            .unwrap();
        // The state a crash leaves: a turn that started a call and never finished it.
        let turn = log.begin_turn("a", None).await.unwrap().unwrap();
        let call = RunningCall {
            call_id: "call_7".into(),
            step: 0,
            name: "date".into(),
            arguments: "{}".into(),
        };
        log.start_calls("a", turn, None, vec![call]).await.unwrap();

        let meter = Meter::new(
            log.clone(),
            "a",
            crate::usage::Prices::default(),
            crate::usage::Budget::default(),
            dir.path().join("config.toml"),
        );
        let activity = ActivityBoard::new("a", events.clone());
        let memory = crate::memory::Memory::start(
            log.clone(),
            crate::memory::MemoryConfig {
                agent: "a".into(),
                layout: crate::layout::Layout::find("default").unwrap(),
                model: None,
                prompt_file: dir.path().join("prompt.md"),
                tools: std::sync::Arc::new(Vec::new),
                events: events.clone(),
                meter: meter.clone(),
                activity: activity.clone(),
            },
        )
        .await
        .unwrap();
        let agent = Agent {
            name: "a".into(),
            log: log.clone(),
            settings: AgentSettings {
                model: None,
                limits: Limits::default(),
            },
            tools: Tools::new("a", log.clone()),
            memory,
            activity: activity.clone(),
            prompt_file: dir.path().join("prompt.md"),
            config_file: dir.path().join("config.toml"),
            events,
            block_lines: 4,
            huge_message: 8_000,
            family: Family::Alone,
            meter,
            transcripts: Default::default(),
            heartbeat: None,
        };
        let mut seen = agent.events.subscribe();
        let (agent_loop, _handle) = agent.start(crate::inputs::channel());
        let (stop, stopped) = watch::channel(false);
        let running = tokio::spawn(agent_loop.run(stopped));
        // The continued turn fails (no model) and finishes; then stop the loop.
        while seen.recv().await.unwrap().kind != EventKind::Idle {}
        stop.send(true).unwrap();
        running.await.unwrap().unwrap();

        let entries = log.range("a", 0, u64::MAX, 100).await.unwrap();
        let tool = entries
            .iter()
            .find(|entry| entry.message.kind == Kind::Tool)
            .expect("the cut-off call is logged");
        assert_eq!(tool.message.status.as_deref(), Some("interrupted"));
        assert!(tool.message.text.contains("outcome is unknown"));
        assert_eq!(
            entries
                .iter()
                .filter(|e| e.message.kind == Kind::Tool)
                .count(),
            1
        );
        assert!(log.running_calls("a").await.unwrap().is_empty());
    }
}
