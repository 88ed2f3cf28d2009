//! One headless Chromium and the DevTools protocol spoken with it over
//! `--remote-debugging-pipe`: no port anyone else on the machine could
//! reach, only the two pipes hearthd holds.
//!
//! The protocol is JSON messages, each ended by a NUL byte: commands with
//! an `id` go in, answers with the same `id` and events come out. A reader
//! task answers each command's waiter, hands events to whoever listens
//! ([`Cdp::events`]), and decides every request a page makes
//! (`Fetch.requestPaused`) by the address rules (`super::addresses`), so a
//! page that navigates itself or loads from a refused address is stopped
//! even between the agent's actions.
//!
//! Chromium is started through the tools' [`Processes`]: in its own process
//! group, under the keeper, with `PR_SET_PDEATHSIG`, so it and every
//! process it starts end with its [`Chromium`] value, at the daemon's stop
//! (`kill_all`), and when the daemon dies, even by SIGKILL.

use super::addresses::Addresses;
use super::gate::Gate;
use crate::child_log::ChildLog;
use crate::tools::{KillOnDrop, Processes};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{broadcast, mpsc, oneshot};

/// The longest message Chromium may send (a screenshot is the largest).
const MAX_MESSAGE: usize = 32 * 1024 * 1024;

#[derive(Debug, Clone, thiserror::Error)]
pub enum CdpError {
    #[error("Chromium could not be started ({program}): {why}")]
    Start { program: String, why: String },
    #[error("the browser has closed{0}")]
    Closed(String),
    #[error("the browser refused {method}: {message}")]
    Refused { method: String, message: String },
}

/// An event Chromium sent: its method, parameters and session.
#[derive(Debug, Clone)]
pub struct Event {
    pub method: String,
    pub params: Value,
    pub session: Option<String>,
}

/// Waiters for answers, by command id.
type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, CdpError>>>>>;

/// The protocol's side of one running Chromium. Cheap to clone.
#[derive(Clone)]
pub struct Cdp {
    outgoing: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next_id: Arc<AtomicU64>,
    events: broadcast::Sender<Event>,
    /// Chromium's last line on stderr, named when it closes.
    last_words: Arc<Mutex<Option<String>>>,
}

/// A running Chromium: ended (its whole process group) when dropped.
pub struct Chromium {
    pub cdp: Cdp,
    _kill: KillOnDrop,
    /// Every connection's way out, closed with it.
    _gate: Gate,
    /// The leader's pid (the keeper's under hearthd), for tests and logs.
    pub pid: u32,
}

/// How one Chromium is started.
pub struct Launch<'a> {
    pub program: &'a str,
    pub profile: &'a Path,
    pub page_memory_mb: u64,
    pub no_sandbox: bool,
}

