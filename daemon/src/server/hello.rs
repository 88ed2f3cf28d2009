//! The handshake: a client's first frame must be a `hello` in this daemon's
//! protocol version, naming an agent it runs (the top one when none), with
//! the listener's token over TCP and the owner key on the Unix socket.
//!
//! Over TCP, nothing but a hello with the right token is answered with
//! anything but a refusal, and a wrong or missing token ends the connection.
//! On the Unix socket a hello without the right owner key is refused and
//! ends the connection: the socket's file mode lets in every process of the
//! owner, the agent's tool commands among them, and the key is what they
//! cannot read ([`hearth_protocol::owner_key`]).

use super::peer::NotOwner;
use super::shared::Shared;
use super::websocket::{ConnectionError, WebSocket};
use crate::turn::AgentHandle;
use hearth_protocol::{ClientFrame, ErrorCode, PROTOCOL_VERSION};

/// What a client's accepted hello asked for.
pub struct Greeted {
    /// Send the messages after this id first.
    pub since: Option<u64>,
    /// The agent this client follows.
    pub handle: AgentHandle,
    /// The client's name, for who answered an approval.
    pub client: String,
}

/// What a door's hello must carry.
#[derive(Debug, Clone, Copy)]
pub enum Secret<'a> {
    /// TCP: the listener's token.
    Token(&'a str),
    /// The Unix socket: the owner key this daemon wrote.
    OwnerKey(&'a str),
    /// Nothing: the browser's session was checked before the upgrade.
    None,
}

impl Secret<'_> {
    /// Why a hello carrying `token` and `owner_key` is refused; `None`
    /// when it shows what this door asks for.
    fn refusal(self, token: Option<&str>, owner_key: Option<&str>) -> Option<String> {
        match self {
            Secret::Token(expected) => (!token.is_some_and(|given| token_matches(given, expected)))
                .then(|| "this listener needs the right `token` in hello".to_string()),
            Secret::OwnerKey(expected) => match owner_key {
                Some(given) if token_matches(given, expected) => None,
                Some(_) => Some("this hello's owner key is not the running hearthd's (it restarted since the key was read?); connect again".to_string()),
                None => Some(format!(
                    "hearthd's socket needs the owner key in hello (the file {} in the home's data folder): update this client, or run hearth from your own shell",
                    hearth_protocol::owner_key::FILE
                )),
            },
            Secret::None => None,
        }
    }
}

/// Answers the first frame of a process that may not say hello on the Unix
/// socket (one a tool started, or one whose ancestry could not be read)
/// with a refusal, and ends the connection: the agent's commands may not
/// speak to hearthd as its owner. Always `Ok(None)`.
pub async fn turn_away(
    socket: &mut WebSocket,
    not_owner: NotOwner,
) -> Result<Option<Greeted>, ConnectionError> {
    if socket.next_frame().await?.is_none() {
        return Ok(None);
    }
    match not_owner {
        NotOwner::Tool { keeper } => tracing::warn!(
            "a process started by a tool call (keeper pid {keeper}) tried to connect; refused"
        ),
        NotOwner::Unknown(why) => {
            tracing::warn!("a process whose parents could not be read whole ({why:?}) tried to connect; refused")
        }
    }
    socket
        .refuse(ErrorCode::Unauthorized, not_owner.message())
        .await?;
    Ok(None)
}

/// Reads frames until an acceptable hello; `Ok(None)` when the client left
/// or was turned away.
pub async fn greet(
    socket: &mut WebSocket,
    secret: Secret<'_>,
    shared: &Shared,
) -> Result<Option<Greeted>, ConnectionError> {
    // Over TCP the peer is a stranger until its hello: its first bad frame
    // ends the connection. On the Unix socket (the owner's user's) errors
    // before the hello are answered and the connection stays.
    let strict = matches!(secret, Secret::Token(_));
    loop {
        let frame = if strict {
            socket.next_frame_strict().await?
        } else {
            socket.next_frame().await?
        };
        match frame {
            None => return Ok(None),
            Some(ClientFrame::Hello { version, .. }) if version != PROTOCOL_VERSION => {
                let message = format!(
                    "this daemon speaks protocol version {PROTOCOL_VERSION}, not {version}; update the client"
                );
                socket.refuse(ErrorCode::Version, message).await?;
                if strict {
                    return Ok(None);
                }
            }
            Some(ClientFrame::Hello {
                since,
                agent,
                client,
                token,
                owner_key,
                ..
            }) => {
                if let Some(message) = secret.refusal(token.as_deref(), owner_key.as_deref()) {
                    if matches!(secret, Secret::OwnerKey(_)) {
                        tracing::warn!(
                            "a client on the socket said hello without the owner key; refused"
                        );
                    }
                    socket.refuse(ErrorCode::Unauthorized, message).await?;
                    return Ok(None);
                }
                let wanted = agent.unwrap_or_else(|| shared.agent.name.clone());
                match shared.agents.get(&wanted) {
                    Some(handle) => {
                        return Ok(Some(Greeted {
                            since,
                            handle: handle.clone(),
                            client,
                        }))
                    }
                    None => {
                        let known: Vec<&str> = shared.agents.keys().map(String::as_str).collect();
                        let message = format!(
                            "there is no agent `{wanted}`; this daemon runs {}",
                            known.join(", ")
                        );
                        socket.refuse(ErrorCode::Refused, message).await?;
                    }
                }
            }
            Some(_) if strict => {
                let message = "say hello with the listener's token first".to_string();
                socket.refuse(ErrorCode::Unauthorized, message).await?;
                return Ok(None);
            }
            Some(_) => {
                socket
                    .refuse(ErrorCode::Sequence, "say hello first".into())
                    .await?;
            }
        }
    }
}

/// Compares a given token (or owner key) with the expected one in time
/// that does not depend on where they differ.
pub fn token_matches(given: &str, expected: &str) -> bool {
    hearth_protocol::owner_key::matches(given, expected)
}

#[cfg(test)]
mod tests {
    use super::{token_matches, Secret};

    #[test]
    fn the_socket_needs_the_owner_key_and_tcp_its_token() {
        let key = Secret::OwnerKey("k3y");
        assert_eq!(key.refusal(None, Some("k3y")), None);
        assert!(key
            .refusal(None, None)
            .unwrap()
            .contains("needs the owner key"));
        assert!(key
            .refusal(None, Some("k3z"))
            .unwrap()
            .contains("not the running"));
        // The listener's token is not the owner key.
        assert!(key.refusal(Some("k3y"), None).is_some());
        let token = Secret::Token("t0ken");
        assert_eq!(token.refusal(Some("t0ken"), None), None);
        assert!(token.refusal(None, Some("t0ken")).is_some());
        assert_eq!(Secret::None.refusal(None, None), None);
    }

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(token_matches("s3cret-token", "s3cret-token"));
        assert!(!token_matches("s3cret-tokem", "s3cret-token"));
        assert!(!token_matches("s3cret", "s3cret-token"));
        assert!(!token_matches("s3cret-token-and-more", "s3cret-token"));
        assert!(!token_matches("", "s3cret-token"));
    }
}
