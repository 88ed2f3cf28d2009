//! The chain of a turn: model requests and tool calls until a reply.
//!
//! `Agent::chain` runs its steps in order. `Agent::begin_chain` settles
//! the view and reads what every request of the chain carries unchanged
//! (the prompt, the tools, the state), so each request extends the one
//! before, byte for byte. Then, each round: `Agent::take_waiting` takes
//! what arrived, `Agent::send_request` makes one model request, and either
//! `Agent::reply` ends the turn with the model's answer or
//! `Agent::run_calls` runs the calls it asked for, whose results the next
//! request carries.

use super::{clip, logged_arguments, tool_message, Agent, AgentSettings, Ending, Family};
use crate::config::Limits;
use crate::log::{LogError, MessageData, NewMessage, RunningCall, TurnRecord};
use crate::memory::FactsLog;
use crate::memory::TurnChain;
use crate::model::{CallNews, Carry, Model, Request, Response, ToolSpec};
use crate::request::{self, LeftOut, TurnContext};
use crate::tools;
use crate::usage::Purpose;
use futures_util::StreamExt;
use hearth_protocol::{Event, EventKind, Kind};
use std::collections::{BTreeMap, BTreeSet};
use tokio::sync::watch;

/// Why a chain stops short of a reply.
enum Halt {
    /// The turn failed, for the reason given: the loop logs it as a note
    /// and sends an `error` event.
    Failed(String),
    /// The log cannot be written: the agent stops.
    Log(LogError),
}

impl From<LogError> for Halt {
    fn from(err: LogError) -> Self {
        Halt::Log(err)
    }
}

/// What the chain reads once, at the turn's start, and every request of
/// the chain carries unchanged.
struct ChainStart {
    /// The first message of the requests' log: the first message taken
    /// before the turn's start, or the start.
    first: u64,
    /// The view's lines, settled for the whole chain.
    view: Vec<String>,
    /// The fixed preamble and the agent's prompt file.
    instructions: String,
    specs: Vec<ToolSpec>,
    /// The state message's text: the local time, the agent, the pinned facts.
    state: String,
}

/// What the chain keeps from one request to the next.
#[derive(Default)]
struct Progress {
    /// Model requests made so far (`limits.max_rounds` ends the turn).
    rounds: u32,
    /// Reasoning to hand back to the model within this chain only.
    carries: BTreeMap<u32, Carry>,
    /// Images the chain's requests went without (message, image), each
    /// told once.
    told_left_out: BTreeSet<(u64, String)>,
}

/// One request's answer, with what its reply or calls are logged against.
struct Answer {
    response: Response,
    /// The request sent: a reply hands it to the memory, whose call for the
    /// turn's long messages extends it.
    request: Request,
    /// The step the answer's echo and calls are logged at.
    step: u32,
    /// The messages the turn took, which a reply answers.
    taken: Vec<u64>,
    /// The chain's messages so far (echoes, calls, results).
    chained: Vec<u64>,
}

impl Agent {
    /// The chain of a turn: requests and tool calls until a reply. The
    /// model and limits are read from `settings` before each request.
    pub(super) async fn chain(
        &self,
        turn: &mut TurnRecord,
        settings: &watch::Receiver<AgentSettings>,
    ) -> Result<Ending, LogError> {
        match self.run_chain(turn, settings).await {
            Ok(ending) => Ok(ending),
            Err(Halt::Failed(why)) => Ok(Ending::Failed(why)),
            Err(Halt::Log(err)) => Err(err),
        }
    }

    /// `Agent::chain`, with a failed turn as an error so that any step
    /// can end it.
    async fn run_chain(
        &self,
        turn: &mut TurnRecord,
        settings: &watch::Receiver<AgentSettings>,
    ) -> Result<Ending, Halt> {
        let start = self.begin_chain(turn).await?;
        let mut progress = Progress::default();
        loop {
            self.take_waiting(turn).await?;
            let AgentSettings { model, limits } = settings.borrow().clone();
            let Some(model) = &model else {
                return Err(Halt::Failed(format!(
                    "no model is configured: add a [model] section to {} \
                     (provider = \"openai\", \"anthropic\" or \"openai-chat\", model = \"…\", and base_url for a \
                     local server such as Ollama), then run `hearth reload`",
                    self.config_file.display()
                )));
            };
            let answer = self
                .send_request(model, *turn, &start, &mut progress)
                .await?;
            progress.rounds += 1;
            if answer.response.tool_calls.is_empty() {
                return Ok(Ending::Replied(self.reply(*turn, answer).await?));
            }
            if !answer.response.carry.is_empty() {
                progress
                    .carries
                    .insert(answer.step, answer.response.carry.clone());
            }
            self.run_calls(*turn, &answer, &limits).await?;
            if progress.rounds >= limits.max_rounds {
                return Ok(Ending::OutOfRounds(progress.rounds));
            }
        }
    }

