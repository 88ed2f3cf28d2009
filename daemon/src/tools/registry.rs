//! [`Tools`]: the tools of one agent, how a call is checked and run.
//!
//! Every call's arguments are checked strictly (`args.rs`) before the tool
//! runs; a bad call is an error outcome the model can correct, never a crash
//! and never a half-run tool. Invalid calls in a row are counted: from the
//! [`MAX_INVALID_IN_A_ROW`]th on, the error also tells the model to stop
//! calling tools and answer. A valid call, or [`Tools::begin_turn`], resets
//! the count.
//!
//! A call that `[approvals]` names waits for a person's yes or no before it
//! runs (see `crate::approvals`); a denied call is an error outcome and never
//! runs. Its wait holds no place among the calls that run at once.

use super::confine::Confinement;
use super::folder::Folder;
use super::mcp_tool::McpTool;
use super::process::Processes;
use super::shell::Shell;
use super::taint::Taint;
use super::tool::{Call, Tool, ToolSet};
use super::web::Fetcher;
use super::{
    args, attachment, date, exposure, facts, files, schedule, search, show_image, skill, subagents,
    whatsapp, zoom,
};
use crate::activity::ActivityBoard;
use crate::approvals::{glob_matches, Approvals, Verdict};
use crate::config::tools::ToolsConfig;
use crate::images::ImageStore;
use crate::log::Log;
use crate::media::MediaStore;
use crate::model::{ToolCall, ToolSpec};
use crate::subagents::Subagents;
use crate::tools::mcp::McpTools;
use futures_util::stream::{self, Stream, StreamExt};
use hearth_protocol::ImageRef;
use hearth_protocol::MessageStatus;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Invalid calls in a row after which the model is told to stop calling tools.
pub const MAX_INVALID_IN_A_ROW: usize = 5;

/// What a tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub output: String,
    /// `ok` or `error`.
    pub status: MessageStatus,
    /// Images the call shows to people (`show_image`): its tool message
    /// carries them, and clients fetch them.
    pub images: Vec<ImageRef>,
    /// Images the call brings back to the model (`zoom` of a message with
    /// images): sent after the step's results, never shown again.
    pub recalled: Vec<ImageRef>,
    /// A message for a bridge to send (`whatsapp_send`): its tool message
    /// carries it, and the bridge sends it once.
    pub outbox: Option<hearth_protocol::Outbox>,
    /// Who wrote the output: hearth's own tools, or an MCP server.
    pub provenance: Provenance,
}

/// Who wrote a call's output. What an MCP server returns is untrusted
/// input (it may carry instructions meant to steer the agent), as a web
/// page is; the tool message records it (`data.provenance`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Provenance {
    /// A built-in tool, reporting what hearth did.
    #[default]
    Hearth,
    /// The MCP server of this name.
    Mcp { server: String },
    /// A document someone sent (`read_attachment`), by its file name (or
    /// its SHA-256 when it has none).
    Document { name: String },
    /// A page `web_fetch` read (its status a success or not: an error page
    /// is outside text too), by the URL asked for.
    Web { url: String },
    /// A shell command that could reach the network (`network: true`, or a
    /// kernel that cannot deny it).
    Shell { command: String },
    /// A file of the working folder (`read_file`) changed while a call that
    /// could bring outside words into it ran (`why`, see `exposure.rs`).
    File { path: String, why: String },
    /// A skill the owner did not install (`read_skill`), by its name.
    Skill { name: String },
    /// Results of `web_search`, by the search's address (no key).
    Search { url: String },
}

impl Provenance {
    /// Whether the output is untrusted input.
    pub fn untrusted(&self) -> bool {
        !matches!(self, Provenance::Hearth)
    }

    /// `message` (a call's tool message) naming where its output came
    /// from (`provenance.rs` says how); hearth's own tools add nothing.
    pub fn mark(&self, mut message: crate::log::NewMessage) -> crate::log::NewMessage {
        message.data.provenance = match self {
            Provenance::Hearth => return message,
            Provenance::Mcp { server } => Some(crate::provenance::mcp(server)),
            Provenance::Document { name } => Some(crate::provenance::document(name)),
            Provenance::Web { url } => Some(crate::provenance::web(url)),
            Provenance::Shell { command } => Some(crate::provenance::shell(command)),
            Provenance::File { path, why } => Some(crate::provenance::file(path, why)),
            Provenance::Skill { name } => Some(crate::provenance::skill(name)),
            Provenance::Search { url } => Some(crate::provenance::web(url)),
        };
        message
    }
}

