//! `hearth log`: messages of the log, oldest first, for people or as one
//! JSON object a line, narrowed by `--grep`, `--kind`, `--source` and
//! `--since-date`/`--until-date` (a [`Filter`], applied to the messages the
//! walk back through the log brings).

use crate::commands::local_time;
use crate::sanitize::terminal_safe;
use chrono::{DateTime, FixedOffset, Local, NaiveDate, NaiveDateTime, TimeZone};
use hearth_client::log_walk::{walk_log, LogWalk};
use hearth_client::running::{connect_running, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::{Kind, Message};
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;

/// How many messages `hearth log` prints when neither `--limit` nor `--since`
/// is given.
pub const DEFAULT_LOG_LIMIT: u32 = 50;

/// What `hearth log` prints.
#[derive(Debug, Clone, Default)]
pub struct LogRequest {
    /// At most this many messages: the newest ones, or with `since` the
    /// oldest ones after it. Without either, [`DEFAULT_LOG_LIMIT`].
    pub limit: Option<u32>,
    /// Only messages with a greater id.
    pub since: Option<u64>,
    /// Which messages, by their text, kind, source and time.
    pub filter: Filter,
    /// One JSON object per line instead of the human form.
    pub json: bool,
}

/// A time bound of the filter, with the offset it was given in.
pub type Bound = DateTime<FixedOffset>;

/// Which messages `hearth log` keeps; an empty filter keeps all.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Words the text holds, case ignored.
    pub grep: Option<String>,
    /// Any of these kinds; all when empty.
    pub kinds: Vec<Kind>,
    /// Exactly this source.
    pub source: Option<String>,
    /// Written at or after this time.
    pub since: Option<DateTime<FixedOffset>>,
    /// Written before this time.
    pub until: Option<DateTime<FixedOffset>>,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        self.grep.is_none()
            && self.kinds.is_empty()
            && self.source.is_none()
            && self.since.is_none()
            && self.until.is_none()
    }

    /// Whether `message` passes. A message whose time cannot be read passes
    /// no time bound.
    pub fn keeps(&self, message: &Message) -> bool {
        let grep = self
            .grep
            .as_ref()
            .is_none_or(|words| message.text.to_lowercase().contains(&words.to_lowercase()));
        let kind = self.kinds.is_empty() || self.kinds.contains(&message.kind);
        let source = self
            .source
            .as_ref()
            .is_none_or(|source| *source == message.source);
        let at = DateTime::parse_from_rfc3339(&message.at).ok();
        let since = self
            .since
            .is_none_or(|since| at.is_some_and(|at| at >= since));
        let until = self
            .until
            .is_none_or(|until| at.is_some_and(|at| at < until));
        grep && kind && source && since && until
    }
}

/// Why a `--kind` or a date of `hearth log` cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("`{0}` is not a kind of message: give user, reply, echo, tool, note or work")]
    Kind(String),
    #[error("`{0}` is not a date: give a local date (2026-11-30), a date and time (\"2026-11-30 18:00\") or an RFC 3339 time")]
    Date(String),
}

/// A `--kind` value.
pub fn kind(text: &str) -> Result<Kind, FilterError> {
    Kind::parse(text.trim()).ok_or_else(|| FilterError::Kind(text.to_string()))
}

/// Where a bound given as `text` falls: a local date (its midnight, or
/// with `end_of_day` the next one, so that `--until-date` takes the day in),
/// a local date and time, or an RFC 3339 time.
pub fn bound(text: &str, end_of_day: bool) -> Result<DateTime<FixedOffset>, FilterError> {
    let text = text.trim();
    let bad = || FilterError::Date(text.to_string());
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at);
    }
    let naive = [
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
    ]
    .iter()
    .find_map(|pattern| NaiveDateTime::parse_from_str(text, pattern).ok());
    let naive = match naive {
        Some(naive) => naive,
        None => {
            let date = NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| bad())?;
            let date = if end_of_day {
                date.succ_opt().ok_or_else(bad)?
            } else {
                date
            };
            date.and_hms_opt(0, 0, 0).ok_or_else(bad)?
        }
    };
    Local
        .from_local_datetime(&naive)
        .earliest()
        .map(|at| at.fixed_offset())
        .ok_or_else(bad)
}

