//! One client's WebSocket: text frames in and out, decoded and encoded.
//!
//! Frames that cannot be read (binary, not JSON, unknown, too large) are
//! answered with an `error` frame here and skipped; frames far above the
//! protocol's limit close the connection at the WebSocket layer.

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use hearth_protocol::{ClientFrame, ErrorCode, ServerFrame, MAX_FRAME_BYTES};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, WebSocketConfig};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

use crate::log::LogError;

/// Frames above this size close the connection at the WebSocket layer; frames
/// between [`MAX_FRAME_BYTES`] and this get an `error` frame instead.
const HARD_FRAME_LIMIT: usize = hearth_protocol::media::MAX_MEDIA_FRAME_BYTES + MAX_FRAME_BYTES;

/// A client's byte stream: the Unix socket, TCP with a token, or a
/// browser's connection that `web::http` upgraded.
pub trait ClientStream: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> ClientStream for T {}
pub type Stream = Box<dyn ClientStream>;

type Sink = SplitSink<WebSocketStream<Stream>, WsMessage>;
type Source = SplitStream<WebSocketStream<Stream>>;

/// Why a connection ended other than by the client leaving.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error("websocket: {0}")]
    WebSocket(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("{0}")]
    Log(#[from] LogError),
    #[error("the client left")]
    Gone,
}

/// Bytes each connection's reads and writes go through: small, as most
/// frames are, so an idle client costs a few KiB rather than the library's
/// 128 KiB each way; a larger frame grows its buffer while it is read.
const BUFFER_BYTES: usize = 8 * 1024;

fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(HARD_FRAME_LIMIT))
        .max_frame_size(Some(HARD_FRAME_LIMIT))
        .read_buffer_size(BUFFER_BYTES)
        .write_buffer_size(BUFFER_BYTES)
}

/// One client's WebSocket, split into what it sends and what it is sent.
pub struct WebSocket {
    sink: Sink,
    source: Source,
}

impl WebSocket {
    /// Completes the WebSocket handshake on `stream`.
    pub async fn accept(stream: Stream) -> Result<Self, ConnectionError> {
        let socket = tokio_tungstenite::accept_async_with_config(stream, Some(config())).await?;
        let (sink, source) = socket.split();
        Ok(Self { sink, source })
    }

    /// The WebSocket on a connection whose handshake was answered over
    /// HTTP already (the browser client's `/ws`).
    pub async fn upgraded(stream: Stream) -> Self {
        let socket = WebSocketStream::from_raw_socket(stream, Role::Server, Some(config())).await;
        let (sink, source) = socket.split();
        Self { sink, source }
    }

    /// Sends one frame, with every key in its text masked
    /// ([`crate::redact::mask_frame`]): no client sees one, whatever event
    /// or answer carried it. An image's bytes are not words.
    pub async fn send(&mut self, frame: &ServerFrame) -> Result<(), ConnectionError> {
        let encoded = frame.encode();
        let text = match frame {
            ServerFrame::Image { .. } => encoded,
            _ => match crate::redact::mask_frame(&encoded) {
                std::borrow::Cow::Borrowed(_) => encoded,
                std::borrow::Cow::Owned(masked) => masked,
            },
        };
        self.sink.send(WsMessage::Text(text.into())).await?;
        Ok(())
    }

    /// Ends the connection with a close frame (going away) that says why.
    pub async fn close(&mut self, reason: &'static str) -> Result<(), ConnectionError> {
        let frame = CloseFrame {
            code: CloseCode::from(hearth_protocol::CLOSE_GOING_AWAY),
            reason: reason.into(),
        };
        self.sink.send(WsMessage::Close(Some(frame))).await?;
        let _ = self.sink.close().await;
        Ok(())
    }

    /// Sends an `error` frame.
    pub async fn refuse(
        &mut self,
        code: ErrorCode,
        message: String,
    ) -> Result<(), ConnectionError> {
        self.send(&ServerFrame::Error { code, message }).await
    }

    /// The next text frame, decoded; `Ok(None)` when the client left. Frames
    /// that cannot be read are answered with an error here and skipped.
    pub async fn next_frame(&mut self) -> Result<Option<ClientFrame>, ConnectionError> {
        self.read_frame(false).await
    }

    /// As [`WebSocket::next_frame`], but a frame that cannot be read is
    /// answered with an error and ends the connection (`Ok(None)`): for a
    /// stranger that has not said hello.
    pub async fn next_frame_strict(&mut self) -> Result<Option<ClientFrame>, ConnectionError> {
        self.read_frame(true).await
    }

    async fn read_frame(&mut self, strict: bool) -> Result<Option<ClientFrame>, ConnectionError> {
        loop {
            let text = match self.source.next().await {
                None | Some(Ok(WsMessage::Close(_))) => return Ok(None),
                Some(Err(err)) => return Err(err.into()),
                Some(Ok(WsMessage::Text(text))) => text,
                Some(Ok(WsMessage::Binary(_))) => {
                    self.refuse(
                        ErrorCode::BadFrame,
                        "binary frames are not part of the protocol; send JSON text frames".into(),
                    )
                    .await?;
                    if strict {
                        return Ok(None);
                    }
                    continue;
                }
                Some(Ok(_)) => continue,
            };
            match ClientFrame::decode(&text) {
                Ok(frame) => return Ok(Some(frame)),
                Err(err) => {
                    self.refuse(err.code, err.message).await?;
                    if strict {
                        return Ok(None);
                    }
                }
            }
        }
    }
}
