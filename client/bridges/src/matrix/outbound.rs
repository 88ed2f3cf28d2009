//! The outbound half: sends the agent's replies (and, as configured, its
//! echoes, work reports, notes and errors) to the rooms the allowed people
//! wrote in, in log order from a stored cursor (see `bridge::delivery`),
//! as Matrix HTML beside a plain body, in the thread the person wrote in;
//! shows "typing…" while the agent works, and asks about tool calls that
//! wait for approval.

use super::approval::{request_text, Open};
use super::bridge::{BridgeError, Chat, CURSOR_STATE, SOURCE};
use super::config::MatrixConfig;
use super::format::render;
use super::inbound::{Threads, CALL_TIMEOUT};
use super::sidecar::{Sidecar, SidecarError};
use crate::bridge::config::Outgoing;
use crate::bridge::courier::{Courier, Refused};
use crate::bridge::delivery::{Cursor, Feed};
use crate::bridge::markdown;
use base64::Engine;
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::image::fit::Destination;
use hearth_protocol::Event;
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::watch;

/// Matrix shows "typing…" for the timeout the client gives (30 s by
/// default); re-sent this often.
const TYPING_EVERY: Duration = Duration::from_secs(20);

/// The most bytes of one message's body and HTML together. An event may
/// hold 64 KiB, and encryption makes it a third larger again.
pub const MESSAGE_LIMIT: usize = 24_000;

/// How often a send that fails for a reason worth waiting out is tried.
const TRIES: u32 = 10;

/// The outbound half: the daemon's feed and Matrix's courier.
pub struct Outbound<'a> {
    feed: Feed,
    courier: MatrixCourier<'a>,
}

impl<'a> Outbound<'a> {
    /// Connects from where delivery stands (see [`Feed::start`]).
    pub async fn start(
        home: &Home,
        sidecar: &'a Sidecar,
        config: &'a MatrixConfig,
        stored: Option<Cursor>,
        chats: watch::Receiver<BTreeSet<Chat>>,
        open: Open,
        threads: Threads,
    ) -> Result<Outbound<'a>, BridgeError> {
        let feed = Feed::start(home, "matrix-out", SOURCE, CURSOR_STATE, stored).await?;
        let courier = MatrixCourier {
            sidecar,
            config,
            chats,
            open,
            threads,
        };
        Ok(Outbound { feed, courier })
    }

    /// Delivers until something fails for good, or until `stop` turns true.
    pub async fn run(mut self, stop: watch::Receiver<bool>) -> Result<(), BridgeError> {
        self.feed.run(&mut self.courier, stop).await
    }
}

/// Who gets what on Matrix, and how it is sent.
struct MatrixCourier<'a> {
    sidecar: &'a Sidecar,
    config: &'a MatrixConfig,
    /// The rooms allowed people wrote in, kept by the inbound half.
    chats: watch::Receiver<BTreeSet<Chat>>,
    open: Open,
    threads: Threads,
}

/// What a failed request means for one send. hearth-matrix (matrix-sdk)
/// already waits out the homeserver's rate limits, so what remains is
/// trouble worth another try, or the program gone.
fn refused(failure: SidecarError) -> Refused<BridgeError> {
    match failure {
        SidecarError::Closed | SidecarError::Write(_) => {
            Refused::Fatal(SidecarError::Closed.into())
        }
        other => Refused::Retry(other.to_string()),
    }
}

impl MatrixCourier<'_> {
    /// Sends a text message to `room`, in the room's thread; its event id.
    async fn send(
        &self,
        room: &str,
        body: &str,
        html: Option<&str>,
    ) -> Result<String, SidecarError> {
        let request = json!({
            "room": room,
            "body": body,
            "html": html,
            "thread": self.threads.of(room),
        });
        let sent = self.sidecar.call("send", request, CALL_TIMEOUT).await?;
        Ok(sent["event_id"].as_str().unwrap_or_default().to_string())
    }
}