/// Prints messages of the log, oldest first.
pub async fn log(
    home: &Home,
    agent: Option<&str>,
    request: LogRequest,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (mut connection, _) = connect_running(home, agent, "hearth-log", None).await?;
    let limit = match (request.limit, request.since) {
        (None, None) => Some(DEFAULT_LOG_LIMIT),
        (limit, _) => limit,
    };
    let messages = if request.filter.is_empty() {
        walk_log(&mut connection, LogWalk::new(request.since, limit)).await?
    } else {
        // The limit counts the messages kept, so the walk reads them all.
        let all = walk_log(&mut connection, LogWalk::new(request.since, None)).await?;
        let kept = all.into_iter().filter(|m| request.filter.keeps(m));
        take(kept.collect(), limit, request.since.is_some())
    };
    connection.close().await;
    for message in &messages {
        let line = if request.json {
            json_line(message)
        } else {
            log_line(message)
        };
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// At most `limit` of `messages` (oldest first): the oldest ones when the
/// walk started at an id, else the newest.
fn take(mut messages: Vec<Message>, limit: Option<u32>, from_an_id: bool) -> Vec<Message> {
    let Some(limit) = limit.map(|n| n as usize) else {
        return messages;
    };
    if from_an_id {
        messages.truncate(limit);
    } else {
        messages.drain(..messages.len().saturating_sub(limit));
    }
    messages
}

/// A message as `hearth log` prints it for people:
/// `#id date time kind[/status] [source] text`, later lines of the text
/// indented, control sequences taken out (see `sanitize.rs`).
pub fn log_line(message: &Message) -> String {
    let kind = match &message.status {
        Some(status) => format!("{}/{status}", message.kind),
        None => message.kind.to_string(),
    };
    let text = match message.kind {
        Kind::Reply => hearth_protocol::ending::shown(&message.text, message.status.as_deref()),
        _ => message.text.clone(),
    };
    let text = text.replace('\n', "\n    ");
    let line = format!(
        "#{} {} {kind} [{}] {text}",
        message.id,
        local_time(&message.at),
        message.source
    );
    terminal_safe(&line).into_owned()
}

/// The line of `hearth log --json`: exactly `id`, `kind`, `source`, `text`,
/// `status` (null when absent) and `at`, in that order.
#[derive(Serialize)]
struct JsonLine<'a> {
    id: u64,
    kind: Kind,
    source: &'a str,
    text: &'a str,
    status: Option<&'a str>,
    at: &'a str,
}

pub fn json_line(message: &Message) -> String {
    let line = JsonLine {
        id: message.id,
        kind: message.kind,
        source: &message.source,
        text: &message.text,
        status: message.status.as_deref(),
        at: &message.at,
    };
    // Plain strings and numbers: serializing cannot fail.
    serde_json::to_string(&line).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: u64, kind: Kind, text: &str) -> Message {
        Message {
            agent: "hearth".into(),
            id,
            kind,
            source: "terminal".into(),
            text: text.into(),
            status: None,
            at: "2026-11-30T10:00:05+01:00".into(),
            answers: Vec::new(),
            images: Vec::new(),
            outbox: None,
            client: None,
            transcript_of: None,
        }
    }

    #[test]
    fn log_line_shows_id_time_kind_source_and_text() {
        let mut tool = message(12, Kind::Tool, "shell ls\nfile-a\nfile-b");
        tool.source = "hearth".into();
        tool.status = Some("ok".into());
        assert_eq!(
            log_line(&tool),
            "#12 2026-11-30 10:00:05 tool/ok [hearth] shell ls\n    file-a\n    file-b"
        );
        let mut odd = message(3, Kind::User, "hi");
        odd.at = "yesterday".into();
        assert_eq!(log_line(&odd), "#3 yesterday user [terminal] hi");
    }

    #[test]
    fn json_line_has_exactly_the_documented_keys() {
        let line = json_line(&message(7, Kind::User, "hi \"there\""));
        assert_eq!(
            line,
            r#"{"id":7,"kind":"user","source":"terminal","text":"hi \"there\"","status":null,"at":"2026-11-30T10:00:05+01:00"}"#
        );
        let mut tool = message(8, Kind::Tool, "t");
        tool.status = Some("error".into());
        let value: serde_json::Value = serde_json::from_str(&json_line(&tool)).unwrap();
        assert_eq!(value["status"], "error");
        assert_eq!(value.as_object().unwrap().len(), 6);
    }

    #[test]
    fn a_filter_keeps_messages_by_words_kind_source_and_time() {
        let at = |text: &str| DateTime::parse_from_rfc3339(text).unwrap();
        let mut reply = message(2, Kind::Reply, "The Plumber comes at 9");
        reply.source = "hearth".into();
        let filter = |f: Filter| f.keeps(&reply);
        assert!(filter(Filter::default()));
        assert!(Filter::default().is_empty());
        assert!(filter(Filter {
            grep: Some("plumber".into()),
            ..Filter::default()
        }));
        assert!(!filter(Filter {
            grep: Some("electrician".into()),
            ..Filter::default()
        }));
        assert!(filter(Filter {
            kinds: vec![Kind::User, Kind::Reply],
            ..Filter::default()
        }));
        assert!(!filter(Filter {
            kinds: vec![Kind::Tool],
            ..Filter::default()
        }));
        assert!(filter(Filter {
            source: Some("hearth".into()),
            ..Filter::default()
        }));
        assert!(!filter(Filter {
            source: Some("telegram".into()),
            ..Filter::default()
        }));
        let since = Some(at("2026-11-30T09:00:05Z"));
        assert!(
            filter(Filter {
                since,
                ..Filter::default()
            }),
            "at the bound is kept"
        );
        assert!(
            !filter(Filter {
                until: since,
                ..Filter::default()
            }),
            "until is before"
        );
        let later = Some(at("2026-11-30T09:00:06Z"));
        assert!(!filter(Filter {
            since: later,
            ..Filter::default()
        }));
        assert!(filter(Filter {
            until: later,
            ..Filter::default()
        }));
        let garbled = Message {
            at: "garbled".into(),
            ..reply.clone()
        };
        assert!(!Filter {
            since,
            ..Filter::default()
        }
        .keeps(&garbled));
    }

    #[test]
    fn bounds_read_dates_times_and_offsets() {
        let midnight = bound("2026-11-30", false).unwrap();
        let next = bound("2026-11-30", true).unwrap();
        assert_eq!(
            midnight.format("%Y-%m-%d %H:%M").to_string(),
            "2026-11-30 00:00"
        );
        assert_eq!(
            next.format("%Y-%m-%d %H:%M").to_string(),
            "2026-12-01 00:00"
        );
        let evening = bound("2026-11-30 18:00", true).unwrap();
        assert_eq!(evening.format("%H:%M").to_string(), "18:00");
        assert_eq!(
            bound("2026-11-30T18:00:00+01:00", false)
                .unwrap()
                .to_rfc3339(),
            "2026-11-30T18:00:00+01:00"
        );
        for bad in ["yesterday", "2026-13-01", "30.11.2026", ""] {
            assert!(
                matches!(bound(bad, false), Err(FilterError::Date(_))),
                "{bad}"
            );
        }
        assert_eq!(kind("reply"), Ok(Kind::Reply));
        assert!(kind("replies")
            .unwrap_err()
            .to_string()
            .contains("user, reply"));
    }

    #[test]
    fn the_limit_takes_the_newest_or_from_an_id_the_oldest() {
        let messages: Vec<Message> = (1..=5).map(|id| message(id, Kind::User, "m")).collect();
        let ids = |m: Vec<Message>| m.iter().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!(ids(take(messages.clone(), Some(2), false)), [4, 5]);
        assert_eq!(ids(take(messages.clone(), Some(2), true)), [1, 2]);
        assert_eq!(ids(take(messages.clone(), None, false)), [1, 2, 3, 4, 5]);
        assert_eq!(ids(take(messages, Some(9), false)), [1, 2, 3, 4, 5]);
    }
}
