//! The interactive terminal client: `hearth` with no subcommand.
//!
//! It attaches to the home's daemon (starting `hearthd` in the background
//! when none answers), says which agent and model it talks to, shows the
//! recent messages, then runs one loop over a closed set of `Input`s: a
//! line from the keyboard, a frame from the daemon, the time to reconnect,
//! a clock tick for the status line, Ctrl-C. Each line typed is a message
//! with source `terminal` (and this client's name, `terminal@HOST`), unless
//! it is one of the client's own commands (`slash.rs`) or answers an
//! approval (`approvals.rs`).
//!
//! Three threads share the work: line editing (`keyboard.rs`), the printer
//! (`screen.rs`), and this async side, which owns the connection, the
//! [`Session`] and the [`Display`]. When hearthd goes away (a restart), the
//! client says so once, reconnects with backoff asking for every message
//! after the last it showed, and sends again, under the same keys, the
//! lines that were not acknowledged: nothing is missed, nothing shown twice.

use crate::commands;
use crate::display::{Display, Size};
use crate::keyboard::{Keyboard, LineReader, Resume};
use crate::launch;
use crate::look::{self, Style};
use crate::screen::{SavedTerminal, Screen};
pub use crate::session::{Session, Show, SOURCE};
use crate::slash::{self, Typed};
use crate::stats;
use crate::status_line::{self, Here, Status};
use crate::welcome;
use hearth_client::images::{self, ImageFileError};
use hearth_client::{ConnectError, Connection};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, EventKind, ServerFrame};
use rustyline::error::ReadlineError;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The first wait before reconnecting, doubled after each failure up to
/// [`RECONNECT_MAX`].
const RECONNECT_FIRST: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum TerminalError {
    #[error("cannot find `hearthd` next to this `hearth` or on PATH ({0}); install both binaries together, or start hearthd yourself")]
    DaemonMissing(io::Error),
    #[error("cannot start hearthd: {0}")]
    Spawn(io::Error),
    #[error("cannot prepare {path} for hearthd: {source}")]
    Prepare { path: PathBuf, source: io::Error },
    #[error("hearthd exited ({status}) before it answered; the end of {log}:\n{tail}")]
    DaemonExited {
        status: ExitStatus,
        log: PathBuf,
        tail: String,
    },
    #[error("hearthd did not answer at {socket} within {seconds} s; its output is in {log}")]
    StartTimeout {
        socket: PathBuf,
        seconds: u64,
        log: PathBuf,
    },
    #[error(transparent)]
    Connection(#[from] ConnectError),
    #[error("hearthd refused: {0}")]
    Refused(String),
    #[error("cannot read the terminal: {0}")]
    Readline(#[from] ReadlineError),
    #[error("cannot watch for Ctrl-C: {0}")]
    Signal(io::Error),
}

/// One thing the loop wakes for.
enum Input {
    /// From the keyboard; `None` once the reader has ended.
    Key(Option<Keyboard>),
    /// From the daemon; `Ok(None)` when it closed the connection.
    Frame(Box<Result<Option<ServerFrame>, ConnectError>>),
    /// The time to try the daemon again came.
    Reconnect,
    /// A second went by: the status line's clock.
    Tick,
    /// Ctrl-C while the line editor was not reading (it sees its own).
    Interrupt,
}

/// Attaches to the home's daemon, starting it when none answers, and runs
/// until the user quits. `explicit_home` is the `--home` given, passed on
/// to a daemon started here; `agent` the `--agent` given (the top agent
/// when `None`).
pub async fn run(
    home: &Home,
    explicit_home: Option<&Path>,
    agent: Option<&str>,
) -> Result<(), TerminalError> {
    let me = welcome::client_name();
    let (mut connection, welcome) = launch::attach(home, explicit_home, agent, &me).await?;
    let style = Style::detect();
    let mut session = Session::new(welcome.busy, style, &me);
    session.approvals = crate::approvals::Approvals::following(&welcome.agent);
    let mut display = Display::new(style, Size::of_terminal());

    let catch_up = welcome::catch_up(home, &mut connection, &mut session, &mut display).await?;
    let mut stdout = io::stdout().lock();
    let _ = stdout.write_all(catch_up.as_bytes());
    let _ = stdout.flush();
    drop(stdout);

    let saved_terminal = SavedTerminal::capture();
    let interactive = io::stdin().is_terminal();
    let (key_tx, keys) = mpsc::unbounded_channel();
    let mut reader = LineReader::new(home, interactive && style.live, key_tx.clone())?;
    // None when stdin or stdout is not a terminal: then plain writes do.
    let screen = Screen::start(reader.external_printer());
    let (resume_tx, resume_rx) = std_mpsc::channel();
    let reader_thread = std::thread::spawn(move || reader.run(key_tx, resume_rx));
    let sigint = signal(SignalKind::interrupt()).map_err(TerminalError::Signal)?;

    let mut terminal = Terminal {
        home: home.clone(),
        agent: agent.map(str::to_string),
        me,
        style,
        session,
        display,
        screen,
        connection: Some(connection),
        retry: None,
        outbox: Vec::new(),
        keys_sent: 0,
        key_prefix: format!("{}:{}", std::process::id(), welcome::start_stamp()),
        activity: None,
        asked: Vec::new(),
        echo: interactive && style.live,
        interactive,
        draining: false,
        reader_running: true,
        resume: resume_tx,
    };
    if terminal.session.busy {
        terminal.set_activity("thinking");
    }
    let outcome = terminal.run(keys, sigint).await;
    let reader_running = terminal.reader_running;
    let connection = terminal.connection.take();
    terminal.screen.finish();
    if reader_running {
        // The reader is stuck in readline with the terminal in raw mode, and
        // the process is about to end under it: put the terminal back.
        saved_terminal.restore();
    } else {
        let _ = reader_thread.join();
    }
    if let Some(connection) = connection {
        connection.close().await;
    }
    outcome
}

/// What the user asked the daemon for, in the order the answers come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Status,
    Stats,
    History,
}

/// The loop's state.
struct Terminal {
    /// Where the daemon is found again, its socket and owner key.
    home: Home,
    /// The `--agent` followed, for reconnecting; the top agent when `None`.
    agent: Option<String>,
    me: String,
    style: Style,
    session: Session,
    display: Display,
    screen: Screen,
    /// None while hearthd is away.
    connection: Option<Connection>,
    /// While hearthd is away: when to try again, and the wait after that.
    retry: Option<(Instant, Duration)>,
    /// Lines submitted and not acknowledged, to send again after a
    /// reconnect under the same keys.
    outbox: Vec<ClientFrame>,
    keys_sent: u64,
    key_prefix: String,
    /// What the agent is doing, for the status line; none between turns.
    activity: Option<Status>,
    /// Answers the user waits for, oldest first.
    asked: Vec<Asked>,
    /// The line reader erases what it echoed (see `keyboard.rs`): a line
    /// that is no message is printed again here.
    echo: bool,
    /// stdin is a terminal.
    interactive: bool,
    /// Piped input ended: stay until what it sent is answered.
    draining: bool,
    /// The reader is in a readline call (raw mode, on a terminal) until it
    /// hands over a line and waits for the go-ahead.
    reader_running: bool,
    resume: std_mpsc::Sender<Resume>,
}

/// What handling an input decided.
enum Next {
    Go,
    Quit,
}

impl Terminal {
    async fn run(
        &mut self,
        mut keys: mpsc::UnboundedReceiver<Keyboard>,
        mut sigint: tokio::signal::unix::Signal,
    ) -> Result<(), TerminalError> {
        let mut clock = tokio::time::interval(Duration::from_secs(1));
        loop {
            let retry_at = self.retry.map(|(at, _)| at);
            let input = tokio::select! {
                frame = next_frame(&mut self.connection) => Input::Frame(Box::new(frame)),
                key = keys.recv(), if self.reader_running => Input::Key(key),
                () = sleep_until(retry_at) => Input::Reconnect,
                _ = clock.tick() => Input::Tick,
                _ = sigint.recv() => Input::Interrupt,
            };
            let next = match input {
                Input::Frame(frame) => match *frame {
                    Ok(Some(frame)) => self.on_frame(frame).await?,
                    Ok(None) | Err(_) => {
                        self.on_lost();
                        Next::Go
                    }
                },
                Input::Key(None) => {
                    self.reader_running = false;
                    Next::Go
                }
                Input::Key(Some(key)) => self.on_key(key).await?,
                Input::Reconnect => {
                    self.reconnect().await;
                    Next::Go
                }
                Input::Tick => {
                    self.repaint_status();
                    Next::Go
                }
                Input::Interrupt => self.on_ctrl_c().await?,
            };
            if let Next::Quit = next {
                return Ok(());
            }
        }
    }

    fn print(&mut self, text: &str) {
        let paint = self.display.print(text);
        self.screen.paint(paint);
    }

    fn note(&mut self, text: &str) {
        let line = self.style.grey(text);
        self.print(&line);
    }

    fn show(&mut self, show: Show) {
        match show {
            Show::Nothing => {}
            Show::Line(line) => self.print(&line),
            Show::Words {
                agent,
                at,
                text,
                ends_turn,
            } => {
                let header = look::header(&agent, &at, self.style, chrono::Local::now());
                let paint = self.display.finish(&header, &text);
                self.screen.paint(paint);
                // After a reply nothing of its turn runs, though the idle
                // event may still be on its way: the line goes now. Words
                // beside tool calls mean the model goes on.
                if ends_turn {
                    self.clear_activity();
                } else if self.session.busy {
                    self.set_activity("thinking");
                }
            }
            Show::Delta(piece) => {
                let (agent, style) = (self.session.approvals.agent().to_string(), self.style);
                let now = chrono::Local::now();
                let paint = self.display.delta(&piece, || {
                    look::header(&agent, &now.to_rfc3339(), style, now)
                });
                self.screen.paint(paint);
                if self.activity.as_ref().is_some_and(|a| a.what == "thinking") {
                    self.set_activity("writing");
                }
            }
            Show::Busy => self.set_activity("thinking"),
            Show::Idle => {
                let paint = self.display.abandon();
                self.screen.paint(paint);
                self.clear_activity();
            }
        }
    }

    /// Events and acks that came while files were being stored, taken in
    /// their order once the store is done.
    fn take_early(&mut self, early: Vec<ServerFrame>) {
        for frame in early {
            match frame {
                ServerFrame::Event(event) => {
                    let show = self.session.on_event(&event);
                    self.show(show);
                }
                ServerFrame::Ack { id, .. } => self.on_ack(id),
                _ => {}
            }
        }
    }

    fn set_activity(&mut self, what: &str) {
        let since = match &self.activity {
            Some(activity) => activity.since,
            None => Instant::now(),
        };
        self.activity = Some(Status {
            what: what.to_string(),
            since,
        });
        self.repaint_status();
    }

    /// The daemon said what its turn does now: the status line says it,
    /// while a turn runs (an idle agent's activity leaves it to `idle`).
    fn on_activity(&mut self, activity: &hearth_protocol::Activity) {
        match Status::of_activity(activity, chrono::Local::now()) {
            Some(status) if self.session.busy => {
                self.activity = Some(status);
                self.repaint_status();
            }
            _ => {}
        }
    }

    fn clear_activity(&mut self) {
        self.activity = None;
        self.repaint_status();
    }

    fn repaint_status(&mut self) {
        self.display.resize(Size::of_terminal());
        let here = Here {
            approval_waits: self.session.approvals.any(),
            connected: self.connection.is_some(),
        };
        let columns = Size::of_terminal().columns.saturating_sub(1);
        let status = self
            .activity
            .as_ref()
            .map(|activity| status_line::line(activity, here, columns));
        let paint = self.display.set_status(status);
        self.screen.paint(paint);
    }

    async fn on_frame(&mut self, frame: ServerFrame) -> Result<Next, TerminalError> {
        match frame {
            ServerFrame::Event(event) => {
                let idle = event.kind == EventKind::Idle;
                // The model's words that streamed are over when the daemon
                // notes something (an interrupt, a switch of model) or a
                // tool runs; others' messages may come while they stream.
                let ends_words = matches!(
                    event.kind,
                    EventKind::Note | EventKind::Tool | EventKind::Error | EventKind::Work
                );
                if ends_words && self.display.streaming() {
                    let paint = self.display.abandon();
                    self.screen.paint(paint);
                }
                if let Some(activity) = &event.activity {
                    self.on_activity(activity);
                }
                let show = self.session.on_event(&event);
                self.show(show);
                if event.kind == EventKind::Approval {
                    // The line says what waits here, or no longer does.
                    self.repaint_status();
                }
                if self.draining && self.session.settled() {
                    return Ok(Next::Quit);
                }
                if self.draining && idle {
                    // Did the turn that ended take everything typed here?
                    self.send(&ClientFrame::Status).await;
                }
            }
            ServerFrame::Ack { id, .. } => self.on_ack(id),
            ServerFrame::Status(status) => {
                self.session.busy = status.busy;
                if self.take_asked(Asked::Status) {
                    self.print(&commands::status_text(&status));
                }
                let quiet = !status.busy && status.waiting == 0;
                if self.draining && (self.session.settled() || (quiet && self.session.all_acked()))
                {
                    return Ok(Next::Quit);
                }
            }
            ServerFrame::Stats { days, rows, .. } if self.take_asked(Asked::Stats) => {
                self.print(&stats::table(&rows, days).join("\n"));
            }
            ServerFrame::History { messages } if self.take_asked(Asked::History) => {
                self.show_older(messages);
            }
            ServerFrame::Error { message, .. } => {
                if self.session.on_refused() && !self.outbox.is_empty() {
                    self.outbox.remove(0);
                }
                let line = self.style.error(&format!(
                    "error: hearthd refused: {}",
                    look::sanitized(&message)
                ));
                self.print(&line);
            }
            _ => {}
        }
        Ok(Next::Go)
    }

    /// The oldest frame awaiting an answer is acknowledged; a line's is
    /// durable and need not be sent again.
    fn on_ack(&mut self, id: u64) {
        if self.session.on_ack(id) && !self.outbox.is_empty() {
            self.outbox.remove(0);
        }
    }

    fn take_asked(&mut self, what: Asked) -> bool {
        match self.asked.iter().position(|asked| *asked == what) {
            Some(index) => {
                self.asked.remove(index);
                true
            }
            None => false,
        }
    }

    /// A page of older messages, below what is on screen, marked as such.
    fn show_older(&mut self, messages: Vec<hearth_protocol::Message>) {
        let page = welcome::older_page(&mut self.session, &messages);
        self.print(&page);
    }

    /// Sends a frame; a send that fails means the connection is lost.
    async fn send(&mut self, frame: &ClientFrame) -> bool {
        let Some(connection) = self.connection.as_mut() else {
            return false;
        };
        if connection.send(frame).await.is_ok() {
            return true;
        }
        self.on_lost();
        false
    }

    async fn on_key(&mut self, key: Keyboard) -> Result<Next, TerminalError> {
        let resume = match key {
            Keyboard::Line(line) => {
                self.session.ctrl_c_armed = false;
                let next = self.on_line(line).await;
                if let Next::Quit = next {
                    let _ = self.resume.send(Resume::Stop);
                    self.reader_running = false;
                    return Ok(Next::Quit);
                }
                Resume::Continue
            }
            Keyboard::PageUp => {
                self.page_back(slash::HISTORY_PAGE).await;
                // PageUp does not end a readline call: no go-ahead to give.
                return Ok(Next::Go);
            }
            Keyboard::Interrupted => match self.on_ctrl_c().await? {
                Next::Quit => {
                    let _ = self.resume.send(Resume::Stop);
                    self.reader_running = false;
                    return Ok(Next::Quit);
                }
                Next::Go => Resume::Continue,
            },
            Keyboard::Eof => {
                self.reader_running = false;
                // Piped input: stay for the answers to what it sent.
                if self.interactive || self.session.settled() || self.connection.is_none() {
                    return Ok(Next::Quit);
                }
                self.draining = true;
                self.send(&ClientFrame::Status).await;
                return Ok(Next::Go);
            }
            Keyboard::Failed(err) => {
                self.reader_running = false;
                return Err(err.into());
            }
        };
        if self.resume.send(resume).is_err() {
            self.reader_running = false;
        }
        Ok(Next::Go)
    }

    /// A typed line: an answer to an approval, a client command, or a
    /// message.
    async fn on_line(&mut self, line: String) -> Next {
        let typed = self.session.approvals.typed(&line);
        let message = typed.frame().is_none()
            && !matches!(typed, crate::approvals::Typed::Usage(_))
            && matches!(slash::parse(&line), Typed::Message(_));
        if self.echo && !message && !line.trim().is_empty() {
            let echo = format!("{}{}", crate::keyboard::PROMPT, look::sanitized(&line));
            let echo = self.style.grey(&echo);
            self.print(&echo);
        }
        if let Some(answer) = typed.frame() {
            if self.send(&answer).await {
                self.session.on_approve();
            } else {
                self.print_not_connected();
            }
            self.repaint_status();
            return Next::Go;
        }
        if let crate::approvals::Typed::Usage(how) = typed {
            self.note(how);
            return Next::Go;
        }
        match slash::parse(&line) {
            Typed::Message(text) if text.trim().is_empty() => {}
            Typed::Message(text) => self.submit(text).await,
            Typed::Help => self.print(slash::HELP),
            Typed::Status => self.ask(Asked::Status, ClientFrame::Status).await,
            Typed::Stats => {
                self.ask(Asked::Stats, ClientFrame::Stats { days: None })
                    .await
            }
            Typed::History(count) => self.page_back(count).await,
            Typed::Quit => return Next::Quit,
            Typed::Unknown(word) => {
                let text = format!("/{word} is not a command here.\n{}", slash::HELP);
                self.print(&text);
            }
            Typed::Usage(how) => self.note(how),
        }
        Next::Go
    }

    async fn ask(&mut self, what: Asked, frame: ClientFrame) {
        if self.send(&frame).await {
            self.asked.push(what);
        } else {
            self.print_not_connected();
        }
    }

    async fn page_back(&mut self, count: u32) {
        let before = self.session.oldest_shown();
        if before == Some(0) {
            self.note("── nothing older ──");
            return;
        }
        let frame = ClientFrame::History {
            before,
            limit: Some(count),
        };
        self.ask(Asked::History, frame).await;
    }

    fn print_not_connected(&mut self) {
        self.note("not sent: hearthd is away; reconnecting…");
    }

    /// Submits a typed message, first storing the images it attaches
    /// (`/image PATH words…` or `@PATH words…`). An image that cannot be
    /// read or is refused is shown as an error and the line is not sent.
    /// While hearthd is away a message without images waits and is sent
    /// on reconnecting.
    async fn submit(&mut self, line: String) {
        let (line, files) = match hearth_client::media::parse_line(&line) {
            Some((path, words)) => (words, vec![path]),
            None => (line, Vec::new()),
        };
        let mut media = Vec::new();
        if !files.is_empty() {
            let Some(connection) = self.connection.as_mut() else {
                self.print_not_connected();
                return;
            };
            let mut early = Vec::new();
            let put =
                hearth_client::media::put_files(connection, &files, &mut |frame| early.push(frame))
                    .await;
            self.take_early(early);
            match put {
                Ok(stored) => media = stored,
                Err(hearth_client::media::MediaFileError::Connection(_)) => {
                    self.on_lost();
                    self.print_not_connected();
                    return;
                }
                Err(err) => {
                    let line = self.style.error(&format!("error: {err}"));
                    self.print(&line);
                    return;
                }
            }
        }
        let (text, paths) = images::parse_line(&line, Path::is_file);
        let mut hashes = Vec::new();
        if !paths.is_empty() {
            let Some(connection) = self.connection.as_mut() else {
                self.print_not_connected();
                return;
            };
            let mut early = Vec::new();
            let put = images::put_files(connection, &paths, &mut |frame| early.push(frame)).await;
            self.take_early(early);
            match put {
                Ok(stored) => hashes = stored,
                Err(ImageFileError::Connection(_)) => {
                    self.on_lost();
                    self.print_not_connected();
                    return;
                }
                Err(err) => {
                    let line = self.style.error(&format!("error: {err}"));
                    self.print(&line);
                    return;
                }
            }
        }
        self.keys_sent += 1;
        let submit = ClientFrame::Submit {
            text: text.clone(),
            source: SOURCE.to_string(),
            key: Some(format!(
                "{}:{}:{}",
                self.me, self.key_prefix, self.keys_sent
            )),
            images: hashes,
            person: None,
            media,
        };
        self.outbox.push(submit.clone());
        self.session.on_submit(text);
        if self.connection.is_none() {
            self.note("(hearthd is away: sent when it is back)");
            return;
        }
        self.send(&submit).await;
    }

    /// Ctrl-C interrupts a running turn; at an idle prompt, twice in a row
    /// quits.
    async fn on_ctrl_c(&mut self) -> Result<Next, TerminalError> {
        if self.session.busy {
            self.session.ctrl_c_armed = false;
            self.send(&ClientFrame::Interrupt).await;
            self.note("… interrupting");
            return Ok(Next::Go);
        }
        if self.session.ctrl_c_armed {
            return Ok(Next::Quit);
        }
        self.session.ctrl_c_armed = true;
        self.note("(Ctrl-C again to quit, or Ctrl-D)");
        Ok(Next::Go)
    }

    /// The connection dropped: say so once, in the words of the daemon's
    /// close frame (stopping, restarting), and try again soon.
    fn on_lost(&mut self) {
        let reason = self
            .connection
            .as_ref()
            .and_then(|connection| connection.close_reason().map(str::to_string));
        if self.connection.take().is_none() && self.retry.is_some() {
            return;
        }
        self.session.on_disconnect();
        let paint = self.display.abandon();
        self.screen.paint(paint);
        self.activity = None;
        let line = self.style.error(&look::connection_lost(reason.as_deref()));
        self.print(&line);
        self.set_activity("reconnecting");
        self.retry = Some((Instant::now() + RECONNECT_FIRST, RECONNECT_FIRST));
    }

    /// Tries hearthd again, asking for what came after the last message
    /// shown; sends again what was not acknowledged.
    async fn reconnect(&mut self) {
        let Some((_, wait)) = self.retry else { return };
        let since = self.session.last_shown();
        let agent = self.agent.as_deref();
        match Connection::open_agent(&self.home, &self.me, since, agent).await {
            Ok((connection, welcome)) => {
                self.connection = Some(connection);
                self.retry = None;
                self.session.busy = welcome.busy;
                self.activity = None;
                self.note("· reconnected");
                if welcome.busy {
                    self.set_activity("thinking");
                } else {
                    self.clear_activity();
                }
                for frame in self.outbox.clone() {
                    if !self.send(&frame).await {
                        return;
                    }
                }
            }
            Err(_) => {
                let wait = (wait * 2).min(RECONNECT_MAX);
                self.retry = Some((Instant::now() + wait, wait));
            }
        }
    }
}

/// The next frame, or never while there is no connection.
async fn next_frame(
    connection: &mut Option<Connection>,
) -> Result<Option<ServerFrame>, ConnectError> {
    match connection {
        Some(connection) => connection.next().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`, or forever without it.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
