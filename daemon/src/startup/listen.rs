//! Where clients connect: the private Unix socket, and TCP when configured.

use super::error::{io, StartError};
use super::secrets;
use crate::config::Config;
use crate::server::Listener;
use hearth_protocol::home::Home;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tokio::net::UnixListener;

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

/// Binds the socket, replacing a stale one (the lock proves no daemon owns
/// it), and makes it private to this user.
pub fn unix(socket: &Path) -> Result<Listener, StartError> {
    if socket.exists() {
        fs::remove_file(socket).map_err(io("cannot remove the stale socket", socket))?;
    }
    let listener = UnixListener::bind(socket).map_err(io("cannot listen on", socket))?;
    fs::set_permissions(socket, fs::Permissions::from_mode(0o600))
        .map_err(io("cannot restrict", socket))?;
    tracing::info!("listening on {}", socket.display());
    Ok(Listener::Unix(listener))
}
