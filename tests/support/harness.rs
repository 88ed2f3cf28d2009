//! Runs the real binaries for end-to-end tests: a `hearthd` process on a
//! temporary home, clients on its real socket, and the `hearth` CLI.
//!
//! Waits have generous deadlines as a safety net against a hung test; no test
//! asserts how long anything took.

use hearth_client::Connection;
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, Event, EventKind, Kind, MediaAttachment, Message, ServerFrame};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The variable naming the local Ollama server `hearthd` probes when no
/// model is configured. The harness sets it to `off` for every process it
/// starts, so no test reaches a real Ollama; [`Daemon::start_with_env`]
/// points it at a fake.
pub const OLLAMA_URL_ENV: &str = "HEARTH_OLLAMA_URL";

/// How long a test waits for something before it fails.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A layout whose lines never need a summary, so the memory's compactor
/// makes no model requests of its own: every request the fake model sees
/// is a turn's, in order.
pub const NO_SUMMARIES: &str = "block_lines = 4\nline_budget = 10000000\nline_guard = 20000000\n\
    high_budget = 100000000\nlow_budget = 50000000\ncompaction_high_budget = 100000000\n\
    compaction_low_budget = 50000000\ncompactor_concurrency = 1\ncompactor_ahead = 8\n\
    compactor_tries = 1\ncompactor_failures = 1\ncompactor_backoff_ms = 1\n";

/// The `[model]` table for the fake model at `base_url`: the test key, a
/// 30 s timeout.
pub fn model_table(provider: &str, base_url: &str) -> String {
    format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"fake-model\"\nbase_url = \"{base_url}\"\napi_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n"
    )
}

/// The `[transcription]` table for the fake transcription at `base_url`,
/// retrying at once.
pub fn transcription_table(base_url: &str) -> String {
    format!(
        "[transcription]\nbase_url = \"{base_url}\"\napi_key_env = \"HEARTH_TEST_KEY\"\nretry_delay_ms = 1\n"
    )
}

/// `hearth setup`'s flags for the fake model at `base_url` (its key in
/// `$HEARTH_TEST_KEY`), then `more`.
pub fn setup_args<'a>(base_url: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let model = [
        "--provider",
        "openai-chat",
        "--base-url",
        base_url,
        "--model",
        "fake-model",
        "--key-env",
        "HEARTH_TEST_KEY",
    ];
    [&model[..], more].concat()
}

/// A layout with small budgets (lines of `line_budget` bytes, compaction
/// between `high` and `low`), so a short test reaches every rule of the
/// memory.
pub fn small_layout(line_budget: usize, high: usize, low: usize) -> String {
    format!(
        "block_lines = 4\nline_budget = {line_budget}\nline_guard = {}\nhigh_budget = {high}\nlow_budget = {low}\n\
         compaction_high_budget = {high}\ncompaction_low_budget = {low}\ncompactor_concurrency = 1\n\
         compactor_ahead = 1\ncompactor_tries = 2\ncompactor_failures = 3\ncompactor_backoff_ms = 1\n",
        line_budget * 2
    )
}

/// Paths of the binaries under test: `bins!()` in a test of this package.
#[derive(Debug, Clone)]
pub struct Bins {
    pub hearthd: PathBuf,
    pub hearth: PathBuf,
}

/// The binaries built for this package's integration tests.
#[macro_export]
macro_rules! bins {
    () => {
        $crate::harness::Bins {
            hearthd: env!("CARGO_BIN_EXE_hearthd").into(),
            hearth: env!("CARGO_BIN_EXE_hearth").into(),
        }
    };
}

/// A temporary home folder.
pub struct TestHome {
    pub dir: tempfile::TempDir,
    pub bins: Bins,
}

