//! The outbound half: sends the agent's replies (and, as configured, its
//! echoes, work reports, notes and errors) to the allowed people who wrote
//! (in their direct messages) and to the allowlisted channel once someone
//! allowed wrote there, in log order from a stored cursor (see
//! `bridge::delivery`), in Discord's Markdown and parts of at most 2,000
//! characters; shows "typing…" while the agent works, and asks about tool
//! calls that wait for approval with buttons.

use super::approval::request_text;
use super::bridge::{BridgeError, Chat, CURSOR_STATE, SOURCE};
use super::config::DiscordConfig;
use super::format::{self, escape, to_discord};
use super::rest::{self, RestError};
use crate::bridge::config::Outgoing;
use crate::bridge::courier::{Courier, Refused};
use crate::bridge::delivery::{Cursor, Feed};
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::image::fit::Destination;
use hearth_protocol::Event;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;
use tokio::sync::watch;
use twilight_http::Client;
use twilight_model::id::marker::ChannelMarker;
use twilight_model::id::Id;

/// Discord shows "typing…" for about ten seconds; re-sent this often.
const TYPING_EVERY: Duration = Duration::from_secs(8);

/// How often a send that fails for a reason worth waiting out is tried.
const TRIES: u32 = 10;

/// The outbound half: the daemon's feed and Discord's courier.
pub struct Outbound<'a> {
    feed: Feed,
    courier: DiscordCourier<'a>,
}

impl<'a> Outbound<'a> {
    /// Connects from where delivery stands (see [`Feed::start`]).
    pub async fn start(
        home: &Home,
        client: &'a Client,
        config: &'a DiscordConfig,
        stored: Option<Cursor>,
        chats: watch::Receiver<BTreeSet<Chat>>,
    ) -> Result<Outbound<'a>, BridgeError> {
        let feed = Feed::start(home, "discord-out", SOURCE, CURSOR_STATE, stored).await?;
        let courier = DiscordCourier {
            client,
            config,
            chats,
            direct: RefCell::new(BTreeMap::new()),
        };
        Ok(Outbound { feed, courier })
    }

    /// Delivers until something fails for good, or until `stop` turns true
    /// (see [`Feed::run`]).
    pub async fn run(mut self, stop: watch::Receiver<bool>) -> Result<(), BridgeError> {
        self.feed.run(&mut self.courier, stop).await
    }
}

/// Who gets what on Discord, and how it is sent.
struct DiscordCourier<'a> {
    client: &'a Client,
    config: &'a DiscordConfig,
    /// The chats written from, kept by the inbound half.
    chats: watch::Receiver<BTreeSet<Chat>>,
    /// The direct-message channel of each person, once asked of Discord
    /// (it never changes).
    direct: RefCell<BTreeMap<u64, Id<ChannelMarker>>>,
}

impl DiscordCourier<'_> {
    /// The channel a chat's messages go to.
    async fn channel(&self, to: &Chat) -> Result<Id<ChannelMarker>, RestError> {
        match *to {
            Chat::Channel(channel) => Id::new_checked(channel).ok_or(RestError::Refused {
                status: 400,
                code: None,
                message: "channel id 0".into(),
            }),
            Chat::Person(user) => {
                if let Some(channel) = self.direct.borrow().get(&user) {
                    return Ok(*channel);
                }
                let channel = rest::dm_channel(self.client, user).await?;
                self.direct.borrow_mut().insert(user, channel);
                Ok(channel)
            }
        }
    }

    async fn send(&self, to: &Chat, text: &str) -> Result<(), RestError> {
        let channel = self.channel(to).await?;
        rest::send(self.client, channel, text, &[]).await
    }
}

impl Courier for DiscordCourier<'_> {
    type Address = Chat;
    type Error = BridgeError;

    fn send_list(&self) -> &[Outgoing] {
        &self.config.send
    }

    /// The allowed people who wrote (one taken off the allowlist gets
    /// nothing more), and the allowlisted channel once written in.
    fn recipients(&self) -> Vec<Chat> {
        let chats = self.chats.borrow();
        chats
            .iter()
            .filter(|chat| match chat {
                Chat::Person(user) => self.config.allows(*user),
                Chat::Channel(channel) => self.config.channel == Some(*channel),
            })
            .copied()
            .collect()
    }

    fn shown(&self, to: &Chat) -> String {
        to.to_string()
    }

    fn message_limit(&self) -> usize {
        format::MESSAGE_LIMIT
    }

    /// Cut between Markdown blocks, measured as Discord shows them.
    fn parts(&self, text: &str) -> Vec<String> {
        format::parts(text)
    }

    fn tries(&self) -> Option<u32> {
        Some(TRIES)
    }

    /// Discord takes images as files, as they are.
    fn photo_limits(&self) -> Option<&'static Destination> {
        None
    }

    /// Sends one part in Discord's Markdown; `plain` shows it as written.
    async fn send_text(
        &self,
        to: &Chat,
        part: &str,
        plain: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let text = if plain {
            escape(part)
        } else {
            to_discord(part)
        };
        self.send(to, &text).await.map_err(RestError::refused)
    }

    async fn send_image(
        &self,
        to: &Chat,
        image: &Attachment,
        _as_photo: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let extension = hearth_protocol::image::extension(image.media_type).unwrap_or("jpg");
        let name = format!("image.{extension}");
        let sent = async {
            let channel = self.channel(to).await?;
            rest::send_file(self.client, channel, name, image.bytes.to_vec()).await
        };
        sent.await.map_err(RestError::refused)
    }

    fn busy_every(&self) -> Duration {
        TYPING_EVERY
    }

    /// Shows "typing…" to every recipient; a failure only costs the hint,
    /// unless the token is refused.
    async fn show_busy(&mut self, feed: &mut Feed) -> Result<(), BridgeError> {
        for to in self.recipients() {
            let typing = async {
                let channel = self.channel(&to).await?;
                rest::typing(self.client, channel).await
            };
            match feed.beside(typing).await? {
                Ok(()) => {}
                Err(RestError::Unauthorized) => return Err(RestError::Unauthorized.into()),
                Err(err) => tracing::debug!("typing to {to}: {err}"),
            }
        }
        Ok(())
    }

    /// Asks the recipients about a tool call, with Allow and Deny buttons.
    async fn ask_approval(&mut self, feed: &mut Feed, event: &Event) -> Result<(), BridgeError> {
        let Some(approval) = event.approval.as_deref() else {
            return Ok(());
        };
        let Some(text) = request_text(event) else {
            return Ok(());
        };
        let buttons = rest::approval_buttons(&approval.id);
        for to in self.recipients() {
            let asked = async {
                let channel = self.channel(&to).await?;
                rest::send(self.client, channel, &text, &buttons).await
            };
            match feed.beside(asked).await? {
                Ok(_) => {}
                Err(RestError::Unauthorized) => return Err(RestError::Unauthorized.into()),
                Err(err) => {
                    tracing::warn!("cannot ask {to} about approval {}: {err}", approval.id)
                }
            }
        }
        Ok(())
    }
}
