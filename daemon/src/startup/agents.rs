//! The agents a daemon runs: the top agent and its subagents, each with its
//! folder, tools, memory and loop.

use super::error::{io, private_dir, StartError};
use super::models::Models;
use super::secrets;
use super::window::{Fit, Sent};
use crate::activity::ActivityBoard;
use crate::approvals::Approvals;
use crate::config::Config;
use crate::images::ImageStore;
use crate::inputs::{self, AgentInputs, Inbox};
use crate::layout::Layout;
use crate::log::Log;
use crate::memory::{Memory, MemoryConfig, MemoryModel};
use crate::model::Model;
use crate::subagents::{Child, Subagents};
use crate::tools::{Processes, Tools, WhatsAppContacts, Workspace};
use crate::turn::{Agent, AgentHandle, AgentLoop, AgentSettings, Family};
use crate::usage::Meter;
use hearth_protocol::home::Home;
use hearth_protocol::Event;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tokio::sync::broadcast;

/// The agents, started but not yet running.
pub struct Agents {
    /// Each agent's loop, to be spawned.
    pub loops: Vec<AgentLoop>,
    /// The top agent's handle.
    pub top: AgentHandle,
    /// Every agent's handle by name, the top one's included.
    pub by_name: BTreeMap<String, AgentHandle>,
    /// What each agent sends besides its memory, by name, for a reload to
    /// check a new model against.
    pub fits: BTreeMap<String, Fit>,
    /// Every agent's working folder, resolved: where a backup never goes.
    pub workdirs: Vec<std::path::PathBuf>,
}

/// What every agent of a daemon shares.
pub struct Starter<'a> {
    pub home: &'a Home,
    pub config: &'a Config,
    pub log: &'a Log,
    pub events: &'a broadcast::Sender<Event>,
    pub processes: &'a Processes,
    pub approvals: &'a Approvals,
    pub images: &'a ImageStore,
    /// Where `read_attachment` reads the documents messages carry.
    pub media: &'a crate::media::MediaStore,
    pub models: &'a Models,
    pub mcp: &'a crate::tools::mcp::Mcp,
    /// The daemon's meter; each agent's is this one, for its name, so a
    /// reload changes the budget and prices of all at once.
    pub meter: &'a Meter,
    /// Voice notes waiting for their transcript, for every agent's turns.
    pub transcripts: &'a crate::transcription::Pending,
}

/// What differs between the agents a daemon starts.
struct AgentSpec<'a> {
    name: &'a str,
    layout: &'a str,
    workdir: Option<&'a Path>,
    model: Option<Model>,
    compactor_model: Option<MemoryModel>,
    family: Family,
    /// Who `whatsapp_send` may write to: the top agent's, never a child's.
    whatsapp: Option<WhatsAppContacts>,
    /// The MCP servers it gets: those named, or every one for none.
    mcp: Option<&'a [String]>,
}

