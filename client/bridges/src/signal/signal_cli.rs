//! signal-cli started by the bridge (`[signal] command`): `PROGRAM -a
//! ACCOUNT daemon --socket PATH --receive-mode manual`, its socket in the
//! home's runtime folder. Manual receiving means signal-cli takes messages
//! from Signal's servers only while the bridge is subscribed, so what
//! arrives while the bridge is down waits on the servers. The process is
//! the bridge's: it is killed when the bridge stops, and hearthd, which
//! supervises the bridge, starts both again.

use super::rpc::{Notifications, Rpc, RpcError};
use hearth_protocol::home::Home;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::process::{Child, Command};

/// How long signal-cli (a Java program) may take to listen.
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How often the socket is tried while it starts.
const TRY_EVERY: Duration = Duration::from_millis(250);

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot start `{program}`: {source}; install signal-cli (https://github.com/AsamK/signal-cli), or set [signal] socket or tcp to reach one that runs")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("`{program}` exited before it listened ({status}); is {account} registered or linked? `{program} -a {account} receive` says more")]
    Exited {
        program: String,
        account: String,
        status: ExitStatus,
    },
    #[error("`{program}` did not listen on {socket} within {after:?}")]
    NotListening {
        program: String,
        socket: PathBuf,
        after: Duration,
    },
}

/// The running signal-cli; killed when dropped.
pub struct SignalCli {
    _child: Child,
}

/// Where the started signal-cli listens.
pub fn socket_path(home: &Home) -> PathBuf {
    home.runtime_dir.join("signal-cli.socket")
}

/// The arguments signal-cli is started with (pure).
pub fn args(account: &str, socket: &Path) -> Vec<String> {
    [
        "-a",
        account,
        "daemon",
        "--socket",
        &socket.display().to_string(),
        "--receive-mode",
        "manual",
        "--no-receive-stdout",
    ]
    .map(str::to_string)
    .to_vec()
}

/// Starts `program` for `account` and connects once it listens on `socket`.
pub async fn start(
    program: &str,
    account: &str,
    socket: &Path,
) -> Result<(SignalCli, Rpc, Notifications), StartError> {
    // A socket left by a signal-cli that died would keep the new one from listening.
    let _ = std::fs::remove_file(socket);
    let mut child = Command::new(program)
        .args(args(account, socket))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| StartError::Spawn {
            program: program.to_string(),
            source,
        })?;
    tracing::info!(
        "started {program} (pid {}) for {account}",
        child.id().unwrap_or_default()
    );
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(StartError::Exited {
                program: program.to_string(),
                account: account.to_string(),
                status,
            });
        }
        match Rpc::unix(socket, account).await {
            Ok((rpc, notifications)) => {
                return Ok((SignalCli { _child: child }, rpc, notifications))
            }
            Err(RpcError::Connect { .. }) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(TRY_EVERY).await;
            }
            Err(_) => {
                return Err(StartError::NotListening {
                    program: program.to_string(),
                    socket: socket.to_path_buf(),
                    after: START_TIMEOUT,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_cli_runs_as_a_daemon_on_a_socket_receiving_on_demand() {
        assert_eq!(
            args("+15550001111", Path::new("/run/h/signal-cli.socket")).join(" "),
            "-a +15550001111 daemon --socket /run/h/signal-cli.socket --receive-mode manual --no-receive-stdout"
        );
    }

    #[tokio::test]
    async fn a_program_that_is_not_there_says_how_to_fix_it() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("s.socket");
        let Err(err) = start("/nonexistent/signal-cli", "+15550001111", &socket).await else {
            panic!("started");
        };
        let said = err.to_string();
        assert!(said.contains("install signal-cli"), "{said}");
    }
}