    /// Begins the chain: settles the view, which stays the same for the
    /// whole chain, and reads the prompt, the tools and the state once, so
    /// every request extends the one before. Fails when the budget is spent
    /// or the memory is not available.
    async fn begin_chain(&self, turn: &TurnRecord) -> Result<ChainStart, Halt> {
        let name = &self.name;
        let taken_before: Vec<u64> = self
            .taken(turn)
            .await?
            .into_iter()
            .filter(|id| *id < turn.start_id)
            .collect();
        let first = taken_before.first().copied().unwrap_or(turn.start_id);
        // A spent budget refuses the turn's requests, and the summaries it
        // would wait for: it says so now rather than wait.
        if let Some(spent) = self.meter.refusal().await? {
            return Err(Halt::Failed(spent));
        }
        let pending = self.memory.gauge().messages;
        if pending > 0 {
            self.activity
                .summaries(u32::try_from(pending).unwrap_or(u32::MAX));
        }
        let view = self
            .memory
            .settle(turn.start_id, taken_before)
            .await
            .map_err(|err| Halt::Failed(format!("the memory is not available: {err}")))?;
        self.tools.begin_turn();
        let instructions = request::instructions(&self.prompt_file);
        for change in self.tools.changes() {
            let why = format!(
                "{change}. The tools in the request changed, so the model's cached prefix starts over from this turn."
            );
            self.log.append(name, Agent::note(why)).await?;
        }
        let specs = self.tools.specs();
        // An MCP server's names and descriptions ride every request: its
        // words, unless the owner vouched for them (`trust_descriptions`).
        for server in self.tools.unvouched_mcp_servers() {
            self.tools.taint(format!(
                "after the tool descriptions of the MCP server `{server}`, which every request carries"
            ));
        }
        let state = self.turn_state().await?;
        Ok(ChainStart {
            first,
            view,
            instructions,
            specs,
            state,
        })
    }

    /// The state message's text as the turn starts: the local time, the
    /// agent and its place among agents, and the pinned facts. A fact
    /// changed during the chain shows from the next turn; a fact pinned in a
    /// tainted turn taints every turn that shows it.
    async fn turn_state(&self) -> Result<String, LogError> {
        let name = &self.name;
        let mut state = format!(
            "Local time: {}\nYou are the agent `{name}`.",
            tools::date_now()
        );
        match &self.family {
            Family::Parent(family) => {
                state.push('\n');
                state.push_str(&family.describe().await?);
            }
            Family::Child(family) => state.push_str(&format!(
                "\nYou are a subagent of `{}`: your answer to a task is your report to it.",
                family.parent()
            )),
            Family::Alone => {}
        }
        let pinned = self.log.facts(name).await?;
        for why in pinned.untrusted() {
            self.tools.taint(format!("after {why}"));
        }
        let facts = pinned.render();
        if !facts.is_empty() {
            state.push('\n');
            state.push_str(&facts);
        }
        Ok(state)
    }

    /// Takes what waits into the turn. A voice note taken is heard before
    /// it is answered: its transcript, logged as a message of its own, is
    /// taken too.
    async fn take_waiting(&self, turn: &mut TurnRecord) -> Result<(), LogError> {
        let name = &self.name;
        *turn = self.log.take_more(name, *turn).await?;
        let taken_now = self.taken(turn).await?;
        if self.transcripts.settle(name, &taken_now).await {
            *turn = self.log.take_more(name, *turn).await?;
        }
        Ok(())
    }

    /// One model request, built from the log as it is now. Words from
    /// outside the owner that the turn took taint it. Fails when the budget
    /// is spent or the model fails.
    async fn send_request(
        &self,
        model: &Model,
        turn: TurnRecord,
        start: &ChainStart,
        progress: &mut Progress,
    ) -> Result<Answer, Halt> {
        let name = &self.name;
        if let Some(spent) = self.meter.refusal().await? {
            return Err(Halt::Failed(spent));
        }
        let entries = self
            .log
            .range(name, start.first, u64::MAX, u32::MAX)
            .await?;
        let context = TurnContext {
            instructions: &start.instructions,
            tools: &start.specs,
            view: &start.view,
            log: &entries,
            turn,
            state: &start.state,
            block_lines: self.block_lines,
            huge_message: self.huge_message,
            cache_key: Some(request::cache_key(name)),
            carries: &progress.carries,
            images: self.tools.image_source(),
        };
        let built = request::build(&context);
        self.tell_left_out(&built.left_out, &mut progress.told_left_out)
            .await?;
        let request = built.request;
        let step = context.next_step();
        let taken = context.taken_ids();
        let chained = context.chained_ids();
        for entry in entries.iter().filter(|e| taken.contains(&e.message.id)) {
            if let Some(origin) = crate::provenance::untrusted_origin(&entry.data) {
                self.tools.taint(format!("after {origin}"));
            }
        }
        let response = self.complete(model, &request).await?;
        Ok(Answer {
            response,
            request,
            step,
            taken,
            chained,
        })
    }