impl Starter<'_> {
    /// Starts the subagents, then the top agent (`model`, and `whatsapp`
    /// for its `whatsapp_send`); sends the reports a crash cut off before
    /// anything else runs. Each agent's prompt file must exist already.
    pub async fn start_all(
        &self,
        model: Option<Model>,
        whatsapp: Option<WhatsAppContacts>,
    ) -> Result<Agents, StartError> {
        let config = self.config;
        let models = self.models;
        match crate::tools::confine::support() {
            crate::tools::confine::Support::Landlock(abi) => {
                tracing::info!("the shell's commands are confined by Landlock (ABI {abi})");
                if !crate::tools::confine::can_filter_sockets() {
                    tracing::warn!("{}", crate::tools::confine::describe());
                }
            }
            crate::tools::confine::Support::Unavailable(why) => tracing::warn!(
                "the shell's commands run unconfined: {why}; they can read the home's secrets.env and hearth.db"
            ),
        }
        // Every loop's inputs first, so that parent and children are given
        // each other's before any of them starts.
        let top_inputs = inputs::channel();
        let mut child_inputs = Vec::new();
        let mut children = BTreeMap::new();
        for child in &config.agents {
            let (handle, inbox) = inputs::channel();
            let declared = Child {
                responsibility: child.responsibility.clone(),
                inputs: handle.clone(),
            };
            children.insert(child.name.clone(), declared);
            child_inputs.push((handle, inbox));
        }
        let subagents = Arc::new(Subagents::new(
            &config.agent.name,
            top_inputs.0.clone(),
            children,
            self.log.clone(),
            self.events.clone(),
        ));
        let mut loops = Vec::new();
        let mut by_name = BTreeMap::new();
        let mut fits = BTreeMap::new();
        let mut workdirs = Vec::new();
        for (child, inputs) in config.agents.iter().zip(child_inputs) {
            let spec = AgentSpec {
                name: &child.name,
                layout: &child.layout,
                workdir: child.workdir.as_deref(),
                compactor_model: models.memory(&config.memory, child.model.as_ref()),
                model: models.named(child.model.as_ref()),
                family: Family::Child(subagents.clone()),
                whatsapp: None,
                mcp: Some(&child.mcp),
            };
            let (agent_loop, handle, fit, workdir) = self.start(spec, inputs).await?;
            workdirs.push(workdir);
            by_name.insert(child.name.clone(), handle);
            fits.insert(child.name.clone(), fit);
            loops.push(agent_loop);
        }
        let family = if subagents.is_empty() {
            Family::Alone
        } else {
            Family::Parent(subagents.clone())
        };
        let spec = AgentSpec {
            name: &config.agent.name,
            layout: &config.agent.layout,
            workdir: config.agent.workdir.as_deref(),
            compactor_model: models.memory(&config.memory, None),
            model,
            family,
            whatsapp,
            mcp: None,
        };
        let (agent_loop, top, fit, workdir) = self.start(spec, top_inputs).await?;
        workdirs.push(workdir);
        fits.insert(config.agent.name.clone(), fit);
        by_name.insert(config.agent.name.clone(), top.clone());
        loops.push(agent_loop);
        // Reports that a crash cut off are sent before anything else runs.
        subagents.recover().await?;
        Ok(Agents {
            loops,
            top,
            by_name,
            fits,
            workdirs,
        })
    }

    /// Prepares one agent's tools and memory; returns its loop (not yet
    /// running), the handle to reach it, what it sends besides memory and
    /// its working folder.
    async fn start(
        &self,
        spec: AgentSpec<'_>,
        inputs: (AgentInputs, Inbox),
    ) -> Result<(AgentLoop, AgentHandle, Fit, std::path::PathBuf), StartError> {
        let home = self.home;
        let layout = Layout::find(spec.layout).map_err(|source| StartError::Layout {
            path: home.config_file(),
            source,
        })?;
        let agent_dir = home.agent_dir(spec.name);
        let prompt_file = agent_dir.join("prompt.md");
        let activity = ActivityBoard::new(spec.name, self.events.clone());
        let (tools, workdir) = self.tools(&spec, &agent_dir)?;
        let tools = tools.with_activity(activity.clone());
        let own_bytes = self.config.limits.tool_output_chars;
        let specs = tools.specs();
        let compactor = spec.compactor_model.as_ref().map(|memory| &memory.model);
        let sent = |layout| Sent {
            agent: spec.name,
            layout_name: spec.layout,
            layout,
            prompt_file: &prompt_file,
            tools: &specs,
            own_bytes,
        };
        let layout = super::window::fitted(&sent(&layout), spec.model.as_ref(), compactor);
        let fit = Fit::new(&sent(&layout));
        fit.check(spec.model.as_ref(), compactor, own_bytes)?;
        let meter = self.meter.for_agent(spec.name);
        let memory = Memory::start(
            self.log.clone(),
            MemoryConfig {
                agent: spec.name.to_string(),
                layout: layout.clone(),
                model: spec.compactor_model,
                prompt_file: prompt_file.clone(),
                tools: Arc::new(tools.specs_source()),
                events: self.events.clone(),
                meter: meter.clone(),
                activity: activity.clone(),
            },
        )
        .await
        .map_err(|err| StartError::Memory(err.to_string()))?;
        let agent = Agent {
            name: spec.name.to_string(),
            log: self.log.clone(),
            settings: AgentSettings {
                model: spec.model,
                limits: self.config.limits.clone(),
            },
            tools,
            memory,
            activity,
            prompt_file,
            config_file: home.config_file(),
            events: self.events.clone(),
            block_lines: layout.block_lines,
            huge_message: layout.huge_limit(),
            family: spec.family,
            meter,
            transcripts: self.transcripts.clone(),
            heartbeat: self.config.heartbeat.as_ref().and_then(|config| {
                let (every, within) = config.durations().ok()?;
                Some(crate::heartbeat::Heartbeat::new(
                    every,
                    within,
                    tokio::time::Instant::now(),
                ))
            }),
        };
        let (agent_loop, handle) = agent.start(inputs);
        Ok((agent_loop, handle, fit, workdir))
    }

    /// The agent's tools, working in its folder: configured (relative to the
    /// config's folder), or the agent's own `work` folder; and that folder.
    fn tools(
        &self,
        spec: &AgentSpec<'_>,
        agent_dir: &Path,
    ) -> Result<(Tools, std::path::PathBuf), StartError> {
        let workdir = match spec.workdir {
            Some(dir) => self.home.config_dir.join(dir),
            None => agent_dir.join("work"),
        };
        private_dir(&workdir)?;
        refuse_home_inside(&workdir, self.home)?;
        let workspace = Workspace::new(
            &workdir,
            agent_dir,
            &self.config.tools,
            self.processes.clone(),
        )
        .map_err(io("cannot open the working folder", &workdir))?;
        let home = [
            self.home.config_dir.as_path(),
            self.home.data_dir.as_path(),
            self.home.runtime_dir.as_path(),
        ];
        let skills = crate::skills::Folders::of(self.home, spec.name);
        let workspace = workspace
            .hide_env(secrets::names(self.config))
            .confine(&home)
            .reading(skills.both().map(Path::to_path_buf));
        let root = workspace.root().to_path_buf();
        tracing::info!(
            agent = spec.name,
            "tools work in {}",
            workspace.root().display()
        );
        let mut tools = Tools::new(spec.name, self.log.clone())
            .with_skills(skills)
            .with_workspace(workspace)
            .with_images(self.images.clone())
            .with_media(self.media.clone());
        if let Family::Parent(subagents) = &spec.family {
            tools = tools.with_subagents(subagents.clone());
        }
        if let Some(contacts) = &spec.whatsapp {
            tools = tools.with_whatsapp(contacts.clone());
        }
        if let Some(search) = &self.config.search {
            let key = secrets::find(&self.home.secrets_file(), crate::tools::BRAVE_KEY_ENV);
            let meter = self.meter.for_agent(spec.name);
            tools = tools.with_web_search(crate::tools::WebSearch::new(search.clone(), key, meter));
        }
        if self.config.tools.browser.enabled {
            tools = tools.with_browser(crate::tools::Browser::new(
                &self.config.tools,
                &self.home.data_dir,
                spec.name,
                self.processes.clone(),
                Some(self.images.clone()),
            ));
        }
        // Even with no server yet: a reload may start some.
        tools = tools.with_mcp(self.mcp.for_agent(spec.name, spec.mcp));
        // Last: it checks the names in `[approvals]` against every tool.
        Ok((tools.with_approvals(self.approvals.clone()), root))
    }
}

/// Refuses a working folder that contains the home's private files (a
/// workdir set to `~` with the home in `~/.config/hearth`): the tools work
/// in it, so they could read the keys and the log or rewrite the config.
fn refuse_home_inside(workdir: &Path, home: &Home) -> Result<(), StartError> {
    let Ok(workdir) = workdir.canonicalize() else {
        return Ok(());
    };
    let private = [
        home.secrets_file(),
        home.config_file(),
        home.database(),
        home.lock_file(),
        home.daemon_log(),
    ];
    for file in private {
        let parent = file.parent().and_then(|dir| dir.canonicalize().ok());
        let inside = parent.is_some_and(|dir| dir.starts_with(&workdir));
        if inside {
            return Err(StartError::WorkdirHoldsHome {
                workdir,
                private: file,
            });
        }
    }
    Ok(())
}
