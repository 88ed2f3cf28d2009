//! What enters the log from outside a conversation: `hearth notify` (an
//! event from another program, with an idempotency key) and
//! `hearth schedule list|add|rm`.

use crate::commands::{connect_running, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ReceiptStatus, ScheduleInfo, ServerFrame};
use std::io::Write;
use std::process::ExitCode;

/// Sends one frame and returns the answer, or the daemon's refusal as an error.
async fn ask(home: &Home, client: &str, frame: ClientFrame) -> Result<ServerFrame, CommandError> {
    let (mut connection, _) = connect_running(home, client, None).await?;
    let answer = connection.request(&frame, &mut |_| {}).await?;
    connection.close().await;
    match answer {
        ServerFrame::Error { message, .. } => Err(CommandError::Refused(message)),
        answer => Ok(answer),
    }
}

/// `hearth notify --key KEY TEXT`: prints `accepted SEQ` or `duplicate SEQ`.
pub async fn notify(
    home: &Home,
    key: String,
    text: String,
    source: String,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    match ask(
        home,
        "hearth-notify",
        ClientFrame::Notify { key, text, source },
    )
    .await?
    {
        ServerFrame::Receipt { status, seq } => {
            let status = match status {
                ReceiptStatus::Accepted => "accepted",
                ReceiptStatus::Duplicate => "duplicate",
            };
            writeln!(out, "{status} {seq}")?;
            Ok(ExitCode::SUCCESS)
        }
        other => Err(CommandError::Unexpected(other.encode())),
    }
}

/// What `hearth schedule` does.
pub enum ScheduleCommand {
    List,
    Add { when: String, text: String },
    Remove { id: i64 },
}

pub async fn schedule(
    home: &Home,
    command: ScheduleCommand,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (frame, verb) = match command {
        ScheduleCommand::List => (ClientFrame::ScheduleList, None),
        ScheduleCommand::Add { when, text } => {
            (ClientFrame::ScheduleAdd { when, text }, Some("added"))
        }
        ScheduleCommand::Remove { id } => (ClientFrame::ScheduleCancel { id }, Some("removed")),
    };
    match ask(home, "hearth-schedule", frame).await? {
        ServerFrame::Schedules { schedules } => {
            if schedules.is_empty() && verb.is_none() {
                writeln!(out, "no schedules")?;
            }
            for schedule in &schedules {
                writeln!(
                    out,
                    "{}{}",
                    verb.map(|v| format!("{v} ")).unwrap_or_default(),
                    line(schedule)
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        other => Err(CommandError::Unexpected(other.encode())),
    }
}

/// `#3  0 9 * * 1-5  next 2026-12-01T09:00:00+01:00  stand-up notes`
pub fn line(schedule: &ScheduleInfo) -> String {
    format!(
        "#{}  {}  next {}  {}",
        schedule.id, schedule.when, schedule.next, schedule.text
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_line_shows_id_when_next_and_text() {
        let schedule = ScheduleInfo {
            id: 3,
            when: "0 9 * * 1-5".into(),
            text: "stand-up".into(),
            next: "2026-12-01T09:00:00+01:00".into(),
        };
        assert_eq!(
            line(&schedule),
            "#3  0 9 * * 1-5  next 2026-12-01T09:00:00+01:00  stand-up"
        );
    }
}
