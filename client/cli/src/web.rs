//! `hearth web`: a login link for the browser client, and its sessions.
//!
//! The daemon makes the one-time code and keeps only its digest; these
//! commands ask over the Unix socket, the only door that may.

use crate::commands::local_time;
use hearth_client::running::{ask_once, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ServerFrame, WebSession};
use std::io::Write;
use std::process::ExitCode;

/// What `hearth web` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebCommand {
    /// Print a login link with a new one-time code.
    Login,
    /// List the sessions.
    Sessions,
    /// End session `id`.
    Revoke(i64),
}

pub async fn web(
    home: &Home,
    command: WebCommand,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let frame = match command {
        WebCommand::Login => ClientFrame::WebLogin,
        WebCommand::Sessions => ClientFrame::WebSessions,
        WebCommand::Revoke(id) => ClientFrame::WebRevoke { id },
    };
    let answer = ask_once(home, None, "hearth-web", &frame, |answer| match answer {
        ServerFrame::WebLogin { .. } | ServerFrame::WebSessions { .. } => Some(answer),
        _ => None,
    })
    .await?;
    match answer {
        ServerFrame::WebLogin { url, expires } => {
            let until = local_time(&expires);
            writeln!(
                out,
                "Open this link in your browser to log in (it works once, until {until}):"
            )?;
            writeln!(out, "{url}")?;
        }
        ServerFrame::WebSessions { sessions }
            if command == WebCommand::Sessions && sessions.is_empty() =>
        {
            writeln!(
                out,
                "no browser has logged in; `hearth web` prints a login link"
            )?;
        }
        ServerFrame::WebSessions { sessions } => {
            for session in &sessions {
                writeln!(
                    out,
                    "{}",
                    session_line(session, command != WebCommand::Sessions)
                )?;
            }
        }
        other => return Err(CommandError::Unexpected(other.encode())),
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One session as a line: id, when it logged in and was last seen, the
/// browser, and whether it was revoked.
pub fn session_line(session: &WebSession, revoked_now: bool) -> String {
    let state = match (session.revoked, revoked_now) {
        (true, true) => "revoked now",
        (true, false) => "revoked",
        (false, _) => "active",
    };
    format!(
        "{}  {state}  logged in {}  last seen {}  {}",
        session.id,
        local_time(&session.created),
        local_time(&session.last_seen),
        session.browser
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_line_names_id_state_times_and_browser() {
        let session = WebSession {
            id: 3,
            created: "2026-11-30T08:00:00+01:00".into(),
            last_seen: "2026-11-30T09:30:00+01:00".into(),
            browser: "Mozilla/5.0 (Android)".into(),
            revoked: false,
        };
        let line = session_line(&session, false);
        assert!(line.starts_with("3  active  logged in "), "{line}");
        assert!(line.ends_with("Mozilla/5.0 (Android)"), "{line}");
        let revoked = WebSession {
            revoked: true,
            ..session
        };
        assert!(session_line(&revoked, true).contains("revoked now"));
    }
}
