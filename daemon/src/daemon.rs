//! The daemon's life: start on a home, serve until told to stop, stop cleanly.
//!
//! Start-up takes the home's lock (a second daemon on the same home refuses
//! to start), reads the configuration (a broken file stops the start with the
//! file, line and what is wrong), opens the log, writes the agent's default
//! prompt on first start, replaces a stale socket and listens on a fresh one
//! with mode 0600, and starts the agent's loop, which continues any turn a
//! crash cut off.

use crate::approvals::Approvals;
use crate::config::{Config, ConfigError};
use crate::images::ImageStore;
use crate::layout::{Layout, LayoutError};
use crate::log::{Log, LogError};
use crate::memory::{Memory, MemoryConfig};
use crate::model::Model;
use crate::server::{self, Listener, Shared};
use crate::subagents::Subagents;
use crate::tools::WhatsAppContacts;
use crate::tools::{Processes, Tools, Workspace};
use crate::turn::{Agent, AgentHandle, AgentLoop, Family};
use crate::usage::{Meter, Prices};
use hearth_protocol::home::{secret_in, Home};
use hearth_protocol::Event;
use std::fs::{self, File, OpenOptions};
use std::future::Future;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::UnixListener;
use tokio::sync::{broadcast, watch};

/// Events buffered per client before a slow one is caught up from the log.
const EVENT_BUFFER: usize = 4096;

const DEFAULT_PROMPT: &str = "\
# Who you are

You are hearth, a personal assistant that lives on your owner's machine and
talks with them from their terminal and their phone. You remember the whole
conversation: older parts appear as one-line summaries.

- Answer briefly and plainly; say when you are unsure.
- Use your tools when they help, and say what you did.
- Messages can come from several places (terminal, telegram, schedule, …);
  the source is shown with each one.

Edit this file to change how the agent behaves; the change applies at the next turn.
";

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("another hearthd is already running for this home ({0} is locked); stop it first or use another --home")]
    AlreadyRunning(PathBuf),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("{0} can be read by other users; run `chmod 600 {0}`")]
    OpenSecrets(PathBuf),
    #[error(
        "agent name `{0}` is not allowed: use 1 to 64 letters, digits, `-` or `_`, each name once"
    )]
    AgentName(String),
    #[error("[listen] tcp needs a token of at least 16 characters in ${0} or secrets.env")]
    NoToken(String),
    #[error("cannot load the memory: {0}")]
    Memory(String),
    #[error("{path}: {source}")]
    Layout { path: PathBuf, source: LayoutError },
    #[error(transparent)]
    Window(#[from] crate::model::window::TooSmall),
    #[error("{path}: {source}")]
    WhatsAppContacts {
        path: PathBuf,
        source: crate::tools::WhatsAppContactsError,
    },
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StartError + 'a {
    move |source| StartError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Creates a folder (and its parents) private to this user.
fn private_dir(path: &Path) -> Result<(), StartError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(io("cannot create", path))
}