impl TestHome {
    pub fn new(bins: Bins) -> TestHome {
        TestHome {
            dir: tempfile::tempdir().expect("a temporary folder"),
            bins,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The working folder of the agent `hearth`, where its tools work.
    pub fn work_dir(&self) -> PathBuf {
        self.path().join("agents/hearth/work")
    }

    pub fn socket(&self) -> PathBuf {
        Home::at(self.path()).socket()
    }

    /// The home as clients find it: its socket and its owner key.
    pub fn hearth_home(&self) -> Home {
        Home::at(self.path())
    }

    /// The owner key the running daemon wrote, for raw clients' hellos.
    pub fn owner_key(&self) -> String {
        hearth_protocol::owner_key::read(&self.hearth_home().owner_key())
            .expect("the owner key is readable")
            .expect("a daemon wrote the owner key")
    }

    pub fn write_config(&self, text: &str) {
        std::fs::write(self.path().join("config.toml"), text).expect("config written");
    }

    /// Writes `secrets.env`, private to its owner as hearth requires.
    pub fn write_secrets(&self, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        let secrets = self.path().join("secrets.env");
        std::fs::write(&secrets, text).expect("secrets written");
        std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600))
            .expect("secrets made private");
    }

    /// A config for the fake model at `base_url` with the given provider.
    pub fn use_model(&self, provider: &str, base_url: &str) {
        self.write_config(&model_table(provider, base_url));
    }

    /// A config for the fake model (Chat Completions) and the fake
    /// transcription at these addresses, with `extra` after them.
    pub fn use_model_and_transcription(
        &self,
        model_url: &str,
        transcription_url: &str,
        extra: &str,
    ) {
        self.write_config(&format!(
            "{}\n{}{extra}",
            model_table("openai-chat", model_url),
            transcription_table(transcription_url)
        ));
    }

    /// A config for the fake model at `base_url` (Chat Completions) whose
    /// layout is [`NO_SUMMARIES`], with `extra` after its `[agent]` table:
    /// every request the fake model sees is a turn's, in order.
    /// The layout file [`TestHome::use_model_without_summaries`] names in
    /// the config: a test that wants another layout writes it here.
    pub fn layout_file(&self) -> PathBuf {
        self.path().join("layout.toml")
    }

    pub fn use_model_without_summaries(&self, base_url: &str, extra: &str) {
        let layout = self.layout_file();
        std::fs::write(&layout, NO_SUMMARIES).expect("layout written");
        self.write_config(&format!(
            "{}\n[agent]\nlayout = \"{}\"\n{extra}",
            model_table("openai-chat", base_url),
            layout.display()
        ));
    }

    pub fn start(&self) -> Daemon {
        Daemon::start(self)
    }

    /// Runs `hearthd` and returns its output, for start-up failures.
    pub fn run_daemon_to_end(&self) -> Output {
        Command::new(&self.bins.hearthd)
            .arg("--home")
            .arg(self.path())
            .env_remove("HEARTH_HOME")
            .env(OLLAMA_URL_ENV, "off")
            .output()
            .expect("hearthd runs")
    }

    /// `program` (one of hearth's binaries) with `args` on this home:
    /// `--home` after them, no `HEARTH_HOME` from outside, no Ollama probe,
    /// stdin closed.
    pub fn command(&self, program: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command
            .args(args)
            .arg("--home")
            .arg(self.path())
            .env_remove("HEARTH_HOME")
            .env(OLLAMA_URL_ENV, "off")
            .stdin(Stdio::null());
        command
    }

    /// The `hearth` CLI with `args` on this home, as [`TestHome::command`].
    pub fn hearth_command(&self, args: &[&str]) -> Command {
        self.command(&self.bins.hearth, args)
    }

    /// Runs the `hearth` CLI with `args` on this home.
    pub fn hearth(&self, args: &[&str]) -> Output {
        self.hearth_command(args).output().expect("hearth runs")
    }

    /// Runs the `hearth` CLI off the async runtime, so servers of the same
    /// test (the fake model) keep answering meanwhile.
    pub async fn hearth_async(&self, args: &[&str]) -> Output {
        let mut command = self.hearth_command(args);
        tokio::task::spawn_blocking(move || command.output().expect("hearth runs"))
            .await
            .expect("the CLI thread")
    }

    pub async fn connect(&self, name: &str, since: Option<u64>) -> Client {
        Client::connect(&self.hearth_home(), name, since).await
    }

    /// The top agent's log (its newest 1,000 messages), oldest first.
    pub async fn history(&self) -> Vec<Message> {
        let mut client = self.connect("history", None).await;
        let frame = ClientFrame::History {
            before: None,
            limit: Some(1000),
        };
        match client.request(frame).await {
            ServerFrame::History { messages } => messages,
            other => panic!("expected history, got {other:?}"),
        }
    }

