//! What enters the log from outside a conversation: `hearth notify` (an
//! event from another program, with an idempotency key) and
//! `hearth schedule list|add|rm`.
//!
//! `schedule add` takes the time without quotes (`tomorrow 9am water the
//! plants`): the longest run of leading words that the daemon's parser
//! reads as a time is the time, the rest the text. A first word with spaces
//! in it (quoted) is the time as it stands.

use crate::sanitize::terminal_safe;
use chrono::{DateTime, Utc};
use hearth_client::running::{ask_once, CommandError};
use hearth_log::schedule::{ScheduleError, When};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ReceiptStatus, ScheduleInfo, ServerFrame};
use std::io::Write;
use std::process::ExitCode;

/// `hearth notify --key KEY TEXT`: prints `accepted SEQ` or `duplicate SEQ`.
pub async fn notify(
    home: &Home,
    agent: Option<&str>,
    key: String,
    text: String,
    source: String,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let frame = ClientFrame::Notify { key, text, source };
    let (status, seq) = ask_once(
        home,
        agent,
        "hearth-notify",
        &frame,
        |answer| match answer {
            ServerFrame::Receipt { status, seq } => Some((status, seq)),
            _ => None,
        },
    )
    .await?;
    let status = match status {
        ReceiptStatus::Accepted => "accepted",
        ReceiptStatus::Duplicate => "duplicate",
    };
    writeln!(out, "{status} {seq}")?;
    Ok(ExitCode::SUCCESS)
}

/// The most words a time takes: 5 cron fields.
const MOST_TIME_WORDS: usize = 5;

/// `hearth schedule add`'s words split into the time and the text, reading
/// times at `now`. A run that reads as a time but is in the past (or a cron
/// that never fires) is still the time, so the daemon's refusal says why;
/// when no leading run reads, the first word is the time, and the daemon
/// names the forms it takes. None when nothing is left for the text.
pub fn split_when(words: &[String], now: DateTime<Utc>) -> Option<(String, String)> {
    let first = words.first()?;
    let time_words = if first.trim().contains(char::is_whitespace) {
        1
    } else {
        let most = MOST_TIME_WORDS.min(words.len().saturating_sub(1));
        (1..=most)
            .rev()
            .find(|&count| {
                let spec = words[..count].join(" ");
                !matches!(
                    When::parse(&spec, now),
                    Err(ScheduleError::Unreadable { .. })
                )
            })
            .unwrap_or(1)
    };
    let text = crate::commands::join_words(&words[time_words.min(words.len())..])?;
    Some((words[..time_words].join(" "), text))
}

/// What `hearth schedule` does.
pub enum ScheduleCommand {
    List,
    /// The time and the text as typed (see [`split_when`]).
    Add {
        words: Vec<String>,
    },
    Remove {
        id: i64,
    },
}

