//! How each thing the terminal prints looks: the agent's words, your own
//! messages, other clients' messages, tool lines, notes and errors, each
//! with its time and where it came from.
//!
//! Everything shown here that hearth did not write passes through
//! `sanitize::terminal_safe`.

use crate::sanitize::terminal_safe;
use chrono::{DateTime, Datelike, Local};
use hearth_protocol::{Event, EventKind, NOTE_FAILED};
use std::io::{self, IsTerminal};

/// Characters of a tool line's call and result.
const TOOL_CHARS: usize = 100;

/// What the terminal can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// ANSI colours and styles, and rendered Markdown.
    pub colour: bool,
    /// Cursor control: a live region redrawn in place (streaming, the
    /// status line).
    pub live: bool,
}

impl Style {
    /// Live on a terminal that is not `TERM=dumb`; colour as well unless
    /// `NO_COLOR` is set (to anything but the empty string).
    pub fn detect() -> Style {
        let dumb = std::env::var("TERM").is_ok_and(|term| term == "dumb");
        let live = io::stdout().is_terminal() && !dumb;
        let no_colour = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
        Style {
            colour: live && !no_colour,
            live,
        }
    }

    /// Neither colour nor cursor control: a pipe.
    pub fn plain() -> Style {
        Style {
            colour: false,
            live: false,
        }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    /// Times, tools, notes, hints: in the background.
    pub fn grey(self, text: &str) -> String {
        self.paint("90", text)
    }

    pub fn error(self, text: &str) -> String {
        self.paint("31", text)
    }

    /// The agent's name over its words.
    pub fn agent(self, text: &str) -> String {
        self.paint("1;32", text)
    }

    /// Your own words.
    pub fn own(self, text: &str) -> String {
        self.paint("1", text)
    }

    /// Another client's or a bridge's name over its message.
    pub fn other(self, text: &str) -> String {
        self.paint("35", text)
    }

    /// A question waiting for an answer (an approval).
    pub fn ask(self, text: &str) -> String {
        self.paint("1;33", text)
    }
}

/// Who is who, for the look of a message.
#[derive(Debug, Clone)]
pub struct Who {
    /// This client's name as said in `hello` (`terminal@laptop`): messages
    /// a client of the same name submitted are shown as your own.
    pub me: String,
}

/// `text` made terminal-safe, owned.
pub fn sanitized(text: &str) -> String {
    terminal_safe(text).into_owned()
}

/// A message's time, compactly: the time today, the day this year, the
/// date before; the raw text when it is not RFC 3339.
pub fn when(at: &str, now: DateTime<Local>) -> String {
    let Ok(time) = DateTime::parse_from_rfc3339(at) else {
        return terminal_safe(at).into_owned();
    };
    let time = time.with_timezone(&Local);
    if time.date_naive() == now.date_naive() {
        time.format("%H:%M").to_string()
    } else if time.year() == now.year() {
        time.format("%b %-d").to_string()
    } else {
        time.format("%Y-%m-%d").to_string()
    }
}

/// What the terminal says when hearthd closed the connection, in the
/// words of its close frame's reason: stopping, restarting (or reloading,
/// should a daemon say so), or gone without a word (a crash, a kill).
pub fn connection_lost(reason: Option<&str>) -> String {
    let said = match reason {
        Some(hearth_protocol::CLOSE_RESTARTING) => "hearthd restarting…".to_string(),
        Some(hearth_protocol::CLOSE_STOPPING) => "hearthd stopped".to_string(),
        Some(other) => format!("{}…", terminal_safe(other.trim())),
        None => "hearthd went away".to_string(),
    };
    format!("{said} (reconnecting; Ctrl-D leaves)")
}

/// The agent a message was imported from (`hearth import`), if it was:
/// shown with it, so old words never pass for ones said here.
pub fn imported_from(event: &Event) -> Option<&str> {
    let imported = hearth_protocol::MessageStatus::Imported.as_str();
    (event.status.as_deref() == Some(imported))
        .then(|| event.source.as_deref().unwrap_or("elsewhere"))
}

/// The line over the agent's words: its time and name.
pub fn header(agent: &str, at: &str, style: Style, now: DateTime<Local>) -> String {
    format!(
        "{} {}",
        style.grey(&when(at, now)),
        style.agent(&terminal_safe(agent))
    )
}

/// How an event that is not the agent's words is shown, or `None` when it
/// is not shown. `mine` says a user message was typed here (or in a
/// terminal of the same name).
pub fn event_line(event: &Event, mine: bool, style: Style, now: DateTime<Local>) -> Option<String> {
    let mut text = terminal_safe(event.text.as_deref().unwrap_or_default()).into_owned();
    // A transcript completes the voice note shown before it (`[voice 0:42,
    // transcribing]`), under the same name: the line says it follows on.
    if event.kind == EventKind::User && event.transcript_of.is_some() {
        text = format!("↳ {text}");
    }
    let time = event.at.as_deref().map(|at| when(at, now));
    let stamp = |line: String| match &time {
        Some(time) => format!("{} {line}", style.grey(time)),
        None => line,
    };
    let line = match event.kind {
        EventKind::User if mine => stamp(format!("{} {}", style.own("›"), style.own(&text))),
        EventKind::User => {
            // A terminal is named by its client (`terminal@desk`); a
            // bridge or a script by its source.
            let source = event.source.as_deref().unwrap_or("someone");
            let from = match event.client.as_deref() {
                Some(client) if source == "terminal" && !client.is_empty() => client,
                _ => source,
            };
            let from = match imported_from(event) {
                Some(peer) => format!("imported from {peer}"),
                None => from.to_string(),
            };
            stamp(format!(
                "{} {text}",
                style.other(&format!("[{}]", terminal_safe(&from)))
            ))
        }
        EventKind::Tool => {
            let summary = tool_summary(&text);
            let failed = event.status.as_deref().filter(|status| *status != "ok");
            match failed {
                Some(status) => stamp(style.error(&format!("· {summary} ({status})"))),
                None => stamp(style.grey(&format!("· {summary}"))),
            }
        }
        EventKind::Note if event.status.as_deref() == Some(NOTE_FAILED) => {
            stamp(style.error(&format!("✗ {text}")))
        }
        EventKind::Note => stamp(style.grey(&format!("note: {text}"))),
        EventKind::Work => {
            let label = match event.status.as_deref() {
                Some(status) => format!("[work, {}]", terminal_safe(status)),
                None => "[work]".to_string(),
            };
            stamp(format!("{} {text}", style.other(&label)))
        }
        EventKind::Error => {
            let text = if text.is_empty() {
                "the turn failed".to_string()
            } else {
                text
            };
            style.error(&format!("error: {text}"))
        }
        EventKind::Ready => style.grey(&format!("· {} is ready", terminal_safe(&event.agent))),
        EventKind::Subagent => style.grey(&format!("· subagent: {text}")),
        // The agent's words have a header and a body (see `display.rs`);
        // busy and deltas go to the live region; approvals are asked by the
        // session, which keeps what waits.
        EventKind::Reply
        | EventKind::Echo
        | EventKind::Busy
        | EventKind::Idle
        | EventKind::Delta
        | EventKind::Approval
        // Activity is for a status line, never a line of the conversation.
        | EventKind::Activity => return None,
    };
    // Images are named, never drawn: `[image: cat.png, 640x480]`.
    let mut line = line;
    for image in &event.images {
        line.push('\n');
        line.push_str(&style.grey(&format!("[image: {}]", terminal_safe(&image.label()))));
    }
    Some(line)
}

/// A tool message (`name(arguments) → output`) in a few words: for
/// `shell` the command and what came of it (`shell: ls -la → 14 lines`),
/// for others the first argument and the first line of the result.
pub fn tool_summary(text: &str) -> String {
    let Some((name, arguments, output)) = split_tool_text(text) else {
        return first_line(text, TOOL_CHARS);
    };
    let argument = match &arguments {
        serde_json::Value::Object(map) => {
            let wanted = ["command", "path", "url", "query", "name", "task"];
            wanted
                .iter()
                .find_map(|key| map.get(*key).and_then(|value| value.as_str()))
                .map(str::to_string)
                .or_else(|| map.values().next().map(compact))
                .unwrap_or_default()
        }
        other => compact(other),
    };
    let outcome = if name == "shell" {
        shell_outcome(output)
    } else {
        let lines = output.lines().count();
        let first = first_line(output, TOOL_CHARS / 2);
        if lines > 1 {
            format!("{first} ({lines} lines)")
        } else {
            first
        }
    };
    let call = if argument.is_empty() {
        name.to_string()
    } else {
        first_line(&format!("{name}: {argument}"), TOOL_CHARS)
    };
    if outcome.is_empty() {
        call
    } else {
        format!("{call} → {outcome}")
    }
}

fn compact(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The name, the parsed arguments and the output of a tool message.
fn split_tool_text(text: &str) -> Option<(&str, serde_json::Value, &str)> {
    let open = text.find('(')?;
    let name = &text[..open];
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    let rest = &text[open + 1..];
    let mut values = serde_json::Deserializer::from_str(rest).into_iter::<serde_json::Value>();
    let arguments = values.next()?.ok()?;
    let after = &rest[values.byte_offset()..];
    let output = after.strip_prefix(") → ")?;
    Some((name, arguments, output))
}

/// What a shell run came to: its lines of output, and how it ended when
/// that was not well.
fn shell_outcome(output: &str) -> String {
    let mut lines = output.lines();
    let ending = lines.next().unwrap_or_default();
    let mut stdout = 0;
    let mut stderr = 0;
    let mut counting: Option<&mut usize> = None;
    for line in lines {
        match line {
            "--- stdout ---" => counting = Some(&mut stdout),
            "--- stderr ---" => counting = Some(&mut stderr),
            _ => {
                if let Some(count) = counting.as_deref_mut() {
                    *count += 1;
                }
            }
        }
    }
    let amount = match (stdout, stderr) {
        (0, 0) => "no output".to_string(),
        (1, 0) => "1 line".to_string(),
        (lines, 0) => format!("{lines} lines"),
        (lines, errors) => format!("{lines} lines, {errors} on stderr"),
    };
    if ending == "exit code 0" {
        amount
    } else {
        format!("{}, {amount}", first_line(ending, TOOL_CHARS / 2))
    }
}

/// The first line of `text`, cut to `max` characters with `…` when longer.
pub fn first_line(text: &str, max: usize) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let more_lines = lines.next().is_some();
    match first.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None if more_lines => format!("{first} …"),
        None => first.to_string(),
    }
}