    /// A state a client keeps in the daemon (a bridge's cursor), if set.
    pub async fn stored_state(&self, name: &str) -> Option<String> {
        let mut client = self.connect("state", None).await;
        let frame = ClientFrame::StateGet {
            name: name.to_string(),
        };
        match client.request(frame).await {
            ServerFrame::State { value, .. } => value,
            other => panic!("expected a state, got {other:?}"),
        }
    }
}

/// The texts of the messages of `kind` in `log`.
pub fn texts(log: &[Message], kind: Kind) -> Vec<String> {
    log.iter()
        .filter(|m| m.kind == kind)
        .map(|m| m.text.clone())
        .collect()
}

/// The texts of the notes `source` (a bridge: `whatsapp`, `telegram`) left
/// in `log`.
pub fn notes_by(log: &[Message], source: &str) -> Vec<String> {
    log.iter()
        .filter(|m| m.kind == Kind::Note && m.source == source)
        .map(|m| m.text.clone())
        .collect()
}

/// Whether `event` asks for an approval (rather than closing one).
pub fn asks_approval(event: &Event) -> bool {
    event.kind == EventKind::Approval
        && event
            .approval
            .as_ref()
            .is_some_and(|approval| approval.allowed.is_none())
}

/// The head of a PNG of this size (its signature and header): all that
/// hearth reads of an image to name it.
pub fn png_head(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 2, 0, 0, 0]);
    bytes
}

/// Waits (checking every few milliseconds, up to [`DEADLINE`]) until
/// `check` gives a value.
pub async fn eventually<T, F>(what: &str, mut check: impl FnMut() -> F) -> T
where
    F: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited in vain for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits (checking every few milliseconds, up to [`DEADLINE`]) until
/// `condition` holds: [`eventually`] for a condition read without waiting.
pub async fn until(what: &str, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The user message whose text starts with `start`, once it is logged.
pub async fn logged_user_message(home: &TestHome, start: &str) -> Message {
    let what = format!("a message starting {start:?}");
    logged_user_message_where(home, &what, |text| text.starts_with(start)).await
}

/// The user message whose text contains `part`, once it is logged.
pub async fn logged_user_message_with(home: &TestHome, part: &str) -> Message {
    let what = format!("a message with {part:?}");
    logged_user_message_where(home, &what, |text| text.contains(part)).await
}

async fn logged_user_message_where(
    home: &TestHome,
    what: &str,
    matches: impl Fn(&str) -> bool,
) -> Message {
    eventually(what, || async {
        home.history()
            .await
            .into_iter()
            .find(|message| message.kind == Kind::User && matches(&message.text))
    })
    .await
}

/// Whether process `pid` is gone: it has no /proc entry, or is a zombie
/// waiting only for its new parent (init, which may not reap in a
/// container).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Reads the head of an HTTP request from `stream` (up to its blank line,
/// or the end), for the tests' one-page web servers.
pub async fn read_request_head(stream: &mut tokio::net::TcpStream) -> Vec<u8> {
    use tokio::io::AsyncReadExt;
    let mut request = Vec::new();
    let mut buffer = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => request.extend_from_slice(&buffer[..read]),
        }
    }
    request
}

/// Waits until `status` shows the bridge `name` failed; returns its entry.
pub async fn bridge_failed(home: &TestHome, name: &str) -> hearth_protocol::BridgeStatus {
    eventually("the bridge failed in status", || async move {
        let mut client = home.connect("hearth-status", None).await;
        let ServerFrame::Status(status) = client.request(ClientFrame::Status).await else {
            return None;
        };
        status
            .bridges
            .into_iter()
            .find(|b| b.name == name && b.state == "failed")
    })
    .await
}

