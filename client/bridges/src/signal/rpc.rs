//! signal-cli's JSON-RPC interface (`signal-cli-jsonrpc(5)`): one JSON
//! object a line each way over a Unix or TCP socket. Requests carry an `id`
//! and are answered with a `result` or an `error` of the same id; messages
//! that arrive come as `receive` notifications, without an id.
//!
//! One task reads the connection: it hands each answer to the request that
//! waits for it and queues the notifications, in order, for the inbound
//! half. When signal-cli goes away every waiting request fails and the
//! queue ends, so the bridge stops and hearthd starts it again.

use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// The longest line read from signal-cli: an attachment's base64 (see
/// `getAttachment`) of the largest file hearth takes, with room to spare.
const MAX_LINE_BYTES: u64 = 40 * 1024 * 1024;

/// signal-cli's error code for a send refused for rate limiting.
pub const RATE_LIMIT_ERROR: i64 = -5;
/// signal-cli's error code for a recipient whose safety number changed.
pub const UNTRUSTED_KEY_ERROR: i64 = -4;

#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    #[error("cannot reach signal-cli at {at}: {source}")]
    Connect { at: String, source: std::io::Error },
    #[error("signal-cli answered {method} with error {code}: {message}")]
    Refused {
        method: String,
        code: i64,
        message: String,
        /// What signal-cli adds (a send's results, under `response`).
        data: Option<Value>,
    },
    #[error("signal-cli closed the connection")]
    Closed,
    #[error("signal-cli did not answer {method} within {after:?}")]
    Timeout { method: String, after: Duration },
    #[error("cannot write to signal-cli: {0}")]
    Write(std::io::Error),
}

/// What a request gets: its `result`, or why not.
type Answer = Result<Value, RpcError>;

/// The requests waiting for their answers, by id, and whether the
/// connection ended (then no answer can come).
#[derive(Default)]
struct Waiting {
    requests: HashMap<u64, (String, oneshot::Sender<Answer>)>,
    closed: bool,
}

type Pending = Arc<Mutex<Waiting>>;

/// The `receive` notifications, each the object that holds the
/// `envelope` (the same with or without a subscription).
pub type Notifications = mpsc::UnboundedReceiver<Value>;

/// A connection to signal-cli's JSON-RPC interface.
pub struct Rpc {
    writer: tokio::sync::Mutex<Box<dyn AsyncWrite + Send + Unpin>>,
    pending: Pending,
    next_id: AtomicU64,
    /// The account every request names, for a signal-cli that serves several.
    account: String,
    reader: JoinHandle<()>,
}

impl Drop for Rpc {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Rpc {
    /// Connects to a `signal-cli daemon --socket PATH`.
    pub async fn unix(path: &Path, account: &str) -> Result<(Rpc, Notifications), RpcError> {
        let stream = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|source| RpcError::Connect {
                at: path.display().to_string(),
                source,
            })?;
        let (read, write) = stream.into_split();
        Ok(Rpc::over(read, write, account))
    }

    /// Connects to a `signal-cli daemon --tcp HOST:PORT`.
    pub async fn tcp(address: &str, account: &str) -> Result<(Rpc, Notifications), RpcError> {
        let stream = tokio::net::TcpStream::connect(address)
            .await
            .map_err(|source| RpcError::Connect {
                at: address.to_string(),
                source,
            })?;
        let (read, write) = stream.into_split();
        Ok(Rpc::over(read, write, account))
    }

    /// Speaks JSON-RPC over a connection's two halves.
    pub fn over(
        read: impl AsyncRead + Send + Unpin + 'static,
        write: impl AsyncWrite + Send + Unpin + 'static,
        account: &str,
    ) -> (Rpc, Notifications) {
        let pending: Pending = Arc::default();
        let (notify, notifications) = mpsc::unbounded_channel();
        let reader = tokio::spawn(read_answers(read, pending.clone(), notify));
        let rpc = Rpc {
            writer: tokio::sync::Mutex::new(Box::new(write)),
            pending,
            next_id: AtomicU64::new(1),
            account: account.to_string(),
            reader,
        };
        (rpc, notifications)
    }