/// A long message folded to its first `lines` lines, with its size, for
/// the catch-up on attach.
pub fn fold(text: &str, lines: usize) -> String {
    let total = text.lines().count();
    if total <= lines {
        return text.to_string();
    }
    let kept: Vec<&str> = text.lines().take(lines).collect();
    format!(
        "{}\n… ({} more lines, {} bytes in all; /history shows it whole)",
        kept.join("\n"),
        total - lines,
        text.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use hearth_protocol::{Kind, Message};

    fn now() -> DateTime<Local> {
        Local.with_ymd_and_hms(2026, 11, 30, 12, 0, 0).unwrap()
    }

    #[test]
    fn a_lost_connection_is_said_in_the_close_frames_words() {
        let restarting = connection_lost(Some(hearth_protocol::CLOSE_RESTARTING));
        assert!(
            restarting.starts_with("hearthd restarting… (reconnecting"),
            "{restarting}"
        );
        let stopping = connection_lost(Some(hearth_protocol::CLOSE_STOPPING));
        assert!(
            stopping.starts_with("hearthd stopped (reconnecting"),
            "{stopping}"
        );
        let reloading = connection_lost(Some("hearthd reloading\x1b[2J"));
        assert!(reloading.starts_with("hearthd reloading"), "{reloading}");
        assert!(!reloading.contains('\x1b'), "{reloading:?}");
        assert!(connection_lost(None).starts_with("hearthd went away"));
    }

    fn at(days_ago: i64, hour: u32) -> String {
        let day = now() - chrono::Duration::days(days_ago);
        let time = Local
            .with_ymd_and_hms(day.year(), day.month(), day.day(), hour, 5, 0)
            .unwrap();
        time.to_rfc3339()
    }

    fn event(kind: Kind, source: &str, text: &str) -> Event {
        Event::message(&Message {
            agent: "hearth".into(),
            id: 1,
            kind,
            source: source.into(),
            text: text.into(),
            status: None,
            at: at(0, 10),
            answers: Vec::new(),
            images: Vec::new(),
            outbox: None,
            client: None,
            transcript_of: None,
        })
    }

    #[test]
    fn times_are_short_today_and_dates_before() {
        assert_eq!(when(&at(0, 9), now()), "09:05");
        assert_eq!(when(&at(1, 9), now()), "Nov 29");
        assert_eq!(when(&at(400, 9), now()), "2025-10-26");
        assert_eq!(when("soon", now()), "soon");
    }

    #[test]
    fn messages_say_who_wrote_them() {
        let plain = Style::plain();
        let mine = event(Kind::User, "terminal", "hello");
        assert_eq!(
            event_line(&mine, true, plain, now()).unwrap(),
            "10:05 › hello"
        );
        let mut other = event(Kind::User, "terminal", "hi from there");
        other.client = Some("terminal@desk".into());
        assert_eq!(
            event_line(&other, false, plain, now()).unwrap(),
            "10:05 [terminal@desk] hi from there"
        );
        let mut phone = event(Kind::User, "telegram", "from the phone");
        phone.client = Some("telegram".into());
        assert_eq!(
            event_line(&phone, false, plain, now()).unwrap(),
            "10:05 [telegram] from the phone"
        );
        let coloured = Style {
            colour: true,
            live: true,
        };
        let line = event_line(&phone, false, coloured, now()).unwrap();
        assert!(line.contains("\x1b[35m[telegram]"), "{line:?}");
        let mut heard = event(Kind::User, "telegram", "[voice 0:42] water the plants");
        heard.transcript_of = Some(0);
        assert_eq!(
            event_line(&heard, false, plain, now()).unwrap(),
            "10:05 [telegram] ↳ [voice 0:42] water the plants"
        );
        assert_eq!(
            event_line(&heard, true, plain, now()).unwrap(),
            "10:05 › ↳ [voice 0:42] water the plants"
        );
    }

    #[test]
    fn a_failed_turns_note_looks_like_an_error_other_notes_do_not() {
        let plain = Style::plain();
        let mut failed = event(Kind::Note, "hearthd", "turn failed: no key");
        failed.status = Some(NOTE_FAILED.into());
        assert_eq!(
            event_line(&failed, false, plain, now()).unwrap(),
            "10:05 ✗ turn failed: no key"
        );
        let note = event(Kind::Note, "hearthd", "interrupted by the user");
        assert_eq!(
            event_line(&note, false, plain, now()).unwrap(),
            "10:05 note: interrupted by the user"
        );
    }

    #[test]
    fn tool_lines_say_what_the_call_did() {
        let shell = "shell({\"command\":\"ls -la\"}) → exit code 0\n--- stdout ---\na\nb\nc";
        assert_eq!(tool_summary(shell), "shell: ls -la → 3 lines");
        let failed = "shell({\"command\":\"false\"}) → exit code 1\n(no output)";
        assert_eq!(
            tool_summary(failed),
            "shell: false → exit code 1, no output"
        );
        let read = "read_file({\"path\":\"notes.md\"}) → line one\nline two";
        assert_eq!(
            tool_summary(read),
            "read_file: notes.md → line one … (2 lines)"
        );
        assert_eq!(tool_summary("date({}) → 2026-11-30"), "date → 2026-11-30");
        assert_eq!(tool_summary("something else"), "something else");
        let tricky = "web_fetch({\"url\":\"http://x/) → y\"}) → fetched";
        assert_eq!(tool_summary(tricky), "web_fetch: http://x/) → y → fetched");
    }

    #[test]
    fn long_messages_fold_with_their_size() {
        let text: String = (1..=10).map(|n| format!("line {n}\n")).collect();
        let folded = fold(&text, 3);
        let said = format!(
            "line 1\nline 2\nline 3\n… (7 more lines, {} bytes",
            text.len()
        );
        assert!(folded.starts_with(&said), "{folded}");
        assert_eq!(fold("short", 3), "short");
    }

    #[test]
    fn control_sequences_in_messages_are_taken_out() {
        let evil = event(
            Kind::User,
            "telegram",
            "hi\x1b]52;c;cGF3bmVk\x07\x1b[2J there",
        );
        let line = event_line(&evil, false, Style::plain(), now()).unwrap();
        assert_eq!(line, "10:05 [telegram] hi there");
    }
}
