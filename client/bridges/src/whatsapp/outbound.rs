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
use super::format::{parts, to_whatsapp};
use super::graph::{Failure, Graph, GraphError};
use super::inbound::LastReceived;
use crate::bridge::config::Outgoing;
use crate::bridge::courier::{self, Courier, Refused};
use crate::bridge::delivery::{Cursor, Feed};
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::image::fit::{Destination, WHATSAPP_IMAGE};
use hearth_protocol::whatsapp::whatsapp_shown;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// "typing…" lasts 25 seconds or until the reply; shown again this often,
/// and never more often for the same message.
const TYPING_EVERY: Duration = Duration::from_secs(20);

/// What the note says when a message falls outside the 24-hour window.
pub const OUTSIDE_WINDOW_NOTE: &str = "WhatsApp refuses free-form messages more than 24 hours after the user last wrote; ask them to write first";

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

    /// What WhatsApp's answer means for one send: skipped outside the
    /// 24-hour window or when it can never go through, tried again
    /// otherwise.
    fn refused(&self, error: GraphError) -> Refused<BridgeError> {
        match error.failure() {
            Failure::OutsideWindow => Refused::Skip(OUTSIDE_WINDOW_NOTE.to_string()),
            Failure::Permanent => Refused::Skip(format!("{error}; skipped")),
            Failure::Unauthorized => Refused::Fatal(self.unauthorized(error)),
            Failure::Retry => Refused::Retry(error.to_string()),
        }
    }
}

impl Courier for WhatsAppCourier<'_> {
    type Address = String;
    type Error = BridgeError;

    fn send_list(&self) -> &[Outgoing] {
        &self.config.send
    }

    fn recipients(&self) -> Vec<String> {
        self.targets()
    }

    fn shown(&self, to: &String) -> String {
        whatsapp_shown(to)
    }

    fn photo_limits(&self) -> Option<&'static Destination> {
        Some(&WHATSAPP_IMAGE)
    }

    /// A `whatsapp_send` message goes to its one number whether or not that
    /// number wrote (the daemon let the agent write only to numbers the
    /// config names); outside the 24-hour window it is skipped with a note,
    /// as replies are.
    fn one_person(&self, to: &str) -> Option<String> {
        Some(to.to_string())
    }

    /// Cut between Markdown blocks, so each part's formatting is whole.
    fn parts(&self, text: &str) -> Vec<String> {
        parts(text, self.message_limit())
    }

    /// Sends one part in WhatsApp's formatting (it has no markup to refuse).
    async fn send_text(
        &self,
        to: &String,
        part: &str,
        _plain: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let sent = self.graph.send_text(to, &to_whatsapp(part)).await;
        sent.map(drop).map_err(|error| self.refused(error))
    }

    /// Uploads an image and sends it as an image, or as a document.
    async fn send_image(
        &self,
        to: &String,
        image: &Attachment,
        as_photo: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let sent = if as_photo {
            self.graph.send_image(to, image).await
        } else {
            self.graph.send_document(to, image).await
        };
        sent.map(drop).map_err(|error| self.refused(error))
    }

    fn busy_every(&self) -> Duration {
        TYPING_EVERY
    }

    /// Sends to every target number (see [`courier::to_everyone`]); what
    /// was received until then counts as answered.
    async fn deliver(
        &mut self,
        feed: &mut Feed,
        id: Option<u64>,
        text: &str,
    ) -> Result<(), BridgeError> {
        let answering = self.last_received.borrow().clone();
        courier::to_everyone(self, feed, id, text).await?;
        self.answered = answering.map(|last| last.wamid);
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