impl Outcome {
    pub fn ok(output: impl Into<String>) -> Outcome {
        Outcome {
            output: output.into(),
            status: MessageStatus::Ok,
            images: Vec::new(),
            recalled: Vec::new(),
            outbox: None,
            provenance: Provenance::Hearth,
        }
    }

    pub fn error(output: impl Into<String>) -> Outcome {
        Outcome {
            status: MessageStatus::Error,
            ..Outcome::ok(output)
        }
    }
}

/// Where the agent's tools act: its working folder, its shell and its web
/// client. Without one an agent has only its memory tools.
pub struct Workspace {
    folder: Arc<Folder>,
    shell: Arc<Shell>,
    fetcher: Arc<Fetcher>,
    concurrency: usize,
}

impl Workspace {
    /// `workdir` must exist. `prompt_dir` is the agent's `agents/NAME/`,
    /// read-only to the file tools unless the config allows it.
    /// `processes` lists the shell's running commands, so the daemon can
    /// kill them when it stops.
    pub fn new(
        workdir: &Path,
        prompt_dir: &Path,
        config: &ToolsConfig,
        processes: Processes,
    ) -> std::io::Result<Workspace> {
        let folder = Folder::new(workdir, prompt_dir, config.prompt_writable)?;
        let shell = Shell {
            workdir: folder.root().to_path_buf(),
            config: config.clone(),
            processes,
            hidden_env: Vec::new(),
            confinement: None,
        };
        Ok(Workspace {
            folder: Arc::new(folder),
            shell: Arc::new(shell),
            fetcher: Arc::new(Fetcher::new(config)),
            concurrency: config.concurrency(),
        })
    }

    /// Keeps these environment variables (the daemon's API keys and
    /// tokens) from the shell's commands, so a command cannot print them
    /// into the log.
    pub fn hide_env(mut self, names: impl IntoIterator<Item = String>) -> Workspace {
        Arc::make_mut(&mut self.shell).hidden_env.extend(names);
        self
    }

    /// Confines the shell's commands with Landlock (where the kernel has
    /// it): they write only the working folder and /tmp, and never reach
    /// `home`'s folders.
    pub fn confine(mut self, home: &[&Path]) -> Workspace {
        let confinement = Confinement::new(self.folder.root(), home);
        Arc::make_mut(&mut self.shell).confinement = Some(Arc::new(confinement));
        self
    }

    /// Lets the shell's commands read `folders` (the agent's skills) in
    /// its confinement, though they lie in the home; after
    /// [`Workspace::confine`].
    pub fn reading(mut self, folders: impl IntoIterator<Item = PathBuf>) -> Workspace {
        let shell = Arc::make_mut(&mut self.shell);
        if let Some(confinement) = shell.confinement.take() {
            let confinement = Confinement::clone(&confinement).reading(folders);
            shell.confinement = Some(Arc::new(confinement));
        }
        self
    }

    /// The working folder, symlinks resolved.
    pub fn root(&self) -> PathBuf {
        self.folder.root().to_path_buf()
    }
}

