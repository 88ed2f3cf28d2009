//! The outbound half: sends the agent's replies (and, as configured, its
//! echoes, work reports, notes and errors) to the allowed numbers that have
//! written, in log order from a stored cursor (see `bridge::delivery`), and
//! marks the newest message read with "typing…" while the agent works.
//!
//! WhatsApp takes free-form messages only within 24 hours of the person's
//! last message; outside that window a message is skipped with a note that
//! says so, and delivery goes on.

use super::bridge::{BridgeError, CURSOR_STATE, SOURCE};
use super::config::WhatsAppConfig;
use super::graph::{Failure, Graph, GraphError};
use super::inbound::LastReceived;
use crate::bridge::backoff::Backoff;
use crate::bridge::delivery::{outgoing_text, Courier, Cursor, Feed};
use crate::bridge::fitting::{prepare, Outgoing};
use crate::bridge::split::{split, MAX_MESSAGE_UNITS};
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::image::fit::WHATSAPP_IMAGE;
use hearth_protocol::whatsapp::whatsapp_shown;
use hearth_protocol::{Event, ImageRef};
use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// "typing…" lasts 25 seconds or until the reply; shown again this often,
/// and never more often for the same message.
const TYPING_EVERY: Duration = Duration::from_secs(20);

/// What the note says when a message falls outside the 24-hour window.
pub const OUTSIDE_WINDOW_NOTE: &str = "WhatsApp refuses free-form messages more than 24 hours after the user last wrote; ask them to write first";

/// How sending one part to one number ended.
enum Delivery {
    Sent,
    /// WhatsApp will not take it: skipped, with this reason in a note.
    Skipped(String),
}

/// The outbound half: the daemon's feed and WhatsApp's courier.
pub struct Outbound<'a> {
    feed: Feed,
    courier: WhatsAppCourier<'a>,
}

impl<'a> Outbound<'a> {
    /// Connects from where delivery stands (see [`Feed::start`]).
    pub async fn start(
        home: &Home,
        graph: &'a Graph,
        config: &'a WhatsAppConfig,
        stored: Option<Cursor>,
        chats: watch::Receiver<BTreeSet<String>>,
        last_received: watch::Receiver<Option<LastReceived>>,
    ) -> Result<Outbound<'a>, BridgeError> {
        let feed = Feed::start(home, "whatsapp-out", SOURCE, CURSOR_STATE, stored).await?;
        let courier = WhatsAppCourier {
            graph,
            config,
            chats,
            last_received,
            shown: None,
            answered: None,
        };
        Ok(Outbound { feed, courier })
    }

    /// Delivers until something fails for good, or until `stop` turns true
    /// (see [`Feed::run`]).
    pub async fn run(mut self, stop: watch::Receiver<bool>) -> Result<(), BridgeError> {
        self.feed.run(&mut self.courier, stop).await
    }
}

/// Who gets what on WhatsApp, and how it is sent.
struct WhatsAppCourier<'a> {
    graph: &'a Graph,
    config: &'a WhatsAppConfig,
    /// The numbers that wrote, kept by the inbound half.
    chats: watch::Receiver<BTreeSet<String>>,
    /// The newest message an allowed person sent, kept by the inbound half.
    last_received: watch::Receiver<Option<LastReceived>>,
    /// The message "typing…" was last shown for, and when.
    shown: Option<(String, Instant)>,
    /// The newest received message that something was sent after: the
    /// agent answered it, so "typing…" is not shown for it again (a turn
    /// that the terminal or a schedule started shows nothing on WhatsApp).
    answered: Option<String>,
}

impl WhatsAppCourier<'_> {
    /// The allowed numbers that wrote (a number taken off the allowlist
    /// gets nothing more).
    fn targets(&self) -> Vec<String> {
        let chats = self.chats.borrow();
        chats
            .iter()
            .filter(|number| self.config.allows(number))
            .cloned()
            .collect()
    }

    fn unauthorized(&self, error: GraphError) -> BridgeError {
        BridgeError::Unauthorized {
            error,
            env: self.config.access_token_env.clone(),
        }
    }
}

