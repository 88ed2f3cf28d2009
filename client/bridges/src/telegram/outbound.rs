//! The outbound half: sends the agent's replies (and, as configured, its
//! echoes, work reports, notes and errors) to the allowed users' chats, in
//! log order from a stored cursor (see `bridge::delivery`), shows "typing…"
//! while the agent works, and asks about tool calls that wait for approval.

use super::api::{Api, ApiError, Failure};
use super::bridge::{BridgeError, CURSOR_STATE, SOURCE};
use super::config::{ParseMode, TelegramConfig};
use super::format::{parts, to_html};
use crate::bridge::config::Outgoing;
use crate::bridge::courier::{Courier, Refused};
use crate::bridge::delivery::{Cursor, Feed};
use crate::bridge::split::split;
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::image::fit::{Destination, TELEGRAM_PHOTO};
use hearth_protocol::Event;
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::sync::watch;

/// Telegram shows "typing…" for five seconds at most; re-sent this often.
const TYPING_EVERY: Duration = Duration::from_secs(4);

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

impl TelegramCourier<'_> {
    /// What Telegram's answer means for one send.
    fn refused(&self, error: ApiError, markup: bool) -> Refused<BridgeError> {
        match error.failure() {
            Failure::Unauthorized => Refused::Fatal(BridgeError::Unauthorized {
                error,
                env: self.config.token_env.clone(),
            }),
            Failure::Wait(wait) => Refused::Wait(wait),
            Failure::Markup if markup => Refused::Markup(error.to_string()),
            Failure::Permanent | Failure::Markup => Refused::Skip(format!("{error}; skipped")),
            Failure::Transient => Refused::Retry(error.to_string()),
        }
    }
}

impl Courier for TelegramCourier<'_> {
    type Address = i64;
    type Error = BridgeError;

    fn send_list(&self) -> &[Outgoing] {
        &self.config.send
    }

    fn recipients(&self) -> Vec<i64> {
        self.targets()
    }

    fn shown(&self, chat: &i64) -> String {
        format!("chat {chat}")
    }

    fn photo_limits(&self) -> Option<&'static Destination> {
        Some(&TELEGRAM_PHOTO)
    }

    /// Cut between Markdown blocks, so each part's HTML is whole.
    fn parts(&self, text: &str) -> Vec<String> {
        match self.config.parse_mode {
            ParseMode::Html => parts(text, self.message_limit()),
            ParseMode::Plain => split(text, self.message_limit()),
        }
    }

    /// Sends one part in the configured markup (HTML), or as plain text.
    async fn send_text(
        &self,
        chat: &i64,
        part: &str,
        plain: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let markup = !plain && self.config.parse_mode == ParseMode::Html;
        let sent = if markup {
            self.api
                .send_message(*chat, &to_html(part), Some("HTML"))
                .await
        } else {
            self.api.send_message(*chat, part, None).await
        };
        sent.map_err(|error| self.refused(error, markup))
    }

    /// Sends an image with `sendPhoto`, or `sendDocument` as a file.
    async fn send_image(
        &self,
        chat: &i64,
        image: &Attachment,
        as_photo: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let sent = if as_photo {
            self.api.send_photo(*chat, image).await
        } else {
            self.api.send_document(*chat, image).await
        };
        sent.map_err(|error| self.refused(error, false))
    }

    fn busy_every(&self) -> Duration {
        TYPING_EVERY
    }

    /// Asks the target chats about a tool call, with Allow and Deny buttons.
    async fn ask_approval(&mut self, feed: &mut Feed, event: &Event) -> Result<(), BridgeError> {
        let chats = self.targets();
        super::approval::ask(self.api, self.config, feed, &chats, event).await
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
