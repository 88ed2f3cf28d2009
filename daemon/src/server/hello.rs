//! The handshake: a client's first frame must be a `hello` in this daemon's
//! protocol version, naming an agent it runs (the top one when none), with
//! the listener's token over TCP.
//!
//! Over TCP, nothing but a hello with the right token is answered with
//! anything but a refusal, and a wrong or missing token ends the connection.

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

/// Answers the first frame of a process a tool started (beneath the tool
/// keeper `keeper`) with a refusal, and ends the connection: the agent's
/// commands may not speak to hearthd as its owner. Always `Ok(None)`.
pub async fn turn_away_tool(
    socket: &mut WebSocket,
    keeper: u32,
) -> Result<Option<Greeted>, ConnectionError> {
    if socket.next_frame().await?.is_none() {
        return Ok(None);
    }
    tracing::warn!(
        "a process started by a tool call (keeper pid {keeper}) tried to connect; refused"
    );
    let message = "a process started by one of the agent's tools may not connect to hearthd; run hearth from your own shell".to_string();
    socket.refuse(ErrorCode::Unauthorized, message).await?;
    Ok(None)
}

/// Reads frames until an acceptable hello; `Ok(None)` when the client left
/// or was turned away.
pub async fn greet(
    socket: &mut WebSocket,
    token: Option<&str>,
    shared: &Shared,
) -> Result<Option<Greeted>, ConnectionError> {
    // Over TCP the peer is a stranger until its hello: its first bad frame
    // ends the connection. On the Unix socket (the owner's) errors are
    // answered and the connection stays.
    let strict = token.is_some();
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
            Some(ClientFrame::Hello { token: given, .. })
                if token.is_some_and(|token| {
                    !given.as_deref().is_some_and(|g| token_matches(g, token))
                }) =>
            {
                let message = "this listener needs the right `token` in hello".to_string();
                socket.refuse(ErrorCode::Unauthorized, message).await?;
                return Ok(None);
            }
            Some(ClientFrame::Hello {
                since,
                agent,
                client,
                ..
            }) => {
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
            Some(_) if token.is_some() => {
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

/// Compares a given token with the expected one in time that does not
/// depend on where they differ.
pub fn token_matches(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    let mut difference = given.len() ^ expected.len();
    for (at, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(at).copied().unwrap_or(0));
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::token_matches;

    #[test]
    fn tokens_match_only_when_equal() {
        assert!(token_matches("s3cret-token", "s3cret-token"));
        assert!(!token_matches("s3cret-tokem", "s3cret-token"));
        assert!(!token_matches("s3cret", "s3cret-token"));
        assert!(!token_matches("s3cret-token-and-more", "s3cret-token"));
        assert!(!token_matches("", "s3cret-token"));
    }
}