impl Courier for WhatsAppCourier<'_> {
    type Error = BridgeError;

    /// Uploads a shown image and sends it to every target number; a number
    /// that will not take it is skipped with a note.
    async fn deliver_image(
        &mut self,
        feed: &mut Feed,
        image: &ImageRef,
        attachment: &Attachment,
    ) -> Result<(), BridgeError> {
        let targets = self.targets();
        if targets.is_empty() {
            return Ok(());
        }
        let (attachment, as_image) = match prepare(attachment, &WHATSAPP_IMAGE).await {
            Outgoing::Photo(photo) => (photo, true),
            Outgoing::Document(file, why) => {
                tracing::info!("whatsapp: image {} goes as a file: {why}", image.label());
                (file, false)
            }
            Outgoing::Refused(why) => {
                let note = format!("whatsapp: could not send image {}: {why}", image.label());
                feed.note(note).await?;
                return Ok(());
            }
        };
        let attachment = &attachment;
        let graph = self.graph;
        for to in targets {
            let address = to.as_str();
            let send = move || async move {
                if as_image {
                    graph.send_image(address, attachment).await
                } else {
                    graph.send_document(address, attachment).await
                }
            };
            let sent = feed.beside(send_retrying(self, &to, send)).await??;
            if let Delivery::Skipped(why) = sent {
                let note = format!(
                    "whatsapp: could not send image {} to {}: {why}",
                    image.label(),
                    whatsapp_shown(&to)
                );
                feed.note(note).await?;
            }
        }
        Ok(())
    }

    fn busy_every(&self) -> Duration {
        TYPING_EVERY
    }

    fn outgoing(&self, event: &Event) -> Option<String> {
        outgoing_text(event, &self.config.send, SOURCE)
    }

    fn has_recipients(&self) -> bool {
        !self.targets().is_empty()
    }

    /// Sends `text` to every target number, split into parts WhatsApp
    /// takes. A number that will not take it is skipped with a note.
    async fn deliver(
        &mut self,
        feed: &mut Feed,
        id: Option<u64>,
        text: &str,
    ) -> Result<(), BridgeError> {
        let answering = self.last_received.borrow().clone();
        let parts = split(text, MAX_MESSAGE_UNITS);
        for to in self.targets() {
            for part in &parts {
                let sent = feed.beside(send_part(self, &to, part)).await??;
                if let Delivery::Skipped(why) = sent {
                    let what =
                        id.map_or_else(|| "an error".to_string(), |id| format!("message #{id}"));
                    feed.note(format!(
                        "whatsapp: could not deliver {what} to {}: {why}",
                        whatsapp_shown(&to)
                    ))
                    .await?;
                    break;
                }
            }
        }
        self.answered = answering.map(|last| last.wamid);
        Ok(())
    }

    /// Sends a `whatsapp_send` message to its one number, whether or not
    /// that number wrote (the daemon let the agent write only to numbers
    /// the config names); outside the 24-hour window it is skipped with a
    /// note, as replies are.
    async fn send_to(
        &mut self,
        feed: &mut Feed,
        id: u64,
        to: &str,
        text: &str,
    ) -> Result<(), BridgeError> {
        for part in split(text, MAX_MESSAGE_UNITS) {
            let sent = feed.beside(send_part(self, to, &part)).await??;
            if let Delivery::Skipped(why) = sent {
                feed.note(format!(
                    "whatsapp: could not deliver message #{id} to {}: {why}",
                    whatsapp_shown(to)
                ))
                .await?;
                break;
            }
        }
        Ok(())
    }

    /// Marks the newest message read and shows "typing…" to its sender; a
    /// failure only costs the hint.
    async fn show_busy(&mut self, feed: &mut Feed) -> Result<(), BridgeError> {
        let Some(last) = self.last_received.borrow().clone() else {
            return Ok(());
        };
        if !self.config.allows(&last.from) || self.answered.as_ref() == Some(&last.wamid) {
            return Ok(());
        }
        // A tick comes a little under TYPING_EVERY after the last showing.
        let recent = TYPING_EVERY - Duration::from_secs(1);
        if let Some((wamid, at)) = &self.shown {
            if *wamid == last.wamid && at.elapsed() < recent {
                return Ok(());
            }
        }
        self.shown = Some((last.wamid.clone(), Instant::now()));
        match feed
            .beside(self.graph.mark_read_typing(&last.wamid))
            .await?
        {
            Ok(()) => Ok(()),
            Err(error) if error.failure() == Failure::Unauthorized => Err(self.unauthorized(error)),
            Err(error) => {
                tracing::debug!("whatsapp: typing for {}: {error}", last.wamid);
                Ok(())
            }
        }
    }
}

/// Sends one part to one number, retrying rate limits and server trouble
/// with backoff until it goes through.
async fn send_part(
    courier: &WhatsAppCourier<'_>,
    to: &str,
    part: &str,
) -> Result<Delivery, BridgeError> {
    send_retrying(courier, to, || courier.graph.send_text(to, part)).await
}

/// Sends with `send` to one number: skipped outside the 24-hour window or
/// when it can never go through, retried with backoff otherwise.
async fn send_retrying<F: Future<Output = Result<String, GraphError>>>(
    courier: &WhatsAppCourier<'_>,
    to: &str,
    send: impl Fn() -> F,
) -> Result<Delivery, BridgeError> {
    let mut backoff = Backoff::default();
    loop {
        let error = match send().await {
            Ok(_) => return Ok(Delivery::Sent),
            Err(error) => error,
        };
        match error.failure() {
            Failure::OutsideWindow => {
                return Ok(Delivery::Skipped(OUTSIDE_WINDOW_NOTE.to_string()))
            }
            Failure::Permanent => return Ok(Delivery::Skipped(format!("{error}; skipped"))),
            Failure::Unauthorized => return Err(courier.unauthorized(error)),
            Failure::Retry => {
                let wait = backoff.next_wait();
                tracing::warn!(
                    "whatsapp: sending to {} failed: {error}; trying again in {wait:?}",
                    whatsapp_shown(to)
                );
                tokio::time::sleep(wait).await;
            }
        }
    }
}
