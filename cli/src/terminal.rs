//! The interactive terminal client: `hearth` with no subcommand.
//!
//! It attaches to the home's daemon (starting `hearthd` in the background when
//! none answers), shows the recent messages, then streams events while the
//! user types. Each line typed is submitted with source `terminal`.
//!
//! Three threads share the work. Line editing (rustyline) runs on its own
//! blocking thread and hands each line to the async side over a channel; it
//! waits for a go-ahead before reading the next, so the async side decides when
//! to stop and the terminal is never left in raw mode. Output goes through a
//! printer thread using rustyline's external printer, so events that arrive
//! while the user types are printed above the line being typed instead of
//! into it. The async side owns the connection and the [`Session`] state.
//!
//! A tool call waiting for approval is shown as a question; while one waits,
//! a typed `y` or `n` answers it (see `approvals.rs`).

use crate::approvals::{Approvals, Typed};
use crate::launch;
pub use crate::session::{event_line, first_line, Session, Style};
use hearth_client::images::{self, ImageFileError};
use hearth_client::{ConnectError, Connection};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, EventKind, ServerFrame};
use rustyline::error::ReadlineError;
use rustyline::{DefaultEditor, ExternalPrinter};
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc as std_mpsc;
use std::time::Duration;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

/// The source of the lines typed here, and this client's name in `hello`.
pub const SOURCE: &str = "terminal";

/// How many recent messages are shown on attach.
const RECENT: u32 = 20;

const PROMPT: &str = "> ";

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
    #[error("the connection to hearthd was lost: {0}")]
    ConnectionLost(String),
    #[error("cannot read the terminal: {0}")]
    Readline(#[from] ReadlineError),
    #[error("cannot watch for Ctrl-C: {0}")]
    Signal(io::Error),
}

