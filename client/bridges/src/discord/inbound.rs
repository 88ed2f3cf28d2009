//! The inbound half: reads the Gateway and submits the allowed people's
//! words (and files) from their direct messages and the allowlisted
//! channel to the daemon; refuses everyone else; takes the approval
//! buttons pressed.
//!
//! Each message is submitted with the key `discord:<message id>`, so one
//! seen twice is logged once. Photos go in as images; voice messages and
//! documents are stored in the daemon, which transcribes or reads them.
//!
//! The Gateway does not replay what was written while the bot was away
//! (the bridge stopped, or between two sessions), so on each connect
//! (Ready, Resumed) the bridge reads back, over REST, every chat's messages
//! since the newest it took there (see `marks.rs`), and takes them oldest
//! first as if the Gateway had brought them. A chat's mark moves only once
//! the daemon acknowledged its message; a message at or before the mark,
//! whether read back or from the Gateway, is passed over.

use super::approval::pressed;
use super::bridge::{BridgeError, Chat, GatewayError, CHATS_STATE, READ_STATE, SOURCE};
use super::config::DiscordConfig;
use super::marks::ReadMarks;
use super::rest::{self, RestError};
use crate::bridge::files;
use crate::bridge::link::{self, LinkError};
use crate::bridge::people::{remember_chat, Gate, REFUSAL};
use hearth_client::images::{self, Attachment, ImageFileError};
use hearth_client::Connection;
use hearth_protocol::image::MAX_IMAGE_BYTES;
use hearth_protocol::media::MAX_MEDIA_BYTES;
use hearth_protocol::{ClientFrame, MediaAttachment, ServerFrame};
use std::collections::BTreeSet;
use std::convert::Infallible;
use tokio::sync::watch;
use twilight_gateway::{Event, EventTypeFlags, Shard, StreamExt};
use twilight_http::Client;
use twilight_model::application::interaction::{Interaction, InteractionData};
use twilight_model::channel::message::MessageFlags;
use twilight_model::channel::{self, Message};
use twilight_model::id::Id;

/// The Gateway's close codes that mean the configuration must change.
const AUTHENTICATION_FAILED: u16 = 4004;
const DISALLOWED_INTENTS: u16 = 4014;

/// A file of a message, once taken.
enum Attached {
    Image(String),
    File(MediaAttachment),
    /// Not attached (a note says why): its name stays in the words.
    Not,
}

/// The inbound half's state.
pub struct Inbound<'a> {
    client: &'a Client,
    config: &'a DiscordConfig,
    /// Submits, notes and state writes. The live events the daemon also
    /// sends here are read and dropped: the outbound half has its own.
    connection: Connection,
    shard: Shard,
    /// Attachments are fetched from Discord's file servers with it.
    files: reqwest::Client,
    /// The chats that get the agent's messages, shared with the outbound half.
    chats: watch::Sender<BTreeSet<Chat>>,
    /// Strangers refused in this run (who, and the channel they wrote
    /// in), so each is told once.
    strangers: Gate<(u64, u64)>,
    /// The bot's own user and application ids, from the Gateway's Ready.
    me: Option<u64>,
    application: u64,
    /// How far each chat was read, as stored in the daemon.
    marks: ReadMarks,
}

