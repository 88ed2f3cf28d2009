//! A bare WebSocket client of `hearthd`, for what the real client never
//! does: text sent as given, a client that stops reading, frames after a
//! refusal. It speaks the real protocol's frames, and decodes what the
//! daemon sends with the protocol crate.

use crate::harness::DEADLINE;
use futures_util::{SinkExt, StreamExt};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ServerFrame, PROTOCOL_VERSION};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

/// A WebSocket to the daemon, over its Unix socket or a TCP door.
pub struct Raw<S>(pub WebSocketStream<S>);

impl Raw<UnixStream> {
    /// Connects over the home's Unix socket; says nothing yet.
    pub async fn connect(home: &Home) -> Raw<UnixStream> {
        let stream = UnixStream::connect(home.socket()).await.expect("connected");
        let (socket, _) = tokio_tungstenite::client_async("ws://hearthd/", stream)
            .await
            .expect("a WebSocket");
        Raw(socket)
    }
}

impl Raw<TcpStream> {
    /// Connects over TCP to `address` (`HOST:PORT`); says nothing yet.
    pub async fn connect_tcp(address: &str) -> Raw<TcpStream> {
        let stream = TcpStream::connect(address).await.expect("connected");
        let (socket, _) = tokio_tungstenite::client_async(format!("ws://{address}/"), stream)
            .await
            .expect("a WebSocket");
        Raw(socket)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Raw<S> {
    /// Sends `text` as one text message; false when the daemon closed the
    /// connection already (a refused client's later frames are lost).
    pub async fn try_text(&mut self, text: &str) -> bool {
        self.0.send(WsMessage::Text(text.into())).await.is_ok()
    }

    /// Sends `text` as one text message, which must go out.
    pub async fn text(&mut self, text: &str) {
        assert!(self.try_text(text).await, "sent");
    }

    /// Says hello as `name`, with `secret`: the JSON fields of the door's
    /// secret (`,"owner_key":"…"` or `,"token":"…"`). The welcome is left
    /// unread.
    pub async fn hello(&mut self, name: &str, secret: &str) {
        self.text(&format!(
            r#"{{"type":"hello","client":"{name}","version":{PROTOCOL_VERSION}{secret}}}"#
        ))
        .await;
    }

    /// The next frame, events too; `None` once the daemon closed the
    /// connection.
    pub async fn next_frame(&mut self) -> Option<ServerFrame> {
        loop {
            let next = tokio::time::timeout(DEADLINE, self.0.next())
                .await
                .expect("a frame or the end in time");
            match next {
                Some(Ok(WsMessage::Text(text))) => {
                    return Some(ServerFrame::decode(&text).expect("a readable frame"))
                }
                Some(Ok(WsMessage::Close(_))) | None | Some(Err(_)) => return None,
                Some(Ok(_)) => continue,
            }
        }
    }

    /// The next frame that is not an event; panics if the daemon closed
    /// the connection.
    pub async fn answer(&mut self) -> ServerFrame {
        loop {
            match self.next_frame().await {
                Some(ServerFrame::Event(_)) => continue,
                Some(frame) => return frame,
                None => panic!("the daemon closed the connection"),
            }
        }
    }

    /// Sends `frame` and returns the answer.
    pub async fn request(&mut self, frame: &ClientFrame) -> ServerFrame {
        self.text(&frame.encode()).await;
        self.answer().await
    }
}