/// Attaches to the home's daemon, starting it when none answers, and runs
/// until the user quits (`Ok`) or the connection drops (`Err`).
/// `explicit_home` is the `--home` given, passed on to a daemon started here;
/// `agent` the `--agent` given (the top agent when `None`).
pub async fn run(
    home: &Home,
    explicit_home: Option<&Path>,
    agent: Option<&str>,
) -> Result<(), TerminalError> {
    let (mut connection, welcome) = launch::attach(home, explicit_home, agent).await?;
    let style = Style::detect();
    let mut session = Session::new(welcome.busy, style);
    session.approvals = Approvals::following(&welcome.agent);

    // Events that arrive while history is fetched are shown after it; the
    // session drops any that history already showed.
    let mut early = Vec::new();
    let answer = connection
        .request(
            &ClientFrame::History {
                before: None,
                limit: Some(RECENT),
            },
            &mut |event| early.push(event),
        )
        .await?;
    let recent = match answer {
        ServerFrame::History { messages } => messages,
        ServerFrame::Error { message, .. } => return Err(TerminalError::Refused(message)),
        _ => Vec::new(),
    };

    // The catch-up is printed before line editing starts, in one piece.
    let mut lines: Vec<Option<String>> = Vec::new();
    lines.extend(recent.iter().map(|message| session.on_message(message)));
    lines.extend(early.iter().map(|event| session.on_event(event)));
    if session.busy {
        lines.push(Some(style.dim("… thinking")));
    }
    let mut catch_up = String::new();
    for line in lines.into_iter().flatten() {
        catch_up.push_str(&line);
        catch_up.push('\n');
    }
    let mut stdout = io::stdout().lock();
    let _ = stdout.write_all(catch_up.as_bytes());
    let _ = stdout.flush();
    drop(stdout);

    let saved_terminal = SavedTerminal::capture();
    let interactive = io::stdin().is_terminal();
    let mut editor = DefaultEditor::new()?;
    // Fails when stdin or stdout is not a terminal: then plain writes do.
    let external = editor
        .create_external_printer()
        .ok()
        .map(|printer| Box::new(printer) as Box<dyn ExternalPrinter + Send>);
    let screen = Screen::start(external);

    let mut sigint = signal(SignalKind::interrupt()).map_err(TerminalError::Signal)?;
    let (input_tx, mut inputs) = mpsc::unbounded_channel();
    let (resume_tx, resume_rx) = std_mpsc::channel();
    let reader = std::thread::spawn(move || read_lines(editor, input_tx, resume_rx));
    // The reader is in a readline call (raw mode, on a terminal) until it
    // hands over an input and waits for the go-ahead.
    let mut reader_running = true;
    let mut draining = false;

    let outcome = loop {
        let step = tokio::select! {
            frame = connection.next() => Step::Frame(frame),
            input = inputs.recv(), if reader_running => Step::Input(input),
            _ = sigint.recv() => Step::Signal,
        };
        match step {
            Step::Frame(Ok(Some(frame))) => match frame {
                ServerFrame::Event(event) => {
                    let idle = event.kind == EventKind::Idle;
                    screen.show_all(session.on_event(&event));
                    if draining && session.settled() {
                        break Ok(());
                    }
                    if draining && idle {
                        // Did the turn that ended take everything typed here?
                        if let Err(err) = connection.send(&ClientFrame::Status).await {
                            break Err(err.into());
                        }
                    }
                }
                ServerFrame::Ack { id, .. } => session.on_ack(id),
                ServerFrame::Status(status) => {
                    session.busy = status.busy;
                    let quiet = !status.busy && status.waiting == 0;
                    if draining && (session.settled() || (quiet && session.all_acked())) {
                        break Ok(());
                    }
                }
                ServerFrame::Error { message, .. } => {
                    session.on_refused();
                    screen.show(style.error(&format!("error: hearthd refused: {message}")));
                }
                _ => {}
            },
            Step::Frame(Ok(None)) => {
                break Err(TerminalError::ConnectionLost(
                    "hearthd closed it".to_string(),
                ))
            }
            Step::Frame(Err(err)) => break Err(TerminalError::ConnectionLost(err.to_string())),
            Step::Input(None) => reader_running = false,
            Step::Input(Some(input)) => {
                let resume = match input {
                    Input::Line(line) => {
                        session.ctrl_c_armed = false;
                        let typed = session.approvals.typed(&line);
                        if let Some(answer) = typed.frame() {
                            if let Err(err) = connection.send(&answer).await {
                                break Err(err.into());
                            }
                            session.on_approve();
                        } else if let Typed::Usage(how) = typed {
                            screen.show(style.dim(how));
                        } else if !line.trim().is_empty() {
                            if let Err(err) =
                                submit_line(&mut connection, &mut session, &screen, line).await
                            {
                                break Err(err.into());
                            }
                        }
                        Resume::Continue
                    }
                    Input::Interrupted => {
                        match on_ctrl_c(&mut session, &mut connection, &screen).await {
                            Ok(CtrlC::Quit) => {
                                let _ = resume_tx.send(Resume::Stop);
                                reader_running = false;
                                break Ok(());
                            }
                            Ok(CtrlC::Stay) => Resume::Continue,
                            Err(err) => break Err(err),
                        }
                    }
                    Input::Eof => {
                        reader_running = false;
                        // Piped input: stay for the answers to what it sent.
                        if interactive || session.settled() {
                            break Ok(());
                        }
                        draining = true;
                        if let Err(err) = connection.send(&ClientFrame::Status).await {
                            break Err(err.into());
                        }
                        continue;
                    }
                    Input::Failed(err) => {
                        reader_running = false;
                        break Err(err.into());
                    }
                };
                if resume_tx.send(resume).is_err() {
                    reader_running = false;
                }
            }
            Step::Signal => match on_ctrl_c(&mut session, &mut connection, &screen).await {
                Ok(CtrlC::Quit) => break Ok(()),
                Ok(CtrlC::Stay) => {}
                Err(err) => break Err(err),
            },
        }
    };

    screen.finish();
    if reader_running {
        // The reader is stuck in readline with the terminal in raw mode, and
        // the process is about to end under it: put the terminal back.
        saved_terminal.restore();
    } else {
        let _ = reader.join();
    }
    connection.close().await;
    outcome
}

/// What the event loop woke for.
enum Step {
    Frame(Result<Option<ServerFrame>, ConnectError>),
    Input(Option<Input>),
    Signal,
}