impl Courier for MatrixCourier<'_> {
    type Address = String;
    type Error = BridgeError;

    fn send_list(&self) -> &[Outgoing] {
        &self.config.send
    }

    /// The rooms allowed people wrote in, each once (one whose person was
    /// taken off the allowlist gets nothing more).
    fn recipients(&self) -> Vec<String> {
        let chats = self.chats.borrow();
        let rooms: BTreeSet<&String> = chats
            .iter()
            .filter(|(_, who)| self.config.allows(who))
            .map(|(room, _)| room)
            .collect();
        rooms.into_iter().cloned().collect()
    }

    fn shown(&self, to: &String) -> String {
        format!("room {to}")
    }

    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    /// Cut between Markdown blocks, so each part renders whole; measured
    /// as the bytes of its body and HTML.
    fn parts(&self, text: &str) -> Vec<String> {
        markdown::split::split(text, MESSAGE_LIMIT, |piece| {
            let message = render(piece);
            message.body.len() + message.html.map_or(0, |html| html.len())
        })
    }

    fn tries(&self) -> Option<u32> {
        Some(TRIES)
    }

    /// Matrix takes images as they are.
    fn photo_limits(&self) -> Option<&'static Destination> {
        None
    }

    /// Sends one part as HTML beside its Markdown; `plain` sends the body alone.
    async fn send_text(
        &self,
        to: &String,
        part: &str,
        plain: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let message = render(part);
        let html = message.html.as_deref().filter(|_| !plain);
        let body = if message.body.is_empty() {
            part
        } else {
            &message.body
        };
        self.send(to, body, html).await.map(drop).map_err(refused)
    }

    /// Sends an image as a Matrix image (encrypted in an encrypted room).
    async fn send_image(
        &self,
        to: &String,
        image: &Attachment,
        _as_photo: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let extension = hearth_protocol::image::extension(image.media_type).unwrap_or("jpg");
        let request = json!({
            "room": to,
            "name": format!("image.{extension}"),
            "media_type": image.media_type,
            "kind": "image",
            "data": base64::engine::general_purpose::STANDARD.encode(&image.bytes),
        });
        self.sidecar
            .call("send_file", request, CALL_TIMEOUT)
            .await
            .map(drop)
            .map_err(refused)
    }

    fn busy_every(&self) -> Duration {
        TYPING_EVERY
    }

    /// Shows "typing…" in every room; a failure only costs the hint.
    async fn show_busy(&mut self, feed: &mut Feed) -> Result<(), BridgeError> {
        for room in self.recipients() {
            let typing = json!({ "room": room, "typing": true });
            match feed
                .beside(self.sidecar.call("typing", typing, CALL_TIMEOUT))
                .await?
            {
                Ok(_) => {}
                Err(SidecarError::Closed | SidecarError::Write(_)) => {
                    return Err(SidecarError::Closed.into())
                }
                Err(err) => tracing::debug!("typing in {room}: {err}"),
            }
        }
        Ok(())
    }

    /// Asks in every room about a tool call; remembers each message sent,
    /// so a reaction to it or a reply answers it. A decided request is
    /// forgotten.
    async fn ask_approval(&mut self, feed: &mut Feed, event: &Event) -> Result<(), BridgeError> {
        let Some(approval) = event.approval.as_deref() else {
            return Ok(());
        };
        let Some(text) = request_text(event) else {
            self.open.close(&approval.id);
            return Ok(());
        };
        for room in self.recipients() {
            self.open.asking(&approval.id, &room);
            match feed.beside(self.send(&room, &text, None)).await? {
                Ok(sent) => self.open.asked(&approval.id, &room, sent),
                Err(SidecarError::Closed) => return Err(SidecarError::Closed.into()),
                Err(err) => {
                    self.open.not_asked(&approval.id, &room);
                    tracing::warn!("cannot ask in {room} about approval {}: {err}", approval.id)
                }
            }
        }
        Ok(())
    }
}