/// Runs the daemon on `home` until `shutdown` completes.
pub async fn run(home: Home, shutdown: impl Future<Output = ()>) -> Result<(), StartError> {
    for dir in [&home.config_dir, &home.data_dir, &home.runtime_dir] {
        private_dir(dir)?;
    }
    let _lock = lock(&home.lock_file())?;
    let mut config = Config::load(&home.config_file())?;
    check_secrets_file(&home.secrets_file())?;
    check_agents(&config)?;
    // Who the top agent may write to on WhatsApp (`whatsapp_send`).
    let whatsapp = match &config.whatsapp {
        Some(table) => Some(WhatsAppContacts::from_table(table).map_err(|source| {
            StartError::WhatsAppContacts {
                path: home.config_file(),
                source,
            }
        })?),
        None => None,
    };
    let (events, _) = broadcast::channel(EVENT_BUFFER);
    let log = Log::open(&home.database(), events.clone())?;
    // No model configured: a local Ollama server's, when one answers.
    let local_note = match config.model {
        Some(_) => None,
        None => crate::local::detect().await.map(|local| {
            config.model = Some(local.config);
            local.note
        }),
    };
    if let Some(note) = local_note {
        tracing::info!("{note}");
        let note = crate::log::NewMessage::new(
            hearth_protocol::Kind::Note,
            crate::turn::DAEMON_SOURCE,
            note,
        );
        log.append(&config.agent.name, note).await?;
    }

    let open_model = |model_config| {
        Model::new(model_config, |env: &str| {
            let key = find_secret(&home.secrets_file(), env);
            if key.is_none() {
                tracing::info!("no API key in ${env} or secrets.env; sending requests without one");
            }
            key
        })
    };
    // A model name on `[model]`'s provider, address and key; `[model]`'s own when none.
    let model_named = |name: Option<&String>| match (&config.model, name) {
        (Some(model_config), Some(name)) => {
            let mut model_config = model_config.clone();
            model_config.model = name.clone();
            Some(open_model(model_config))
        }
        (Some(model_config), None) => Some(open_model(model_config.clone())),
        (None, _) => None,
    };
    let model = model_named(None);
    match &model {
        Some(model) => tracing::info!("model: {}", model.labels().join(", then ")),
        None => tracing::warn!(
            "no model is configured: add a [model] section to {} (see the README)",
            home.config_file().display()
        ),
    }
    let model_label = model.as_ref().map(Model::label);

    let processes = Processes::new();
    let images = ImageStore::new(&home.data_dir);
    // One registry for every agent: any client may answer any request.
    let approvals = Approvals::new(config.approvals.clone(), log.clone(), events.clone());
    let subagents = Arc::new(Subagents::new(
        &config.agent.name,
        log.clone(),
        events.clone(),
    ));
    let starter = Starter {
        home: &home,
        config: &config,
        log: &log,
        events: &events,
        processes: &processes,
        approvals: &approvals,
        images: &images,
    };
    let mut loops = Vec::new();
    let mut agents = std::collections::BTreeMap::new();
    for child in &config.agents {
        subagents.declare(&child.name, &child.responsibility);
        let model = model_named(child.model.as_ref());
        let prompt = child_prompt(&config.agent.name, &child.name, &child.responsibility);
        let spec = AgentSpec {
            name: &child.name,
            layout: &child.layout,
            workdir: child.workdir.as_deref(),
            compactor_model: model_named(config.memory.model.as_ref().or(child.model.as_ref())),
            model,
            default_prompt: &prompt,
            family: Family::Child(subagents.clone()),
            whatsapp: None,
        };
        let (agent_loop, handle) = starter.start(spec).await?;
        subagents.attach_child(&child.name, handle.clone());
        agents.insert(child.name.clone(), handle);
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
        compactor_model: model_named(config.memory.model.as_ref()),
        model,
        default_prompt: DEFAULT_PROMPT,
        family,
        whatsapp: whatsapp.filter(|contacts| !contacts.is_empty()),
    };
    let (agent_loop, handle) = starter.start(spec).await?;
    subagents.attach_parent(handle.clone());
    agents.insert(config.agent.name.clone(), handle.clone());
    loops.push(agent_loop);
    // Reports that a crash cut off are sent before anything else runs.
    subagents.recover().await?;

    let socket = home.socket();
    let tcp = listen_tcp(&config, &home).await?;
    let listener = listen(&socket)?;
    tracing::info!("listening on {}", socket.display());

    let (stop, stopped) = watch::channel(false);
    let agent_tasks: Vec<_> = loops
        .into_iter()
        .map(|agent_loop| tokio::spawn(agent_loop.run(stopped.clone())))
        .collect();
    let shared = Arc::new(Shared {
        log,
        events,
        agent: handle,
        agents,
        model: model_label,
        clients: AtomicU64::new(0),
        started: std::time::Instant::now(),
        approvals,
        images,
    });
    let mut server_tasks = vec![tokio::spawn(server::serve(
        Listener::Unix(listener),
        shared.clone(),
        stopped.clone(),
    ))];
    if let Some(tcp) = tcp {
        server_tasks.push(tokio::spawn(server::serve(tcp, shared, stopped)));
    }
    // Bridges are clients: they start once the socket listens.
    let bridges = crate::bridges::start(&config, &home);

    shutdown.await;
    tracing::info!("stopping");
    bridges.stop().await;
    let _ = stop.send(true);
    for task in server_tasks {
        let _ = task.await;
    }
    // The loops stop at once; a turn they cut off continues at the next start.
    for task in agent_tasks {
        let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
    }
    // Stopping the loop dropped a running tool, which killed its processes;
    // whatever is still listed dies here, so no child outlives the daemon.
    processes.kill_all(Duration::from_secs(5)).await;
    let _ = fs::remove_file(&socket);
    Ok(())
}

/// What differs between the agents a daemon starts.
struct AgentSpec<'a> {
    name: &'a str,
    layout: &'a str,
    workdir: Option<&'a Path>,
    model: Option<Model>,
    compactor_model: Option<Model>,
    /// Written to `agents/NAME/prompt.md` at first start.
    default_prompt: &'a str,
    family: Family,
    /// Who `whatsapp_send` may write to: the top agent's, never a child's.
    whatsapp: Option<WhatsAppContacts>,
}

/// What every agent of a daemon shares.
struct Starter<'a> {
    home: &'a Home,
    config: &'a Config,
    log: &'a Log,
    events: &'a broadcast::Sender<Event>,
    processes: &'a Processes,
    approvals: &'a Approvals,
    images: &'a ImageStore,
}

