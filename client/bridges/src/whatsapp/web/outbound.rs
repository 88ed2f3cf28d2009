//! The outbound half: sends the agent's replies (and, as configured, its
//! echoes, work reports, notes and errors) to the allowed numbers that have
//! written, in log order from the stored cursor (see `bridge::delivery`),
//! and shows "typing…" in the newest chat while the agent works.
//!
//! A linked device has no 24-hour window: a personal account may write
//! first. A send that fails while the device reconnects is retried with
//! backoff; one WhatsApp refuses is skipped with a note.

use super::bridge::WebError;
use super::device::{Device, DeviceError};
use super::inbound::SentIds;
use crate::bridge::config::Outgoing;
use crate::bridge::courier::{Courier, Refused};
use crate::bridge::delivery::{Cursor, Feed};
use crate::whatsapp::bridge::{CURSOR_STATE, SOURCE};
use crate::whatsapp::config::WhatsAppConfig;
use crate::whatsapp::format::{parts, to_whatsapp};
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::image::fit::Destination;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::watch;

/// WhatsApp shows "typing…" for about 25 seconds; shown again this often.
const TYPING_EVERY: Duration = Duration::from_secs(20);

/// How many times a send is tried while the device cannot send (it is
/// reconnecting) before the message is skipped with a note: with the
/// backoff's waits, about six minutes.
const SEND_ATTEMPTS: u32 = 10;

/// The outbound half: the daemon's feed and the linked device's courier.
pub struct Outbound<'a, D: Device> {
    feed: Feed,
    courier: WebCourier<'a, D>,
}

impl<'a, D: Device> Outbound<'a, D> {
    /// Connects from where delivery stands (see [`Feed::start`]).
    pub async fn start(
        home: &Home,
        courier: WebCourier<'a, D>,
        stored: Option<Cursor>,
    ) -> Result<Outbound<'a, D>, WebError> {
        let feed = Feed::start(home, "whatsapp-out", SOURCE, CURSOR_STATE, stored).await?;
        Ok(Outbound { feed, courier })
    }

    /// Delivers until something fails for good, or until `stop` turns true
    /// (see [`Feed::run`]).
    pub async fn run(mut self, stop: watch::Receiver<bool>) -> Result<(), WebError> {
        self.feed.run(&mut self.courier, stop).await
    }
}

/// Who gets what through the linked device, and how it is sent.
pub struct WebCourier<'a, D: Device> {
    device: &'a D,
    config: &'a WhatsAppConfig,
    /// The numbers that wrote, kept by the inbound half.
    chats: watch::Receiver<BTreeSet<String>>,
    /// The chat of the newest relayed message, kept by the inbound half.
    last_chat: watch::Receiver<Option<String>>,
    /// The ids of what was sent, so the inbound half never takes them back in.
    sent: &'a RefCell<SentIds>,
}

impl<'a, D: Device> WebCourier<'a, D> {
    pub fn new(
        device: &'a D,
        config: &'a WhatsAppConfig,
        chats: watch::Receiver<BTreeSet<String>>,
        last_chat: watch::Receiver<Option<String>>,
        sent: &'a RefCell<SentIds>,
    ) -> WebCourier<'a, D> {
        WebCourier {
            device,
            config,
            chats,
            last_chat,
            sent,
        }
    }

    /// The allowed numbers that wrote (a number taken off the allowlist
    /// gets nothing more).
    pub fn targets(&self) -> Vec<String> {
        let chats = self.chats.borrow();
        chats
            .iter()
            .filter(|number| self.config.allows(number))
            .cloned()
            .collect()
    }
}

impl<D: Device> WebCourier<'_, D> {
    /// What the device's answer means for one send: tried again while the
    /// device reconnects, skipped when WhatsApp refuses it; the id of what
    /// went out is remembered.
    fn sent(&self, sent: Result<String, DeviceError>) -> Result<(), Refused<WebError>> {
        match sent {
            Ok(id) => {
                self.sent.borrow_mut().remember(id);
                Ok(())
            }
            Err(err) if err.retry => Err(Refused::Retry(err.to_string())),
            Err(err) => Err(Refused::Skip(err.to_string())),
        }
    }
}

impl<D: Device> Courier for WebCourier<'_, D> {
    type Address = String;
    type Error = WebError;

    fn send_list(&self) -> &[Outgoing] {
        &self.config.send
    }

    fn recipients(&self) -> Vec<String> {
        self.targets()
    }

    fn shown(&self, to: &String) -> String {
        format!("+{to}")
    }

    fn tries(&self) -> Option<u32> {
        Some(SEND_ATTEMPTS)
    }

    /// Images go to the device as the daemon has them.
    fn photo_limits(&self) -> Option<&'static Destination> {
        None
    }

    /// For the agent's `whatsapp_send`: any number (digits) the daemon let
    /// it write to.
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
    ) -> Result<(), Refused<WebError>> {
        self.sent(self.device.send_text(to, &to_whatsapp(part)).await)
    }

    async fn send_image(
        &self,
        to: &String,
        image: &Attachment,
        _as_photo: bool,
    ) -> Result<(), Refused<WebError>> {
        let sent = self
            .device
            .send_image(to, image.bytes.clone(), image.media_type)
            .await;
        self.sent(sent)
    }

    fn busy_every(&self) -> Duration {
        TYPING_EVERY
    }

    /// Shows "typing…" in the chat of the newest relayed message; a failure
    /// only costs the hint. A turn that the terminal or a schedule started
    /// shows it there too: the chat is where the answer goes.
    async fn show_busy(&mut self, feed: &mut Feed) -> Result<(), WebError> {
        let Some(chat) = self.last_chat.borrow().clone() else {
            return Ok(());
        };
        if !self.config.allows(&chat) {
            return Ok(());
        }
        if let Err(err) = feed.beside(self.device.composing(&chat)).await? {
            tracing::debug!("whatsapp: typing in +{chat}: {err}");
        }
        Ok(())
    }
}
