//! The inbound half: takes the messages signal-cli receives and submits
//! the allowed people's words (and files) to the daemon; refuses everyone
//! else; takes the answers to approvals.
//!
//! Each message is submitted with the key `signal:<sender>:<timestamp>`
//! (Signal's id of a message), so one seen twice is logged once. Photos go
//! in as images; voice notes and documents are stored in the daemon, which
//! transcribes or reads them.

use super::api::{self, SendFailure};
use super::approval::{reaction_answer, text_answer, Open};
use super::bridge::{BridgeError, CHATS_STATE, SOURCE};
use super::config::SignalConfig;
use super::envelope::{self, placeholder, AttachmentRef, Incoming};
use super::format::Styled;
use super::rpc::{Notifications, Rpc, RpcError};
use crate::bridge::files;
use crate::bridge::link::{self, LinkError};
use crate::bridge::people::{remember_chat, Gate};
use hearth_client::images::{self, Attachment, ImageFileError};
use hearth_client::Connection;
use hearth_protocol::image::MAX_IMAGE_BYTES;
use hearth_protocol::media::MAX_MEDIA_BYTES;
use hearth_protocol::{ClientFrame, MediaAttachment, ServerFrame};
use std::collections::{BTreeSet, VecDeque};
use std::convert::Infallible;
use tokio::sync::watch;

/// How many messages are remembered to pass over one signal-cli sends twice.
const SEEN: usize = 256;

/// A file of a message, once taken.
enum Attached {
    Image(String),
    File(MediaAttachment),
    /// Not attached (a note says why): its placeholder stays in the words.
    Not,
}

/// The inbound half's state.
pub struct Inbound<'a> {
    rpc: &'a Rpc,
    config: &'a SignalConfig,
    /// Submits, notes and state writes. The live events the daemon also
    /// sends here are read and dropped: the outbound half has its own.
    connection: Connection,
    notifications: Notifications,
    /// The people who get the agent's messages, shared with the outbound half.
    chats: watch::Sender<BTreeSet<String>>,
    /// Strangers refused in this run, so each is told once.
    strangers: Gate<String>,
    /// The approvals asked, shared with the outbound half.
    open: Open,
    /// The latest messages taken (sender and timestamp), newest last.
    seen: VecDeque<(String, u64)>,
}

