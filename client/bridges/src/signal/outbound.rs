//! The outbound half: sends the agent's replies (and, as configured, its
//! echoes, work reports, notes and errors) to the allowed people who wrote,
//! in log order from a stored cursor (see `bridge::delivery`), with the
//! Markdown as Signal's styles; shows "typing…" while the agent works, and
//! asks about tool calls that wait for approval.

use super::api::{self, SendFailure};
use super::approval::{request_text, Open};
use super::bridge::{BridgeError, CURSOR_STATE, SOURCE};
use super::config::SignalConfig;
use super::format::{render, Styled};
use super::rpc::{Rpc, RpcError};
use crate::bridge::config::Outgoing;
use crate::bridge::courier::{Courier, Refused};
use crate::bridge::delivery::{Cursor, Feed};
use crate::bridge::markdown;
use crate::bridge::split::units;
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::image::fit::Destination;
use hearth_protocol::Event;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::watch;

/// Signal shows "typing…" for some seconds; re-sent this often.
const TYPING_EVERY: Duration = Duration::from_secs(10);

/// The longest message sent, in UTF-16 code units: Signal sends longer
/// text as a file the other side must open.
pub const MESSAGE_LIMIT: usize = 2000;

/// How often a send that fails for a reason worth waiting out is tried.
const TRIES: u32 = 10;

/// The outbound half: the daemon's feed and Signal's courier.
pub struct Outbound<'a> {
    feed: Feed,
    courier: SignalCourier<'a>,
}

impl<'a> Outbound<'a> {
    /// Connects from where delivery stands (see [`Feed::start`]).
    pub async fn start(
        home: &Home,
        rpc: &'a Rpc,
        config: &'a SignalConfig,
        stored: Option<Cursor>,
        chats: watch::Receiver<BTreeSet<String>>,
        open: Open,
    ) -> Result<Outbound<'a>, BridgeError> {
        let feed = Feed::start(home, "signal-out", SOURCE, CURSOR_STATE, stored).await?;
        let courier = SignalCourier {
            rpc,
            config,
            chats,
            open,
        };
        Ok(Outbound { feed, courier })
    }

    /// Delivers until something fails for good, or until `stop` turns true
    /// (see [`Feed::run`]).
    pub async fn run(mut self, stop: watch::Receiver<bool>) -> Result<(), BridgeError> {
        self.feed.run(&mut self.courier, stop).await
    }
}

/// Who gets what on Signal, and how it is sent.
struct SignalCourier<'a> {
    rpc: &'a Rpc,
    config: &'a SignalConfig,
    /// The people who wrote, kept by the inbound half.
    chats: watch::Receiver<BTreeSet<String>>,
    /// The approvals asked, for the inbound half to match answers with.
    open: Open,
}

/// What signal-cli's answer means for one send.
fn refused(failure: SendFailure) -> Refused<BridgeError> {
    match failure {
        SendFailure::Wait(wait) => Refused::Wait(wait),
        SendFailure::Retry(why) => Refused::Retry(why),
        SendFailure::Skip(why) => Refused::Skip(format!("{why}; skipped")),
        SendFailure::Markup(why) => Refused::Markup(why),
        SendFailure::Closed => Refused::Fatal(RpcError::Closed.into()),
    }
}

impl Courier for SignalCourier<'_> {
    type Address = String;
    type Error = BridgeError;

    fn send_list(&self) -> &[Outgoing] {
        &self.config.send
    }

    /// The allowed people who wrote (one taken off the allowlist gets
    /// nothing more).
    fn recipients(&self) -> Vec<String> {
        let chats = self.chats.borrow();
        chats
            .iter()
            .filter(|who| self.config.allows(who))
            .cloned()
            .collect()
    }

    fn shown(&self, to: &String) -> String {
        to.clone()
    }

    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    /// Cut between Markdown blocks (see `bridge::markdown`), so a code
    /// block or a style is never cut in two; measured as Signal shows it.
    fn parts(&self, text: &str) -> Vec<String> {
        markdown::split::split(text, MESSAGE_LIMIT, |piece| units(&render(piece).text))
    }

    fn tries(&self) -> Option<u32> {
        Some(TRIES)
    }

    /// Signal takes images as they are.
    fn photo_limits(&self) -> Option<&'static Destination> {
        None
    }

    /// Sends one part as Signal shows Markdown: without its marks, with
    /// styles; `plain` drops the styles too.
    async fn send_text(
        &self,
        to: &String,
        part: &str,
        plain: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let mut styled = render(part);
        if plain {
            styled.styles.clear();
        }
        if styled.text.trim().is_empty() {
            styled = Styled::plain(part);
        }
        api::send_text(self.rpc, to, &styled)
            .await
            .map(drop)
            .map_err(refused)
    }

    /// Sends an image as a file of the message.
    async fn send_image(
        &self,
        to: &String,
        image: &Attachment,
        _as_photo: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let extension = hearth_protocol::image::extension(image.media_type).unwrap_or("jpg");
        let name = format!("image.{extension}");
        api::send_file(self.rpc, to, image.media_type, &name, &image.bytes)
            .await
            .map(drop)
            .map_err(refused)
    }

    fn busy_every(&self) -> Duration {
        TYPING_EVERY
    }

    /// Shows "typing…" to every recipient; a failure only costs the hint.
    async fn show_busy(&mut self, feed: &mut Feed) -> Result<(), BridgeError> {
        for to in self.recipients() {
            match feed.beside(api::send_typing(self.rpc, &to)).await? {
                Ok(()) => {}
                Err(RpcError::Closed | RpcError::Write(_)) => return Err(RpcError::Closed.into()),
                Err(err) => tracing::debug!("typing to {to}: {err}"),
            }
        }
        Ok(())
    }

    /// Asks the recipients about a tool call; remembers each message sent,
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
        let request = Styled::plain(&text);
        for to in self.recipients() {
            self.open.asking(&approval.id, &to);
            match feed.beside(api::send_text(self.rpc, &to, &request)).await? {
                Ok(sent) => self.open.asked(&approval.id, &to, sent),
                Err(SendFailure::Closed) => return Err(RpcError::Closed.into()),
                Err(err) => {
                    self.open.not_asked(&approval.id, &to);
                    tracing::warn!("cannot ask {to} about approval {}: {err}", approval.id)
                }
            }
        }
        Ok(())
    }
}