impl Starter<'_> {
    /// Prepares one agent's folder, prompt, tools and memory; returns its
    /// loop (not yet running) and the handle to reach it.
    async fn start(&self, spec: AgentSpec<'_>) -> Result<(AgentLoop, AgentHandle), StartError> {
        let home = self.home;
        let layout = Layout::find(spec.layout).map_err(|source| StartError::Layout {
            path: home.config_file(),
            source,
        })?;
        let agent_dir = home.agent_dir(spec.name);
        private_dir(&agent_dir)?;
        let prompt_file = agent_dir.join("prompt.md");
        if !prompt_file.exists() {
            fs::write(&prompt_file, spec.default_prompt)
                .map_err(io("cannot write", &prompt_file))?;
        }
        // The tools' folder: configured (relative to the config's folder), or
        // the agent's own `work` folder.
        let workdir = match spec.workdir {
            Some(dir) => home.config_dir.join(dir),
            None => agent_dir.join("work"),
        };
        private_dir(&workdir)?;
        let workspace = Workspace::new(
            &workdir,
            &agent_dir,
            &self.config.tools,
            self.processes.clone(),
        )
        .map_err(io("cannot open the working folder", &workdir))?;
        let workspace = workspace.hide_env(secret_names(self.config));
        tracing::info!(
            agent = spec.name,
            "tools work in {}",
            workspace.root().display()
        );
        let mut tools = Tools::new(spec.name, self.log.clone())
            .with_workspace(workspace)
            .with_images(self.images.clone());
        if let Family::Parent(subagents) = &spec.family {
            tools = tools.with_subagents(subagents.clone());
        }
        if let Some(contacts) = &spec.whatsapp {
            tools = tools.with_whatsapp(contacts.clone());
        }
        // Last: it checks the names in `[approvals]` against every tool.
        tools = tools.with_approvals(self.approvals.clone());
        self.check_window(&spec, &layout, &prompt_file, &tools.specs())?;
        let meter = Meter::new(
            self.log.clone(),
            spec.name,
            Prices::new(&self.config.prices),
            self.config.budget,
            home.config_file(),
        );
        let memory = Memory::start(
            self.log.clone(),
            MemoryConfig {
                agent: spec.name.to_string(),
                layout: layout.clone(),
                model: spec.compactor_model,
                prompt_file: prompt_file.clone(),
                tools: tools.specs(),
                events: self.events.clone(),
                meter: meter.clone(),
            },
        )
        .await
        .map_err(|err| StartError::Memory(err.to_string()))?;
        let agent = Agent {
            name: spec.name.to_string(),
            log: self.log.clone(),
            model: spec.model,
            tools,
            memory,
            limits: self.config.limits.clone(),
            prompt_file,
            config_file: home.config_file(),
            events: self.events.clone(),
            block_lines: layout.block_lines,
            family: spec.family,
            meter,
        };
        Ok(agent.start())
    }
}

impl Starter<'_> {
    /// Refuses a layout whose largest turn or compaction request cannot fit
    /// the window of a model that would be sent it (when the window is
    /// known), so a context-length error cannot recur at every turn.
    fn check_window(
        &self,
        spec: &AgentSpec<'_>,
        layout: &Layout,
        prompt_file: &Path,
        tools: &[crate::model::ToolSpec],
    ) -> Result<(), StartError> {
        use crate::model::window::{check, Largest};
        let tools_bytes: usize = tools
            .iter()
            .map(|tool| {
                tool.name.len() + tool.description.len() + tool.parameters.to_string().len()
            })
            .sum();
        let turn_prompt = crate::request::instructions(prompt_file).len();
        let own_bytes = self.config.limits.tool_output_chars;
        let turn = |layout: &Layout| Largest {
            purpose: "turn",
            view_bytes: layout.high_budget,
            fixed_bytes: turn_prompt + tools_bytes,
            own_bytes,
        };
        let compaction = |layout: &Layout| Largest {
            purpose: "compaction",
            view_bytes: layout.compaction_high_budget,
            fixed_bytes: layout
                .compaction_prompt
                .as_ref()
                .map_or(turn_prompt, String::len)
                + tools_bytes,
            own_bytes,
        };
        let small = Layout::find("small").ok();
        let small = small.as_ref();
        if let Some(model) = &spec.model {
            let smaller = small.map(|small| ("small", turn(small)));
            check(
                spec.name,
                spec.layout,
                turn(layout),
                model.configs(),
                smaller,
            )?;
        }
        if let Some(model) = &spec.compactor_model {
            let smaller = small.map(|small| ("small", compaction(small)));
            let largest = compaction(layout);
            check(spec.name, spec.layout, largest, model.configs(), smaller)?;
        }
        Ok(())
    }
}

