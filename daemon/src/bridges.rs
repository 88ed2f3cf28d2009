//! The bridges hearthd runs beside itself: `hearth telegram` when
//! `config.toml` has a `[telegram]` table, `hearth whatsapp` when it has a
//! `[whatsapp]` table, `hearth signal` when it has a `[signal]` table,
//! `hearth email` when it has an `[email]` table, `hearth discord` when it
//! has a `[discord]` table; and
//! `hearth matrix` when it has a `[matrix]` table.
//!
//! A bridge is an ordinary client in its own process (the `hearth` binary
//! found next to `hearthd`), so a crash in it never touches the daemon and
//! it keeps no state of its own. One that exits is started again after a
//! backoff (1 s, doubling to a minute; reset after a minute of running),
//! except when it exits with
//! [`EXIT_CONFIG`](hearth_protocol::exit::EXIT_CONFIG): its configuration cannot work
//! and it has said why. What a bridge writes on stderr goes to the daemon's
//! log (bounded: `child_log.rs`), and its last words when it stopped to `hearth status` — never into
//! the agent's conversation. When the daemon stops, each bridge is told to
//! stop (SIGTERM) and may finish the message it is sending; one that does
//! not exit within a few seconds is killed. A reload whose bridge table
//! changed stops that bridge the same way and starts it again.

use crate::child_log::ChildLog;
use crate::config::Config;
use hearth_protocol::exit::EXIT_CONFIG_CODE;
use hearth_protocol::home::Home;
use hearth_protocol::BridgeStatus;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::process::Command;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The first wait before a restart; it doubles up to [`LONGEST_WAIT`].
const FIRST_WAIT: Duration = Duration::from_secs(1);
const LONGEST_WAIT: Duration = Duration::from_secs(60);
/// A bridge that ran this long before exiting is restarted after the first wait again.
const STEADY: Duration = Duration::from_secs(60);

/// The running bridges' supervisors.
pub struct Bridges {
    supervisors: Vec<Supervisor>,
    board: BridgeBoard,
}

/// One bridge's supervisor and how to stop it.
struct Supervisor {
    name: &'static str,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// How each bridge is, by name, for `status`. Cheap to clone.
#[derive(Clone, Default)]
pub struct BridgeBoard(Arc<Mutex<BTreeMap<&'static str, BridgeStatus>>>);

impl BridgeBoard {
    /// Every configured bridge, by name.
    pub fn all(&self) -> Vec<BridgeStatus> {
        self.lock().values().cloned().collect()
    }

    fn set(&self, name: &'static str, state: &str, error: Option<String>) {
        self.lock().insert(
            name,
            BridgeStatus {
                name: name.to_string(),
                state: state.to_string(),
                error,
            },
        );
    }

    fn remove(&self, name: &str) {
        self.lock().remove(name);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<&'static str, BridgeStatus>> {
        // Plain values: a panic while they were written leaves them usable.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How to start one bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// `telegram`, `whatsapp`, `signal`, `email`, `discord` or `matrix`: the name in logs and the `hearth` subcommand.
    pub name: &'static str,
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// The bridges `config` enables, as commands for `home`. The `hearth` binary
/// is looked for next to `hearthd` (`exe_dir`), else on `PATH`. A home in one
/// folder is passed as `--home`; an XDG home is found by the bridge the same
/// way the daemon found it, from the environment it inherits.
pub fn launches(config: &Config, home: &Home, exe_dir: Option<&Path>) -> Vec<Launch> {
    let program = exe_dir
        .map(|dir| dir.join("hearth"))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("hearth"));
    let mut launches = Vec::new();
    let tables = [
        ("telegram", config.telegram.is_some()),
        ("whatsapp", config.whatsapp.is_some()),
        ("signal", config.signal.is_some()),
        ("email", config.email.is_some()),
        ("discord", config.discord.is_some()),
        ("matrix", config.matrix.is_some()),
    ];
    for (name, _) in tables.into_iter().filter(|(_, present)| *present) {
        let mut args = vec![name.to_string()];
        if let Some(folder) = home.folder() {
            args.push("--home".to_string());
            args.push(folder.display().to_string());
        }
        launches.push(Launch {
            name,
            program: program.clone(),
            args,
        });
    }
    launches
}

/// Starts a supervisor for each bridge `config` enables, telling `board`
/// how each is. Call once the socket listens, so the bridges find the daemon.
pub fn start(config: &Config, home: &Home, board: BridgeBoard) -> Bridges {
    let mut bridges = Bridges {
        supervisors: Vec::new(),
        board,
    };
    for launch in launches(config, home, exe_dir().as_deref()) {
        bridges.launch(launch);
    }
    bridges
}

fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(Path::to_path_buf))
}

impl Bridges {
    fn launch(&mut self, launch: Launch) {
        let (stop, on_stop) = watch::channel(false);
        let name = launch.name;
        let task = tokio::spawn(supervise(launch, on_stop, self.board.clone()));
        self.supervisors.push(Supervisor { name, stop, task });
    }

    /// Stops the bridges named in `names` and starts again those of them
    /// that `config` still enables (a reloaded table).
    pub async fn restart(&mut self, names: &[String], config: &Config, home: &Home) {
        let (stopping, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.supervisors)
            .into_iter()
            .partition(|supervisor| names.iter().any(|name| name == supervisor.name));
        self.supervisors = kept;
        for supervisor in stopping {
            tracing::info!(
                "the {} bridge's table changed; stopping it",
                supervisor.name
            );
            let name = supervisor.name;
            supervisor.finish().await;
            self.board.remove(name);
        }
        for launch in launches(config, home, exe_dir().as_deref()) {
            if names.iter().any(|name| name == launch.name) {
                self.launch(launch);
            }
        }
    }

