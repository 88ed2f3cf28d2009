//! The terminal's status line: what the agent is doing while a turn runs,
//! in one line below the conversation and above the prompt.
//!
//! The daemon says what its turn does in `activity` events (thinking, a
//! tool and its last line of output, a retry and its wait, summaries it
//! waits for, compaction beside it); [`Activity::describe`] words them and this
//! module keeps the latest, with the time it started, and says it in one
//! line of the screen's width. A request for approval that waits here is
//! said instead of what the daemon reports, since the turn waits for the
//! person at this keyboard. The line is pure text: `display.rs` draws it in
//! the live region, so it never garbles the line being typed.

use crate::sanitize::terminal_safe;
use chrono::{DateTime, Local};
use hearth_protocol::{Activity, Doing};
use std::time::Duration;
use tokio::time::Instant;

/// What the status line says, and since when.
#[derive(Debug, Clone)]
pub struct Status {
    /// What the agent does, in words (`thinking`, `shell: ls | total 14`).
    pub what: String,
    /// When it started doing it, for the seconds counted on the line.
    pub since: Instant,
}

impl Status {
    /// `what`, starting now.
    pub fn now(what: &str) -> Status {
        Status {
            what: what.to_string(),
            since: Instant::now(),
        }
    }

    /// What an `activity` event says: none for an idle agent (compacting
    /// between turns is no turn: the line is gone at a turn's end). Its
    /// `since` is the daemon's; a time that does not read, or lies ahead
    /// (clocks disagree), counts from now.
    pub fn of_activity(activity: &Activity, now: DateTime<Local>) -> Option<Status> {
        if matches!(activity.doing, Doing::Idle) {
            return None;
        }
        let elapsed = DateTime::parse_from_rfc3339(&activity.since)
            .ok()
            .and_then(|since| (now.fixed_offset() - since).to_std().ok())
            .unwrap_or(Duration::ZERO);
        let since = Instant::now()
            .checked_sub(elapsed)
            .unwrap_or_else(Instant::now);
        Some(Status {
            what: activity.describe(),
            since,
        })
    }
}

/// What waits on this side, which the line says over the daemon's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Here {
    /// A tool call waits for a `y` or `n` typed here.
    pub approval_waits: bool,
    /// The daemon answers (Ctrl-C can interrupt); false while reconnecting.
    pub connected: bool,
}

/// The status line's text, at most `columns` wide: `… what · 12 s`, and
/// how to interrupt while connected. What the agent does is cut (with `…`)
/// rather than the time or the hint, and made safe to print.
pub fn line(status: &Status, here: Here, columns: usize) -> String {
    let secs = status.since.elapsed().as_secs();
    let what = if here.approval_waits {
        "waiting for your approval (y/n)".to_string()
    } else {
        one_line(&status.what)
    };
    let hint = if here.connected {
        " · Ctrl-C interrupts"
    } else {
        ""
    };
    let tail = format!(" · {secs} s{hint}");
    let room = columns.saturating_sub(tail.chars().count() + 2).max(12);
    format!("… {}{tail}", cut(&what, room))
}

/// The text on one line, terminal-safe: line breaks and tabs as spaces.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    terminal_safe(flat.trim()).into_owned()
}

/// At most `room` characters, the last one `…` when cut.
fn cut(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut kept: String = text.chars().take(room.saturating_sub(1)).collect();
    kept.push('…');
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn activity(doing: Doing, since: &str) -> Activity {
        Activity {
            doing,
            since: since.to_string(),
            compacting: 0,
        }
    }

    #[test]
    fn an_idle_agent_has_no_status_line() {
        let now = Local::now();
        let idle = activity(Doing::Idle, &now.to_rfc3339());
        assert!(Status::of_activity(&idle, now).is_none());
        let mut compacting = idle.clone();
        compacting.compacting = 3;
        assert!(Status::of_activity(&compacting, now).is_none());
    }

    #[test]
    fn a_tool_is_said_with_its_output_and_the_time_counts_from_the_daemons_since() {
        let now = Local::now();
        let since = (now - chrono::Duration::seconds(7)).to_rfc3339();
        let tool = Doing::Tool {
            name: "shell".to_string(),
            detail: Some("ls -la".to_string()),
            line: Some("total\t14\n".to_string()),
            running: 1,
        };
        let status = Status::of_activity(&activity(tool, &since), now).unwrap();
        let here = Here {
            approval_waits: false,
            connected: true,
        };
        let said = line(&status, here, 100);
        assert!(said.starts_with("… shell: ls -la | total 14 · "), "{said}");
        assert!(said.contains(" · 7 s") || said.contains(" · 8 s"), "{said}");
        assert!(said.ends_with(" s · Ctrl-C interrupts"), "{said}");
    }

    #[test]
    fn a_waiting_approval_is_said_over_the_daemons_words() {
        let status = Status::now("shell: rm -rf build");
        let here = Here {
            approval_waits: true,
            connected: true,
        };
        assert!(line(&status, here, 100).starts_with("… waiting for your approval (y/n) · 0 s"));
    }

    #[test]
    fn a_long_description_is_cut_and_keeps_the_time_and_no_control_codes() {
        let long = format!("shell: {}\x1b[2J", "x".repeat(300));
        let status = Status::now(&long);
        let here = Here {
            approval_waits: false,
            connected: false,
        };
        let said = line(&status, here, 60);
        assert!(said.chars().count() <= 60, "{said}");
        assert!(said.ends_with("… · 0 s"), "{said}");
        assert!(!said.contains('\x1b'), "{said:?}");
    }

    #[test]
    fn a_time_that_does_not_read_counts_from_now() {
        let now = Local::now();
        let status = Status::of_activity(&activity(Doing::Thinking, "soon"), now).unwrap();
        assert_eq!(status.what, "thinking");
        assert!(status.since.elapsed() < Duration::from_secs(1));
    }
}