/// Submits a typed line, first storing the images it attaches
/// (`/image PATH words…` or `@PATH words…`). An image that cannot be read or
/// is refused is shown as an error and the line is not sent.
async fn submit_line(
    connection: &mut Connection,
    session: &mut Session,
    screen: &Screen,
    line: String,
) -> Result<(), ConnectError> {
    let (text, paths) = images::parse_line(&line, Path::is_file);
    let mut on_other = |frame: ServerFrame| match frame {
        ServerFrame::Event(event) => screen.show_all(session.on_event(&event)),
        ServerFrame::Ack { id, .. } => session.on_ack(id),
        _ => {}
    };
    let hashes = match images::put_files(connection, &paths, &mut on_other).await {
        Ok(hashes) => hashes,
        Err(ImageFileError::Connection(err)) => return Err(err),
        Err(err) => {
            screen.show(session.style.error(&format!("error: {err}")));
            return Ok(());
        }
    };
    let submit = ClientFrame::Submit {
        text: text.clone(),
        source: SOURCE.to_string(),
        key: None,
        images: hashes,
    };
    connection.send(&submit).await?;
    session.on_submit(text);
    Ok(())
}

/// What Ctrl-C decided.
enum CtrlC {
    Quit,
    Stay,
}

/// Ctrl-C interrupts a running turn; at an idle prompt, twice in a row quits.
async fn on_ctrl_c(
    session: &mut Session,
    connection: &mut Connection,
    screen: &Screen,
) -> Result<CtrlC, TerminalError> {
    if session.busy {
        session.ctrl_c_armed = false;
        connection.send(&ClientFrame::Interrupt).await?;
        screen.show(session.style.dim("… interrupting"));
        return Ok(CtrlC::Stay);
    }
    if session.ctrl_c_armed {
        return Ok(CtrlC::Quit);
    }
    session.ctrl_c_armed = true;
    screen.show(session.style.dim("(Ctrl-C again to quit, or Ctrl-D)"));
    Ok(CtrlC::Stay)
}

/// What the line reader hands to the async side.
enum Input {
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D, or the end of piped input.
    Eof,
    Failed(ReadlineError),
}

/// The async side's go-ahead after an input.
enum Resume {
    Continue,
    Stop,
}

/// The line reader's thread: reads a line, hands it over, waits to be told to
/// go on. Ends after end of input, a failure, `Stop`, or when the async side
/// is gone.
fn read_lines(
    mut editor: DefaultEditor,
    inputs: mpsc::UnboundedSender<Input>,
    resume: std_mpsc::Receiver<Resume>,
) {
    loop {
        let input = match editor.readline(PROMPT) {
            Ok(line) => {
                let _ = editor.add_history_entry(line.as_str());
                Input::Line(line)
            }
            Err(ReadlineError::Interrupted) => Input::Interrupted,
            Err(ReadlineError::Eof) => Input::Eof,
            Err(err) => Input::Failed(err),
        };
        let last = matches!(input, Input::Eof | Input::Failed(_));
        if inputs.send(input).is_err() || last {
            return;
        }
        match resume.recv() {
            Ok(Resume::Continue) => {}
            Ok(Resume::Stop) | Err(_) => return,
        }
    }
}

/// Prints on its own thread: the external printer may block until the line
/// reader takes the text, and the async side must never wait on that.
struct Screen {
    lines: std_mpsc::Sender<String>,
    done: std_mpsc::Receiver<()>,
}

impl Screen {
    /// With `external`, prints above the line being edited; without it, writes
    /// to stdout.
    fn start(mut external: Option<Box<dyn ExternalPrinter + Send>>) -> Screen {
        let (lines, incoming) = std_mpsc::channel::<String>();
        let (finished, done) = std_mpsc::channel();
        std::thread::spawn(move || {
            for line in incoming {
                let printed = match external.as_mut() {
                    Some(printer) => printer.print(line.clone()).is_ok(),
                    None => false,
                };
                if !printed {
                    let mut stdout = io::stdout().lock();
                    let _ = stdout.write_all(line.as_bytes());
                    let _ = stdout.flush();
                }
            }
            let _ = finished.send(());
        });
        Screen { lines, done }
    }

    /// Prints `text` as whole lines.
    fn show(&self, mut text: String) {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let _ = self.lines.send(text);
    }

    fn show_all(&self, text: Option<String>) {
        if let Some(text) = text {
            self.show(text);
        }
    }

    /// Waits (briefly) until everything shown is printed.
    fn finish(self) {
        let Screen { lines, done } = self;
        drop(lines);
        let _ = done.recv_timeout(Duration::from_secs(1));
    }
}

