//! The daemon's life: start on a home, serve until told to stop, stop cleanly.
//!
//! Start-up takes the home's lock (a second daemon on the same home refuses
//! to start), reads the configuration (a broken file stops the start with the
//! file, line and what is wrong), opens the log, writes the agent's default
//! prompt on first start, replaces a stale socket and listens on a fresh one
//! with mode 0600, and starts the agent's loop, which continues any turn a
//! crash cut off.

use crate::config::{Config, ConfigError};
use crate::layout::{Layout, LayoutError};
use crate::log::{Log, LogError};
use crate::memory::{Memory, MemoryConfig};
use crate::model::Model;
use crate::server::{self, Shared};
use crate::tools::{Processes, Tools, Workspace};
use crate::turn::Agent;
use hearth_protocol::home::Home;
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
    #[error("cannot load the memory: {0}")]
    Memory(String),
    #[error("{path}: {source}")]
    Layout { path: PathBuf, source: LayoutError },
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
    let config = Config::load(&home.config_file())?;
    let agent_name = config.agent.name.clone();
    let layout = Layout::find(&config.agent.layout).map_err(|source| StartError::Layout {
        path: home.config_file(),
        source,
    })?;
    let agent_dir = home.agent_dir(&agent_name);
    private_dir(&agent_dir)?;
    let prompt_file = agent_dir.join("prompt.md");
    if !prompt_file.exists() {
        fs::write(&prompt_file, DEFAULT_PROMPT).map_err(io("cannot write", &prompt_file))?;
    }

    check_secrets_file(&home.secrets_file())?;
    let (events, _) = broadcast::channel(EVENT_BUFFER);
    let log = Log::open(&home.database(), events.clone())?;

    let open_model = |model_config| {
        Model::new(model_config, |env: &str| {
            let key = find_secret(&home.secrets_file(), env);
            if key.is_none() {
                tracing::info!("no API key in ${env} or secrets.env; sending requests without one");
            }
            key
        })
    };
    let model = config.model.clone().map(open_model);
    // The compactor's model: `[memory] model` on the same provider, or the turns' own.
    let compactor_model = match (&config.model, &config.memory.model) {
        (Some(model_config), Some(name)) => {
            let mut model_config = model_config.clone();
            model_config.model = name.clone();
            Some(open_model(model_config))
        }
        _ => model.clone(),
    };
    match &model {
        Some(model) => tracing::info!("model: {}", model.labels().join(", then ")),
        None => tracing::warn!(
            "no model is configured: add a [model] section to {} (see the README)",
            home.config_file().display()
        ),
    }
    let model_label = model.as_ref().map(Model::label);

    // The tools' folder: configured (relative to the config's folder), or
    // the agent's own `work` folder.
    let workdir = match &config.agent.workdir {
        Some(dir) => home.config_dir.join(dir),
        None => agent_dir.join("work"),
    };
    private_dir(&workdir)?;
    let processes = Processes::new();
    let workspace = Workspace::new(&workdir, &agent_dir, &config.tools, processes.clone())
        .map_err(io("cannot open the working folder", &workdir))?;
    tracing::info!("tools work in {}", workspace.root().display());
    let tools = Tools::new(&agent_name, log.clone()).with_workspace(workspace);
    let memory = Memory::start(
        log.clone(),
        MemoryConfig {
            agent: agent_name.clone(),
            layout: layout.clone(),
            model: compactor_model,
            prompt_file: prompt_file.clone(),
            tools: tools.specs(),
            events: events.clone(),
        },
    )
    .await
    .map_err(|err| StartError::Memory(err.to_string()))?;
    let agent = Agent {
        name: agent_name.clone(),
        log: log.clone(),
        model,
        tools,
        memory,
        limits: config.limits.clone(),
        prompt_file,
        config_file: home.config_file(),
        events: events.clone(),
        block_lines: layout.block_lines,
    };
    let (agent_loop, handle) = agent.start();

    let socket = home.socket();
    let listener = listen(&socket)?;
    tracing::info!("listening on {}", socket.display());

    let (stop, stopped) = watch::channel(false);
    let agent_task = tokio::spawn(agent_loop.run(stopped.clone()));
    let shared = Arc::new(Shared {
        log,
        events,
        agent: handle,
        model: model_label,
        clients: AtomicU64::new(0),
        started: std::time::Instant::now(),
    });
    let server_task = tokio::spawn(server::serve(listener, shared, stopped));
    // Bridges are clients: they start once the socket listens.
    let bridges = crate::bridges::start(&config, &home);

    shutdown.await;
    tracing::info!("stopping");
    bridges.stop().await;
    let _ = stop.send(true);
    let _ = server_task.await;
    // The loop stops at once; a turn it cut off continues at the next start.
    let _ = tokio::time::timeout(Duration::from_secs(10), agent_task).await;
    // Stopping the loop dropped a running tool, which killed its processes;
    // whatever is still listed dies here, so no child outlives the daemon.
    processes.kill_all(Duration::from_secs(5)).await;
    let _ = fs::remove_file(&socket);
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
    parse_secret(&text, name)
}

fn parse_secret(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let line = line.trim();
        let line = line.strip_prefix("export ").unwrap_or(line);
        let (key, value) = line.split_once('=')?;
        if key.trim() != name || line.starts_with('#') {
            return None;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        (!value.is_empty()).then(|| value.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_file_lines_read() {
        let text = "# keys\nexport OPENAI_API_KEY=\"sk-1\"\nOTHER='x'\nEMPTY=\n";
        assert_eq!(
            parse_secret(text, "OPENAI_API_KEY").as_deref(),
            Some("sk-1")
        );
        assert_eq!(parse_secret(text, "OTHER").as_deref(), Some("x"));
        assert_eq!(parse_secret(text, "EMPTY"), None);
        assert_eq!(parse_secret(text, "MISSING"), None);
    }

    #[test]
    fn a_second_lock_on_the_same_home_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.lock");
        let _first = lock(&path).unwrap();
        assert!(matches!(lock(&path), Err(StartError::AlreadyRunning(_))));
    }
}
