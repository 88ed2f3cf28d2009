//! The outbound half: sends the agent's replies (and, as configured, its
//! echoes, work reports, notes and errors) to the allowed users' chats, in
//! log order from a stored cursor (see `bridge::delivery`), shows "typing…"
//! while the agent works, and asks about tool calls that wait for approval.

use super::api::{Api, ApiError, Failure};
use super::bridge::{BridgeError, CURSOR_STATE, SOURCE};
use super::config::{ParseMode, TelegramConfig};
use super::format::to_html;
use crate::bridge::backoff::Backoff;
use crate::bridge::delivery::{outgoing_text, Courier, Cursor, Feed};
use crate::bridge::split::{split, MAX_MESSAGE_UNITS};
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::{Event, ImageRef};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::watch;

/// Telegram shows "typing…" for five seconds at most; re-sent this often.
const TYPING_EVERY: Duration = Duration::from_secs(4);

/// How sending one part to one chat ended.
enum Delivery {
    Sent,
    /// Telegram will never take it (blocked, no such chat): skipped.
    Undeliverable(ApiError),
}

/// The outbound half: the daemon's feed and Telegram's courier.
pub struct Outbound<'a> {
    feed: Feed,
    courier: TelegramCourier<'a>,
}

impl<'a> Outbound<'a> {
    /// Connects from where delivery stands (see [`Feed::start`]).
    pub async fn start(
        home: &Home,
        api: &'a Api,
        config: &'a TelegramConfig,
        stored: Option<Cursor>,
        chats: watch::Receiver<BTreeSet<i64>>,
    ) -> Result<Outbound<'a>, BridgeError> {
        let feed = Feed::start(home, "telegram-out", SOURCE, CURSOR_STATE, stored).await?;
        let courier = TelegramCourier { api, config, chats };
        Ok(Outbound { feed, courier })
    }

    /// Delivers until something fails for good, or until `stop` turns true
    /// (see [`Feed::run`]).
    pub async fn run(mut self, stop: watch::Receiver<bool>) -> Result<(), BridgeError> {
        self.feed.run(&mut self.courier, stop).await
    }
}

/// Who gets what on Telegram, and how it is sent.
struct TelegramCourier<'a> {
    api: &'a Api,
    config: &'a TelegramConfig,
    /// The chats that wrote to the bot, kept by the inbound half.
    chats: watch::Receiver<BTreeSet<i64>>,
}

impl TelegramCourier<'_> {
    /// The allowed users' chats that wrote to the bot (a user taken off the
    /// allowlist gets nothing more). Only private chats are kept, and a
    /// private chat's id is its user's id.
    fn targets(&self) -> Vec<i64> {
        let chats = self.chats.borrow();
        chats
            .iter()
            .copied()
            .filter(|chat| self.config.allows(*chat))
            .collect()
    }
}

impl Courier for TelegramCourier<'_> {
    type Error = BridgeError;

    fn busy_every(&self) -> Duration {
        TYPING_EVERY
    }

    fn outgoing(&self, event: &Event) -> Option<String> {
        outgoing_text(event, &self.config.send, SOURCE)
    }

    fn has_recipients(&self) -> bool {
        !self.targets().is_empty()
    }

    /// Sends `text` to every target chat, split into parts Telegram takes.
    /// A chat that can never be reached is skipped with a note.
    async fn deliver(
        &mut self,
        feed: &mut Feed,
        id: Option<u64>,
        text: &str,
    ) -> Result<(), BridgeError> {
        let parts = split(text, MAX_MESSAGE_UNITS);
        for chat in self.targets() {
            for part in &parts {
                let sent = feed
                    .beside(send_part(self.api, self.config, chat, part))
                    .await??;
                if let Delivery::Undeliverable(error) = sent {
                    let what =
                        id.map_or_else(|| "an error".to_string(), |id| format!("message #{id}"));
                    let note = format!(
                        "telegram: could not deliver {what} to chat {chat}: {error}; skipped"
                    );
                    feed.note(note).await?;
                    break;
                }
            }
        }
        Ok(())
    }

    /// Asks the target chats about a tool call, with Allow and Deny buttons.
    async fn ask_approval(&mut self, feed: &mut Feed, event: &Event) -> Result<(), BridgeError> {
        let chats = self.targets();
        super::approval::ask(self.api, self.config, feed, &chats, event).await
    }

    /// Sends a shown image to every target chat with `sendPhoto`.
    async fn deliver_image(
        &mut self,
        feed: &mut Feed,
        image: &ImageRef,
        attachment: &Attachment,
    ) -> Result<(), BridgeError> {
        let chats = self.targets();
        super::photos::deliver(self.api, self.config, feed, &chats, image, attachment).await
    }

    /// Shows "typing…" in every target chat; a failure only costs the hint.
    async fn show_busy(&mut self, feed: &mut Feed) -> Result<(), BridgeError> {
        for chat in self.targets() {
            match feed.beside(self.api.send_typing(chat)).await? {
                Ok(()) => {}
                Err(error) if error.failure() == Failure::Unauthorized => {
                    return Err(BridgeError::Unauthorized {
                        error,
                        env: self.config.token_env.clone(),
                    })
                }
                Err(error) => tracing::debug!("typing in chat {chat}: {error}"),
            }
        }
        Ok(())
    }
}

/// Sends one part to one chat: in the configured markup, falling back to
/// plain text when Telegram cannot parse it; waiting out flood control;
/// retrying other trouble with backoff until it goes through.
async fn send_part(
    api: &Api,
    config: &TelegramConfig,
    chat: i64,
    part: &str,
) -> Result<Delivery, BridgeError> {
    let mut markup = config.parse_mode == ParseMode::Html;
    let mut backoff = Backoff::default();
    loop {
        let result = if markup {
            api.send_message(chat, &to_html(part), Some("HTML")).await
        } else {
            api.send_message(chat, part, None).await
        };
        let Err(error) = result else {
            return Ok(Delivery::Sent);
        };
        match error.failure() {
            Failure::Markup if markup => {
                tracing::info!("Telegram could not parse the markup ({error}); sending plain text");
                markup = false;
            }
            Failure::Wait(wait) => {
                tracing::info!("Telegram asks to wait {wait:?} before sending");
                tokio::time::sleep(wait).await;
            }
            Failure::Unauthorized => {
                return Err(BridgeError::Unauthorized {
                    error,
                    env: config.token_env.clone(),
                })
            }
            Failure::Permanent | Failure::Markup => return Ok(Delivery::Undeliverable(error)),
            Failure::Transient => {
                let wait = backoff.next_wait();
                tracing::warn!("sending to chat {chat} failed: {error}; trying again in {wait:?}");
                tokio::time::sleep(wait).await;
            }
        }
    }
}