impl<'a> Inbound<'a> {
    pub fn new(
        client: &'a Client,
        config: &'a DiscordConfig,
        connection: Connection,
        shard: Shard,
        chats: watch::Sender<BTreeSet<Chat>>,
        marks: ReadMarks,
    ) -> Inbound<'a> {
        Inbound {
            client,
            config,
            connection,
            shard,
            files: reqwest::Client::new(),
            chats,
            strangers: Gate::new(SOURCE),
            me: None,
            application: 0,
            marks,
        }
    }

    /// Takes events until the Gateway or the daemon goes away. The shard
    /// itself says Hello back, beats the heart, identifies, resumes and
    /// reconnects; each time it is connected again, what was written
    /// meanwhile is read back.
    pub async fn run(mut self) -> Result<Infallible, BridgeError> {
        let wanted = EventTypeFlags::READY
            | EventTypeFlags::RESUMED
            | EventTypeFlags::MESSAGE_CREATE
            | EventTypeFlags::INTERACTION_CREATE;
        loop {
            let next = self.shard.next_event(wanted);
            let event = link::beside(&mut self.connection, next, &mut |_| {}).await?;
            match event {
                None => return Err(GatewayError::Closed.into()),
                Some(Err(err)) => tracing::warn!("discord gateway: {err}"),
                Some(Ok(Event::Ready(ready))) => {
                    self.me = Some(ready.user.id.get());
                    self.application = ready.application.id.get();
                    tracing::info!("discord: connected as {}", ready.user.name);
                    self.catch_up(None).await?;
                }
                Some(Ok(Event::Resumed)) => self.catch_up(None).await?,
                Some(Ok(Event::MessageCreate(message))) => {
                    self.gateway_message(message.message).await?
                }
                Some(Ok(Event::InteractionCreate(interaction))) => {
                    self.interaction((*interaction).0).await?
                }
                Some(Ok(Event::GatewayClose(Some(frame)))) => match frame.code {
                    AUTHENTICATION_FAILED => return Err(GatewayError::TokenRefused.into()),
                    DISALLOWED_INTENTS => return Err(GatewayError::ContentIntent.into()),
                    code => tracing::info!("discord gateway closed ({code}); reconnecting"),
                },
                Some(Ok(_)) => {}
            }
        }
    }

    /// Reads back what was written in the chats while the bot was away
    /// (every chat on a connect, or `only` the channel whose last catch-up
    /// stopped short) and takes it oldest first, as the Gateway would have
    /// brought it. A channel Discord does not answer for is tried again
    /// with its next message or at the next connect; its mark waits.
    async fn catch_up(&mut self, only: Option<u64>) -> Result<(), BridgeError> {
        let mut missed = Vec::new();
        let mut read_to = Vec::new();
        for (channel, after) in self.marks.channels() {
            if only.is_some_and(|only| only != channel) {
                continue;
            }
            let (Some(channel_id), Some(after_id)) =
                (Id::new_checked(channel), Id::new_checked(after))
            else {
                continue;
            };
            let read = rest::messages_after(self.client, channel_id, after_id);
            match link::beside(&mut self.connection, read, &mut |_| {}).await? {
                Ok(messages) => {
                    if let Some(newest) = messages.last() {
                        read_to.push((channel, newest.id.get()));
                    }
                    let marks = &self.marks;
                    missed.extend(
                        messages
                            .into_iter()
                            .filter(|message| !marks.taken(channel, message.id.get())),
                    );
                    self.marks.caught_up(channel);
                }
                Err(RestError::Unauthorized) => return Err(RestError::Unauthorized.into()),
                Err(err) => {
                    tracing::warn!("discord: cannot read back channel {channel}: {err}; trying again with its next message");
                    self.marks.fell_behind(channel);
                }
            }
        }
        if !missed.is_empty() {
            tracing::info!(
                "discord: read back {} messages written while away",
                missed.len()
            );
        }
        missed.sort_by_key(|message| message.id);
        for message in missed {
            self.message(message).await?;
        }
        // The newest read moves the mark even when it was not taken (the
        // bot's own reply), so it is not read again at the next connect.
        let mut moved = false;
        for (channel, newest) in read_to {
            moved |= self.marks.read_to(channel, newest);
        }
        if moved {
            self.store_marks().await?;
        }
        Ok(())
    }

    /// A message from the Gateway: after what a catch-up that stopped short
    /// left unread before it in its channel.
    async fn gateway_message(&mut self, message: Message) -> Result<(), BridgeError> {
        let channel = message.channel_id.get();
        if self.marks.is_behind(channel) {
            self.catch_up(Some(channel)).await?;
        }
        self.message(message).await
    }

    /// A message from the Gateway or read back: taken once, then its chat's
    /// mark moved past it (and stored) once the daemon holds it.
    async fn message(&mut self, message: Message) -> Result<(), BridgeError> {
        let (channel, id) = (message.channel_id.get(), message.id.get());
        if self.marks.taken(channel, id) {
            tracing::debug!("message {id} in channel {channel} was taken already");
            return Ok(());
        }
        let Some(chat) = self.take(message).await? else {
            return Ok(());
        };
        if self
            .marks
            .took(channel, matches!(chat, Chat::Person(_)), id)
        {
            self.store_marks().await?;
        }
        Ok(())
    }

    /// Stores the marks; returns once the daemon holds them.
    async fn store_marks(&mut self) -> Result<(), BridgeError> {
        let value = self.marks.encode();
        link::set_state(&mut self.connection, READ_STATE, value, &mut |_| {}).await?;
        Ok(())
    }

    /// A message in a direct message or the allowlisted channel, submitted
    /// (or its stranger refused); the chat it was in, or `None` when it is
    /// not one of the bridge's chats (the bot's own, another channel's, a
    /// stranger's direct message).
    async fn take(&mut self, message: Message) -> Result<Option<Chat>, BridgeError> {
        let from = message.author.id.get();
        if message.author.bot || Some(from) == self.me {
            return Ok(None);
        }
        let channel = message.channel_id.get();
        // Read back over REST, a server's message does not name its server
        // (`guild_id` is the Gateway's alone): the allowlisted channel is
        // known by its id, and no other server channel is read back.
        let chat = if self.config.channel == Some(channel) {
            Chat::Channel(channel)
        } else if message.guild_id.is_none() {
            Chat::Person(from)
        } else {
            tracing::debug!("skipping a message in channel {channel}, not the allowlisted one");
            return Ok(None);
        };
        let who = format!("{from} ({})", message.author.name);
        if !self.config.allows(from) {
            self.refuse(from, channel, &who).await?;
            return Ok(matches!(chat, Chat::Channel(_)).then_some(chat));
        }
        let key = format!("{SOURCE}:{}", message.id);
        let voice = message
            .flags
            .is_some_and(|flags| flags.contains(MessageFlags::IS_VOICE_MESSAGE));
        let mut images = Vec::new();
        let mut media = Vec::new();
        let mut words = Vec::new();
        for attachment in &message.attachments {
            match self.attach(&key, attachment, voice).await? {
                Attached::Image(sha256) => images.push(sha256),
                Attached::File(stored) => media.push(stored),
                Attached::Not => words.push(format!("[file: {}]", attachment.filename)),
            }
        }
        if !message.content.trim().is_empty() {
            words.push(message.content.clone());
        }
        let person = (!self.config.is_owner(from)).then(|| format!("discord user {who}"));
        link::submit(
            &mut self.connection,
            SOURCE,
            key,
            words.join(" "),
            images,
            person,
            media,
        )
        .await?;
        remember_chat(&mut self.connection, CHATS_STATE, &self.chats, chat).await?;
        Ok(Some(chat))
    }

    /// Fetches one file from Discord and stores it in the daemon: a photo
    /// as an image, anything else as a file; one that cannot be leaves a
    /// note saying why.
    async fn attach(
        &mut self,
        key: &str,
        attachment: &channel::Attachment,
        voice: bool,
    ) -> Result<Attached, BridgeError> {
        let declared = attachment.content_type.as_deref();
        let name = attachment.filename.clone();
        if declared.is_some_and(|kind| kind.starts_with("image/")) {
            let fetch = fetch(
                &self.files,
                &attachment.url,
                attachment.size,
                MAX_IMAGE_BYTES,
            );
            let fetched = link::beside(&mut self.connection, fetch, &mut |_| {}).await?;
            let stored = match fetched {
                Ok(bytes) => match Attachment::from_bytes(bytes) {
                    Ok(image) => {
                        match images::put(&mut self.connection, &image, &mut |_| {}).await {
                            Ok(stored) => Ok(stored.sha256),
                            Err(ImageFileError::Connection(err)) => {
                                return Err(LinkError::from(err).into())
                            }
                            Err(err) => Err(err.to_string()),
                        }
                    }
                    Err(_) => Err("the file is not a PNG, JPEG, GIF or WebP image".to_string()),
                },
                Err(why) => Err(why),
            };
            return match stored {
                Ok(sha256) => Ok(Attached::Image(sha256)),
                Err(why) => {
                    files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
                    Ok(Attached::Not)
                }
            };
        }
        let Some(media_type) = files::media_type(declared, Some(&name)) else {
            let kind = declared.unwrap_or("these");
            let why = format!("hearth does not read {kind} files");
            files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
            return Ok(Attached::Not);
        };
        let fetch = fetch(
            &self.files,
            &attachment.url,
            attachment.size,
            MAX_MEDIA_BYTES,
        );
        let stored = match link::beside(&mut self.connection, fetch, &mut |_| {}).await? {
            Ok(bytes) => {
                // A voice message's name is Discord's, not the person's.
                let name = (!voice).then_some(name);
                let seconds = attachment
                    .duration_secs
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(|s| s.round() as u32);
                files::store(&mut self.connection, media_type, &bytes, name, seconds).await?
            }
            Err(why) => Err(why),
        };
        match stored {
            Ok(stored) => Ok(Attached::File(stored)),
            Err(why) => {
                files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
                Ok(Attached::Not)
            }
        }
    }

    /// A button pressed: an allowed person's press on an approval's button
    /// answers it, and the message becomes how it went.
    async fn interaction(&mut self, interaction: Interaction) -> Result<(), BridgeError> {
        let Some(InteractionData::MessageComponent(data)) = &interaction.data else {
            return Ok(());
        };
        let Some((id, allow)) = pressed(&data.custom_id) else {
            return Ok(());
        };
        let Some(user) = interaction.author() else {
            return Ok(());
        };
        let (from, who) = (user.id.get(), format!("{} ({})", user.id, user.name));
        let application = interaction.application_id.get();
        if !self.config.allows(from) {
            // Noted once per run like any stranger, and told right there,
            // only to the one who pressed.
            let channel = interaction.channel.as_ref().map_or(0, |c| c.id.get());
            let connection = &mut self.connection;
            self.strangers
                .refuse(connection, (from, channel), &who)
                .await?;
            let told_already = |_, _| async { Ok::<(), Infallible>(()) };
            self.strangers.tell(connection, told_already).await?;
            let told = rest::answer_interaction(
                self.client,
                application,
                interaction.id,
                &interaction.token,
                REFUSAL,
                false,
            );
            if let Err(err) = link::beside(&mut self.connection, told, &mut |_| {}).await? {
                tracing::warn!("cannot answer {who}'s button: {err}");
            }
            return Ok(());
        }
        let frame = ClientFrame::Approve {
            id: id.clone(),
            allow,
            by: Some(from.to_string()),
        };
        let said = match link::request(&mut self.connection, frame, &mut |_| {}).await {
            Ok(ServerFrame::Ack { .. }) if allow => format!("Allowed by {}.", user.name),
            Ok(ServerFrame::Ack { .. }) => format!("Denied by {}.", user.name),
            Ok(other) => return Err(LinkError::Unexpected(other.encode()).into()),
            // Unknown, or decided already: the message says so.
            Err(LinkError::Refused { message, .. }) => message,
            Err(err) => return Err(err.into()),
        };
        let asked = interaction
            .message
            .as_ref()
            .map(|message| message.content.as_str())
            .unwrap_or_default();
        let text = if asked.is_empty() || asked.chars().count() + said.chars().count() > 1990 {
            super::format::escape(&said)
        } else {
            format!("{asked}\n\n**{}**", super::format::escape(&said))
        };
        let answered = rest::answer_interaction(
            self.client,
            application,
            interaction.id,
            &interaction.token,
            &text,
            true,
        );
        match link::beside(&mut self.connection, answered, &mut |_| {}).await? {
            Ok(()) => Ok(()),
            Err(RestError::Unauthorized) => Err(RestError::Unauthorized.into()),
            Err(err) => {
                tracing::warn!("cannot answer {who}'s button on approval {id}: {err}");
                Ok(())
            }
        }
    }

    /// Refuses a stranger and tells them so where they wrote, the first
    /// time in this run.
    async fn refuse(&mut self, from: u64, channel: u64, who: &str) -> Result<(), BridgeError> {
        let connection = &mut self.connection;
        self.strangers
            .refuse(connection, (from, channel), who)
            .await?;
        let client = self.client;
        let tell = |(_, channel): (u64, u64), refusal: &'static str| async move {
            let channel = Id::new_checked(channel).ok_or(RestError::Refused {
                status: 400,
                code: None,
                message: "no channel to answer in".into(),
            })?;
            rest::send(client, channel, refusal, &[]).await
        };
        self.strangers.tell(connection, tell).await?;
        Ok(())
    }
}

/// Fetches an attachment of `size` bytes (as Discord said) from `url`, at
/// most `limit` bytes; why not, in words.
async fn fetch(
    client: &reqwest::Client,
    url: &str,
    size: u64,
    limit: usize,
) -> Result<Vec<u8>, String> {
    let too_big = || format!("the file is over the limit of {} MB", limit / (1024 * 1024));
    if size > limit as u64 {
        return Err(too_big());
    }
    let mut response = client
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|err| format!("cannot fetch it from Discord: {err}"))?;
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| format!("cannot fetch it from Discord: {err}"))?
    {
        if bytes.len() + chunk.len() > limit {
            return Err(too_big());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}