/// The terminal's settings before line editing, to put back if the process
/// must end while the line reader holds it in raw mode. Kept as `stty -g`
/// gives them, which needs no unsafe code and no extra crate.
struct SavedTerminal(Option<String>);

impl SavedTerminal {
    fn capture() -> SavedTerminal {
        if !io::stdin().is_terminal() {
            return SavedTerminal(None);
        }
        let saved = Command::new("stty")
            .arg("-g")
            .stdin(Stdio::inherit())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
            .filter(|settings| !settings.is_empty());
        SavedTerminal(saved)
    }

    fn restore(&self) {
        let Some(settings) = &self.0 else { return };
        let _ = Command::new("stty")
            .arg(settings)
            .stdin(Stdio::inherit())
            .stderr(Stdio::null())
            .status();
        let mut stdout = io::stdout().lock();
        // Bracketed paste off (the editor turned it on), and a fresh line.
        let _ = stdout.write_all(b"\x1b[?2004l\n");
        let _ = stdout.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::Kind;
    use hearth_protocol::{Event, Message};

    fn message(id: u64, kind: Kind, source: &str, text: &str) -> Message {
        Message {
            agent: "hearth".into(),
            id,
            kind,
            source: source.into(),
            text: text.into(),
            status: None,
            at: "2026-11-30T10:00:00+00:00".into(),
            answers: Vec::new(),
            images: Vec::new(),
            outbox: None,
        }
    }

    fn event(id: u64, kind: Kind, source: &str, text: &str) -> Event {
        Event::message(&message(id, kind, source, text))
    }

    #[test]
    fn user_messages_show_their_source_unless_typed_in_a_terminal() {
        let plain = Style::plain();
        assert_eq!(
            event_line(&event(1, Kind::User, "telegram", "hi"), plain).as_deref(),
            Some("[telegram] hi")
        );
        assert_eq!(
            event_line(&event(2, Kind::User, "terminal", "hello"), plain).as_deref(),
            Some("> hello")
        );
        assert_eq!(
            event_line(&event(3, Kind::Reply, "hearth", "hey"), plain).as_deref(),
            Some("hey")
        );
    }

    #[test]
    fn tools_are_one_short_line_and_errors_say_error() {
        let plain = Style::plain();
        let mut tool = event(
            4,
            Kind::Tool,
            "hearth",
            &format!("shell {}\nout", "x".repeat(200)),
        );
        tool.status = Some("error".into());
        let line = event_line(&tool, plain).unwrap();
        assert!(line.starts_with("· shell xxx"), "{line}");
        assert!(line.ends_with("… (error)"), "{line}");
        assert!(!line.contains('\n'));

        let ok = event(5, Kind::Tool, "hearth", "date");
        let ok = Event {
            status: Some("ok".into()),
            ..ok
        };
        assert_eq!(event_line(&ok, plain).as_deref(), Some("· date"));

        let error = Event::signal(
            EventKind::Error,
            "hearth",
            Some("no model configured".into()),
        );
        assert_eq!(
            event_line(&error, plain).as_deref(),
            Some("error: no model configured")
        );
        let coloured = event_line(&error, Style { colour: true }).unwrap();
        assert!(coloured.contains("error: no model configured"));
        assert!(coloured.starts_with("\x1b["));
    }

    #[test]
    fn idle_and_deltas_print_nothing_busy_prints_thinking() {
        let plain = Style::plain();
        let signal = |kind| Event::signal(kind, "hearth", Some("par".into()));
        assert_eq!(event_line(&signal(EventKind::Idle), plain), None);
        assert_eq!(event_line(&signal(EventKind::Delta), plain), None);
        assert_eq!(
            event_line(&signal(EventKind::Busy), plain).as_deref(),
            Some("… thinking")
        );
    }

    #[test]
    fn own_lines_are_not_echoed_before_or_after_their_ack() {
        let mut session = Session::new(false, Style::plain());
        session.on_submit("first".into());
        // The event before the ack.
        assert_eq!(
            session.on_event(&event(10, Kind::User, "terminal", "first")),
            None
        );
        session.on_ack(10);
        // The ack before the event.
        session.on_submit("second".into());
        session.on_ack(11);
        assert_eq!(
            session.on_event(&event(11, Kind::User, "terminal", "second")),
            None
        );
        // Someone else's words are shown.
        assert_eq!(
            session
                .on_event(&event(12, Kind::User, "telegram", "hi"))
                .as_deref(),
            Some("[telegram] hi")
        );
    }

    #[test]
    fn a_message_is_shown_once_across_history_and_live_events() {
        let mut session = Session::new(false, Style::plain());
        assert!(session
            .on_message(&message(5, Kind::Reply, "hearth", "old"))
            .is_some());
        assert_eq!(
            session.on_event(&event(5, Kind::Reply, "hearth", "old")),
            None
        );
        assert_eq!(
            session.on_event(&event(4, Kind::Note, "hearthd", "older")),
            None
        );
        assert!(session
            .on_event(&event(6, Kind::Note, "hearthd", "new"))
            .is_some());
    }

    #[test]
    fn busy_follows_turns_and_settled_waits_for_answers() {
        let mut session = Session::new(false, Style::plain());
        session.on_submit("q".into());
        assert!(!session.settled());
        session.on_ack(3);
        session.on_event(&Event::signal(EventKind::Busy, "hearth", None));
        assert!(session.busy);
        assert!(!session.settled());
        let reply = Event::message(&Message {
            answers: vec![3],
            ..message(4, Kind::Reply, "hearth", "a")
        });
        assert_eq!(session.on_event(&reply).as_deref(), Some("a"));
        session.on_event(&Event::signal(EventKind::Idle, "hearth", None));
        assert!(!session.busy);
        assert!(session.settled());
    }

    #[test]
    fn an_answer_before_the_ack_still_settles() {
        let mut session = Session::new(false, Style::plain());
        session.on_submit("q".into());
        let mut error = Event::signal(EventKind::Error, "hearth", Some("boom".into()));
        error.answers = vec![7];
        session.on_event(&error);
        session.on_ack(7);
        assert!(session.settled());
    }

    #[test]
    fn an_approvals_ack_is_not_taken_for_a_lines() {
        let mut session = Session::new(false, Style::plain());
        session.on_submit("first".into());
        session.on_approve();
        session.on_submit("second".into());
        session.on_ack(10);
        session.on_ack(11);
        session.on_ack(12);
        assert!(session.all_acked());
        assert_eq!(
            session.on_event(&event(12, Kind::User, "terminal", "second")),
            None
        );
        assert!(session
            .on_event(&event(
                13,
                Kind::Note,
                "hearthd",
                "approval abc123: allowed by terminal"
            ))
            .is_some());
        session.on_approve();
        session.on_refused();
        session.on_submit("third".into());
        session.on_ack(14);
        assert!(session.all_acked());
    }

    #[test]
    fn images_are_named_on_lines_of_their_own() {
        let mut shown = event(
            6,
            Kind::Tool,
            "hearth",
            "show_image({\"path\":\"cat.png\"}) → shown cat.png",
        );
        shown.status = Some("ok".into());
        shown.images = vec![hearth_protocol::ImageRef {
            sha256: "c".repeat(64),
            media_type: "image/png".into(),
            width: Some(640),
            height: Some(480),
            name: Some("cat.png".into()),
        }];
        let line = event_line(&shown, Style::plain()).unwrap();
        assert!(line.ends_with("\n[image: cat.png, 640x480]"), "{line}");
        let mut photo = event(7, Kind::User, "telegram", "my cat");
        photo.images = vec![hearth_protocol::ImageRef {
            name: None,
            width: None,
            height: None,
            ..shown.images[0].clone()
        }];
        assert_eq!(
            event_line(&photo, Style::plain()).as_deref(),
            Some("[telegram] my cat\n[image: cccccccccccc]")
        );
    }

    #[test]
    fn first_line_cuts_on_character_boundaries() {
        assert_eq!(first_line("héllo wörld", 5), "héllo…");
        assert_eq!(first_line("short", 10), "short");
        assert_eq!(first_line("one\ntwo", 10), "one …");
        assert_eq!(first_line("", 10), "");
    }

    #[test]
    fn log_tail_keeps_the_last_lines() {
        assert_eq!(launch::last_lines("a\nb\nc\n", 2), "b\nc");
        assert_eq!(launch::last_lines("a\n", 5), "a");
        assert_eq!(launch::last_lines("", 5), "");
    }
}