/// The tools of one agent. Clones share the workspace and the count of
/// invalid calls.
#[derive(Clone)]
pub struct Tools {
    agent: String,
    log: Log,
    workspace: Option<Arc<Workspace>>,
    /// The top agent's children, for the subagent tools; none for others.
    subagents: Option<Arc<Subagents>>,
    /// Invalid calls since the last valid one (or the turn's start).
    invalid_in_a_row: Arc<AtomicUsize>,
    /// Where calls that need a person's approval wait; none: no call does.
    approvals: Option<Approvals>,
    /// Where `show_image` stores what it shows and requests read images
    /// from; none: no `show_image`, and requests carry no images.
    images: Option<ImageStore>,
    /// Where `read_attachment` reads documents; none: no `read_attachment`.
    media: Option<MediaStore>,
    /// Who `whatsapp_send` may write to; none: no `whatsapp_send`.
    whatsapp: Option<Arc<whatsapp::Contacts>>,
    /// The MCP servers this agent gets; none: no MCP tools.
    mcp: Option<McpTools>,
    /// Where this agent's skills are; `read_skill` is offered while any
    /// is there. None: no skills.
    skills: Option<Arc<skill::ReadSkill>>,
    /// `web_search`, when `[search]` names a provider.
    web_search: Option<Arc<super::WebSearch>>,
    /// The browser the `browser_*` tools drive, when `[tools.browser]` is on.
    browser: Option<Arc<super::Browser>>,
    /// What the running turn read from outside, which makes acting tools ask.
    taint: Taint,
    /// Where running calls (and a shell command's last line) are shown.
    activity: Option<ActivityBoard>,
    /// The built-in tools the parts above make, by name; made again by
    /// each part added.
    built_in: Arc<ToolSet>,
}

/// A call whose arguments passed the checks, and its tool.
struct Checked<'a> {
    name: &'a str,
    arguments: Value,
    tool: Arc<dyn Tool>,
}

impl Tools {
    /// The memory tools only (`date`, `zoom`, `search`, `remember`, `forget`); see [`Tools::with_workspace`].
    pub fn new(agent: &str, log: Log) -> Tools {
        Tools {
            agent: agent.to_string(),
            log,
            workspace: None,
            subagents: None,
            invalid_in_a_row: Arc::default(),
            approvals: None,
            images: None,
            media: None,
            whatsapp: None,
            mcp: None,
            skills: None,
            web_search: None,
            browser: None,
            taint: Taint::default(),
            activity: None,
            built_in: Arc::default(),
        }
        .assembled()
    }

    /// Shows each running call, and a shell command's last output line, on
    /// the agent's activity.
    pub fn with_activity(mut self, activity: ActivityBoard) -> Tools {
        self.activity = Some(activity);
        self
    }

    /// Adds the tools of these MCP servers, after the built-in ones.
    pub fn with_mcp(mut self, mcp: McpTools) -> Tools {
        self.mcp = Some(mcp);
        self
    }

    /// Adds `web_search` (after `web_fetch`).
    pub fn with_web_search(mut self, search: super::WebSearch) -> Tools {
        self.web_search = Some(Arc::new(search));
        self.assembled()
    }

    /// Adds the `browser_*` tools (the last built-in ones).
    pub fn with_browser(mut self, browser: Arc<super::Browser>) -> Tools {
        self.browser = Some(browser);
        self.assembled()
    }

    /// Offers `read_skill` over these folders whenever a skill is in one
    /// (after the built-in tools, before the MCP servers'), so the tools in
    /// the request change only when skills come or go.
    pub fn with_skills(mut self, folders: crate::skills::Folders) -> Tools {
        self.skills = Some(Arc::new(skill::ReadSkill(folders)));
        self
    }

    /// Sentences saying which MCP servers' tools changed since the last
    /// turn: the request's tools differ from there on.
    pub fn changes(&self) -> Vec<String> {
        self.mcp.as_ref().map(McpTools::changes).unwrap_or_default()
    }

    /// Adds `show_image` (with a workspace) and lets requests carry the
    /// images of the log.
    pub fn with_images(mut self, images: ImageStore) -> Tools {
        self.images = Some(images);
        self.assembled()
    }

    /// Adds `read_attachment`, which reads the documents messages carry.
    pub fn with_media(mut self, media: MediaStore) -> Tools {
        self.media = Some(media);
        self.assembled()
    }

    /// Where a request's images are read from.
    pub fn image_source(&self) -> &dyn crate::request::Images {
        match &self.images {
            Some(store) => store,
            None => &crate::request::NO_IMAGES,
        }
    }

    /// Makes the calls that `[approvals]` names wait for a person's answer.
    pub fn with_approvals(mut self, approvals: Approvals) -> Tools {
        let specs = self.specs();
        for name in &approvals.config().tools {
            // An MCP server's tools may not be listed yet.
            let later = name.starts_with("mcp__");
            if !later && !specs.iter().any(|spec| glob_matches(name, &spec.name)) {
                tracing::warn!(agent = %self.agent, "[approvals] names `{name}`, which is not one of this agent's tools");
            }
        }
        self.approvals = Some(approvals);
        self
    }

