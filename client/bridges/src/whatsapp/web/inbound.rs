//! The inbound half: takes the messages the linked device received,
//! submits the allowed numbers' to the daemon and refuses everyone else.
//!
//! Each message is submitted with the key `whatsapp:<message id>`, as the
//! Cloud API backend does, and the device is told they are taken only once
//! the daemon holds them durably: WhatsApp delivers a message not taken
//! again at the next connection, and the key makes the second one a
//! duplicate. Strangers are told they are refused after that.

use super::bridge::WebError;
use super::device::{Chat, Device, Own, Received, Stop, WebEvent, WebFile, WebImage};
use crate::bridge::files;
use crate::bridge::link::{self, LinkError};
use crate::bridge::people::{remember_chat, Gate};
use crate::whatsapp::bridge::{CHATS_STATE, SOURCE};
use crate::whatsapp::config::WhatsAppConfig;
use hearth_client::images::{self, Attachment, ImageFileError};
use hearth_client::Connection;
use hearth_protocol::MediaAttachment;
use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};
use tokio::sync::{mpsc, watch};

/// How many of its own messages' ids the bridge remembers: far more than
/// can come back before the echo of a send arrives.
const SENT_REMEMBERED: usize = 512;

/// The ids of the messages the bridge sent, newest last, so that one
/// coming back (the owner's "message yourself" chat shows them as the
/// owner's own) is never taken for the owner's words.
#[derive(Debug, Default)]
pub struct SentIds {
    ids: VecDeque<String>,
}

impl SentIds {
    pub fn remember(&mut self, id: String) {
        if self.ids.len() == SENT_REMEMBERED {
            self.ids.pop_front();
        }
        self.ids.push_back(id);
    }

    pub fn contains(&self, id: &str) -> bool {
        self.ids.iter().any(|sent| sent == id)
    }
}

/// What to do with one received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// An allowed number's words (and maybe an image) for the agent; `chat`
    /// is the number that gets the replies.
    Relay {
        chat: String,
        key: String,
        text: String,
    },
    /// Someone not on the allowlist; `address` reaches them, `who` names
    /// them for the note.
    Refuse { address: String, who: String },
    /// Nothing to do, and why.
    Ignore(&'static str),
}

/// Decides what to do with a received message (pure).
///
/// The relay rules: only person-to-person chats count. A message the
/// account itself wrote is the owner talking to someone else (from the
/// phone) and is skipped, except in the owner's own "message yourself"
/// chat when the owner's number is allowed: that chat is how the owner
/// talks to the agent from the same account. The agent's replies appear in
/// that chat as the owner's own messages too, so a message whose id the
/// bridge sent is always skipped.
pub fn classify(
    received: &Received,
    config: &WhatsAppConfig,
    own: &Own,
    sent: &SentIds,
) -> Incoming {
    let Chat::Direct { number, lid } = &received.chat else {
        return Incoming::Ignore("not a person-to-person chat");
    };
    if sent.contains(&received.id) {
        return Incoming::Ignore("the bridge sent it");
    }
    let words = received.text.clone().unwrap_or_default();
    if received.text.is_none() && received.image.is_none() && received.file.is_none() {
        return Incoming::Ignore("nothing to relay");
    }
    if received.from_me {
        let own_chat =
            (number.is_some() && *number == own.number) || (lid.is_some() && *lid == own.lid);
        return match &own.number {
            Some(owner) if own_chat && config.allows(owner) => Incoming::Relay {
                chat: owner.clone(),
                key: format!("whatsapp:{}", received.id),
                text: words,
            },
            _ => Incoming::Ignore("written by the owner to someone else"),
        };
    }
    match &received.from {
        Some(from) if config.allows(from) => Incoming::Relay {
            chat: from.clone(),
            key: format!("whatsapp:{}", received.id),
            text: words,
        },
        from => {
            let who = match (from, received.name.trim()) {
                (Some(from), "") => format!("+{from}"),
                (Some(from), name) => format!("+{from} ({name})"),
                (None, "") => received.from_address.clone(),
                (None, name) => format!("{} ({name})", received.from_address),
            };
            Incoming::Refuse {
                address: from
                    .clone()
                    .unwrap_or_else(|| received.from_address.clone()),
                who,
            }
        }
    }
}

/// The inbound half's state.
pub struct Inbound<'a, D: Device> {
    device: &'a D,
    config: &'a WhatsAppConfig,
    /// Submits, notes and state writes; the daemon's live events on it are
    /// dropped (the outbound half has its own connection).
    connection: Connection,
    /// What the device tells.
    events: mpsc::UnboundedReceiver<WebEvent>,
    /// The numbers that get the agent's messages, shared with the outbound half.
    chats: watch::Sender<BTreeSet<String>>,
    /// The chat of the newest relayed message, for "typing…".
    last_chat: watch::Sender<Option<String>>,
    /// The ids the outbound half sent.
    sent: &'a RefCell<SentIds>,
    /// Addresses refused in this run, so each is told once.
    strangers: Gate<String>,
}