impl<'a> Inbound<'a> {
    pub fn new(
        rpc: &'a Rpc,
        config: &'a SignalConfig,
        connection: Connection,
        notifications: Notifications,
        chats: watch::Sender<BTreeSet<String>>,
        open: Open,
    ) -> Inbound<'a> {
        Inbound {
            rpc,
            config,
            connection,
            notifications,
            chats,
            strangers: Gate::new(SOURCE),
            open,
            seen: VecDeque::new(),
        }
    }

    /// Takes messages until signal-cli or the daemon goes away.
    pub async fn run(mut self) -> Result<Infallible, BridgeError> {
        loop {
            let next = self.notifications.recv();
            let received = link::beside(&mut self.connection, next, &mut |_| {}).await?;
            let Some(received) = received else {
                return Err(RpcError::Closed.into());
            };
            let Some(envelope) = envelope::parse(&received) else {
                tracing::debug!("skipping a notification without an envelope");
                continue;
            };
            if envelope.data_message.is_some() && !self.first_sight(&envelope) {
                tracing::debug!("skipping a message seen already");
                continue;
            }
            match envelope::classify(&envelope, self.config) {
                Incoming::Relay {
                    from,
                    key,
                    text,
                    attachments,
                    quote,
                } => {
                    let answer = text.as_deref().and_then(text_answer);
                    let asked = self.open.replied_to(&from, quote);
                    match (answer, asked) {
                        (Some(allow), Some(id)) if attachments.is_empty() => {
                            self.answer(&from, id, allow).await?
                        }
                        _ => self.relay(from, key, text, attachments).await?,
                    }
                }
                Incoming::React {
                    from,
                    emoji,
                    target,
                } => {
                    let answer = reaction_answer(&emoji);
                    match (answer, self.open.reacted_to(&from, target)) {
                        (Some(allow), Some(id)) => self.answer(&from, id, allow).await?,
                        _ => tracing::debug!("skipping a reaction {emoji} from {from}"),
                    }
                }
                Incoming::Refuse { from, who } => self.refuse(from, &who).await?,
                Incoming::Ignore(why) => tracing::debug!("skipping a message: {why}"),
            }
        }
    }

    /// Whether the envelope is new in this run (a signal-cli that receives
    /// on its own and for the subscription sends each one twice).
    fn first_sight(&mut self, envelope: &envelope::Envelope) -> bool {
        let id = (
            envelope::sender(envelope).unwrap_or_default(),
            envelope.timestamp,
        );
        if self.seen.contains(&id) {
            return false;
        }
        if self.seen.len() == SEEN {
            self.seen.pop_front();
        }
        self.seen.push_back(id);
        true
    }

    /// Answers approval `id` for `from`, and tells them how it went.
    async fn answer(&mut self, from: &str, id: String, allow: bool) -> Result<(), BridgeError> {
        let frame = ClientFrame::Approve {
            id: id.clone(),
            allow,
            by: Some(from.to_string()),
        };
        let said = match link::request(&mut self.connection, frame, &mut |_| {}).await {
            Ok(ServerFrame::Ack { .. }) if allow => "Allowed.".to_string(),
            Ok(ServerFrame::Ack { .. }) => "Denied.".to_string(),
            Ok(other) => return Err(LinkError::Unexpected(other.encode()).into()),
            // Unknown, or decided already: the person is told so.
            Err(LinkError::Refused { message, .. }) => message,
            Err(err) => return Err(err.into()),
        };
        self.open.close(&id);
        let said = Styled::plain(&said);
        let told = api::send_text(self.rpc, from, &said);
        match link::beside(&mut self.connection, told, &mut |_| {}).await? {
            Ok(_) => Ok(()),
            Err(SendFailure::Closed) => Err(RpcError::Closed.into()),
            Err(err) => {
                tracing::warn!("cannot tell {from} how approval {id} went: {err}");
                Ok(())
            }
        }
    }

    /// Submits an allowed person's message with its files.
    async fn relay(
        &mut self,
        from: String,
        key: String,
        text: Option<String>,
        attachments: Vec<AttachmentRef>,
    ) -> Result<(), BridgeError> {
        let mut images = Vec::new();
        let mut media = Vec::new();
        let mut words = Vec::new();
        for attachment in &attachments {
            match self.attach(&from, &key, attachment).await? {
                Attached::Image(sha256) => images.push(sha256),
                Attached::File(stored) => media.push(stored),
                Attached::Not => words.push(placeholder(attachment)),
            }
        }
        words.extend(text);
        let person = (!self.config.is_owner(&from)).then(|| format!("signal user {from}"));
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
        remember_chat(&mut self.connection, CHATS_STATE, &self.chats, from).await?;
        Ok(())
    }

    /// Fetches one file from signal-cli and stores it in the daemon: a
    /// photo as an image, anything else as a file; one that cannot be
    /// leaves a note saying why.
    async fn attach(
        &mut self,
        from: &str,
        key: &str,
        attachment: &AttachmentRef,
    ) -> Result<Attached, BridgeError> {
        let Some(id) = attachment.id.as_deref() else {
            let why = "signal-cli kept no copy of it (does it run with --ignore-attachments?)";
            files::not_attached(&mut self.connection, SOURCE, key, why).await?;
            return Ok(Attached::Not);
        };
        let declared = attachment.content_type.as_deref();
        if declared.is_some_and(|kind| kind.starts_with("image/")) {
            let fetch = api::fetch_attachment(self.rpc, id, from, MAX_IMAGE_BYTES);
            let fetched = link::beside(&mut self.connection, fetch, &mut |_| {}).await?;
            let stored = match fetched.map_err(|err| err.to_string()) {
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
                    let note =
                        format!("{SOURCE}: the photo of message {key} was not attached: {why}");
                    link::note(&mut self.connection, SOURCE, note, &mut |_| {}).await?;
                    Ok(Attached::Not)
                }
            };
        }
        let name = attachment.filename.clone();
        let Some(media_type) = files::media_type(declared, name.as_deref()) else {
            let kind = declared.unwrap_or("these");
            let why = format!("hearth does not read {kind} files");
            files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
            return Ok(Attached::Not);
        };
        let fetch = api::fetch_attachment(self.rpc, id, from, MAX_MEDIA_BYTES);
        let stored = match link::beside(&mut self.connection, fetch, &mut |_| {}).await? {
            Ok(bytes) => files::store(&mut self.connection, media_type, &bytes, name, None).await?,
            Err(err) => Err(err.to_string()),
        };
        match stored {
            Ok(stored) => Ok(Attached::File(stored)),
            Err(why) => {
                files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
                Ok(Attached::Not)
            }
        }
    }

    /// Refuses a stranger and tells them so, the first time in this run.
    async fn refuse(&mut self, from: String, who: &str) -> Result<(), BridgeError> {
        let connection = &mut self.connection;
        self.strangers.refuse(connection, from, who).await?;
        let rpc = self.rpc;
        let tell = |to: String, refusal: &'static str| async move {
            api::send_text(rpc, &to, &Styled::plain(refusal)).await
        };
        self.strangers.tell(connection, tell).await?;
        Ok(())
    }
}
