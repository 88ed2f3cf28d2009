//! A connection to `hearthd` over its Unix socket: WebSocket text frames of
//! hearth-protocol JSON. Its hello carries the owner key the running daemon
//! wrote in the home ([`hearth_protocol::owner_key`]), read at each connect
//! so that a restarted daemon's new key is found.

use futures_util::{SinkExt, StreamExt};
use hearth_protocol::home::Home;
use hearth_protocol::{owner_key, ClientFrame, ServerFrame, PROTOCOL_VERSION};
use std::path::PathBuf;
use tokio::net::UnixStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("no hearthd answers at {path}: {source}")]
    NoDaemon {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read hearthd's owner key {path}: {reason}; hearth must run as the user hearthd runs as, and a command the agent's shell runs may not connect")]
    OwnerKey {
        path: PathBuf,
        reason: std::io::Error,
    },
    #[error("websocket: {0}")]
    WebSocket(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("the daemon refused: {0}")]
    Refused(String),
    #[error("the daemon closed the connection")]
    Closed,
    #[error("unreadable frame from the daemon: {0}")]
    BadFrame(String),
}

/// What `welcome` said.
#[derive(Debug, Clone)]
pub struct Welcome {
    pub agent: String,
    pub last_id: Option<u64>,
    pub busy: bool,
}

/// An open, greeted connection.
pub struct Connection {
    socket: WebSocketStream<UnixStream>,
    /// The reason of the daemon's close frame, once one came
    /// ([`hearth_protocol::CLOSE_STOPPING`], [`hearth_protocol::CLOSE_RESTARTING`]).
    close_reason: Option<String>,
}

impl Connection {
    /// Connects to the daemon of `home` (its top agent), says hello (with
    /// `since` to catch up) and waits for `welcome`.
    pub async fn open(
        home: &Home,
        client: &str,
        since: Option<u64>,
    ) -> Result<(Connection, Welcome), ConnectError> {
        Connection::open_agent(home, client, since, None).await
    }

    /// Like [`Connection::open`], following `agent` (a subagent's name, as
    /// `--agent NAME` gives it); `None` is the top agent.
    pub async fn open_agent(
        home: &Home,
        client: &str,
        since: Option<u64>,
        agent: Option<&str>,
    ) -> Result<(Connection, Welcome), ConnectError> {
        let socket_path = home.socket();
        let stream =
            UnixStream::connect(&socket_path)
                .await
                .map_err(|source| ConnectError::NoDaemon {
                    path: socket_path.clone(),
                    source,
                })?;
        // After the connect, so that no daemon is told as such. No file: a
        // daemon from before owner keys, which asks for none.
        let key_path = home.owner_key();
        let owner_key = owner_key::read(&key_path).map_err(|reason| ConnectError::OwnerKey {
            path: key_path,
            reason,
        })?;
        let (socket, _) = tokio_tungstenite::client_async("ws://hearthd/", stream).await?;
        let mut connection = Connection {
            socket,
            close_reason: None,
        };
        connection
            .send(&ClientFrame::Hello {
                client: client.to_string(),
                version: PROTOCOL_VERSION,
                since,
                agent: agent.map(str::to_string),
                token: None,
                owner_key,
            })
            .await?;
        match connection.next().await? {
            Some(ServerFrame::Welcome {
                agent,
                last_id,
                busy,
                ..
            }) => Ok((
                connection,
                Welcome {
                    agent,
                    last_id,
                    busy,
                },
            )),
            Some(ServerFrame::Error { message, .. }) => Err(ConnectError::Refused(message)),
            Some(other) => Err(ConnectError::BadFrame(format!(
                "expected welcome, got {}",
                other.encode()
            ))),
            None => Err(ConnectError::Closed),
        }
    }

    pub async fn send(&mut self, frame: &ClientFrame) -> Result<(), ConnectError> {
        self.socket
            .send(WsMessage::Text(frame.encode().into()))
            .await?;
        Ok(())
    }

    /// The next frame, or `None` when the daemon closed the connection.
    pub async fn next(&mut self) -> Result<Option<ServerFrame>, ConnectError> {
        loop {
            match self.socket.next().await {
                None => return Ok(None),
                Some(Err(err)) => return Err(err.into()),
                Some(Ok(WsMessage::Text(text))) => {
                    return ServerFrame::decode(&text)
                        .map(Some)
                        .map_err(|err| ConnectError::BadFrame(err.to_string()));
                }
                Some(Ok(WsMessage::Close(frame))) => {
                    self.close_reason = frame
                        .map(|frame| frame.reason.to_string())
                        .filter(|reason| !reason.is_empty());
                    return Ok(None);
                }
                Some(Ok(_)) => continue,
            }
        }
    }

    /// Sends a frame and returns the first answer that is not a live event.
    /// Events that arrive meanwhile are passed to `on_event`.
    pub async fn request(
        &mut self,
        frame: &ClientFrame,
        on_event: &mut dyn FnMut(hearth_protocol::Event),
    ) -> Result<ServerFrame, ConnectError> {
        self.send(frame).await?;
        loop {
            match self.next().await? {
                None => return Err(ConnectError::Closed),
                Some(ServerFrame::Event(event)) => on_event(event),
                Some(answer) => return Ok(answer),
            }
        }
    }

    /// Why the daemon closed the connection, as its close frame said
    /// (`hearthd stopping`, `hearthd restarting`); none before it closed,
    /// or when it went away without a close frame.
    pub fn close_reason(&self) -> Option<&str> {
        self.close_reason.as_deref()
    }

    pub async fn close(mut self) {
        let _ = self.socket.close(None).await;
    }
}