    /// Calls `method` with `params` (an object; the account is added) and
    /// waits at most `timeout` for its answer.
    pub async fn call(&self, method: &str, params: Value, timeout: Duration) -> Answer {
        let mut params = match params {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        params.insert("account".into(), Value::String(self.account.clone()));
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answered, answer) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.closed {
                return Err(RpcError::Closed);
            }
            pending.requests.insert(id, (method.to_string(), answered));
        }
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut line = request.to_string();
        line.push('\n');
        let written = {
            let mut writer = self.writer.lock().await;
            match writer.write_all(line.as_bytes()).await {
                Ok(()) => writer.flush().await,
                Err(err) => Err(err),
            }
        };
        if let Err(err) = written {
            lock(&self.pending).requests.remove(&id);
            return Err(RpcError::Write(err));
        }
        match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(RpcError::Closed),
            Err(_) => {
                lock(&self.pending).requests.remove(&id);
                Err(RpcError::Timeout {
                    method: method.to_string(),
                    after: timeout,
                })
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Plain maps: a panic while one was written leaves it usable.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads lines until the connection ends (or sends a line over the
/// limit): answers to their requests, `receive` notifications to `notify`.
async fn read_answers(
    read: impl AsyncRead + Unpin,
    pending: Pending,
    notify: mpsc::UnboundedSender<Value>,
) {
    let mut reader = BufReader::new(read);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES)
            .read_until(b'\n', &mut line)
            .await;
        match read {
            Ok(0) => break,
            Ok(_) if !line.ends_with(b"\n") && line.len() as u64 >= MAX_LINE_BYTES => {
                tracing::warn!("signal-cli sent a line over {MAX_LINE_BYTES} bytes; disconnecting");
                break;
            }
            Ok(_) => {}
            Err(err) => {
                tracing::warn!("reading from signal-cli: {err}");
                break;
            }
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            tracing::warn!("signal-cli sent a line that is not JSON; skipped");
            continue;
        };
        take_message(message, &pending, &notify);
    }
    // Dropping the waiting senders fails their requests with `Closed`.
    let mut pending = lock(&pending);
    pending.requests.clear();
    pending.closed = true;
}

/// Hands one message from signal-cli to whom it is for.
fn take_message(message: Value, pending: &Pending, notify: &mpsc::UnboundedSender<Value>) {
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        if method == "receive" {
            let params = message.get("params").cloned().unwrap_or(Value::Null);
            // With a subscription, the envelope's object is under `result`.
            let received = match params.get("result") {
                Some(result) => result.clone(),
                None => params,
            };
            let _ = notify.send(received);
        }
        return;
    }
    let Some(id) = message.get("id").and_then(Value::as_u64) else {
        return;
    };
    let Some((method, answered)) = lock(pending).requests.remove(&id) else {
        return;
    };
    let answer = match message.get("error") {
        Some(error) => Err(RpcError::Refused {
            method,
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .to_string(),
            data: error.get("data").filter(|data| !data.is_null()).cloned(),
        }),
        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
    };
    let _ = answered.send(answer);
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{duplex, split};

    #[tokio::test]
    async fn answers_find_their_requests_and_notifications_queue_in_order() {
        let (ours, theirs) = duplex(64 * 1024);
        let (read, write) = split(ours);
        let (rpc, mut notifications) = Rpc::over(read, write, "+15550001111");
        let (their_read, mut their_write) = split(theirs);
        let server = tokio::spawn(async move {
            let mut lines = BufReader::new(their_read).lines();
            let request: Value =
                serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            assert_eq!(request["method"], "send");
            assert_eq!(request["params"]["account"], "+15550001111");
            assert_eq!(request["params"]["message"], "hi");
            let id = request["id"].clone();
            let out = [
                json!({"jsonrpc": "2.0", "method": "receive", "params": {"envelope": {"timestamp": 1}}}),
                json!({"jsonrpc": "2.0", "method": "receive", "params": {"subscription": 0, "result": {"envelope": {"timestamp": 2}}}}),
                json!({"jsonrpc": "2.0", "id": id, "result": {"timestamp": 99}}),
            ];
            for message in out {
                their_write
                    .write_all(format!("{message}\n").as_bytes())
                    .await
                    .unwrap();
            }
            let request: Value =
                serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
            let error = json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -5, "message": "rate limited", "data": null}});
            their_write
                .write_all(format!("{error}\n").as_bytes())
                .await
                .unwrap();
        });
        let answer = rpc
            .call("send", json!({"message": "hi"}), Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(answer["timestamp"], 99);
        assert_eq!(
            notifications.recv().await.unwrap()["envelope"]["timestamp"],
            1
        );
        assert_eq!(
            notifications.recv().await.unwrap()["envelope"]["timestamp"],
            2
        );
        let refused = rpc
            .call("send", json!({}), Duration::from_secs(10))
            .await
            .unwrap_err();
        assert!(
            matches!(
                refused,
                RpcError::Refused {
                    code: RATE_LIMIT_ERROR,
                    data: None,
                    ..
                }
            ),
            "{refused:?}"
        );
        server.await.unwrap();
        // The other side is gone: the queue ends and calls fail.
        assert!(notifications.recv().await.is_none());
        let closed = rpc.call("send", json!({}), Duration::from_secs(10)).await;
        assert!(matches!(closed, Err(RpcError::Closed)), "{closed:?}");
    }
}
