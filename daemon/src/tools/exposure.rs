//! Files carry the provenance of the calls that changed them: a page a
//! command saved to a file reads as outside text in a later turn, as it
//! did when it was fetched.
//!
//! - A call that may bring outside words into files runs inside a
//!   *window* of time, kept in the log (`log/exposure.rs`) before the call
//!   starts: a `shell` command that could reach the network, an MCP
//!   server's call, and every call of a tainted turn that is not read-only
//!   (a command or a `write_file` run with a person's yes still writes what
//!   the turn read). The window closes once the call's processes are gone
//!   (the keeper ends them with the call); a call cut off (an interrupt)
//!   closes it [`CUT_OFF_NS`] later, the most the keeper takes to kill, and
//!   one the daemon stopped in is closed at the next start.
//! - `read_file` reads the file's ctime after its read. A file whose ctime
//!   falls in a window is outside text: the model reads it between the
//!   outside-text markers, its tool message has `provenance.file` (and
//!   `after`, the call), and it taints the turn, naming the file and the
//!   call. One `fstat` and one indexed query per read.
//! - ctime, because the kernel stamps it at every change of a file's
//!   content, name, links or mode, and no command can set it (`touch -d`
//!   sets the others). A window starts at the coarse clock the kernel
//!   stamps from, so a change at the call's first instant is in it, and
//!   ends at the fine clock, after every change the call made.
//!
//! What it cannot see: a file that a clean call copied, moved or touched
//! after the window has that call's time (the copy reads as plain text),
//! and a clean turn's `shell cat` reads any file as plain output.

use super::folder::Folder;
use super::registry::{Outcome, Provenance};
use crate::log::{Log, LogError};
use serde_json::Value;
use std::sync::Arc;

/// How long past its cutting off a cut-off call's window lasts: the
/// keeper's 10 seconds to kill what the command left, and some.
const CUT_OFF_NS: i64 = 15_000_000_000;

/// Why a call of `tool` opens a window, in words that follow "changed
/// while"; none when it does not. `is_mcp`: an MCP server's tool;
/// `shell_network`: a `shell` call that could reach the network;
/// `tainted`: what tainted the turn, if anything did.
pub fn why(
    tool: &str,
    arguments: &Value,
    acts: bool,
    is_mcp: bool,
    shell_network: bool,
    tainted: Option<&str>,
) -> Option<String> {
    match tainted {
        Some(reason) if acts => Some(format!("`{tool}` ran in a turn tainted {reason}")),
        _ if is_mcp => Some(format!("`{tool}`, an MCP server's tool, ran")),
        _ if tool == "shell" && shell_network => {
            let command = arguments
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default();
            Some(format!(
                "`shell` ran with the network: `{}`",
                crate::provenance::bounded(command)
            ))
        }
        _ => None,
    }
}

/// A window that is open while its call runs.
pub struct Window {
    log: Log,
    id: i64,
    /// Closed by [`Window::close`]; otherwise the drop closes it late.
    closed: bool,
}

/// Opens a window for `agent`'s call when there is a `why`; kept in the
/// log before this returns. An error means the call must not run.
pub async fn open(log: &Log, agent: &str, why: Option<String>) -> Result<Option<Window>, LogError> {
    let Some(why) = why else {
        return Ok(None);
    };
    let id = log.open_exposure(agent, &why, coarse_now()).await?;
    Ok(Some(Window {
        log: log.clone(),
        id,
        closed: false,
    }))
}

impl Window {
    /// Closes the window now: the call has ended and its processes with it.
    /// A window the log cannot close stays open until the next start (the
    /// files changed meanwhile read as outside text).
    pub async fn close(mut self) {
        self.closed = true;
        if let Err(err) = self.log.close_exposure(self.id, fine_now()).await {
            tracing::warn!("a call's window stays open until hearthd starts again: {err}");
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        // Cut off: its processes are being killed, which takes a while.
        let (log, id) = (self.log.clone(), self.id);
        let ended = fine_now().saturating_add(CUT_OFF_NS);
        // Without a runtime it stays open until the next start.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = log.close_exposure(id, ended).await;
            });
        }
    }
}

/// `read_file` for `agent`: the file's lines, as outside text when the
/// file changed in a window. Arguments were checked against its spec.
pub async fn read_file(folder: Arc<Folder>, log: &Log, agent: &str, arguments: Value) -> Outcome {
    let work = move || {
        let path = arguments
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let number = |key: &str| arguments.get(key).and_then(Value::as_u64);
        super::files::read_changed(&folder, path, number("offset"), number("limit"))
    };
    let shown = match tokio::task::spawn_blocking(work).await {
        Ok(Ok(shown)) => shown,
        Ok(Err(err)) => return Outcome::error(err.to_string()),
        Err(err) => return Outcome::error(format!("the file tool failed: {err}")),
    };
    let why = match log.exposure_at(shown.changed).await {
        Ok(None) => return Outcome::ok(shown.text),
        Ok(Some(exposure)) if exposure.agent == agent => exposure.why,
        Ok(Some(exposure)) => format!("{} (agent `{}`)", exposure.why, exposure.agent),
        // Not known to be clean: outside text.
        Err(err) => format!("a call the log could not tell of ({err})"),
    };
    let path = crate::provenance::bounded(&shown.path);
    let origin = format!("the file `{path}` as read, changed while {why}");
    Outcome {
        provenance: Provenance::File { path, why },
        ..Outcome::ok(super::web::quoted(&origin, &shown.text))
    }
}

/// Now on the wall clock as the kernel stamps files (its coarse clock,
/// never ahead of a stamp made later), in nanoseconds since the epoch.
fn coarse_now() -> i64 {
    // SAFETY: `now` is a plain C struct that clock_gettime fills in.
    let mut now: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `now` is ours to fill in.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut now) } != 0 {
        // No coarse clock: a second before the fine one is before it too.
        return fine_now().saturating_sub(1_000_000_000);
    }
    (now.tv_sec as i64)
        .saturating_mul(1_000_000_000)
        .saturating_add(now.tv_nsec as i64)
}

/// Now on the wall clock, in nanoseconds since the epoch.
fn fine_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn networked_shell_mcp_and_a_tainted_turns_acting_calls_open_windows() {
        let curl = json!({"command": "curl -o page.html https://example.org"});
        assert_eq!(
            why("shell", &curl, true, false, true, None).as_deref(),
            Some("`shell` ran with the network: `curl -o page.html https://example.org`")
        );
        assert_eq!(why("shell", &curl, true, false, false, None), None);
        assert_eq!(
            why("write_file", &json!({}), true, false, false, None),
            None
        );
        let tainted = Some("after reading https://evil.example");
        assert_eq!(
            why("write_file", &json!({}), true, false, false, tainted).as_deref(),
            Some("`write_file` ran in a turn tainted after reading https://evil.example")
        );
        assert!(why("shell", &curl, true, false, false, tainted).is_some());
        assert_eq!(
            why("read_file", &json!({}), false, false, false, tainted),
            None
        );
        assert!(why("mcp__fs__write", &json!({}), true, true, false, None).is_some());
    }

    #[test]
    fn the_coarse_clock_is_never_ahead_of_a_files_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let before = coarse_now();
        let path = dir.path().join("f");
        std::fs::write(&path, "x").unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        use std::os::unix::fs::MetadataExt;
        let stamped = meta.ctime() * 1_000_000_000 + meta.ctime_nsec();
        assert!(before <= stamped, "{before} > {stamped}");
        assert!(stamped <= fine_now());
    }
}
