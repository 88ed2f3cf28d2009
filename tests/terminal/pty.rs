//! The real `hearth` in a pseudo-terminal, its output read as a terminal
//! would show it.
//!
//! The process runs under rexpect's pty (its own session, the pty as its
//! controlling terminal); every byte it writes is kept and fed to a vt100
//! screen of [`ROWS`] × [`COLUMNS`] (tall, so a test reads the whole
//! conversation without scrolling). Waits are on a condition variable that
//! each read signals, with [`DEADLINE`] as the safety net.

use hearth_tests::harness::{TestHome, DEADLINE, OLLAMA_URL_ENV};
use rexpect::process::PtyProcess;
use std::fs::File;
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::process::Command;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// The screen's rows: tall enough for a whole test's conversation.
pub const ROWS: u16 = 200;
pub const COLUMNS: u16 = 100;

/// What the reader thread keeps.
struct Seen {
    screen: vt100::Parser,
    raw: Vec<u8>,
    ended: bool,
}

/// `hearth` attached in a pseudo-terminal.
pub struct Pty {
    process: PtyProcess,
    input: File,
    seen: Arc<(Mutex<Seen>, Condvar)>,
}

impl Pty {
    /// Starts `hearth --home HOME` in a pty of [`ROWS`] × [`COLUMNS`], with
    /// `TERM=xterm-256color` and these variables as well.
    pub fn attach(home: &TestHome, env: &[(&str, &str)]) -> Pty {
        Pty::run(home, &[], env)
    }

    /// Starts `hearth ARGS --home HOME` in a pty, as [`Pty::attach`] does
    /// (`hearth setup`, say), without the providers' key variables.
    pub fn run(home: &TestHome, args: &[&str], env: &[(&str, &str)]) -> Pty {
        Pty::start(home, args, env, "exec \"$0\" \"$@\"")
    }

    /// Starts `hearth ARGS --home HOME` in a pty as [`Pty::run`] does, but
    /// in a terminal that echoes, as a shell's does; once hearth exits, the
    /// shell line `after` runs in the same terminal (`$?` is hearth's exit
    /// status): what hearth left the terminal as.
    pub fn run_then(home: &TestHome, args: &[&str], env: &[(&str, &str)], after: &str) -> Pty {
        let then = format!("stty echo && \"$0\" \"$@\"; {after}");
        Pty::start(home, args, env, &then)
    }

    fn start(home: &TestHome, args: &[&str], env: &[(&str, &str)], then: &str) -> Pty {
        // The size is set by `stty` on the pty itself, then hearth runs.
        let script = format!("stty rows {ROWS} cols {COLUMNS} && {then}");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(script)
            .arg(&home.bins.hearth)
            .args(args)
            .arg("--home")
            .arg(home.path())
            .env_remove("HEARTH_HOME")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("NO_COLOR")
            .env("TERM", "xterm-256color")
            .env(OLLAMA_URL_ENV, "off")
            .envs(env.iter().copied());
        let mut process = PtyProcess::new(command).expect("hearth starts in a pty");
        process.set_kill_timeout(Some(2_000));
        let mut output = process.get_file_handle().expect("the pty's output");
        let input = process.get_file_handle().expect("the pty's input");
        let rows = NonZeroU16::new(ROWS).expect("rows");
        let columns = NonZeroU16::new(COLUMNS).expect("columns");
        let seen = Arc::new((
            Mutex::new(Seen {
                screen: vt100::Parser::new(rows, columns, 0),
                raw: Vec::new(),
                ended: false,
            }),
            Condvar::new(),
        ));
        let shared = seen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 8192];
            loop {
                let read = output.read(&mut buffer);
                let (lock, changed) = &*shared;
                let mut seen = lock
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                match read {
                    Ok(0) | Err(_) => {
                        seen.ended = true;
                        changed.notify_all();
                        return;
                    }
                    Ok(count) => {
                        seen.screen.process(&buffer[..count]);
                        seen.raw.extend_from_slice(&buffer[..count]);
                        changed.notify_all();
                    }
                }
            }
        });
        Pty {
            process,
            input,
            seen,
        }
    }

    /// Types `text` (`\r` is Enter, `\x03` Ctrl-C, `\x04` Ctrl-D).
    pub fn send(&mut self, text: &str) {
        self.input.write_all(text.as_bytes()).expect("typed");
        self.input.flush().expect("typed");
    }

    /// Types a line and Enter.
    pub fn line(&mut self, text: &str) {
        self.send(&format!("{text}\r"));
    }

    /// Every byte hearth wrote so far.
    pub fn raw(&self) -> Vec<u8> {
        self.seen
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .raw
            .clone()
    }

    /// Whether the cell where `word` first appears on screen is bold.
    pub fn is_bold(&self, word: &str) -> bool {
        let seen = self
            .seen
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let screen = seen.screen.screen();
        for (row, line) in screen.rows(0, COLUMNS).enumerate() {
            if let Some(byte) = line.find(word) {
                let column = line[..byte].chars().count() as u16;
                return screen
                    .cell(row as u16, column)
                    .is_some_and(|cell| cell.bold());
            }
        }
        false
    }

    /// Waits until the screen satisfies `check`; panics with the screen
    /// after [`DEADLINE`].
    pub fn wait_until(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        let (lock, changed) = &*self.seen;
        let mut seen = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            let text = screen_text(&seen.screen);
            if check(&text) {
                return text;
            }
            let now = Instant::now();
            assert!(
                now < deadline && !seen.ended,
                "waited in vain for {what}; the screen:\n{text}"
            );
            seen = changed
                .wait_timeout(seen, deadline - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// Waits until `text` is on screen; returns the screen.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_until(&format!("{text:?} on screen"), |screen| {
            screen.contains(text)
        })
    }

    /// Waits until hearth exits; returns whether it exited 0.
    pub fn wait_exit(&mut self) -> bool {
        matches!(
            self.process.wait(),
            Ok(rexpect::process::WaitStatus::Exited(_, 0))
        )
    }
}

/// The rows of the screen as text, trimmed at the right, without the blank
/// rows at the end.
fn screen_text(screen: &vt100::Parser) -> String {
    let rows: Vec<String> = screen
        .screen()
        .rows(0, COLUMNS)
        .map(|row| row.trim_end().to_string())
        .collect();
    let last = rows
        .iter()
        .rposition(|row| !row.is_empty())
        .map_or(0, |at| at + 1);
    rows[..last].join("\n")
}

/// How often `needle` occurs in `haystack`.
pub fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}
