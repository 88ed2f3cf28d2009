//! hearth-matrix, the program that holds the Matrix account (matrix-sdk,
//! its end-to-end encryption and its store; see `client/matrix-client/`),
//! started by the bridge and spoken with over its stdin and stdout: one
//! JSON object a line each way. Requests carry an `id` and are answered
//! with a `result` or an `error` of the same id; what the account receives
//! comes as events, queued in order for the inbound half.
//!
//! Why a program of its own: matrix-sdk's store links a different SQLite
//! than hearth's, and one build links one. The process is the bridge's: it
//! is killed when the bridge stops, and hearthd starts both again.

use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The longest line read: a message's file as base64 (hearth-matrix
/// fetches at most 25 MB), with room to spare.
const MAX_LINE_BYTES: u64 = 40 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    #[error("cannot start `{program}`: {source}; build it with `cargo install --path client/matrix-client` (see docs/matrix.md), or set [matrix] command to where it is")]
    Spawn {
        program: String,
        source: std::io::Error,
    },
    #[error("Matrix: {method}: {message}")]
    Refused { method: String, message: String },
    #[error("hearth-matrix stopped")]
    Closed,
    #[error("hearth-matrix did not answer {method} within {after:?}")]
    Timeout { method: String, after: Duration },
    #[error("cannot write to hearth-matrix: {0}")]
    Write(std::io::Error),
}

type Answer = Result<Value, SidecarError>;

/// The requests waiting for their answers, by id, and whether the program
/// went away (then no answer can come).
#[derive(Default)]
struct Waiting {
    requests: HashMap<u64, (String, oneshot::Sender<Answer>)>,
    closed: bool,
}

type Pending = Arc<Mutex<Waiting>>;

/// What the account received, in order.
pub type Events = mpsc::UnboundedReceiver<Event>;

/// A file of a message, fetched and decrypted by hearth-matrix.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Media {
    pub name: String,
    #[serde(default)]
    pub media_type: Option<String>,
    /// The bytes as base64; absent when they could not be fetched.
    #[serde(default)]
    pub data: Option<String>,
    /// Why the bytes are absent.
    #[serde(default)]
    pub error: Option<String>,
}

/// Something that happened in a room the account is in.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The first sync is done.
    Ready,
    Invite {
        room: String,
        inviter: String,
        #[serde(default)]
        direct: bool,
    },
    Member {
        room: String,
        user: String,
        membership: String,
    },
    /// A message from someone else, decrypted.
    Message {
        room: String,
        event_id: String,
        sender: String,
        kind: String,
        body: String,
        #[serde(default)]
        html: Option<String>,
        #[serde(default)]
        reply_to: Option<String>,
        #[serde(default)]
        thread: Option<String>,
        #[serde(default)]
        encrypted: bool,
        #[serde(default)]
        media: Option<Media>,
    },
    Reaction {
        room: String,
        event_id: String,
        sender: String,
        target: String,
        key: String,
    },
    /// A message that could not be decrypted.
    Undecryptable {
        room: String,
        event_id: String,
        sender: String,
    },
    SyncError {
        message: String,
    },
    /// An event of a later hearth-matrix: skipped.
    #[serde(other)]
    Unknown,
}

/// A running hearth-matrix; killed when dropped.
pub struct Sidecar {
    stdin: tokio::sync::Mutex<ChildStdin>,
    pending: Pending,
    next_id: AtomicU64,
    reader: JoinHandle<()>,
    _child: Child,
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Sidecar {
    /// Starts `program --store STORE`; its stderr goes where the bridge's
    /// goes (hearthd's log).
    pub fn start(program: &str, store: &Path) -> Result<(Sidecar, Events), SidecarError> {
        let mut child = Command::new(program)
            .arg("--store")
            .arg(store)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| SidecarError::Spawn {
                program: program.to_string(),
                source,
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            // Both were asked for as pipes just above.
            return Err(SidecarError::Closed);
        };
        let pending: Pending = Arc::default();
        let (events_in, events) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_lines(stdout, pending.clone(), events_in));
        let sidecar = Sidecar {
            stdin: tokio::sync::Mutex::new(stdin),
            pending,
            next_id: AtomicU64::new(1),
            reader,
            _child: child,
        };
        Ok((sidecar, events))
    }

    /// Asks `method` with `params` (an object) and waits at most `timeout`.
    pub async fn call(&self, method: &str, params: Value, timeout: Duration) -> Answer {
        let mut request = match params {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        request.insert("id".into(), json!(id));
        request.insert("method".into(), json!(method));
        let (answered, answer) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.closed {
                return Err(SidecarError::Closed);
            }
            pending.requests.insert(id, (method.to_string(), answered));
        }
        let mut line = Value::Object(request).to_string();
        line.push('\n');
        let written = {
            let mut stdin = self.stdin.lock().await;
            match stdin.write_all(line.as_bytes()).await {
                Ok(()) => stdin.flush().await,
                Err(err) => Err(err),
            }
        };
        if let Err(err) = written {
            lock(&self.pending).requests.remove(&id);
            return Err(SidecarError::Write(err));
        }
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(SidecarError::Closed),
            Err(_) => {
                lock(&self.pending).requests.remove(&id);
                Err(SidecarError::Timeout {
                    method: method.to_string(),
                    after: timeout,
                })
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A plain map: a panic while it was written leaves it usable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads lines until the program ends: answers to their requests, events
/// to `events`. Then every waiting request fails and the events end.
async fn read_lines(stdout: ChildStdout, pending: Pending, events: mpsc::UnboundedSender<Event>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) | Err(_) => break,
            Ok(_) if !line.ends_with(b"\n") && line.len() as u64 >= MAX_LINE_BYTES => {
                tracing::warn!("hearth-matrix sent a line over {MAX_LINE_BYTES} bytes; stopping");
                break;
            }
            Ok(_) => {}
        }
        let Ok(value) = serde_json::from_slice::<Value>(&line) else {
            tracing::warn!("hearth-matrix sent a line that is not JSON; skipped");
            continue;
        };
        match value.get("id").and_then(Value::as_u64) {
            Some(id) => {
                let Some((method, answered)) = lock(&pending).requests.remove(&id) else {
                    continue;
                };
                let answer = match value.get("error").and_then(Value::as_str) {
                    Some(message) => Err(SidecarError::Refused {
                        method,
                        message: message.to_string(),
                    }),
                    None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = answered.send(answer);
            }
            None => match serde_json::from_value::<Event>(value) {
                Ok(event) => {
                    let _ = events.send(event);
                }
                Err(err) => tracing::warn!("hearth-matrix sent an event not understood: {err}"),
            },
        }
    }
    let mut pending = lock(&pending);
    pending.closed = true;
    for (_, (_, answered)) in pending.requests.drain() {
        let _ = answered.send(Err(SidecarError::Closed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_read_as_hearth_matrix_writes_them() {
        let line = r#"{"event":"message","room":"!r:x","event_id":"$e","sender":"@a:x","kind":"text","body":"hi","encrypted":true}"#;
        let event: Event = serde_json::from_str(line).unwrap();
        assert!(matches!(event, Event::Message { ref body, encrypted: true, .. } if body == "hi"));
        let later: Event = serde_json::from_str(r#"{"event":"presence","x":1}"#).unwrap();
        assert_eq!(later, Event::Unknown);
    }
}
