//! Attaching to a home's daemon, starting `hearthd` in the background when
//! none answers: only `hearth` with no subcommand does this.

use crate::terminal::TerminalError;
use hearth_client::running::{daemon_absent, describe_home};
use hearth_client::{Connection, Welcome};
use hearth_protocol::home::Home;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::time::Instant;

/// How long a freshly started daemon gets to answer on its socket.
const START_WAIT: Duration = Duration::from_secs(10);
/// How often the socket is tried while the daemon starts.
const START_POLL: Duration = Duration::from_millis(100);
/// How many lines of the daemon's output are shown when it exits at start.
const LOG_TAIL_LINES: usize = 30;

/// Connects to the home's daemon as `client` (following `agent`, the top
/// agent when `None`), starting one in the background when none answers.
pub async fn attach(
    home: &Home,
    explicit_home: Option<&Path>,
    agent: Option<&str>,
    client: &str,
) -> Result<(Connection, Welcome), TerminalError> {
    let socket = home.socket();
    match Connection::open_agent(home, client, None, agent).await {
        Ok(pair) => return Ok(pair),
        Err(err) if daemon_absent(&err) => {}
        Err(err) => return Err(err.into()),
    }
    let (mut daemon, log_start) = start_daemon(home, explicit_home)?;
    eprintln!("starting hearthd for home {}…", describe_home(home));
    let deadline = Instant::now() + START_WAIT;
    loop {
        tokio::time::sleep(START_POLL).await;
        match Connection::open_agent(home, client, None, agent).await {
            Ok(pair) => return Ok(pair),
            Err(err) if daemon_absent(&err) => {}
            Err(err) => return Err(err.into()),
        }
        if let Ok(Some(status)) = daemon.try_wait() {
            // Another `hearth` may have started the daemon first, and ours
            // quit because it was taken: one last look.
            if let Ok(pair) = Connection::open_agent(home, client, None, agent).await {
                return Ok(pair);
            }
            let log = home.daemon_log();
            let tail = read_log_tail(&log, log_start);
            return Err(TerminalError::DaemonExited { status, log, tail });
        }
        if Instant::now() >= deadline {
            return Err(TerminalError::StartTimeout {
                socket,
                seconds: START_WAIT.as_secs(),
                log: home.daemon_log(),
            });
        }
    }
}

/// Starts `hearthd` detached from this terminal: its own process group (so
/// Ctrl-C here never reaches it), no stdin, output appended to the home's
/// daemon log. Returns the child and where its output starts in the log.
fn start_daemon(home: &Home, explicit_home: Option<&Path>) -> Result<(Child, u64), TerminalError> {
    let prepare = |path: &Path| {
        let path = path.to_path_buf();
        move |source| TerminalError::Prepare { path, source }
    };
    // Private whatever the umask: the daemon's log holds the conversation's
    // outline (the binary also sets umask 077).
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&home.data_dir)
        .map_err(prepare(&home.data_dir))?;
    let log_path = home.daemon_log();
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .map_err(prepare(&log_path))?;
    let log_start = log.metadata().map(|meta| meta.len()).unwrap_or(0);
    let log_err = log.try_clone().map_err(prepare(&log_path))?;

    let mut command = Command::new(hearthd_program());
    if let Some(dir) = explicit_home {
        // Absolute, so the daemon finds the same home whatever it does with
        // its working directory.
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        command.arg("--home").arg(dir);
    }
    command
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0);
    match command.spawn() {
        Ok(child) => Ok((child, log_start)),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Err(TerminalError::DaemonMissing(err)),
        Err(err) => Err(TerminalError::Spawn(err)),
    }
}

/// `hearth verify`: runs `hearthd --verify` on the home's database, which
/// prints what it found; exits as it does (1 when the log was changed).
pub fn verify(explicit_home: Option<&Path>) -> Result<std::process::ExitCode, TerminalError> {
    let mut command = Command::new(hearthd_program());
    command.arg("--verify");
    if let Some(home) = explicit_home {
        command.arg("--home").arg(home);
    }
    let status = command.status().map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => TerminalError::DaemonMissing(err),
        _ => TerminalError::Spawn(err),
    })?;
    Ok(match status.code() {
        Some(0) => std::process::ExitCode::SUCCESS,
        _ => std::process::ExitCode::FAILURE,
    })
}

/// Runs `hearthd --check-config` on the home: `Err` with what it said when
/// the configuration would not start a daemon. A `hearthd` that cannot be
/// run is no verdict (starting it would say why), so that passes.
pub fn check_config(explicit_home: Option<&Path>) -> Result<(), String> {
    let mut command = Command::new(hearthd_program());
    command.arg("--check-config");
    if let Some(home) = explicit_home {
        command.arg("--home").arg(home);
    }
    match command.stdin(Stdio::null()).output() {
        Ok(output) if !output.status.success() => {
            let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
            Err(said)
        }
        _ => Ok(()),
    }
}

/// `hearthd` beside the running executable when it is there, else the name,
/// for a PATH lookup.
fn hearthd_program() -> PathBuf {
    if let Ok(exe) = std::env::current_exe() {
        let beside = exe.with_file_name("hearthd");
        if beside.is_file() {
            return beside;
        }
    }
    PathBuf::from("hearthd")
}

/// What the daemon wrote to its log since `start`, its last lines only.
fn read_log_tail(path: &Path, start: u64) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        if file.seek(SeekFrom::Start(start)).is_ok() {
            let mut bytes = Vec::new();
            let _ = file.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
    }
    let tail = last_lines(&text, LOG_TAIL_LINES);
    if tail.trim().is_empty() {
        "(it wrote nothing)".to_string()
    } else {
        tail
    }
}

/// The last `count` lines of `text`, without a trailing newline.
pub fn last_lines(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_tail_keeps_the_last_lines() {
        assert_eq!(last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines("a\n", 5), "a");
        assert_eq!(last_lines("", 5), "");
    }
}
