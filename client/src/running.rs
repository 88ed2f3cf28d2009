//! A daemon that is already running: connecting without ever starting one,
//! the error every script command and bridge shares, and [`ask`], the one
//! request-and-answer exchange the commands repeat ([`ask_once`] on a
//! connection of its own).

use crate::connection::{ConnectError, Connection, Welcome};
use crate::images::ImageFileError;
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ServerFrame};
use std::io;

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error("no hearthd is running for home {home} (start it with `hearth` or `hearthd`)")]
    NoDaemon { home: String },
    #[error(transparent)]
    Connection(#[from] ConnectError),
    #[error("hearthd refused the request: {0}")]
    Refused(String),
    #[error("hearthd answered with an unexpected frame: {0}")]
    Unexpected(String),
    #[error("nothing to send: give the message's words, e.g. `hearth send hello there`, or pipe it in with `hearth send -`")]
    NothingToSend,
    #[error("the message is {bytes} bytes; hearthd takes at most {limit} bytes in one frame (send a file's path instead, or split it)")]
    TooLarge { bytes: usize, limit: usize },
    #[error("cannot read the message from stdin: {0}")]
    Stdin(io::Error),
    #[error(transparent)]
    Image(#[from] ImageFileError),
    #[error(transparent)]
    Media(#[from] crate::media::MediaFileError),
    #[error("hearthd closed the connection before message #{id} was answered")]
    ClosedBeforeAnswer { id: u64 },
    #[error("the turn that took message #{id} ended without a reply")]
    NoReply { id: u64 },
    #[error("cannot write the output: {0}")]
    Output(#[from] io::Error),
}

/// True when a failed connect means that no daemon listens on the socket (no
/// socket file, or a stale one), rather than some other trouble worth showing.
pub fn daemon_absent(err: &ConnectError) -> bool {
    match err {
        ConnectError::NoDaemon { source, .. } => matches!(
            source.kind(),
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
        ),
        _ => false,
    }
}

/// How to name a home in messages: its folder when it is one folder (`--home`
/// or `HEARTH_HOME`), else the socket that the XDG layout puts it behind.
pub fn describe_home(home: &Home) -> String {
    match home.folder() {
        Some(folder) => folder.display().to_string(),
        None => format!("at {}", home.socket().display()),
    }
}

/// Connects to a daemon that is already running, following `agent` (a
/// subagent's name; `None` is the top agent); never starts one.
pub async fn connect_running(
    home: &Home,
    agent: Option<&str>,
    client: &str,
    since: Option<u64>,
) -> Result<(Connection, Welcome), CommandError> {
    match Connection::open_agent(home, client, since, agent).await {
        Ok(pair) => Ok(pair),
        Err(err) if daemon_absent(&err) => Err(CommandError::NoDaemon {
            home: describe_home(home),
        }),
        Err(err) => Err(err.into()),
    }
}

/// Sends `frame` and hands its answer to `expect`, which takes out what the
/// frame it waits for carries and gives `None` for any other. Live events
/// meanwhile are dropped; an `error` frame is [`CommandError::Refused`], any
/// other frame [`CommandError::Unexpected`].
pub async fn ask<T>(
    connection: &mut Connection,
    frame: &ClientFrame,
    expect: impl FnOnce(ServerFrame) -> Option<T>,
) -> Result<T, CommandError> {
    match connection.request(frame, &mut |_| {}).await? {
        ServerFrame::Error { message, .. } => Err(CommandError::Refused(message)),
        answer => {
            let shown = answer.clone();
            expect(answer).ok_or_else(|| CommandError::Unexpected(shown.encode()))
        }
    }
}

/// Connects to the running daemon as `client` (for `agent`, the top one
/// when none), asks one frame as [`ask`] does, and closes: the whole of most
/// script commands' exchange with hearthd.
pub async fn ask_once<T>(
    home: &Home,
    agent: Option<&str>,
    client: &str,
    frame: &ClientFrame,
    expect: impl FnOnce(ServerFrame) -> Option<T>,
) -> Result<T, CommandError> {
    let (mut connection, _) = connect_running(home, agent, client, None).await?;
    let answer = ask(&mut connection, frame, expect).await;
    connection.close().await;
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_home_is_named_by_its_folder_or_its_socket() {
        assert_eq!(describe_home(&Home::at(Path::new("/tmp/h"))), "/tmp/h");
        let xdg = Home {
            config_dir: "/c/hearth".into(),
            data_dir: "/d/hearth".into(),
            runtime_dir: "/r/hearth".into(),
        };
        assert_eq!(describe_home(&xdg), "at /r/hearth/hearth.sock");
    }

    #[test]
    fn a_missing_or_stale_socket_means_no_daemon() {
        let absent = |kind| ConnectError::NoDaemon {
            path: "/x".into(),
            source: io::Error::from(kind),
        };
        assert!(daemon_absent(&absent(io::ErrorKind::NotFound)));
        assert!(daemon_absent(&absent(io::ErrorKind::ConnectionRefused)));
        assert!(!daemon_absent(&absent(io::ErrorKind::PermissionDenied)));
        assert!(!daemon_absent(&ConnectError::Closed));
    }
}