impl Chromium {
    /// Starts Chromium on `profile` and opens the protocol over its pipes;
    /// every request its pages make is decided by `addresses`.
    pub async fn start(
        launch: Launch<'_>,
        processes: &Processes,
        addresses: Arc<Addresses>,
        refused: Arc<Mutex<Vec<String>>>,
    ) -> Result<Chromium, CdpError> {
        let start_error = |why: String| CdpError::Start {
            program: launch.program.to_string(),
            why,
        };
        // Chromium reads commands on fd 3 and writes on fd 4; the shell
        // makes those of the pipes the spawner gives every speaker.
        // Chromium's "preload pages" setting off: it would connect ahead.
        let preferences = launch.profile.join("Default").join("Preferences");
        if !preferences.exists() {
            let _ = std::fs::create_dir_all(launch.profile.join("Default"));
            let _ = std::fs::write(&preferences, r#"{"net":{"network_prediction_options":2}}"#);
        }
        let gate = Gate::start(addresses.clone(), refused.clone())
            .await
            .map_err(|err| start_error(format!("its gate could not listen: {err}")))?;
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>&2"#)
            .arg(launch.program)
            .args(arguments(&launch, gate.port))
            .current_dir(launch.profile);
        // A speaker starts with an empty environment: Chromium gets a PATH
        // to find itself, and a home inside its profile for what it keeps
        // outside `--user-data-dir` (font caches, crash reports).
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        command
            .env("HOME", launch.profile)
            .env("XDG_CONFIG_HOME", launch.profile.join("config"))
            .env("XDG_CACHE_HOME", launch.profile.join("cache"));
        let running = processes
            .spawn_speaker(command)
            .await
            .map_err(|err| start_error(err.to_string()))?;
        let pid = running.group.id();
        let stdin = running
            .stdin
            .ok_or_else(|| start_error("its pipe is missing".to_string()))?;
        let writer = pipe::Sender::from_owned_fd(stdin.into())
            .map_err(|err| start_error(err.to_string()))?;
        let reader = pipe::Receiver::from_owned_fd(running.stdout.into())
            .map_err(|err| start_error(err.to_string()))?;
        let stderr = pipe::Receiver::from_owned_fd(running.stderr.into())
            .map_err(|err| start_error(err.to_string()))?;
        let last_words = Arc::new(Mutex::new(None));
        let log = ChildLog::new("browser");
        let words = last_words.clone();
        tokio::spawn(async move { log.copy(stderr, &words).await });
        let (outgoing, queue) = mpsc::unbounded_channel();
        tokio::spawn(write(writer, queue));
        let cdp = Cdp {
            outgoing,
            pending: Arc::default(),
            next_id: Arc::new(AtomicU64::new(1)),
            events: broadcast::channel(256).0,
            last_words,
        };
        tokio::spawn(read(reader, cdp.clone(), addresses, refused));
        Ok(Chromium {
            cdp,
            _kill: running.kill_on_drop,
            _gate: gate,
            pid,
        })
    }
}

/// Chromium's command line: headless, on its private profile, talking over
/// the pipes, with a page's script heap bounded and what phones home off.
fn arguments(launch: &Launch<'_>, gate: u16) -> Vec<String> {
    let mut arguments = vec![
        "--headless".to_string(),
        "--remote-debugging-pipe".to_string(),
        format!("--user-data-dir={}", launch.profile.display()),
        format!("--js-flags=--max-old-space-size={}", launch.page_memory_mb),
        "--disable-gpu".to_string(),
        "--disable-dev-shm-usage".to_string(),
        "--disable-background-networking".to_string(),
        "--disable-component-update".to_string(),
        "--disable-default-apps".to_string(),
        "--disable-extensions".to_string(),
        "--disable-sync".to_string(),
        "--no-first-run".to_string(),
        "--no-default-browser-check".to_string(),
        "--mute-audio".to_string(),
        "--deny-permission-prompts".to_string(),
        "--renderer-process-limit=4".to_string(),
        // WebRTC would open UDP to any address, unseen by the request rules.
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_string(),
        "--window-size=1280,800".to_string(),
        // No connection opened ahead of a request (preconnects, prefetches,
        // prerendering): each would reach its address before the request
        // rules decide it.
        "--disable-features=LoadingPredictorUseLocalPredictions,NavigationPredictor,Prerender2,PreconnectToSearch,SpeculationRulesPrefetchFuture".to_string(),
        "--dns-prefetch-disable".to_string(),
        // Every connection through the gate (`gate.rs`), loopback too
        // (Chromium would go to it directly otherwise), and none over QUIC,
        // which a SOCKS proxy does not carry: a WebSocket, which the request
        // rules never see, reaches only what the address rules allow.
        format!("--proxy-server=socks5://127.0.0.1:{gate}"),
        "--proxy-bypass-list=<-loopback>".to_string(),
        "--disable-quic".to_string(),
    ];
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if launch.no_sandbox || root {
        arguments.push("--no-sandbox".to_string());
    }
    arguments.push("about:blank".to_string());
    arguments
}

/// Writes each queued message, NUL-ended, until the queue or the pipe closes.
async fn write(mut pipe: pipe::Sender, mut queue: mpsc::UnboundedReceiver<Vec<u8>>) {
    while let Some(mut message) = queue.recv().await {
        message.push(0);
        if pipe.write_all(&message).await.is_err() {
            return;
        }
    }
}

/// Reads Chromium's messages until its pipe closes: answers go to their
/// waiters, paused requests are decided, every event is broadcast. At the
/// end every waiter is told the browser closed.
async fn read(
    mut pipe: pipe::Receiver,
    cdp: Cdp,
    addresses: Arc<Addresses>,
    refused: Arc<Mutex<Vec<String>>>,
) {
    let mut buffer: Vec<u8> = Vec::with_capacity(64 * 1024);
    let mut chunk = vec![0u8; 64 * 1024];
    'reading: loop {
        let read = match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let searched = buffer.len();
        buffer.extend_from_slice(&chunk[..read]);
        let mut start = 0;
        let mut from = searched;
        while let Some(end) = buffer[from..].iter().position(|&b| b == 0) {
            let end = from + end;
            cdp.receive(&buffer[start..end], &addresses, &refused);
            start = end + 1;
            from = start;
        }
        buffer.drain(..start);
        if buffer.len() > MAX_MESSAGE {
            tracing::warn!("the browser sent a message over {MAX_MESSAGE} bytes; closing it");
            break 'reading;
        }
    }
    let why = cdp
        .last_words
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .map(|line| format!(" (its last words: {line})"))
        .unwrap_or_default();
    let waiters: Vec<_> = cdp
        .pending
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain()
        .collect();
    for (_, waiter) in waiters {
        let _ = waiter.send(Err(CdpError::Closed(why.clone())));
    }
}

