//! The printer: paints (see `display.rs`) printed in order on their own
//! thread, above the line being typed when rustyline's external printer is
//! there, else straight to stdout. And the terminal's settings, put back if
//! the process must end while the line reader holds it in raw mode.

use rustyline::ExternalPrinter;
use std::io::{self, IsTerminal, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

/// Prints on its own thread: the external printer may block until the line
/// reader takes the text, and the async side must never wait on that.
pub struct Screen {
    paints: std_mpsc::Sender<String>,
    done: std_mpsc::Receiver<()>,
}

impl Screen {
    /// With `external`, prints above the line being edited; without it,
    /// writes to stdout.
    pub fn start(mut external: Option<Box<dyn ExternalPrinter + Send>>) -> Screen {
        let (paints, incoming) = std_mpsc::channel::<String>();
        let (finished, done) = std_mpsc::channel();
        std::thread::spawn(move || {
            for mut paint in incoming {
                // A paint ends its line. The external printer adds the
                // newline itself only while the editor reads; between two
                // reads it prints as given, and the prompt would then be
                // drawn over the paint's last row.
                if !paint.ends_with('\n') {
                    paint.push('\n');
                }
                let printed = match external.as_mut() {
                    Some(printer) => printer.print(paint.clone()).is_ok(),
                    None => false,
                };
                if !printed {
                    let mut stdout = io::stdout().lock();
                    let _ = stdout.write_all(paint.as_bytes());
                    let _ = stdout.flush();
                }
            }
            let _ = finished.send(());
        });
        Screen { paints, done }
    }

    /// Prints a paint; an empty one is nothing to print.
    pub fn paint(&self, paint: String) {
        if !paint.is_empty() {
            let _ = self.paints.send(paint);
        }
    }

    /// Waits (briefly) until everything painted is printed.
    pub fn finish(self) {
        let Screen { paints, done } = self;
        drop(paints);
        let _ = done.recv_timeout(Duration::from_secs(1));
    }
}

/// The terminal's settings before line editing, to put back if the process
/// must end while the line reader holds it in raw mode. Kept as `stty -g`
/// gives them, which needs no unsafe code and no extra crate.
pub struct SavedTerminal(Option<String>);

impl SavedTerminal {
    pub fn capture() -> SavedTerminal {
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

    pub fn restore(&self) {
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
