//! How `hearth setup` asks: on a terminal, one question at a time (a key
//! typed without echo); without one, or with `--yes`, never — each answer
//! then comes from its flag or its default, and a question that has neither
//! is an error naming the flag that answers it.
//!
//! A secret is read with the terminal's echo, line editing and signal keys
//! off, byte by byte, so that Ctrl-C there is an answer like any other (it
//! ends setup) and the terminal is put back as it was however the read ends.

use std::io::{self, BufRead, IsTerminal, Read, Write};
use std::process::{Command, Stdio};

#[derive(Debug, thiserror::Error)]
pub enum AskError {
    #[error("{question}: no terminal to ask on (or --yes); give {flag}")]
    NeedsFlag {
        question: String,
        flag: &'static str,
    },
    #[error("the input ended before setup was done; nothing more was written")]
    Ended,
    #[error("setup was interrupted; nothing more was written")]
    Interrupted,
    #[error("cannot read the terminal: {0}")]
    Io(#[from] io::Error),
}

/// Asks on the terminal, or answers from flags and defaults.
pub struct Asker<'a> {
    /// Questions go to a person (stdin is a terminal, no `--yes`).
    pub interactive: bool,
    out: &'a mut dyn Write,
}

impl<'a> Asker<'a> {
    pub fn new(yes: bool, out: &'a mut dyn Write) -> Asker<'a> {
        Asker {
            interactive: !yes && io::stdin().is_terminal(),
            out,
        }
    }

    /// Where setup says what it does.
    pub fn out(&mut self) -> &mut dyn Write {
        &mut *self.out
    }

    /// Says a line.
    pub fn say(&mut self, text: &str) {
        let _ = writeln!(self.out, "{text}");
        let _ = self.out.flush();
    }

    /// One of `options` by number (from 1); Enter takes `default`.
    /// Without a person: `default`, or an error naming `flag`.
    pub fn choose(
        &mut self,
        question: &str,
        options: &[String],
        default: Option<usize>,
        flag: &'static str,
    ) -> Result<usize, AskError> {
        if !self.interactive {
            return default.ok_or_else(|| needs(question, flag));
        }
        self.say(question);
        for (number, option) in options.iter().enumerate() {
            self.say(&format!("  {}) {option}", number + 1));
        }
        loop {
            let hint = default.map_or(String::new(), |at| format!(" [{}]", at + 1));
            let answer = self.line(&format!("Choose 1-{}{hint}: ", options.len()))?;
            match (answer.trim(), default) {
                ("", Some(at)) => return Ok(at),
                (typed, _) => match typed.parse::<usize>() {
                    Ok(number) if (1..=options.len()).contains(&number) => return Ok(number - 1),
                    _ => self.say(&format!("Type a number from 1 to {}.", options.len())),
                },
            }
        }
    }

    /// A line of text; Enter takes `default`. Without a person: `default`,
    /// or an error naming `flag`.
    pub fn text(
        &mut self,
        question: &str,
        default: Option<&str>,
        flag: &'static str,
    ) -> Result<String, AskError> {
        if !self.interactive {
            return default
                .map(str::to_string)
                .ok_or_else(|| needs(question, flag));
        }
        loop {
            let hint = default.map_or(String::new(), |value| format!(" [{value}]"));
            let answer = self.line(&format!("{question}{hint}: "))?;
            match (answer.trim(), default) {
                ("", Some(value)) => return Ok(value.to_string()),
                ("", None) => self.say("An answer is needed here."),
                (typed, _) => return Ok(typed.to_string()),
            }
        }
    }

    /// Yes or no; Enter (and no person) takes `default`.
    pub fn confirm(&mut self, question: &str, default: bool) -> Result<bool, AskError> {
        if !self.interactive {
            return Ok(default);
        }
        let hint = if default { "[Y/n]" } else { "[y/N]" };
        loop {
            let answer = self.line(&format!("{question} {hint} "))?;
            match answer.trim().to_ascii_lowercase().as_str() {
                "" => return Ok(default),
                "y" | "yes" => return Ok(true),
                "n" | "no" => return Ok(false),
                _ => self.say("Answer y or n."),
            }
        }
    }

    /// A secret typed or pasted without echo; empty when Enter alone.
    /// Without a person: an error naming `flag`.
    pub fn secret(&mut self, question: &str, flag: &'static str) -> Result<String, AskError> {
        if !self.interactive {
            return Err(needs(question, flag));
        }
        // The prompt comes once the terminal is hidden: nothing typed after
        // it is echoed, and Ctrl-C is already a key like the others.
        let hidden = Hidden::start();
        // `… (Enter for none)` becomes `… (Enter for none; hidden)`.
        let prompt = match question.strip_suffix(')') {
            Some(open) => format!("{open}; hidden): "),
            None => format!("{question} (hidden): "),
        };
        let _ = write!(self.out, "{prompt}");
        let _ = self.out.flush();
        let read = match hidden {
            Some(hidden) => {
                let read = read_hidden();
                drop(hidden);
                read
            }
            None => read_line(),
        };
        self.say("");
        Ok(read?.trim().to_string())
    }

    fn line(&mut self, prompt: &str) -> Result<String, AskError> {
        let _ = write!(self.out, "{prompt}");
        let _ = self.out.flush();
        read_line()
    }
}

fn needs(question: &str, flag: &'static str) -> AskError {
    AskError::NeedsFlag {
        question: question.trim_end_matches(['?', ':']).to_string(),
        flag,
    }
}

fn read_line() -> Result<String, AskError> {
    let mut line = String::new();
    if io::stdin().lock().read_line(&mut line)? == 0 {
        return Err(AskError::Ended);
    }
    Ok(line)
}

/// The terminal while a secret is typed: no echo, no line editing, no
/// signal keys. Dropping it puts back the settings it found, on every way
/// out of the read (Enter, Ctrl-C, the end of the input, an error).
struct Hidden {
    /// `stty -g`: the settings before, in the form `stty` takes back.
    saved: String,
}

impl Hidden {
    /// None when stdin is no terminal `stty` can change.
    fn start() -> Option<Hidden> {
        let output = Command::new("stty")
            .arg("-g")
            .stdin(Stdio::inherit())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|output| output.status.success())?;
        let saved = String::from_utf8_lossy(&output.stdout).trim().to_string();
        let hidden = Hidden { saved };
        // Dropped at once (and the settings put back) when this fails.
        stty(&["-echo", "-icanon", "-isig", "min", "1", "time", "0"]).then_some(hidden)
    }
}