    /// Adds `subagent_start`, `subagent_stop` and `subagent_list`: for the
    /// top agent only.
    pub fn with_subagents(mut self, subagents: Arc<Subagents>) -> Tools {
        self.subagents = Some(subagents);
        self.assembled()
    }

    /// Adds `whatsapp_send` to these people: for the top agent only, when
    /// the config has a `[whatsapp]` table.
    pub fn with_whatsapp(mut self, contacts: whatsapp::Contacts) -> Tools {
        self.whatsapp = Some(Arc::new(contacts));
        self.assembled()
    }

    /// Adds the tools that act in a workspace: shell, files, web.
    pub fn with_workspace(mut self, workspace: Workspace) -> Tools {
        self.workspace = Some(Arc::new(workspace));
        self.assembled()
    }

    /// The tools as the model sees them, always in the same order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mut specs: Vec<ToolSpec> = self.built_in.specs().cloned().collect();
        specs.extend(skill::offered(self.skills.as_ref()));
        if let Some(mcp) = &self.mcp {
            specs.extend(mcp.specs());
        }
        specs
    }

    /// [`Tools::specs`] as a function to call later (the memory's
    /// compaction requests): the built-in tools are fixed at start, the MCP
    /// servers' tools are read at each call, so a changed list shows.
    pub fn specs_source(&self) -> impl Fn() -> Vec<ToolSpec> + Send + Sync + 'static {
        let built_in: Vec<ToolSpec> = self.built_in.specs().cloned().collect();
        let mcp = self.mcp.clone();
        let skills = self.skills.clone();
        move || {
            let mut specs = built_in.clone();
            specs.extend(skill::offered(skills.as_ref()));
            if let Some(mcp) = &mcp {
                specs.extend(mcp.specs());
            }
            specs
        }
    }

    /// These tools with their built-in tools made from their parts, in
    /// the order the model sees them.
    fn assembled(mut self) -> Tools {
        let mut tools: Vec<Arc<dyn Tool>> = vec![
            Arc::new(date::Date),
            Arc::new(zoom::Zoom),
            Arc::new(search::Search),
        ];
        if let Some(store) = &self.media {
            tools.push(Arc::new(attachment::ReadAttachment(store.clone())));
        }
        tools.push(Arc::new(facts::Remember));
        tools.push(Arc::new(facts::Forget));
        tools.push(Arc::new(schedule::ScheduleAdd));
        tools.push(Arc::new(schedule::ScheduleList));
        tools.push(Arc::new(schedule::ScheduleCancel));
        if let Some(workspace) = &self.workspace {
            tools.push(workspace.shell.clone());
            for tool in files::tools(&workspace.folder) {
                tools.push(Arc::new(tool));
            }
            tools.push(workspace.fetcher.clone());
            if let Some(store) = &self.images {
                tools.push(Arc::new(show_image::ShowImage {
                    folder: workspace.folder.clone(),
                    store: store.clone(),
                }));
            }
        }
        if let Some(search) = &self.web_search {
            tools.push(search.clone());
        }
        if let Some(family) = &self.subagents {
            tools.push(Arc::new(subagents::SubagentStart(family.clone())));
            tools.push(Arc::new(subagents::SubagentStop(family.clone())));
            tools.push(Arc::new(subagents::SubagentList(family.clone())));
        }
        if let Some(contacts) = &self.whatsapp {
            tools.push(Arc::new(whatsapp::WhatsAppSend(contacts.clone())));
        }
        if let Some(browser) = &self.browser {
            tools.extend(super::browser::tools(browser));
        }
        self.built_in = Arc::new(ToolSet::new(tools));
        self
    }

    /// Taints the running turn: it took words from outside the owner
    /// (`reason` names them, "after a notify event from `ci`").
    pub fn taint(&self, reason: String) {
        self.taint.taint(reason);
    }

    /// The MCP servers whose tools this agent is offered and whose
    /// descriptions the owner has not vouched for (`trust_descriptions`):
    /// their words ride every request, so a turn that offers them is
    /// tainted from its start.
    pub fn unvouched_mcp_servers(&self) -> Vec<String> {
        self.mcp
            .as_ref()
            .map(McpTools::unvouched_servers)
            .unwrap_or_default()
    }

    /// What tainted the running turn, if anything did: a subagent's
    /// report carries it to its parent.
    pub fn tainted(&self) -> Option<String> {
        self.taint.reason()
    }

    /// Starts a turn's count of invalid calls afresh.
    pub fn begin_turn(&self) {
        self.invalid_in_a_row.store(0, Ordering::Relaxed);
        self.taint.clear();
    }

    /// Invalid calls since the last valid one or [`Tools::begin_turn`]; a
    /// turn loop may end the turn itself once this reaches
    /// [`MAX_INVALID_IN_A_ROW`].
    pub fn invalid_in_a_row(&self) -> usize {
        self.invalid_in_a_row.load(Ordering::Relaxed)
    }

    /// Runs one call. Bad arguments are an error outcome the model can
    /// correct, never a failure of the turn.
    pub async fn call(&self, call: &ToolCall) -> Outcome {
        match self.check(call) {
            Ok(checked) => self.run_approved(checked, &Semaphore::new(1)).await,
            Err(refused) => refused,
        }
    }

    /// Runs the calls of one model response, up to `[tools] concurrency` at
    /// once, and returns their outcomes in the calls' order. Dropping the
    /// future stops every call that runs (a shell call's process group is
    /// killed).
    pub async fn call_all(&self, calls: &[ToolCall]) -> Vec<Outcome> {
        self.call_in_order(calls).collect().await
    }

    /// As [`Tools::call_all`], but yields each outcome as soon as it and
    /// every call before it are done, so a turn loop can log results as
    /// they come while later calls still run. The calls are checked, in
    /// order, before this returns, so the count of invalid calls in a row
    /// is the same whatever finishes first.
    // A refused call's `Outcome` is not an error but the answer logged for it.
    #[allow(clippy::result_large_err)]
    pub fn call_in_order<'a>(
        &'a self,
        calls: &'a [ToolCall],
    ) -> impl Stream<Item = Outcome> + Send + 'a {
        let checked: Vec<Result<Checked<'a>, Outcome>> =
            calls.iter().map(|call| self.check(call)).collect();
        let concurrency = self.workspace.as_ref().map_or(1, |w| w.concurrency);
        // Every call is under way at once, so one waiting for approval
        // holds up none of the others; the permits bound how many run.
        let running = Arc::new(Semaphore::new(concurrency));
        stream::iter(checked)
            .map(move |checked| {
                let running = running.clone();
                async move {
                    match checked {
                        Ok(checked) => self.run_approved(checked, &running).await,
                        Err(refused) => refused,
                    }
                }
            })
            .buffered(calls.len().max(1))
    }

    /// Runs a checked call once it is approved (when it needs to be) and a
    /// permit of `running` is free; a denied call is an error outcome.
    async fn run_approved(&self, call: Checked<'_>, running: &Semaphore) -> Outcome {
        let by_trust = call.tool.asks_always();
        let untrusted_ok = self
            .approvals
            .as_ref()
            .map(|approvals| approvals.config().untrusted_ok.clone())
            .unwrap_or_default();
        let tainted =
            self.taint
                .needs_approval(call.name, call.tool.acts(), &call.arguments, &untrusted_ok);
        match &self.approvals {
            Some(approvals)
                if tainted.is_some()
                    || by_trust
                    || approvals.needs_approval(call.name, &call.arguments) =>
            {
                let verdict = approvals
                    .ask_because(&self.agent, call.name, &call.arguments, tainted.as_deref())
                    .await;
                if let Verdict::Denied(why) = verdict {
                    return Outcome::error(match tainted {
                        Some(because) => format!("{why} (asked {because})"),
                        None => why,
                    });
                }
            }
            // No one could be asked: the call does not run unapproved.
            None if by_trust || tainted.is_some() => {
                return Outcome::error(format!("`{}` needs a person's approval", call.name))
            }
            _ => {}
        }
        // The semaphore is never closed; were it, the call would just run.
        let _permit = running.acquire().await.ok();
        let _shown = self
            .activity
            .as_ref()
            .map(|board| board.tool(call.name, call.tool.detail(&call.arguments)));
        let (name, arguments) = (call.name, call.arguments.clone());
        // What may bring outside words into files runs in a window the log
        // keeps, so a file changed meanwhile reads as outside text.
        let shell_network = name == "shell"
            && (self.workspace.as_ref()).is_some_and(|w| w.shell.could_reach_network(&arguments));
        let tainted = self.taint.reason();
        let acts = call.tool.acts() != super::tool::Acts::Never;
        let is_mcp = self.built_in.get(call.name).is_none() && call.name != skill::NAME;
        let why = exposure::why(
            name,
            &arguments,
            acts,
            is_mcp,
            shell_network,
            tainted.as_deref(),
        );
        let window = match exposure::open(&self.log, &self.agent, why).await {
            Ok(window) => window,
            Err(err) => return Outcome::error(format!("`{name}` did not run: {err}")),
        };
        let outcome = self.run(call).await;
        if let Some(window) = window {
            window.close().await;
        }
        // What the outcome carries from outside taints, ok or not (an error
        // page is outside text); a refused fetch brought nothing in.
        self.taint.after_call(name, &arguments, &outcome.provenance);
        outcome
    }

    /// The call's name and arguments against the tools' schemas; counts
    /// invalid calls in a row.
    // A refused call's `Outcome` is not an error but the answer logged for it.
    #[allow(clippy::result_large_err)]
    fn check<'a>(&self, call: &'a ToolCall) -> Result<Checked<'a>, Outcome> {
        let result = match self.find(&call.name) {
            Some((spec, tool)) => args::validate(&call.arguments, &spec.parameters)
                .map(|arguments| Checked {
                    name: &call.name,
                    arguments,
                    tool,
                })
                .map_err(|err| err.to_string()),
            None => Err(format!(
                "there is no tool `{}`; the tools are: {}",
                call.name,
                self.specs()
                    .iter()
                    .map(|spec| spec.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        };
        match result {
            Ok(checked) => {
                self.invalid_in_a_row.store(0, Ordering::Relaxed);
                Ok(checked)
            }
            Err(why) => {
                let count = self.invalid_in_a_row.fetch_add(1, Ordering::Relaxed) + 1;
                Err(Outcome::error(if count >= MAX_INVALID_IN_A_ROW {
                    format!(
                        "{why}\nThat is {count} invalid tool calls in a row: stop calling tools \
                         now and answer with what you have."
                    )
                } else {
                    why
                }))
            }
        }
    }

    /// Each built-in tool's name and whether it acts, in the model's order.
    #[cfg(test)]
    pub(super) fn acting(&self) -> Vec<(String, super::tool::Acts)> {
        let names = self.built_in.specs().map(|spec| spec.name.clone());
        names
            .filter_map(|name| {
                let acts = self.built_in.get(&name)?.1.acts();
                Some((name, acts))
            })
            .collect()
    }

    /// The tool of this name, built-in or an MCP server's, with its spec.
    fn find(&self, name: &str) -> Option<(ToolSpec, Arc<dyn Tool>)> {
        if let Some((spec, tool)) = self.built_in.get(name) {
            return Some((spec.clone(), tool.clone()));
        }
        if let Some(skills) = self.skills.as_ref().filter(|_| name == skill::NAME) {
            return Some((skill::spec(), skills.clone() as Arc<dyn Tool>));
        }
        let mcp = self.mcp.as_ref()?;
        let spec = mcp.specs().into_iter().find(|spec| spec.name == name)?;
        let tool = McpTool::new(spec.clone(), mcp.clone(), self.images.clone());
        Some((spec, Arc::new(tool)))
    }

    async fn run(&self, call: Checked<'_>) -> Outcome {
        call.tool
            .call(Call {
                agent: &self.agent,
                log: &self.log,
                arguments: call.arguments,
                // What stores words for later keeps the turn's taint with them.
                tainted: self.taint.reason(),
                activity: self.activity.as_ref(),
            })
            .await
    }
}

#[cfg(test)]
mod tests;
