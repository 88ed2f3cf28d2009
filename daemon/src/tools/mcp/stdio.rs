//! A stdio MCP server: a child process that speaks JSON-RPC, one message a
//! line, on its stdin and stdout.
//!
//! The child leads its own process group, like a shell command
//! (`tools/process.rs`): it dies with hearthd, and killing it kills
//! whatever it started. Its environment is cleared but for
//! [`SAFE_ENV`](crate::config::mcp::SAFE_ENV) and its table's `env`, so it never
//! sees hearthd's API keys. Its stderr goes to hearthd.log a line at a
//! time, within the bounds of [`ChildLog`] (cut lines, a rate and a total
//! per server, across its restarts), and the last line is kept for the
//! error shown when it fails.
//!
//! Its stdout passes through a relay before the SDK reads it: a line that is
//! not JSON (the SDK would skip it and leave the call waiting) or longer
//! than [`MAX_LINE`] ends the connection at once, with the line named in
//! the fault, so the call that waited is answered and the server restarted.

use crate::child_log::ChildLog;
use crate::config::mcp::{expand, ExpandError, McpServerConfig, SAFE_ENV};
use crate::tools::{Exit, Processes, Running};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::net::unix::pipe;
use tokio::sync::oneshot;

/// The longest message line a server may send (an image result is one line).
pub const MAX_LINE: usize = 32 * 1024 * 1024;

/// Characters of a bad line or a stderr line kept for an error message.
const SHOWN: usize = 200;

/// Why a stdio server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("its env: {0}")]
    Env(#[from] ExpandError),
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
}

/// What the SDK reads (the relayed stdout) and writes (the child's stdin).
pub type Pipes = (DuplexStream, pipe::Sender);

/// A running stdio server.
pub struct Child {
    /// How the child ended, once it has.
    pub exit: oneshot::Receiver<Option<Exit>>,
    /// Set by the relay when the child broke the protocol.
    pub fault: Arc<Mutex<Option<String>>>,
    /// The last line the child wrote to stderr.
    pub last_stderr: Arc<Mutex<Option<String>>>,
    /// Kills the child's group when dropped.
    pub _kill: crate::tools::KillOnDrop,
}

/// Starts `config`'s command in `cwd`. `lookup` finds the secrets its `env`
/// names.
pub async fn start(
    config: &McpServerConfig,
    command: &str,
    args: &[String],
    cwd: &Path,
    processes: &Processes,
    lookup: &(dyn Fn(&str) -> Option<String> + Send + Sync),
    stderr_log: &ChildLog,
) -> Result<(Pipes, Child), StartError> {
    let mut child = Command::new(command);
    child.args(args).current_dir(cwd);
    for name in SAFE_ENV {
        if let Some(value) = std::env::var_os(name) {
            child.env(name, value);
        }
    }
    for (name, value) in &config.env {
        child.env(name, expand(value, lookup)?);
    }
    let spawn_error = |source| StartError::Spawn {
        command: command.to_string(),
        source,
    };
    let Running {
        stdin,
        stdout,
        stderr,
        group: _,
        exit,
        kill_on_drop,
    } = processes.spawn_speaker(child).await.map_err(spawn_error)?;
    let missing = || spawn_error(std::io::Error::other("the child's stdin is missing"));
    let stdin =
        pipe::Sender::from_owned_fd(stdin.ok_or_else(missing)?.into()).map_err(spawn_error)?;
    let stdout = pipe::Receiver::from_owned_fd(stdout.into()).map_err(spawn_error)?;
    let stderr = pipe::Receiver::from_owned_fd(stderr.into()).map_err(spawn_error)?;
    let (relayed, sdk_side) = tokio::io::duplex(256 * 1024);
    let fault = Arc::new(Mutex::new(None));
    tokio::spawn(relay(stdout, relayed, fault.clone()));
    let last_stderr = Arc::new(Mutex::new(None));
    let log = stderr_log.clone();
    let last = last_stderr.clone();
    tokio::spawn(async move { log.copy(stderr, &last).await });
    let child = Child {
        exit,
        fault,
        last_stderr,
        _kill: kill_on_drop,
    };
    Ok(((sdk_side, stdin), child))
}

impl Child {
    /// Why the child's connection ended: the protocol fault the relay saw,
    /// else how the child exited (waiting for that a moment), else that it
    /// closed its output; with its last line on stderr.
    pub async fn why_ended(&mut self) -> String {
        let mut why = match read(&self.fault) {
            Some(fault) => fault,
            None => match tokio::time::timeout(Duration::from_secs(2), &mut self.exit).await {
                Ok(Ok(Some(Exit::Code(code)))) => format!("it exited with status {code}"),
                Ok(Ok(Some(Exit::Signal(signal)))) => format!("it was killed by signal {signal}"),
                _ => "it closed its connection".to_string(),
            },
        };
        if let Some(last) = read(&self.last_stderr) {
            why.push_str(&format!("; its last line on stderr: {last}"));
        }
        why
    }
}

/// The text of a shared slot; a poisoned lock still holds a whole value.
pub fn read(slot: &Mutex<Option<String>>) -> Option<String> {
    slot.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

fn set(slot: &Mutex<Option<String>>, text: String) {
    *slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(text);
}

fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.chars().count() > SHOWN {
        format!("{}…", text.chars().take(SHOWN).collect::<String>())
    } else {
        text.to_string()
    }
}

/// Copies the child's stdout to the SDK a whole JSON line at a time; stops
/// at the first line that is not JSON, recording it in `fault`.
async fn relay(
    stdout: pipe::Receiver,
    mut to_sdk: DuplexStream,
    fault: Arc<Mutex<Option<String>>>,
) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => return,
            Ok(_) if line.len() > MAX_LINE => {
                set(
                    &fault,
                    format!("it sent a line longer than {MAX_LINE} bytes"),
                );
                return;
            }
            Ok(_) => {}
            Err(err) => {
                set(&fault, format!("its output could not be read: {err}"));
                return;
            }
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if serde_json::from_slice::<serde_json::Value>(&line).is_err() {
            set(
                &fault,
                format!("it sent a line that is not JSON: `{}`", shown(&line)),
            );
            return;
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if to_sdk.write_all(&line).await.is_err() {
            return;
        }
    }
}
