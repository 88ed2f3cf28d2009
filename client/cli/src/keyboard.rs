//! The keyboard: line editing (rustyline) on its own thread, handing each
//! line to the async side.
//!
//! The reader waits for a go-ahead after each line before it reads the
//! next, so the async side decides when to stop and the terminal is never
//! left in raw mode. What a person expects of a prompt: history across
//! sessions (a file per home, mode 0600), several lines in one message
//! (Alt-Enter, or a line that ends with a backslash), a bracketed paste kept
//! whole with its newlines, and PageUp to page back through the
//! conversation.

use hearth_protocol::home::Home;
use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, ConditionalEventHandler, Config, Editor, Event, EventContext, EventHandler, KeyCode,
    KeyEvent, Modifiers, RepeatCount,
};
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;
use tokio::sync::mpsc;
use unicode_width::UnicodeWidthStr;

/// The prompt.
pub const PROMPT: &str = "> ";

/// Lines kept in the input history file.
const HISTORY_LINES: usize = 1000;

/// What the keyboard hands to the async side.
#[derive(Debug)]
pub enum Keyboard {
    /// A message or a command, its continuation backslashes taken out.
    Line(String),
    /// PageUp: older messages, please.
    PageUp,
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D, or the end of piped input.
    Eof,
    Failed(ReadlineError),
}

/// The async side's go-ahead after a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    Continue,
    Stop,
}

/// Where the input history of a home is kept.
pub fn history_file(home: &Home) -> PathBuf {
    home.data_dir.join("input_history")
}

/// The line editor, set up: history loaded, keys bound.
pub struct LineReader {
    editor: Editor<InputHelper, FileHistory>,
    history: Option<PathBuf>,
    /// Erase the echo of an accepted line: the live region (the status
    /// line, a streaming reply) sits right above the prompt, and must stay
    /// there. A message is shown again as logged, with its time; the
    /// async side prints a command again itself.
    erase_echo: bool,
}

impl LineReader {
    /// The editor for a home's history; `erase_echo` on a terminal that
    /// shows messages as they are logged. PageUp is sent on `keys`.
    pub fn new(
        home: &Home,
        erase_echo: bool,
        keys: mpsc::UnboundedSender<Keyboard>,
    ) -> Result<LineReader, ReadlineError> {
        let config = Config::builder()
            .max_history_size(HISTORY_LINES)?
            .history_ignore_dups(true)?
            .history_ignore_space(true)
            .auto_add_history(false)
            .build();
        let mut editor = Editor::with_config(config)?;
        editor.set_helper(Some(InputHelper));
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        editor.bind_sequence(
            KeyEvent(KeyCode::PageUp, Modifiers::NONE),
            EventHandler::Conditional(Box::new(PageUp(keys))),
        );
        let history = Some(history_file(home)).filter(|_| io::stdin().is_terminal());
        if let Some(path) = &history {
            // None yet, or unreadable: start without.
            let _ = editor.load_history(path);
        }
        Ok(LineReader {
            editor,
            history,
            erase_echo,
        })
    }

    /// Whether lines can be printed above the one being typed.
    pub fn external_printer(&mut self) -> Option<Box<dyn rustyline::ExternalPrinter + Send>> {
        self.editor
            .create_external_printer()
            .ok()
            .map(|printer| Box::new(printer) as Box<dyn rustyline::ExternalPrinter + Send>)
    }

    /// The reader's thread: reads a line, hands it over, waits to be told
    /// to go on. Ends after end of input, a failure, `Stop`, or when the
    /// async side is gone.
    pub fn run(
        mut self,
        keys: mpsc::UnboundedSender<Keyboard>,
        resume: std_mpsc::Receiver<Resume>,
    ) {
        loop {
            let key = match self.editor.readline(PROMPT) {
                Ok(line) => {
                    self.remember(&line);
                    let line = joined(&line);
                    if self.erase_echo {
                        erase_echo(&line);
                    }
                    Keyboard::Line(line)
                }
                Err(ReadlineError::Interrupted) => {
                    // The editor left its prompt row behind (as if Enter).
                    if self.erase_echo {
                        erase_echo("");
                    }
                    Keyboard::Interrupted
                }
                Err(ReadlineError::Eof) => Keyboard::Eof,
                Err(err) => Keyboard::Failed(err),
            };
            let last = matches!(key, Keyboard::Eof | Keyboard::Failed(_));
            if keys.send(key).is_err() || last {
                return;
            }
            match resume.recv() {
                Ok(Resume::Continue) => {}
                Ok(Resume::Stop) | Err(_) => return,
            }
        }
    }

    fn remember(&mut self, line: &str) {
        if line.trim().is_empty() {
            return;
        }
        let _ = self.editor.add_history_entry(line);
        if let Some(path) = &self.history {
            // rustyline writes the file 0600; a history that cannot be
            // written is no reason to stop.
            let _ = self.editor.append_history(path);
        }
    }
}

/// A typed line as a message: a backslash that ended a line (to go on on
/// the next) is taken out.
pub fn joined(line: &str) -> String {
    line.replace("\\\n", "\n")
}

/// Erases what the editor left of an accepted line (the prompt and the
/// words, over as many rows as they took), so the message shows once, as
/// logged. The cursor is at the start of the row below them.
fn erase_echo(line: &str) {
    let columns = crate::display::Size::of_terminal().columns.max(1);
    let rows: usize = line
        .split('\n')
        .enumerate()
        .map(|(index, part)| {
            let prompt = if index == 0 { PROMPT.width() } else { 0 };
            (prompt + part.width()).div_ceil(columns).max(1)
        })
        .sum();
    let mut stdout = io::stdout().lock();
    let _ = write!(stdout, "\x1b[{rows}A\r\x1b[J");
    let _ = stdout.flush();
}

/// PageUp asks for older messages and leaves the line being typed as it is.
struct PageUp(mpsc::UnboundedSender<Keyboard>);

impl ConditionalEventHandler for PageUp {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext) -> Option<Cmd> {
        let _ = self.0.send(Keyboard::PageUp);
        Some(Cmd::Noop)
    }
}

/// A line that ends with a backslash goes on on the next.
struct InputHelper;

impl Validator for InputHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        if ctx.input().ends_with('\\') {
            Ok(ValidationResult::Incomplete)
        } else {
            Ok(ValidationResult::Valid(None))
        }
    }
}

impl rustyline::completion::Completer for InputHelper {
    type Candidate = String;
}

impl rustyline::hint::Hinter for InputHelper {
    type Hint = String;
}

impl rustyline::highlight::Highlighter for InputHelper {}

impl rustyline::Helper for InputHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_backslashes_are_taken_out() {
        assert_eq!(joined("one\\\ntwo"), "one\ntwo");
        assert_eq!(joined("a path C:\\dir"), "a path C:\\dir");
        assert_eq!(joined("pasted\nlines"), "pasted\nlines");
    }
}
