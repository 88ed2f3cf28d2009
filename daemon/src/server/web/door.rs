//! The web port's door: the accept loop `axum::serve` takes connections
//! from, with the same bounds as the socket's doors (`server::preauth`).
//!
//! A connection waits — counted among its door's waiting connections, with
//! [`preauth::hello_deadline`] to live — until a WebSocket upgrade with the
//! session's cookie and key ([`Visit::greeted`]). Requests for the page's
//! files or a login do not end the wait: their connection is closed at the
//! deadline (the browser opens another), so a stranger holding a replayed
//! cookie holds no connection for long. A full door closes its oldest
//! waiting connection rather than refuse the newcomer.

use crate::server::preauth::{self, Admitted, Closed, Pending};
use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Sleep;

/// The web port, handing out connections within the bounds.
pub struct Door {
    listener: TcpListener,
    pending: Arc<Pending>,
}

impl Door {
    pub fn new(listener: TcpListener) -> Door {
        Door {
            listener,
            pending: Arc::default(),
        }
    }
}

impl axum::serve::Listener for Door {
    type Io = Visitor;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Visitor, SocketAddr) {
        let mut failures = 0u32;
        loop {
            match self.listener.accept().await {
                Ok((stream, address)) => {
                    let (admitted, closed) = self.pending.admit(Some(address.ip()));
                    // Lets a connection closed for room give its descriptor
                    // back before the next accept.
                    tokio::task::yield_now().await;
                    return (Visitor::new(stream, admitted, closed), address);
                }
                Err(err) => {
                    // Out of descriptors, most likely: wait for some to be
                    // given back rather than spin, and say it once per burst.
                    if failures == 0 {
                        tracing::warn!("the web client cannot accept a connection: {err}; waiting before the next accept");
                    }
                    tokio::time::sleep(preauth::accept_backoff(failures)).await;
                    failures = failures.saturating_add(1);
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// What a request knows of its connection: where it came from, and how to
/// say that it proved the session (cookie and key) so it no longer waits.
#[derive(Clone)]
pub struct Visit {
    pub address: SocketAddr,
    welcome: Arc<Welcome>,
}

impl Visit {
    /// The connection proved the session: it leaves the waiting set and its
    /// deadline no longer holds (the WebSocket's hello has its own).
    pub fn greeted(&self) {
        self.welcome.greeted.store(true, Ordering::SeqCst);
        let admitted = self
            .welcome
            .admitted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(admitted) = admitted {
            admitted.greeted();
        }
    }
}

impl Connected<IncomingStream<'_, Door>> for Visit {
    fn connect_info(stream: IncomingStream<'_, Door>) -> Visit {
        Visit {
            address: *stream.remote_addr(),
            welcome: stream.io().welcome.clone(),
        }
    }
}

/// Shared by a connection's stream and its requests.
struct Welcome {
    greeted: AtomicBool,
    /// The connection's place among the waiting ones, until greeted (or
    /// dropped with the stream).
    admitted: Mutex<Option<Admitted>>,
}

/// One web connection's stream: reads and writes fail once its deadline
/// passes or it was closed for room, until it is greeted.
pub struct Visitor {
    stream: TcpStream,
    welcome: Arc<Welcome>,
    deadline: Pin<Box<Sleep>>,
    closed: Closed,
}

impl Visitor {
    fn new(stream: TcpStream, admitted: Admitted, closed: Closed) -> Visitor {
        Visitor {
            stream,
            welcome: Arc::new(Welcome {
                greeted: AtomicBool::new(false),
                admitted: Mutex::new(Some(admitted)),
            }),
            deadline: Box::pin(tokio::time::sleep(preauth::hello_deadline())),
            closed,
        }
    }

    /// An error once the connection must end; registers to be woken then.
    fn ended(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        if self.welcome.greeted.load(Ordering::SeqCst) {
            return None;
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            return Some(io::Error::new(
                io::ErrorKind::TimedOut,
                "a web connection outlived its deadline without a session; closed",
            ));
        }
        if Pin::new(&mut self.closed).poll(cx).is_ready() {
            return Some(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "too many web connections wait; the oldest closed",
            ));
        }
        None
    }
}

impl AsyncRead for Visitor {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(err) = self.ended(cx) {
            return Poll::Ready(Err(err));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Visitor {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some(err) = self.ended(cx) {
            return Poll::Ready(Err(err));
        }
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