/// The TCP listener `[listen] tcp` asks for, with its token.
async fn listen_tcp(config: &Config, home: &Home) -> Result<Option<Listener>, StartError> {
    let Some(address) = &config.listen.tcp else {
        return Ok(None);
    };
    let env = &config.listen.token_env;
    let token = find_secret(&home.secrets_file(), env)
        .filter(|token| token.len() >= 16)
        .ok_or_else(|| StartError::NoToken(env.clone()))?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| StartError::Io {
            what: "cannot listen on",
            path: PathBuf::from(address),
            source,
        })?;
    let bound = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!("listening on tcp {bound} (token required)");
    Ok(Some(Listener::Tcp { listener, token }))
}

/// The environment variables that hold secrets: kept from the shell's
/// commands, so a command cannot print them into the log.
fn secret_names(config: &Config) -> Vec<String> {
    let mut names: Vec<String> = [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OLLAMA_API_KEY",
        "TELEGRAM_BOT_TOKEN",
        "WHATSAPP_VERIFY_TOKEN",
        "WHATSAPP_APP_SECRET",
        "WHATSAPP_ACCESS_TOKEN",
    ]
    .map(str::to_string)
    .into();
    names.push(config.listen.token_env.clone());
    if let Some(model) = &config.model {
        names.push(model.key_env().to_string());
        names.extend(model.fallback.iter().map(|m| m.key_env().to_string()));
    }
    // The bridges name their own variables in their tables (`*_env` keys).
    for table in [&config.telegram, &config.whatsapp].into_iter().flatten() {
        for (key, value) in table {
            if let (true, Some(name)) = (key.ends_with("_env"), value.as_str()) {
                names.push(name.to_string());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// A subagent's first prompt.
fn child_prompt(parent: &str, name: &str, responsibility: &str) -> String {
    format!(
        "# Who you are\n\n\
         You are {name}, a subagent of {parent}. Your responsibility: {responsibility}\n\n\
         {parent} gives you tasks. Do each with your tools, then answer with a short report of \
         what you did and found: your answer is your report to {parent}.\n\n\
         Edit this file to change how the subagent behaves; the change applies at the next turn.\n"
    )
}

/// Agent names must be usable as folder names and distinct.
fn check_agents(config: &Config) -> Result<(), StartError> {
    let mut seen = vec![config.agent.name.as_str()];
    for name in std::iter::once(&config.agent.name).chain(config.agents.iter().map(|a| &a.name)) {
        let fine = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !fine {
            return Err(StartError::AgentName(name.clone()));
        }
    }
    for child in &config.agents {
        if seen.contains(&child.name.as_str()) {
            return Err(StartError::AgentName(format!(
                "{} (used twice)",
                child.name
            )));
        }
        seen.push(&child.name);
    }
    Ok(())
}

/// Takes the home's lock for the daemon's lifetime; the lock dies with the
/// process, so a crashed daemon never blocks the next one.
fn lock(path: &Path) -> Result<File, StartError> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map_err(io("cannot open", path))?;
    match file.try_lock() {
        Ok(()) => {
            let _ = file.set_len(0);
            let _ = writeln!(&file, "{}", std::process::id());
            Ok(file)
        }
        Err(fs::TryLockError::WouldBlock) => Err(StartError::AlreadyRunning(path.to_path_buf())),
        Err(fs::TryLockError::Error(source)) => Err(StartError::Io {
            what: "cannot lock",
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Binds the socket, replacing a stale one (the lock proves no daemon owns
/// it), and makes it private to this user.
fn listen(socket: &Path) -> Result<UnixListener, StartError> {
    if socket.exists() {
        fs::remove_file(socket).map_err(io("cannot remove the stale socket", socket))?;
    }
    let listener = UnixListener::bind(socket).map_err(io("cannot listen on", socket))?;
    fs::set_permissions(socket, fs::Permissions::from_mode(0o600))
        .map_err(io("cannot restrict", socket))?;
    Ok(listener)
}

/// A `secrets.env` that other users can read is refused: its keys would be
/// theirs too.
fn check_secrets_file(path: &Path) -> Result<(), StartError> {
    match fs::metadata(path) {
        Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
            Err(StartError::OpenSecrets(path.to_path_buf()))
        }
        _ => Ok(()),
    }
}

/// A secret from the environment, else from `secrets.env` (`NAME=value`
/// lines, `#` comments, optional quotes), so a service that does not inherit
/// a shell's environment still finds it.
pub fn find_secret(secrets_file: &Path, name: &str) -> Option<String> {
    if let Some(value) = std::env::var(name).ok().filter(|v| !v.is_empty()) {
        return Some(value);
    }
    check_secrets_file(secrets_file).ok()?;
    let text = fs::read_to_string(secrets_file).ok()?;
    secret_in(&text, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_home_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.lock");
        let _first = lock(&path).unwrap();
        assert!(matches!(lock(&path), Err(StartError::AlreadyRunning(_))));
    }
}