    /// Stops every bridge and waits until they are gone.
    pub async fn stop(self) {
        for supervisor in &self.supervisors {
            let _ = supervisor.stop.send(true);
        }
        for supervisor in self.supervisors {
            let _ = supervisor.task.await;
        }
    }
}

impl Supervisor {
    async fn finish(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// How long a bridge told to stop may take to finish what it is sending
/// and store its cursor, before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// Stops a bridge: SIGTERM, so it finishes the message it is sending and
/// stores its cursor (the daemon still serves it meanwhile), then SIGKILL
/// if it has not exited within [`GRACE`].
async fn finish(child: &mut tokio::process::Child, name: &str) {
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        // SAFETY: `kill` only sends a signal; the child is ours and not yet
        // waited for, so its pid cannot have been reused.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        if tokio::time::timeout(GRACE, child.wait()).await.is_ok() {
            return;
        }
        tracing::warn!("the {name} bridge did not stop within {GRACE:?}; killing it");
    }
    let _ = child.kill().await;
}

/// Keeps one bridge running until `stop` turns true.
async fn supervise(launch: Launch, mut stop: watch::Receiver<bool>, board: BridgeBoard) {
    let name = launch.name;
    // One for every start of the bridge: a restart gets no fresh burst.
    let log = ChildLog::new(name);
    let mut wait = FIRST_WAIT;
    loop {
        let started = Instant::now();
        let spawned = Command::new(&launch.program)
            .args(&launch.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        match spawned {
            Err(err) => {
                let why = format!(
                    "cannot start the {name} bridge ({}): {err}; install `hearth` next to hearthd",
                    launch.program.display()
                );
                tracing::error!("{why}");
                board.set(name, "restarting", Some(why));
            }
            Ok(mut child) => {
                tracing::info!(
                    "{name} bridge started (pid {})",
                    child.id().unwrap_or_default()
                );
                board.set(name, "running", None);
                let words = child
                    .stderr
                    .take()
                    .map(|stderr| tokio::spawn(relay(log.clone(), stderr)));
                let status = tokio::select! {
                    status = child.wait() => status,
                    () = stopped(&mut stop) => {
                        finish(&mut child, name).await;
                        board.set(name, "stopped", None);
                        return;
                    }
                };
                let last_words = match words {
                    Some(words) => words.await.ok().flatten(),
                    None => None,
                };
                match status {
                    Ok(status) if status.code() == Some(EXIT_CONFIG_CODE) => {
                        tracing::error!(
                            "the {name} bridge cannot run as configured (it said why above); fix config.toml, then `hearth reload`"
                        );
                        board.set(name, "failed", last_words);
                        return;
                    }
                    Ok(status) => tracing::warn!("the {name} bridge exited ({status})"),
                    Err(err) => tracing::warn!("the {name} bridge is lost: {err}"),
                }
                board.set(name, "restarting", last_words);
                if started.elapsed() >= STEADY {
                    wait = FIRST_WAIT;
                }
            }
        }
        tracing::info!("starting the {} bridge again in {wait:?}", launch.name);
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = stopped(&mut stop) => return,
        }
        wait = (wait * 2).min(LONGEST_WAIT);
    }
}

/// Copies what a bridge writes on stderr into the daemon's log, within
/// the bounds of [`ChildLog`]; returns its last line, its last words when
/// it exits.
async fn relay(log: ChildLog, stderr: tokio::process::ChildStderr) -> Option<String> {
    let last = Mutex::new(None);
    log.copy(stderr, &last).await;
    last.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// Completes once the daemon stops (or its `Bridges` is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    // The guard `wait_for` returns is dropped here, never held across an await.
    let _ = stop.wait_for(|stop| *stop).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config::parse(Path::new("config.toml"), text).unwrap()
    }

    #[test]
    fn only_configured_bridges_start_with_the_home_they_share() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hearth"), "").unwrap();
        let home = Home::at(Path::new("/h"));
        assert!(launches(&config(""), &home, Some(dir.path())).is_empty());

        let telegram = config("[telegram]\nallow = [1]\n");
        let launched = launches(&telegram, &home, Some(dir.path()));
        assert_eq!(
            launched,
            vec![Launch {
                name: "telegram",
                program: dir.path().join("hearth"),
                args: vec!["telegram".into(), "--home".into(), "/h".into()],
            }]
        );

        let xdg = Home {
            config_dir: "/c/hearth".into(),
            data_dir: "/d/hearth".into(),
            runtime_dir: "/r/hearth".into(),
        };
        let launched = launches(&telegram, &xdg, Some(Path::new("/nonexistent")));
        assert_eq!(launched[0].program, PathBuf::from("hearth"));
        assert_eq!(launched[0].args, vec!["telegram".to_string()]);

        let both =
            config("[telegram]\nallow = [1]\n\n[whatsapp]\nphone_number_id = \"1\"\nallow = []\n");
        let launched = launches(&both, &home, Some(dir.path()));
        let names: Vec<_> = launched
            .iter()
            .map(|l| (l.name, l.args[0].as_str()))
            .collect();
        assert_eq!(
            names,
            vec![("telegram", "telegram"), ("whatsapp", "whatsapp")]
        );
        assert_eq!(
            launched[1].args[1..],
            ["--home".to_string(), "/h".to_string()]
        );

        let signal = config("[signal]\naccount = \"+15550001111\"\nallow = []\n");
        let launched = launches(&signal, &home, Some(dir.path()));
        assert_eq!(launched[0].name, "signal");
        assert_eq!(launched[0].args, vec!["signal", "--home", "/h"]);
    }
}
