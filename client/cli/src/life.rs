//! The daemon's life from the command line: `hearth stop`, `hearth restart`
//! and `hearth reload`.
//!
//! `stop` asks the daemon to stop (a `stop` frame) and waits until its
//! process has let go of the home's lock, so the next command finds it
//! gone. `restart` does the same, then starts a daemon in the background as
//! `hearth` does and waits until it answers; a daemon that a systemd user
//! service runs is restarted by systemd instead, so the service stays in
//! charge. `reload` asks the daemon to read `config.toml` again and prints
//! what it applied, or why it refused.

use hearth_client::running::{connect_running, daemon_absent, describe_home, CommandError};
use hearth_client::Connection;
use hearth_protocol::home::Home;
use hearth_protocol::lock;
use hearth_protocol::{ClientFrame, ServerFrame};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;
use tokio::time::Instant;

/// How long a daemon gets to stop: it lets its bridges finish what they
/// send and its tools end before it exits.
const STOP_WAIT: Duration = Duration::from_secs(60);
/// How often the lock is tried while the daemon stops.
const POLL: Duration = Duration::from_millis(50);

/// The systemd user unit `hearth service install` writes.
pub const UNIT_NAME: &str = "hearthd.service";

#[derive(Debug, thiserror::Error)]
pub enum LifeError {
    #[error(transparent)]
    Command(#[from] CommandError),
    #[error("hearthd (pid {pid}) did not stop within {} s; its log says why", STOP_WAIT.as_secs())]
    StillRunning { pid: u32 },
    #[error("cannot start hearthd again: {0}")]
    Start(#[from] crate::terminal::TerminalError),
    #[error(
        "`systemctl --user restart hearthd` failed ({0}); see `systemctl --user status hearthd`"
    )]
    Systemctl(String),
    /// The configuration would not start: the running daemon is left alone.
    #[error("{0}\nhearthd was not restarted: the one running keeps its configuration; fix the file and run `hearth restart` again")]
    BadConfig(String),
}