pub async fn schedule(
    home: &Home,
    agent: Option<&str>,
    command: ScheduleCommand,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (frame, verb) = match command {
        ScheduleCommand::List => (ClientFrame::ScheduleList, None),
        ScheduleCommand::Add { words } => {
            let (when, text) = split_when(&words, Utc::now()).ok_or(CommandError::NothingToSend)?;
            (ClientFrame::ScheduleAdd { when, text }, Some("added"))
        }
        ScheduleCommand::Remove { id } => (ClientFrame::ScheduleCancel { id }, Some("removed")),
    };
    let schedules = ask_once(
        home,
        agent,
        "hearth-schedule",
        &frame,
        |answer| match answer {
            ServerFrame::Schedules { schedules } => Some(schedules),
            _ => None,
        },
    )
    .await?;
    match verb {
        None if schedules.is_empty() => writeln!(out, "no schedules")?,
        None => {
            for line in table(&schedules) {
                writeln!(out, "{line}")?;
            }
        }
        Some(verb) => {
            for schedule in &schedules {
                let [id, next, repeats, text] = cells(schedule);
                writeln!(out, "{verb} {id}  {next}  {repeats}  {text}")?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A schedule's cells: `#3`, its next firing (`2026-12-01 09:00`), how it
/// repeats (its cron expression, or `once`), its text.
fn cells(schedule: &ScheduleInfo) -> [String; 4] {
    let minute = |at: &str| match chrono::DateTime::parse_from_rfc3339(at) {
        Ok(at) => at.format("%Y-%m-%d %H:%M").to_string(),
        Err(_) => at.to_string(),
    };
    // A one-off is stored as its time: shown once, under NEXT.
    let repeats = if chrono::DateTime::parse_from_rfc3339(&schedule.when).is_ok() {
        "once".to_string()
    } else {
        schedule.when.clone()
    };
    [
        format!("#{}", schedule.id),
        minute(&schedule.next),
        repeats,
        terminal_safe(&schedule.text.replace('\n', " ")).into_owned(),
    ]
}

/// `hearth schedule list`: a header, then one line a schedule, in columns.
pub fn table(schedules: &[ScheduleInfo]) -> Vec<String> {
    let mut rows = vec![["ID", "NEXT", "REPEATS", "TEXT"].map(String::from)];
    rows.extend(schedules.iter().map(cells));
    let mut widths = [0usize; 3];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    rows.iter()
        .map(|[id, next, repeats, text]| {
            let [a, b, c] = widths;
            format!("{id:<a$}  {next:<b$}  {repeats:<c$}  {text}")
                .trim_end()
                .to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_has_a_header_and_shows_each_time_once() {
        let cron = ScheduleInfo {
            id: 3,
            when: "0 9 * * 1-5".into(),
            text: "stand-up".into(),
            next: "2026-12-01T09:00:00+01:00".into(),
        };
        let once = ScheduleInfo {
            id: 12,
            when: "2026-12-24T18:00:00+01:00".into(),
            text: "call\nmum".into(),
            next: "2026-12-24T18:00:00+01:00".into(),
        };
        assert_eq!(
            table(&[cron, once]),
            [
                "ID   NEXT              REPEATS      TEXT",
                "#3   2026-12-01 09:00  0 9 * * 1-5  stand-up",
                "#12  2026-12-24 18:00  once         call mum",
            ]
        );
    }

    fn split(line: &[&str]) -> Option<(String, String)> {
        let words: Vec<String> = line.iter().map(|word| word.to_string()).collect();
        split_when(&words, Utc::now())
    }

    fn pair(when: &str, text: &str) -> Option<(String, String)> {
        Some((when.to_string(), text.to_string()))
    }

    #[test]
    fn the_longest_leading_time_is_the_time() {
        let cases: [(&[&str], _); 7] = [
            (
                &["tomorrow", "9am", "water", "the", "plants"],
                pair("tomorrow 9am", "water the plants"),
            ),
            (&["07:30", "stretch"], pair("07:30", "stretch")),
            (
                &["in", "20", "minutes", "tea", "is", "ready"],
                pair("in 20 minutes", "tea is ready"),
            ),
            (
                &["monday", "8:00", "call", "mum"],
                pair("monday 8:00", "call mum"),
            ),
            (
                &["0", "9", "*", "*", "1-5", "plan", "the", "day"],
                pair("0 9 * * 1-5", "plan the day"),
            ),
            (
                &["tomorrow", "at", "9", "pm", "bins"],
                pair("tomorrow at 9 pm", "bins"),
            ),
            (
                &["2001-01-01", "10:00", "past"],
                pair("2001-01-01 10:00", "past"),
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(split(line), expected, "{line:?}");
        }
    }

    #[test]
    fn a_quoted_time_stands_and_an_unreadable_one_is_the_first_word() {
        assert_eq!(
            split(&["tomorrow 9am", "water", "the", "plants"]),
            pair("tomorrow 9am", "water the plants")
        );
        assert_eq!(split(&["0 9 * * 1-5", "plan"]), pair("0 9 * * 1-5", "plan"));
        assert_eq!(
            split(&["someday", "water", "the", "plants"]),
            pair("someday", "water the plants")
        );
        // The time alone leaves no text.
        assert_eq!(split(&["tomorrow", "9am"]), pair("tomorrow", "9am"));
        assert_eq!(split(&["9am"]), None);
        assert_eq!(split(&[]), None);
    }
}
