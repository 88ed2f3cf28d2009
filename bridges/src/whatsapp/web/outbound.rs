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
use crate::bridge::backoff::Backoff;
use crate::bridge::delivery::{outgoing_text, Courier, Cursor, Feed};
use crate::bridge::split::{split, MAX_MESSAGE_UNITS};
use crate::whatsapp::bridge::{CURSOR_STATE, SOURCE};
use crate::whatsapp::config::WhatsAppConfig;
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::{Event, ImageRef};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::future::Future;
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

impl<D: Device> Courier for WebCourier<'_, D> {
    type Error = WebError;

    fn busy_every(&self) -> Duration {
        TYPING_EVERY
    }

    fn outgoing(&self, event: &Event) -> Option<String> {
        outgoing_text(event, &self.config.send, SOURCE)
    }

    fn has_recipients(&self) -> bool {
        !self.targets().is_empty()
    }

    /// Sends `text` to one number (digits), split into parts WhatsApp
    /// takes; a part WhatsApp refuses ends it with a note. For the agent's
    /// `whatsapp_send`; `id` is the tool message that asked for it.
    async fn send_to(
        &mut self,
        feed: &mut Feed,
        id: u64,
        to: &str,
        text: &str,
    ) -> Result<(), WebError> {
        let parts = split(text, MAX_MESSAGE_UNITS);
        if let Err(why) = feed
            .beside(send_parts(self.device, self.sent, to, &parts))
            .await?
        {
            let note = format!("whatsapp: could not send message #{id} to +{to}: {why}");
            feed.note(note).await?;
        }
        Ok(())
    }

    /// Sends `text` to every target number, split into parts WhatsApp
    /// takes. A number that will not take it is skipped with a note.
    async fn deliver(
        &mut self,
        feed: &mut Feed,
        id: Option<u64>,
        text: &str,
    ) -> Result<(), WebError> {
        let parts = split(text, MAX_MESSAGE_UNITS);
        for to in self.targets() {
            if let Err(why) = feed
                .beside(send_parts(self.device, self.sent, &to, &parts))
                .await?
            {
                let what = id.map_or_else(|| "an error".to_string(), |id| format!("message #{id}"));
                feed.note(format!(
                    "whatsapp: could not deliver {what} to +{to}: {why}"
                ))
                .await?;
            }
        }
        Ok(())
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

    /// Sends a shown image to every target number; a number that will not
    /// take it is skipped with a note.
    async fn deliver_image(
        &mut self,
        feed: &mut Feed,
        image: &ImageRef,
        attachment: &Attachment,
    ) -> Result<(), WebError> {
        for to in self.targets() {
            let send = || {
                self.device
                    .send_image(&to, attachment.bytes.clone(), attachment.media_type)
            };
            match feed.beside(send_retrying(send)).await? {
                Ok(id) => self.sent.borrow_mut().remember(id),
                Err(why) => {
                    let note = format!(
                        "whatsapp: could not send image {} to +{to}: {why}",
                        image.label()
                    );
                    feed.note(note).await?;
                }
            }
        }
        Ok(())
    }
}

/// Sends the parts in order to one address, remembering their ids; the
/// first part that cannot go through ends it with why.
pub async fn send_parts<D: Device>(
    device: &D,
    sent: &RefCell<SentIds>,
    to: &str,
    parts: &[String],
) -> Result<(), DeviceError> {
    for part in parts {
        let id = send_retrying(|| device.send_text(to, part)).await?;
        sent.borrow_mut().remember(id);
    }
    Ok(())
}

/// Sends with `send`, trying again with backoff while the device says a
/// later try may go through, up to `SEND_ATTEMPTS` tries.
pub async fn send_retrying<F: Future<Output = Result<String, DeviceError>>>(
    send: impl Fn() -> F,
) -> Result<String, DeviceError> {
    let mut backoff = Backoff::default();
    let mut attempt = 1;
    loop {
        match send().await {
            Ok(id) => return Ok(id),
            Err(err) if err.retry && attempt < SEND_ATTEMPTS => {
                let wait = backoff.next_wait();
                tracing::warn!("whatsapp: sending failed: {err}; trying again in {wait:?}");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}
