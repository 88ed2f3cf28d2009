//! Where clients connect, and the loop that accepts them: one task each.

use super::connection;
use super::preauth;
use super::shared::Shared;
use super::websocket::Stream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Where clients connect.
pub enum Listener {
    /// The private Unix socket: its file mode lets the owner's processes
    /// in, and a hello must carry the owner key. It is bound again should
    /// its file disappear.
    Unix(crate::socket::WatchedSocket),
    /// A TCP address: a client must say the token in its hello first.
    Tcp {
        listener: TcpListener,
        token: String,
    },
}

/// Which door a client came in by: it decides what the client must show
/// and what it may ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door<'a> {
    /// The Unix socket, from a process not beneath a tool's keeper: the
    /// hello must carry the owner key.
    Unix,
    /// TCP: the hello must carry this token.
    Tcp(&'a str),
    /// The browser client, whose session `web::http` checked before the upgrade.
    Browser,
    /// The Unix socket, from a process that may not say hello there: one a
    /// tool started, or one whose ancestry could not be read whole
    /// ([`super::peer`]). Turned away after its first frame.
    NotOwner(super::peer::NotOwner),
}

/// Serves one browser over a connection `web::http` upgraded, until it leaves.
pub async fn serve_browser(stream: Stream, shared: Arc<Shared>) {
    shared.clients.fetch_add(1, Ordering::Relaxed);
    if let Err(err) = connection::run(stream, Door::Browser, &shared, None).await {
        tracing::debug!("web client connection ended: {err}");
    }
    shared.clients.fetch_sub(1, Ordering::Relaxed);
}

/// Accepts clients until `shutdown` turns true. Connections that wait for
/// their hello are bounded ([`preauth`]): past the bound the oldest waiting
/// one is closed to make room.
pub async fn serve(
    mut listener: Listener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let pending = Arc::new(preauth::Pending::default());
    let mut failures = 0u32;
    loop {
        let accepted: std::io::Result<Accepted> = tokio::select! {
            accepted = accept(&mut listener) => accepted,
            _ = shutdown.changed() => return,
        };
        let (stream, token, address, peer) = match accepted {
            Ok(accepted) => {
                failures = 0;
                accepted
            }
            Err(err) => {
                // Out of descriptors, most likely: wait for some to be
                // given back rather than spin, and say it once per burst.
                if failures == 0 {
                    tracing::warn!("cannot accept a client: {err}; waiting before the next accept");
                }
                let wait = preauth::accept_backoff(failures);
                failures = failures.saturating_add(1);
                tokio::select! {
                    _ = tokio::time::sleep(wait) => continue,
                    _ = shutdown.changed() => return,
                }
            }
        };
        let (admitted, closed) = pending.admit(address);
        let shared = shared.clone();
        tokio::spawn(async move {
            shared.clients.fetch_add(1, Ordering::SeqCst);
            let door = match (&token, peer) {
                (Some(token), _) => Door::Tcp(token),
                (None, Err(not_owner)) => Door::NotOwner(not_owner),
                (None, Ok(())) => Door::Unix,
            };
            tokio::select! {
                ended = connection::run(stream, door, &shared, Some(admitted)) => {
                    if let Err(err) = ended {
                        tracing::debug!("client connection ended: {err}");
                    }
                }
                () = closed => {
                    tracing::debug!("too many connections wait for their hello; the oldest closed");
                }
            }
            shared.clients.fetch_sub(1, Ordering::SeqCst);
            shared.client_left.notify_waiters();
        });
        // Lets a connection closed for room give its descriptor back before
        // the next accept.
        tokio::task::yield_now().await;
    }
}

/// A client's stream, the token its hello must carry and its address (TCP),
/// and on the Unix socket whether the peer may say hello ([`super::peer`]).
type Accepted = (
    Stream,
    Option<String>,
    Option<std::net::IpAddr>,
    Result<(), super::peer::NotOwner>,
);

/// The next client, with the token its hello must carry (TCP only).
async fn accept(listener: &mut Listener) -> std::io::Result<Accepted> {
    match listener {
        Listener::Unix(listener) => {
            let stream = listener.accept().await?;
            let peer = super::peer::check(&stream);
            Ok((Box::new(stream), None, None, peer))
        }
        Listener::Tcp { listener, token } => {
            let (stream, peer) = listener.accept().await?;
            tracing::debug!("TCP client from {peer}");
            Ok((
                Box::new(stream),
                Some(token.clone()),
                Some(peer.ip()),
                Ok(()),
            ))
        }
    }
}