impl Drop for Hidden {
    fn drop(&mut self) {
        stty(&[&self.saved]);
    }
}

/// A line typed with the terminal as [`Hidden`] leaves it: Enter ends it,
/// Backspace and Ctrl-U edit it, Ctrl-C interrupts, Ctrl-D on an empty line
/// (or the end of the input) ends the input; other control bytes are
/// dropped.
fn read_hidden() -> Result<String, AskError> {
    let mut typed: Vec<u8> = Vec::new();
    let mut stdin = io::stdin().lock();
    loop {
        let mut byte = [0u8; 1];
        if stdin.read(&mut byte)? == 0 {
            if typed.is_empty() {
                return Err(AskError::Ended);
            }
            break;
        }
        match byte[0] {
            b'\r' | b'\n' => break,
            0x03 => return Err(AskError::Interrupted),
            0x04 if typed.is_empty() => return Err(AskError::Ended),
            0x7f | 0x08 => {
                // A whole character goes: its continuation bytes, then its first.
                while typed.pop().is_some_and(|last| last & 0xc0 == 0x80) {}
            }
            0x15 => typed.clear(),
            control if control < 0x20 => {}
            other => typed.push(other),
        }
    }
    Ok(String::from_utf8_lossy(&typed).into_owned())
}

/// Changes the terminal's settings with `stty` (as the terminal client
/// does); whether it worked.
fn stty(settings: &[&str]) -> bool {
    Command::new("stty")
        .args(settings)
        .stdin(Stdio::inherit())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The whole of stdin, trimmed: a key given with `--key-stdin`.
pub fn read_stdin_secret(what: &str) -> Result<String, AskError> {
    let mut text = String::new();
    io::Read::read_to_string(&mut io::stdin().lock(), &mut text)?;
    let text = text.trim().to_string();
    if text.is_empty() {
        return Err(AskError::NeedsFlag {
            question: format!("{what} on stdin was empty"),
            flag: "the key on stdin",
        });
    }
    Ok(text)
}

/// What the variable `name` holds: in the environment, else in the home's
/// `secrets.env`; none when neither has it.
pub fn known_secret(home: &hearth_protocol::home::Home, name: &str) -> Option<String> {
    let from_env = std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    from_env.or_else(|| {
        std::fs::read_to_string(home.secrets_file())
            .ok()
            .and_then(|text| hearth_protocol::secrets::secret_in(&text, name))
    })
}

/// The secret in the variable `name` ([`known_secret`]), else asked for
/// (hidden) until one is given, saying `needed` after an empty answer;
/// with the secret again when it is new here, for `secrets.env`.
pub fn secret_or_ask(
    asker: &mut Asker<'_>,
    home: &hearth_protocol::home::Home,
    name: &str,
    question: &str,
    flag: &'static str,
    needed: &str,
) -> Result<(String, Option<String>), AskError> {
    if let Some(secret) = known_secret(home, name) {
        return Ok((secret, None));
    }
    loop {
        let secret = asker.secret(question, flag)?;
        if !secret.is_empty() {
            return Ok((secret.clone(), Some(secret)));
        }
        asker.say(needed);
    }
}
