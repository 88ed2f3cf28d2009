//! Where clients connect: the private Unix socket, and TCP when configured.

use super::error::StartError;
use super::secrets;
use crate::config::Config;
use crate::server::Listener;
use crate::socket::{SocketCheck, WatchedSocket};
use hearth_protocol::home::Home;
use std::path::{Path, PathBuf};

/// The TCP listener `[listen] tcp` asks for, with its token.
pub async fn tcp(config: &Config, home: &Home) -> Result<Option<Listener>, StartError> {
    let Some(address) = &config.listen.tcp else {
        return Ok(None);
    };
    let env = &config.listen.token_env;
    let token = secrets::find(&home.secrets_file(), env)
        .filter(|token| token.len() >= 16)
        .ok_or_else(|| StartError::NoToken(env.clone()))?;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| StartError::Io {
            what: "cannot listen on",
            path: PathBuf::from(address),
            source,
        })?;
    let bound = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tracing::info!("listening on tcp {bound} (token required)");
    Ok(Some(Listener::Tcp { listener, token }))
}

/// Binds the socket private (under the daemon's umask 077, in a 0700
/// folder), replacing a stale one (the lock proves no daemon owns it); it
/// is bound again whenever `check` finds its file gone.
pub fn unix(socket: &Path, check: SocketCheck) -> Result<Listener, StartError> {
    let listener = WatchedSocket::bind(socket, check)?;
    tracing::info!("listening on {}", socket.display());
    Ok(Listener::Unix(listener))
}