/// The clock turn: the model says it looks at the clock, calls `date`,
/// then answers; `client` sees the echo, the call's result and the reply,
/// in that order.
pub async fn clock_turn(model: &crate::fake_model::FakeModel, client: &mut Client) {
    use crate::fake_model::Reply;
    model.push(Reply::ToolCalls {
        text: Some("Let me look at the clock.".into()),
        calls: vec![("date".into(), "{}".into())],
    });
    model.push(Reply::text("It is now."));
    let (id, _) = client.submit("what time is it?", "terminal", None).await;
    let echo = client.wait_for(|e| e.kind == EventKind::Echo).await;
    assert_eq!(echo.text.as_deref(), Some("Let me look at the clock."));
    let tool = client.wait_for(|e| e.kind == EventKind::Tool).await;
    assert_eq!(tool.status.as_deref(), Some("ok"));
    assert!(tool.text.unwrap().starts_with("date({})"));
    assert_eq!(
        client.reply_to(id).await.text.as_deref(),
        Some("It is now.")
    );
}

/// Waits until the delivery cursor a bridge stores in `state`
/// (`whatsapp.cursor`) covers the whole log. A bridge killed between a send
/// and storing its cursor sends that one message again when it starts, as
/// the README says; a test that counts sends across a kill waits for this.
pub async fn cursor_at_log_end(home: &TestHome, state: &str) {
    let last = home.history().await.last().expect("a log").id;
    eventually("the cursor past the log's end", || async move {
        let value = home.stored_state(state).await?;
        (value.parse::<u64>().ok()? >= last).then_some(())
    })
    .await;
}

/// The pid of the `name` bridge (`telegram`, `whatsapp`) the daemon
/// started last, from its log.
pub async fn bridge_pid(daemon: &Daemon, name: &str) -> u32 {
    let said = format!("{name} bridge started (pid ");
    eventually("the daemon to start a bridge", || {
        let log = daemon.log_text();
        let pid = log
            .rsplit_once(&said)
            .and_then(|(_, after)| after.split(')').next()?.parse().ok());
        std::future::ready(pid)
    })
    .await
}

/// A running `hearthd`; killed when dropped.
pub struct Daemon {
    child: Child,
    /// Everything it wrote to stderr, for failure messages.
    pub output: Arc<Mutex<String>>,
}

impl Daemon {
    /// Starts `hearthd` and returns once it listens (it says so on stderr).
    pub fn start(home: &TestHome) -> Daemon {
        Daemon::start_with_env(home, &[])
    }

    /// Starts `hearthd` with these environment variables set as well (they
    /// win over the harness's own).
    pub fn start_with_env(home: &TestHome, env: &[(&str, &str)]) -> Daemon {
        let mut child = home
            .command(&home.bins.hearthd, &[])
            .env("RUST_LOG", "info")
            .env("HEARTH_TEST_KEY", "sk-test-secret")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("hearthd starts");
        let stderr = child.stderr.take().expect("stderr piped");
        let output = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let sink = output.clone();
        std::thread::spawn(move || {
            let mut ready = Some(ready_tx);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                {
                    let mut all = sink.lock().unwrap();
                    all.push_str(&line);
                    all.push('\n');
                }
                // Ready once the Unix socket listens, which is said last.
                if line.contains("listening on /") {
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(());
                    }
                }
            }
        });
        if ready_rx.recv_timeout(DEADLINE).is_err() {
            let _ = child.kill();
            panic!(
                "hearthd did not start listening:\n{}",
                output.lock().unwrap()
            );
        }
        Daemon { child, output }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL: the daemon dies at once, as in a crash.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait for a clean exit; returns whether it exited 0.
    pub fn stop(&mut self) -> bool {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status();
        self.child.wait().map(|s| s.success()).unwrap_or(false)
    }

    /// Whether the process still runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn log_text(&self) -> String {
        self.output.lock().unwrap().clone()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running `hearthd`, its fake model and a client attached as `terminal`.
pub struct Running {
    pub model: crate::fake_model::FakeModel,
    pub home: TestHome,
    pub daemon: Daemon,
    pub client: Client,
}

impl Running {
    /// Attaches a `terminal` client to `daemon`, which runs on `home`.
    pub async fn attach(
        model: crate::fake_model::FakeModel,
        home: TestHome,
        daemon: Daemon,
    ) -> Running {
        let client = home.connect("terminal", None).await;
        Running {
            model,
            home,
            daemon,
            client,
        }
    }
}

/// A protocol client that remembers every event it received.
pub struct Client {
    pub connection: Connection,
    pub welcome: hearth_client::Welcome,
    pub events: Vec<Event>,
}