impl Cdp {
    /// Handles one message from Chromium.
    fn receive(&self, bytes: &[u8], addresses: &Arc<Addresses>, refused: &Arc<Mutex<Vec<String>>>) {
        let Ok(message) = serde_json::from_slice::<Value>(bytes) else {
            tracing::debug!("the browser sent a message that is not JSON");
            return;
        };
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            let waiter = self
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            if let Some(waiter) = waiter {
                let answer = match message.get("error") {
                    Some(error) => Err(CdpError::Refused {
                        method: String::new(),
                        message: error
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("an error")
                            .to_string(),
                    }),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                let _ = waiter.send(answer);
            }
            return;
        }
        let event = Event {
            method: text(&message, "method"),
            params: message.get("params").cloned().unwrap_or(Value::Null),
            session: message
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        if event.method == "Fetch.requestPaused" {
            let cdp = self.clone();
            let (addresses, refused) = (addresses.clone(), refused.clone());
            let event = event.clone();
            tokio::spawn(async move { cdp.decide(event, &addresses, &refused).await });
        }
        let _ = self.events.send(event);
    }

    /// Lets a paused request go on, or fails it when its address is
    /// refused (and notes the refusal for the next action's answer).
    async fn decide(&self, event: Event, addresses: &Addresses, refused: &Mutex<Vec<String>>) {
        let id = text(&event.params, "requestId");
        let url = event.params["request"]["url"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let session = event.session.as_deref();
        match addresses.check(&url).await {
            Ok(()) => {
                let _ = self
                    .send(session, "Fetch.continueRequest", json!({ "requestId": id }))
                    .await;
            }
            Err(why) => {
                tracing::info!("the browser's request for {url} was refused: {why}");
                {
                    let mut notes = refused.lock().unwrap_or_else(PoisonError::into_inner);
                    let why = why.strip_prefix("refused: ").unwrap_or(&why);
                    let note = format!("{}: {why}", crate::provenance::bounded(&url));
                    if notes.len() < 20 && !notes.contains(&note) {
                        notes.push(note);
                    }
                }
                let failed = json!({ "requestId": id, "errorReason": "BlockedByClient" });
                let _ = self.send(session, "Fetch.failRequest", failed).await;
            }
        }
    }

    /// Sends `method` (to `session`'s target, or the browser's) and waits
    /// for its answer; the caller bounds the wait.
    pub async fn send(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, CdpError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let (waiter, answer) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, waiter);
        if self
            .outgoing
            .send(message.to_string().into_bytes())
            .is_err()
        {
            self.pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&id);
            return Err(CdpError::Closed(String::new()));
        }
        match answer.await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(CdpError::Refused { message, .. })) => Err(CdpError::Refused {
                method: method.to_string(),
                message,
            }),
            Ok(Err(other)) => Err(other),
            Err(_) => Err(CdpError::Closed(String::new())),
        }
    }

    /// Events from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chromium_talks_over_its_pipes_with_the_page_heap_bounded_and_no_port() {
        let launch = Launch {
            program: "chromium",
            profile: Path::new("/home/h/browser/hearth"),
            page_memory_mb: 256,
            no_sandbox: false,
        };
        let arguments = arguments(&launch, 4321);
        assert!(arguments.contains(&"--remote-debugging-pipe".to_string()));
        assert!(arguments.contains(&"--proxy-server=socks5://127.0.0.1:4321".to_string()));
        assert!(arguments.contains(&"--proxy-bypass-list=<-loopback>".to_string()));
        assert!(arguments.contains(&"--js-flags=--max-old-space-size=256".to_string()));
        assert!(arguments.contains(&"--user-data-dir=/home/h/browser/hearth".to_string()));
        assert!(!arguments
            .iter()
            .any(|argument| argument.starts_with("--remote-debugging-port")));
    }
}
