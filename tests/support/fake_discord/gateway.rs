//! The fake's Gateway: one WebSocket connection's life, as Discord's
//! Gateway documentation describes it (Hello, Identify and Ready,
//! heartbeats and their ACKs, Resume of a session this fake started
//! answered by Resumed and any other refused with Invalid Session, the
//! dispatches of the session, a close that asks the client to reconnect).

use super::{Shared, APPLICATION_ID, BOT_ID, GUILD_ID, TOKEN};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;

/// How often the fake asks the client to beat its heart, in milliseconds:
/// short, so the tests see heartbeats and their ACKs.
const HEARTBEAT_INTERVAL_MS: u64 = 1500;

/// Discord's close code for "unknown error; reconnect" (a session that
/// may be resumed).
const UNKNOWN_ERROR: u16 = 4000;

/// Makes session `number` the newest, which gets what waits, then what
/// comes.
fn join(shared: &Shared, number: u64, to_session: &mpsc::UnboundedSender<(String, Value)>) {
    let mut state = shared.lock();
    for item in std::mem::take(&mut state.waiting) {
        let _ = to_session.send(item);
    }
    state.sessions.push((number, to_session.clone()));
    state.calls.sessions += 1;
    drop(state);
    shared.bump();
}

/// The session a Resume's payload names, when this fake started it and no
/// connection has it now.
fn resumable(shared: &Shared, payload: &Value) -> Option<u64> {
    let token = payload["token"].as_str().unwrap_or_default();
    if token.trim_start_matches("Bot ") != TOKEN {
        return None;
    }
    let number = payload["session_id"]
        .as_str()?
        .strip_prefix("fake-session-")?
        .parse::<u64>()
        .ok()?;
    let state = shared.lock();
    let connected = state.sessions.iter().any(|(n, _)| *n == number);
    (number >= 1 && number <= state.next_session && !connected).then_some(number)
}

/// One Gateway connection: Hello, then Identify (or Resume), heartbeats,
/// and the dispatches for its session, until either side closes it or
/// [`super::FakeDiscord::drop_connections`] does.
pub(super) async fn gateway_connection(shared: Arc<Shared>, stream: tokio::net::TcpStream) {
    let mut changed = shared.subscribe();
    let drops = shared.lock().drops;
    let Ok(socket) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let (mut sink, mut source) = socket.split();
    let hello = json!({"op": 10, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}});
    if sink.send(Message::text(hello.to_string())).await.is_err() {
        return;
    }
    let (to_session, mut dispatches) = mpsc::unbounded_channel::<(String, Value)>();
    let mut session: Option<u64> = None;
    let mut sequence = 0u64;
    loop {
        let outgoing = tokio::select! {
            frame = source.next() => {
                let text = match frame {
                    Some(Ok(Message::Text(text))) => text.to_string(),
                    Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
                    Some(Ok(_)) => continue,
                };
                let Ok(payload) = serde_json::from_str::<Value>(&text) else { break };
                match payload["op"].as_u64() {
                    Some(1) => {
                        shared.lock().calls.heartbeats += 1;
                        shared.bump();
                        json!({"op": 11})
                    }
                    Some(2) => {
                        let token = payload["d"]["token"].as_str().unwrap_or_default();
                        if token.trim_start_matches("Bot ") != TOKEN {
                            let close = CloseFrame {
                                code: CloseCode::from(4004),
                                reason: "Authentication failed.".into(),
                            };
                            let _ = sink.send(Message::Close(Some(close))).await;
                            break;
                        }
                        let number = {
                            let mut state = shared.lock();
                            state.next_session += 1;
                            let number = state.next_session;
                            state.calls.identifies.push(payload["d"].clone());
                            number
                        };
                        session = Some(number);
                        sequence += 1;
                        let ready = json!({
                            "op": 0, "t": "READY", "s": sequence,
                            "d": {
                                "v": 10,
                                "user": {
                                    "id": BOT_ID.to_string(), "username": "hearth",
                                    "discriminator": "0", "avatar": null, "bot": true,
                                    "mfa_enabled": false,
                                },
                                "guilds": [{"id": GUILD_ID.to_string(), "unavailable": true}],
                                "session_id": format!("fake-session-{number}"),
                                "resume_gateway_url": format!("ws://{}", shared.gateway),
                                "application": {"id": APPLICATION_ID.to_string(), "flags": 0},
                            },
                        });
                        if sink.send(Message::text(ready.to_string())).await.is_err() {
                            break;
                        }
                        join(&shared, number, &to_session);
                        continue;
                    }
                    Some(6) => {
                        shared.lock().calls.resumes += 1;
                        shared.bump();
                        match resumable(&shared, &payload["d"]) {
                            Some(number) => {
                                session = Some(number);
                                join(&shared, number, &to_session);
                                sequence += 1;
                                json!({"op": 0, "t": "RESUMED", "s": sequence, "d": {}})
                            }
                            None => json!({"op": 9, "d": false}),
                        }
                    }
                    _ => continue,
                }
            }
            Some((event, data)) = dispatches.recv() => {
                sequence += 1;
                json!({"op": 0, "t": event, "s": sequence, "d": data})
            }
            Ok(()) = changed.changed() => {
                if shared.lock().drops == drops {
                    continue;
                }
                let close = CloseFrame {
                    code: CloseCode::from(UNKNOWN_ERROR),
                    reason: "Unknown error.".into(),
                };
                let _ = sink.send(Message::Close(Some(close))).await;
                break;
            }
        };
        if sink
            .send(Message::text(outgoing.to_string()))
            .await
            .is_err()
        {
            break;
        }
    }
    if let Some(number) = session {
        let mut state = shared.lock();
        state.sessions.retain(|(n, _)| *n != number);
        state.calls.sessions -= 1;
        // What was sent to this session and not read goes to the next.
        while let Ok(item) = dispatches.try_recv() {
            state.waiting.push_back(item);
        }
        drop(state);
        shared.bump();
    }
}
