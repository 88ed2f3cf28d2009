//! Whether an agent's layout fits the context windows of its models: at
//! start, and again at each reload that changes the model or the limits
//! (with what the agent's start kept: [`Fit`]).

use super::error::StartError;
use crate::layout::Layout;
use crate::model::window::{check, Largest};
use crate::model::{Model, ToolSpec};
use std::path::{Path, PathBuf};

/// What an agent sends besides its memory, kept from its start: a reload
/// checks a new model (or new limits) against it as the start did.
#[derive(Clone)]
pub struct Fit {
    agent: String,
    layout_name: String,
    layout: Layout,
    prompt_file: PathBuf,
    tools: Vec<ToolSpec>,
}

impl Fit {
    pub fn new(sent: &Sent<'_>) -> Fit {
        Fit {
            agent: sent.agent.to_string(),
            layout_name: sent.layout_name.to_string(),
            layout: sent.layout.clone(),
            prompt_file: sent.prompt_file.to_path_buf(),
            tools: sent.tools.to_vec(),
        }
    }

    /// `check_fits` with these models and `own_bytes` (`[limits]
    /// tool_output_chars`).
    pub fn check(
        &self,
        model: Option<&Model>,
        compactor_model: Option<&Model>,
        own_bytes: usize,
    ) -> Result<(), StartError> {
        let sent = Sent {
            agent: &self.agent,
            layout_name: &self.layout_name,
            layout: &self.layout,
            prompt_file: &self.prompt_file,
            tools: &self.tools,
            own_bytes,
        };
        check_fits(&sent, model, compactor_model)
    }
}

/// What is sent to an agent's models, for the check.
pub struct Sent<'a> {
    pub agent: &'a str,
    /// The layout's name in the config, for the error.
    pub layout_name: &'a str,
    pub layout: &'a Layout,
    pub prompt_file: &'a Path,
    pub tools: &'a [ToolSpec],
    /// The most a tool's output may add (`[limits] tool_output_chars`).
    pub own_bytes: usize,
}

/// The layout an agent runs with: its own, or, when it shrinks to a
/// window ([`Layout::shrinks_to_window`]) and a model's window is smaller
/// than its largest request needs, its views shrunk to the smallest window
/// of the models that get them (logged as a note). [`check_fits`] then
/// refuses what still does not fit.
pub fn fitted(sent: &Sent<'_>, model: Option<&Model>, compactor_model: Option<&Model>) -> Layout {
    let layout = sent.layout;
    if !layout.shrinks_to_window() {
        return layout.clone();
    }
    let tools_bytes = tools_bytes(sent.tools);
    let turn_prompt = crate::request::instructions(sent.prompt_file).len();
    // Sized with the least view's huge limit, the smallest a shrunk layout
    // can have, so the shrunk one's own bytes are never more than counted.
    let own_bytes = sent.own_bytes.min(layout.huge_limit());
    let room = |fixed_bytes: usize, model: Option<&Model>| {
        let largest = Largest {
            purpose: "turn",
            view_bytes: 0,
            fixed_bytes,
            own_bytes,
        };
        model
            .into_iter()
            .flat_map(Model::configs)
            .filter_map(|config| largest.view_room(config))
            .min()
            .unwrap_or(usize::MAX)
    };
    let turn_room = room(turn_prompt + tools_bytes, model);
    let compaction_fixed = compaction_fixed(
        layout,
        turn_prompt,
        tools_bytes,
        compaction_tools(compactor_model, tools_bytes),
    );
    let compaction_room = room(compaction_fixed, compactor_model);
    let shrunk = layout.shrunk_to(turn_room, compaction_room);
    if shrunk != *layout {
        tracing::info!(
            "agent `{}`: layout `{}` shrunk to the model's window: a view of {} bytes for turns \
             (it allows {}), {} for summaries",
            sent.agent,
            sent.layout_name,
            shrunk.high_budget,
            layout.high_budget,
            shrunk.compaction_high_budget
        );
    }
    shrunk
}

/// The tools' bytes a compaction with a prompt of its own sends: none on
/// a local server (`memory/keeper/calls.rs`).
fn compaction_tools(compactor_model: Option<&Model>, tools_bytes: usize) -> usize {
    match compactor_model {
        Some(model) if model.is_local_server() => 0,
        _ => tools_bytes,
    }
}

/// A compaction's instructions and tools: the turn's, or the layout's
/// compaction prompt and `prompt_tools`.
fn compaction_fixed(
    layout: &Layout,
    turn_prompt: usize,
    tools_bytes: usize,
    prompt_tools: usize,
) -> usize {
    match &layout.compaction_prompt {
        Some(prompt) => prompt.len() + prompt_tools,
        None => turn_prompt + tools_bytes,
    }
}

fn tools_bytes(tools: &[ToolSpec]) -> usize {
    tools
        .iter()
        .map(|tool| tool.name.len() + tool.description.len() + tool.parameters.to_string().len())
        .sum()
}

/// Refuses a layout whose largest turn or compaction request cannot fit
/// the window of a model that would be sent it (when the window is
/// known), so a context-length error cannot recur at every turn.
pub fn check_fits(
    sent: &Sent<'_>,
    model: Option<&Model>,
    compactor_model: Option<&Model>,
) -> Result<(), StartError> {
    let tools_bytes = tools_bytes(sent.tools);
    let turn_prompt = crate::request::instructions(sent.prompt_file).len();
    // A tool's output past the layout's huge limit goes in as its head and
    // tail (`request.rs`), so no more of it is sent.
    let own_bytes = sent.own_bytes.min(sent.layout.huge_limit());
    let turn = |layout: &Layout| Largest {
        purpose: "turn",
        view_bytes: layout.high_budget,
        fixed_bytes: turn_prompt + tools_bytes,
        own_bytes,
    };
    let prompt_tools = compaction_tools(compactor_model, tools_bytes);
    let compaction = |layout: &Layout| Largest {
        purpose: "compaction",
        view_bytes: layout.compaction_high_budget,
        fixed_bytes: compaction_fixed(layout, turn_prompt, tools_bytes, prompt_tools),
        own_bytes,
    };
    let small = Layout::find("small").ok();
    let small = small.as_ref();
    if let Some(model) = model {
        let smaller = small.map(|small| ("small", turn(small)));
        check(
            sent.agent,
            sent.layout_name,
            turn(sent.layout),
            model.configs(),
            smaller,
        )?;
    }
    if let Some(model) = compactor_model {
        let smaller = small.map(|small| ("small", compaction(small)));
        let largest = compaction(sent.layout);
        check(
            sent.agent,
            sent.layout_name,
            largest,
            model.configs(),
            smaller,
        )?;
    }
    Ok(())
}
