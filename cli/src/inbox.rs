//! What enters the log from outside a conversation: `hearth notify` (an
//! event from another program, with an idempotency key) and
//! `hearth schedule list|add|rm`.

use hearth_client::running::{self, connect_running, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ReceiptStatus, ScheduleInfo, ServerFrame};
use std::io::Write;
use std::process::ExitCode;

/// Sends one frame on a connection of its own and returns the answer that
/// `expect` takes, as [`running::ask`] does.
async fn ask<T>(
    home: &Home,
    agent: Option<&str>,
    client: &str,
    frame: ClientFrame,
    expect: impl FnOnce(ServerFrame) -> Option<T>,
) -> Result<T, CommandError> {
    let (mut connection, _) = connect_running(home, agent, client, None).await?;
    let answer = running::ask(&mut connection, &frame, expect).await;
    connection.close().await;
    answer
}

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
    let (status, seq) = ask(home, agent, "hearth-notify", frame, |answer| match answer {
        ServerFrame::Receipt { status, seq } => Some((status, seq)),
        _ => None,
    })
    .await?;
    let status = match status {
        ReceiptStatus::Accepted => "accepted",
        ReceiptStatus::Duplicate => "duplicate",
    };
    writeln!(out, "{status} {seq}")?;
    Ok(ExitCode::SUCCESS)
}

/// What `hearth schedule` does.
pub enum ScheduleCommand {
    List,
    Add { when: String, text: String },
    Remove { id: i64 },
}

pub async fn schedule(
    home: &Home,
    agent: Option<&str>,
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
    let schedules = ask(
        home,
        agent,
        "hearth-schedule",
        frame,
        |answer| match answer {
            ServerFrame::Schedules { schedules } => Some(schedules),
            _ => None,
        },
    )
    .await?;
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