impl<'a, D: Device> Inbound<'a, D> {
    pub fn new(
        device: &'a D,
        config: &'a WhatsAppConfig,
        connection: Connection,
        events: mpsc::UnboundedReceiver<WebEvent>,
        chats: watch::Sender<BTreeSet<String>>,
        last_chat: watch::Sender<Option<String>>,
        sent: &'a RefCell<SentIds>,
    ) -> Inbound<'a, D> {
        Inbound {
            device,
            config,
            connection,
            events,
            chats,
            last_chat,
            sent,
            strangers: Gate::new(SOURCE),
        }
    }

    /// Takes what the device tells until the session ends for good.
    /// Dropped connections are the library's to mend (it reconnects with
    /// its own backoff); only an end it will not mend returns.
    pub async fn run(mut self) -> Result<std::convert::Infallible, WebError> {
        loop {
            let next = self.events.recv();
            let event = link::beside(&mut self.connection, next, &mut |_| {}).await?;
            match event {
                None => return Err(WebError::Stopped(Stop::Ended("the library stopped".into()))),
                Some(WebEvent::Messages { messages, done }) => {
                    for received in &messages {
                        // On failure `done` is dropped: WhatsApp delivers again.
                        self.take(received).await?;
                    }
                    let _ = done.send(true);
                    let device = self.device;
                    let tell =
                        |to: String, refusal| async move { device.send_text(&to, refusal).await };
                    for id in self.strangers.tell(&mut self.connection, tell).await? {
                        self.sent.borrow_mut().remember(id);
                    }
                }
                Some(WebEvent::Stopped(stop)) => return Err(WebError::Stopped(stop)),
                Some(WebEvent::Connected) => tracing::info!("whatsapp: connected"),
                Some(WebEvent::Disconnected(why)) => {
                    tracing::warn!("whatsapp: disconnected ({why}); the library reconnects")
                }
                Some(WebEvent::Qr { .. } | WebEvent::QrExhausted) => {
                    return Err(WebError::NotLinked)
                }
                Some(WebEvent::Paired { .. } | WebEvent::PairFailed(_)) => {}
            }
        }
    }

    /// Relays, refuses or skips one message; strangers are told they are
    /// refused once the whole batch is taken.
    async fn take(&mut self, received: &Received) -> Result<(), WebError> {
        let own = self.device.own();
        let incoming = classify(received, self.config, &own, &self.sent.borrow());
        match incoming {
            Incoming::Relay { chat, key, text } => {
                let images = match &received.image {
                    Some(image) => self.attach(&key, image).await?,
                    None => Vec::new(),
                };
                let (text, files) = match &received.file {
                    Some(file) => self.attach_file(&key, file, text).await?,
                    None => (text, Vec::new()),
                };
                self.relay(chat, key, text, images, files).await
            }
            Incoming::Refuse { address, who } => Ok(self
                .strangers
                .refuse(&mut self.connection, address, &who)
                .await?),
            Incoming::Ignore(why) => {
                tracing::debug!("whatsapp: skipping message {}: {why}", received.id);
                Ok(())
            }
        }
    }

    /// Downloads a received image and stores it in the daemon; its hash,
    /// or nothing (with a note) when it cannot be had.
    async fn attach(&mut self, key: &str, image: &WebImage) -> Result<Vec<String>, WebError> {
        let download = self.device.download(image);
        let fetched = link::beside(&mut self.connection, download, &mut |_| {}).await?;
        let stored = match fetched
            .map_err(|err| err.to_string())
            .and_then(|bytes| Attachment::from_bytes(bytes).map_err(|err| err.to_string()))
        {
            Ok(attachment) => {
                match images::put(&mut self.connection, &attachment, &mut |_| {}).await {
                    Ok(stored) => Ok(stored.sha256),
                    Err(ImageFileError::Connection(err)) => return Err(LinkError::from(err).into()),
                    Err(err) => Err(err.to_string()),
                }
            }
            Err(why) => Err(why),
        };
        match stored {
            Ok(sha256) => Ok(vec![sha256]),
            Err(why) => {
                let note = format!("whatsapp: the image of message {key} was not attached: {why}");
                link::note(&mut self.connection, SOURCE, note, &mut |_| {}).await?;
                Ok(Vec::new())
            }
        }
    }

    /// Downloads a received voice note, audio file or document and stores
    /// it in the daemon: the words (the caption, or nothing) and the file,
    /// or the words as they were (with a note) when it cannot be had.
    async fn attach_file(
        &mut self,
        key: &str,
        file: &WebFile,
        words: String,
    ) -> Result<(String, Vec<MediaAttachment>), WebError> {
        let download = self.device.download_file(file);
        let fetched = link::beside(&mut self.connection, download, &mut |_| {}).await?;
        let name = file.name();
        let stored = match fetched {
            Ok(bytes) => match files::media_type(file.mime_type(), name.as_deref()) {
                Some(media_type) => {
                    files::store(
                        &mut self.connection,
                        media_type,
                        &bytes,
                        name,
                        file.duration_secs(),
                    )
                    .await?
                }
                None => Err(format!(
                    "hearth does not read {} files",
                    file.mime_type().unwrap_or("these")
                )),
            },
            Err(err) => Err(err.to_string()),
        };
        match stored {
            Ok(stored) => {
                // A caption stays the words; a placeholder is the daemon's to say.
                let caption = match file {
                    WebFile::Document(document) => document.caption.clone(),
                    WebFile::Audio(_) => None,
                };
                Ok((caption.unwrap_or_default(), vec![stored]))
            }
            Err(why) => {
                files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
                let words = if words.is_empty() {
                    "[file]".to_string()
                } else {
                    words
                };
                Ok((words, Vec::new()))
            }
        }
    }

    async fn relay(
        &mut self,
        chat: String,
        key: String,
        text: String,
        images: Vec<String>,
        media: Vec<MediaAttachment>,
    ) -> Result<(), WebError> {
        // Shared before the submit, so the turn it starts finds it.
        self.last_chat.send_replace(Some(chat.clone()));
        // The linked account's own chat is its owner's, whatever `owner` says.
        let own_chat = self.device.own().number.as_deref() == Some(chat.as_str());
        let person = if own_chat {
            None
        } else {
            self.config.person(&chat)
        };
        link::submit(
            &mut self.connection,
            SOURCE,
            key,
            text,
            images,
            person,
            media,
        )
        .await?;
        remember_chat(&mut self.connection, CHATS_STATE, &self.chats, chat).await?;
        Ok(())
    }
}