/// Stops the home's daemon and waits until it has exited.
pub async fn stop(home: &Home, out: &mut dyn Write) -> Result<ExitCode, LifeError> {
    match stop_daemon(home, false).await? {
        Some(pid) => writeln!(out, "hearthd (pid {pid}) stopped").map_err(CommandError::from)?,
        None => writeln!(
            out,
            "no hearthd is running for home {}",
            describe_home(home)
        )
        .map_err(CommandError::from)?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Stops the home's daemon (when one runs) and starts a new one, waiting
/// until it answers.
pub async fn restart(
    home: &Home,
    explicit_home: Option<&Path>,
    out: &mut dyn Write,
) -> Result<ExitCode, LifeError> {
    if let Some(pid) = running_pid(home).await {
        // A file the new daemon would refuse leaves the running one be.
        crate::launch::check_config(explicit_home).map_err(LifeError::BadConfig)?;
        if in_service(pid) {
            return restart_service(home, out).await;
        }
    }
    stop_daemon(home, true).await?;
    let (connection, _) =
        crate::launch::attach(home, explicit_home, None, "hearth-restart").await?;
    let pid = daemon_pid(connection).await;
    let pid = pid.map_or_else(String::new, |pid| format!(" (pid {pid})"));
    writeln!(out, "hearthd{pid} is running").map_err(CommandError::from)?;
    Ok(ExitCode::SUCCESS)
}

/// Asks the daemon to read its configuration again.
pub async fn reload(home: &Home, out: &mut dyn Write) -> Result<ExitCode, LifeError> {
    let (mut connection, _) = connect_running(home, None, "hearth-reload", None).await?;
    let answer = connection
        .request(&ClientFrame::Reload, &mut |_| {})
        .await
        .map_err(CommandError::from)?;
    connection.close().await;
    let mut say = |text: String| writeln!(out, "{text}").map_err(CommandError::from);
    match answer {
        ServerFrame::Reloaded {
            applied,
            needs_restart,
        } => {
            if applied.is_empty() && needs_restart.is_empty() {
                say("reloaded: nothing changed".to_string())?;
            }
            if !applied.is_empty() {
                say(format!("reloaded; applied now: {}", applied.join(", ")))?;
            }
            if !needs_restart.is_empty() {
                say(format!(
                    "changed but not applied until `hearth restart`: {}",
                    needs_restart.join(", ")
                ))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        ServerFrame::Error { message, .. } => Err(CommandError::Refused(message).into()),
        other => Err(CommandError::Unexpected(other.encode()).into()),
    }
}

/// Sends `stop` and waits for the lock; the stopped daemon's pid, or none
/// when no daemon answered.
async fn stop_daemon(home: &Home, restart: bool) -> Result<Option<u32>, LifeError> {
    let mut connection = match connect_running(home, None, "hearth-stop", None).await {
        Ok((connection, _)) => connection,
        Err(CommandError::NoDaemon { .. }) => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let answer = connection
        .request(&ClientFrame::Stop { restart }, &mut |_| {})
        .await
        .map_err(CommandError::from)?;
    let pid = match answer {
        ServerFrame::Stopping { pid } => pid,
        ServerFrame::Error { message, .. } => return Err(CommandError::Refused(message).into()),
        other => return Err(CommandError::Unexpected(other.encode()).into()),
    };
    // The daemon closes the connection as it stops; read until it does.
    while let Ok(Some(_)) = connection.next().await {}
    let deadline = Instant::now() + STOP_WAIT;
    while lock::held(&home.lock_file()) {
        if Instant::now() >= deadline {
            return Err(LifeError::StillRunning { pid });
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(Some(pid))
}

/// The pid the home's lock file names, when a daemon holds it.
pub fn lock_holder(home: &Home) -> Option<u32> {
    lock::holder(&home.lock_file())
}

/// The pid of the daemon that answers on the home's socket.
async fn running_pid(home: &Home) -> Option<u32> {
    match Connection::open(home, "hearth-restart", None).await {
        Ok((connection, _)) => daemon_pid(connection).await,
        Err(err) if daemon_absent(&err) => None,
        Err(_) => lock_holder(home),
    }
}

async fn daemon_pid(mut connection: Connection) -> Option<u32> {
    let answer = connection.request(&ClientFrame::Status, &mut |_| {}).await;
    connection.close().await;
    match answer {
        Ok(ServerFrame::Status(status)) => Some(status.pid),
        _ => None,
    }
}

/// Whether process `pid` runs in the systemd user service's control group.
pub fn in_service(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup")).is_ok_and(|groups| {
        groups
            .lines()
            .any(|line| line.ends_with(&format!("/{UNIT_NAME}")))
    })
}

async fn restart_service(home: &Home, out: &mut dyn Write) -> Result<ExitCode, LifeError> {
    let status = tokio::process::Command::new("systemctl")
        .args(["--user", "restart", UNIT_NAME])
        .status()
        .await
        .map_err(|err| LifeError::Systemctl(err.to_string()))?;
    if !status.success() {
        return Err(LifeError::Systemctl(status.to_string()));
    }
    let deadline = Instant::now() + STOP_WAIT;
    loop {
        if let Ok((connection, _)) = Connection::open(home, "hearth-restart", None).await {
            let pid = daemon_pid(connection).await.unwrap_or_default();
            writeln!(out, "hearthd (pid {pid}) is running, restarted by systemd")
                .map_err(CommandError::from)?;
            return Ok(ExitCode::SUCCESS);
        }
        if Instant::now() >= deadline {
            return Err(LifeError::Systemctl(
                "the service did not answer after its restart".into(),
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

    #[test]
    fn a_lock_nobody_holds_is_free_and_a_held_one_names_its_pid() {
        let dir = std::env::temp_dir().join(format!("hearth-life-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let home = Home::at(&dir);
        assert!(!lock::held(&home.lock_file()));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(home.lock_file())
            .unwrap();
        // Another open file description of the same file: flock conflicts.
        let other = OpenOptions::new()
            .write(true)
            .open(home.lock_file())
            .unwrap();
        other.try_lock().unwrap();
        std::fs::write(home.lock_file(), "4242\n").unwrap();
        assert!(lock::held(&home.lock_file()));
        assert_eq!(lock_holder(&home), Some(4242));
        drop(other);
        drop(file);
        assert!(!lock::held(&home.lock_file()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