impl Client {
    pub async fn connect(home: &Home, name: &str, since: Option<u64>) -> Client {
        let (connection, welcome) =
            tokio::time::timeout(DEADLINE, Connection::open(home, name, since))
                .await
                .expect("connected in time")
                .expect("connected");
        Client {
            connection,
            welcome,
            events: Vec::new(),
        }
    }

    /// The next frame from the daemon.
    pub async fn frame(&mut self) -> ServerFrame {
        tokio::time::timeout(DEADLINE, self.connection.next())
            .await
            .expect("a frame in time")
            .expect("a readable frame")
            .expect("the connection is open")
    }

    /// Sends a frame and returns the first answer that is not an event.
    pub async fn request(&mut self, frame: ClientFrame) -> ServerFrame {
        self.connection.send(&frame).await.expect("sent");
        loop {
            match self.frame().await {
                ServerFrame::Event(event) => self.events.push(event),
                answer => return answer,
            }
        }
    }

    /// Submits a user message; returns its id.
    pub async fn submit(&mut self, text: &str, source: &str, key: Option<&str>) -> (u64, bool) {
        let frame = ClientFrame::Submit {
            text: text.to_string(),
            source: source.to_string(),
            key: key.map(str::to_string),
            images: Vec::new(),
            person: None,
            media: Vec::new(),
        };
        match self.request(frame).await {
            ServerFrame::Ack { id, duplicate } => (id, duplicate),
            other => panic!("expected an ack, got {other:?}"),
        }
    }

    /// Submits `text` from the terminal with these stored images and media;
    /// returns the daemon's answer (an ack, or an error).
    pub async fn submit_with(
        &mut self,
        text: &str,
        images: Vec<String>,
        media: Vec<MediaAttachment>,
    ) -> ServerFrame {
        self.request(ClientFrame::Submit {
            text: text.to_string(),
            source: "terminal".to_string(),
            key: None,
            images,
            person: None,
            media,
        })
        .await
    }

    /// [`Client::submit_with`], which must be acknowledged; returns the
    /// message's id.
    pub async fn submit_acked(
        &mut self,
        text: &str,
        images: Vec<String>,
        media: Vec<MediaAttachment>,
    ) -> u64 {
        match self.submit_with(text, images, media).await {
            ServerFrame::Ack { id, .. } => id,
            other => panic!("expected an ack, got {other:?}"),
        }
    }

    /// Waits for an event of `kind` whose text contains `needle`.
    pub async fn wait_for_text(&mut self, kind: EventKind, needle: &str) -> Event {
        self.wait_for(|e| {
            e.kind == kind && e.text.as_deref().is_some_and(|text| text.contains(needle))
        })
        .await
    }

    /// Waits for an event matching `wanted` (also among those already received).
    pub async fn wait_for(&mut self, wanted: impl Fn(&Event) -> bool) -> Event {
        if let Some(event) = self.events.iter().find(|e| wanted(e)) {
            return event.clone();
        }
        loop {
            match self.frame().await {
                ServerFrame::Event(event) => {
                    self.events.push(event.clone());
                    if wanted(&event) {
                        return event;
                    }
                }
                other => panic!("expected events, got {other:?}"),
            }
        }
    }

    /// Waits for the next approval request (not a decision).
    pub async fn approval_asked(&mut self) -> Event {
        self.wait_for(asks_approval).await
    }

    /// Answers approval `id` as the owner; returns the daemon's answer.
    pub async fn approve(&mut self, id: &str, allow: bool) -> ServerFrame {
        self.request(ClientFrame::Approve {
            id: id.to_string(),
            allow,
            by: None,
        })
        .await
    }

    /// Waits for the reply that answers message `id`.
    pub async fn reply_to(&mut self, id: u64) -> Event {
        self.wait_for(|e| e.kind == EventKind::Reply && e.answers.contains(&id))
            .await
    }

    /// The logged messages received so far (not signals), in order.
    pub fn message_ids(&self) -> Vec<u64> {
        self.events
            .iter()
            .filter(|e| e.kind.message_kind().is_some())
            .filter_map(|e| e.id)
            .collect()
    }
}