    /// Logs a note for each image a request went without, once per chain.
    async fn tell_left_out(
        &self,
        left_out: &[LeftOut],
        told: &mut BTreeSet<(u64, String)>,
    ) -> Result<(), LogError> {
        for left in left_out {
            if told.insert((left.message, left.image.sha256.clone())) {
                let why = format!(
                    "message {}: image {} went to the model without its pixels: {}",
                    left.message,
                    left.image.label(),
                    left.why
                );
                tracing::warn!(agent = %self.name, "{why}");
                self.log.append(&self.name, Agent::note(why)).await?;
            }
        }
        Ok(())
    }

    /// Sends the request to the model. Its text goes to clients as deltas;
    /// a switch to a fallback model is logged as a note whatever the
    /// outcome; retries show as activity while they wait; every try the
    /// provider billed is stored, answered or not.
    async fn complete(&self, model: &Model, request: &Request) -> Result<Response, Halt> {
        let name = &self.name;
        let events = self.events.clone();
        let agent = name.clone();
        let send_delta = move |text: String| {
            let _ = events.send(Event::signal(EventKind::Delta, &agent, Some(text)));
        };
        // A key the model writes is masked across deltas, not only in
        // each; what is held back is sent when the call ends or is dropped.
        let mut masked = crate::redact::MaskedSender::new(send_delta);
        let mut on_text = |text: &str| masked.push(text);
        let mut notes = Vec::new();
        let activity = &self.activity;
        let mut on_news = |news: CallNews| match news {
            CallNews::Switched(note) => notes.push(note),
            CallNews::Retrying {
                attempt,
                attempts,
                reason,
                wait,
            } => activity.retrying(attempt, attempts, &reason, wait),
        };
        let mut bills = Vec::new();
        self.activity.thinking();
        let result = model
            .complete(request, &mut on_text, &mut on_news, &mut bills)
            .await;
        drop(masked);
        for note in notes {
            self.log.append(name, Agent::note(note)).await?;
        }
        self.meter.record(Purpose::Turn, &bills).await?;
        result.map_err(|err| Halt::Failed(err.to_string()))
    }

    /// Ends the turn with the model's answer, which answers the messages the
    /// turn took, and hands the chain to the memory: the lines of the turn's
    /// long messages are asked for in one call that extends this request,
    /// whose prefix is cached. Returns the reply's text.
    async fn reply(&self, turn: TurnRecord, answer: Answer) -> Result<String, LogError> {
        let Answer {
            response,
            request,
            taken,
            chained,
            ..
        } = answer;
        let mut reply = NewMessage::new(Kind::Reply, &self.name, response.text.clone())
            .with_data(MessageData::answering(taken));
        // A cut or refused answer says so in its status.
        if let Some(status) = response.ending.status() {
            reply = reply.with_status(status);
        } else if crate::heartbeat::is_quiet(&response.text) {
            reply = reply.with_status(hearth_protocol::MessageStatus::Quiet);
        }
        let logged = self.log.finish_turn(&self.name, turn, vec![reply]).await?;
        let mut messages = chained;
        messages.extend(logged.iter().map(|message| message.id));
        self.memory.turn_ended(Some(TurnChain {
            request,
            reply: response.text.clone(),
            messages,
        }));
        Ok(response.text)
    }

    /// Logs the answer's echo and the calls it asks for, then runs them
    /// concurrently (up to `[tools] concurrency`); each result is logged as
    /// soon as it and every call before it are done, so the log keeps the
    /// calls' order.
    async fn run_calls(
        &self,
        turn: TurnRecord,
        answer: &Answer,
        limits: &Limits,
    ) -> Result<(), LogError> {
        let name = &self.name;
        let Answer { response, step, .. } = answer;
        let echo = (!response.text.trim().is_empty()).then(|| {
            NewMessage::new(Kind::Echo, name, response.text.clone())
                .with_data(MessageData::at_step(*step))
        });
        let running: Vec<RunningCall> = response
            .tool_calls
            .iter()
            .map(|call| RunningCall {
                call_id: call.id.clone(),
                step: *step,
                name: call.name.clone(),
                arguments: logged_arguments(&call.arguments, limits.tool_output_chars),
            })
            .collect();
        self.log
            .start_calls(name, turn, echo, running.clone())
            .await?;
        let mut outcomes = std::pin::pin!(self.tools.call_in_order(&response.tool_calls));
        let mut records = running.iter();
        while let Some(outcome) = outcomes.next().await {
            let Some(record) = records.next() else { break };
            let output = clip(&outcome.output, limits.tool_output_chars);
            let message = crate::images::name_in_tool_message(
                tool_message(name, record, &output, outcome.status)
                    .with_outbox(outcome.outbox.as_ref()),
                &outcome.images,
                &outcome.recalled,
            );
            let message = outcome.provenance.mark(message);
            self.log.finish_call(name, &record.call_id, message).await?;
        }
        Ok(())
    }
}
