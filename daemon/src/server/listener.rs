//! Where clients connect, and the loop that accepts them: one task each.

use super::connection;
use super::shared::Shared;
use super::websocket::Stream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;

/// Where clients connect.
pub enum Listener {
    /// The private Unix socket: its file mode is the access check.
    Unix(UnixListener),
    /// A TCP address: a client must say the token in its hello first.
    Tcp {
        listener: TcpListener,
        token: String,
    },
}

/// Accepts clients until `shutdown` turns true.
pub async fn serve(listener: Listener, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    loop {
        let accepted: std::io::Result<(Stream, Option<String>)> = tokio::select! {
            accepted = accept(&listener) => accepted,
            _ = shutdown.changed() => return,
        };
        match accepted {
            Ok((stream, token)) => {
                let shared = shared.clone();
                tokio::spawn(async move {
                    shared.clients.fetch_add(1, Ordering::Relaxed);
                    if let Err(err) = connection::run(stream, token.as_deref(), &shared).await {
                        tracing::debug!("client connection ended: {err}");
                    }
                    shared.clients.fetch_sub(1, Ordering::Relaxed);
                });
            }
            Err(err) => tracing::warn!("cannot accept a client: {err}"),
        }
    }
}

/// The next client, with the token its hello must carry (TCP only).
async fn accept(listener: &Listener) -> std::io::Result<(Stream, Option<String>)> {
    match listener {
        Listener::Unix(listener) => {
            let (stream, _) = listener.accept().await?;
            Ok((Box::new(stream), None))
        }
        Listener::Tcp { listener, token } => {
            let (stream, peer) = listener.accept().await?;
            tracing::debug!("TCP client from {peer}");
            Ok((Box::new(stream), Some(token.clone())))
        }
    }
}
