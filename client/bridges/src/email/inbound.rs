//! The inbound half: reads the folder over IMAP (the mails after the
//! stored cursor, then IDLE until more come), and submits the allowed
//! people's mail to the daemon when the user's receiving server vouches
//! for its sender; records every other mail as refused, never answering
//! it; takes the answers to approvals.
//!
//! Each mail is submitted with the key `email:<Message-ID>`, and the
//! folder's cursor is stored after it: a mail taken again after a crash
//! between the two is logged once. A connection that fails is opened
//! again with backoff; a login the server refuses ends the bridge, which
//! hearthd starts again later and shows why in `hearth status`.

use super::approval::Open;
use super::authentication::Verdict;
use super::bridge::{BridgeError, CHATS_STATE, FOLDER_STATE, SOURCE};
use super::config::EmailConfig;
use super::imap::{Cursor, Mailbox};
use super::incoming::{self, FilePart, Incoming, Thread, Unreadable};
use super::outgoing::{compose, new_message_id, NEW_SUBJECT};
use super::smtp::Smtp;
use crate::bridge::backoff::Backoff;
use crate::bridge::files;
use crate::bridge::link::{self, LinkError};
use crate::bridge::people::Gate;
use hearth_client::images::{self, Attachment, ImageFileError};
use hearth_client::Connection;
use hearth_protocol::image::MAX_IMAGE_BYTES;
use hearth_protocol::media::MAX_MEDIA_BYTES;
use hearth_protocol::{ClientFrame, MediaAttachment, ServerFrame};
use std::collections::BTreeMap;
use std::convert::Infallible;
use tokio::sync::watch;

/// The allowed people who wrote, each with the mail a reply to them
/// answers (`None` when theirs had no Message-ID).
pub type Chats = BTreeMap<String, Option<Thread>>;

/// Reads the stored chats: a JSON object.
pub fn parse_chats(text: &str) -> Option<Chats> {
    serde_json::from_str(text).ok()
}

/// A file of a mail, once taken.
enum Attached {
    Image(String),
    File(MediaAttachment),
    /// Not attached: a note says why.
    Not,
}

/// The inbound half's state.
pub struct Inbound<'a> {
    smtp: &'a Smtp,
    config: &'a EmailConfig,
    password: &'a str,
    /// Submits, notes and state writes. The live events the daemon also
    /// sends here are read and dropped: the outbound half has its own.
    connection: Connection,
    /// The people who get the agent's messages, shared with the outbound half.
    chats: watch::Sender<Chats>,
    /// Senders refused in this run, so each is noted once.
    refused: Gate<String>,
    /// The approvals asked, shared with the outbound half.
    open: Open,
}

impl<'a> Inbound<'a> {
    pub fn new(
        smtp: &'a Smtp,
        config: &'a EmailConfig,
        password: &'a str,
        connection: Connection,
        chats: watch::Sender<Chats>,
        open: Open,
    ) -> Inbound<'a> {
        Inbound {
            smtp,
            config,
            password,
            connection,
            chats,
            refused: Gate::new(SOURCE),
            open,
        }
    }

    /// Takes mail until the daemon goes away or the login is refused.
    pub async fn run(mut self) -> Result<Infallible, BridgeError> {
        let mut backoff = Backoff::default();
        loop {
            let failed = match self.session(&mut backoff).await {
                Err(BridgeError::Imap(err)) if !err.is_lasting() => err,
                Err(err) => return Err(err),
                Ok(never) => match never {},
            };
            let wait = backoff.next_wait();
            tracing::warn!("{failed}; connecting again in {wait:?}");
            link::beside(&mut self.connection, tokio::time::sleep(wait), &mut |_| {}).await?;
        }
    }

    /// One connection's life: open the folder, take what is new, wait with
    /// IDLE, again, until something fails.
    async fn session(&mut self, backoff: &mut Backoff) -> Result<Infallible, BridgeError> {
        let open = Mailbox::open(self.config, self.password);
        let mut mailbox = link::beside(&mut self.connection, open, &mut |_| {}).await??;
        backoff.reset();
        let stored = link::read_state(&mut self.connection, FOLDER_STATE, Cursor::parse).await?;
        let mut cursor = match stored {
            Some(cursor) if cursor.validity == mailbox.validity => cursor,
            stored => {
                // The first start, or a folder whose UIDs were renumbered:
                // mail from now on is read, the folder's past is not.
                if stored.is_some() {
                    let note = format!(
                        "{SOURCE}: the folder {} was renumbered by its server (UIDVALIDITY); mail already in it is not read again",
                        self.config.mailbox
                    );
                    link::note(&mut self.connection, SOURCE, note, &mut |_| {}).await?;
                }
                let cursor = Cursor {
                    validity: mailbox.validity,
                    uid: mailbox.uid_next.saturating_sub(1),
                };
                self.store(cursor).await?;
                cursor
            }
        };
        loop {
            let after = mailbox.after(cursor.uid);
            let uids = link::beside(&mut self.connection, after, &mut |_| {}).await??;
            for uid in uids {
                let fetch = mailbox.fetch(uid);
                let raw = link::beside(&mut self.connection, fetch, &mut |_| {}).await??;
                if let Some(raw) = raw {
                    self.take(&raw, cursor.validity, uid).await?;
                }
                cursor.uid = uid;
                self.store(cursor).await?;
            }
            let wait = mailbox.wait();
            mailbox = link::beside(&mut self.connection, wait, &mut |_| {}).await??;
        }
    }

    /// Stores where the folder is read up to.
    async fn store(&mut self, cursor: Cursor) -> Result<(), LinkError> {
        link::set_state(
            &mut self.connection,
            FOLDER_STATE,
            cursor.encode(),
            &mut |_| {},
        )
        .await
    }

    /// Handles one mail: submitted, an answer to an approval, or refused.
    async fn take(&mut self, raw: &[u8], validity: u32, uid: u32) -> Result<(), BridgeError> {
        let mail = match incoming::read(raw, &self.config.trusted_authserv_id) {
            Ok(mail) => mail,
            Err(Unreadable::NotMail) => {
                tracing::info!("{SOURCE}: skipped mail {uid}: it cannot be read as a mail");
                return Ok(());
            }
            Err(Unreadable::NoSender) => {
                let note = format!("{SOURCE}: refused mail {uid}: it names no single sender");
                link::note(&mut self.connection, SOURCE, note, &mut |_| {}).await?;
                return Ok(());
            }
        };
        if mail.from == self.config.address {
            tracing::debug!("{SOURCE}: skipped mail {uid}: the agent's own");
            return Ok(());
        }
        if !self.config.allows(&mail.from) {
            let connection = &mut self.connection;
            self.refused
                .refuse(connection, mail.from, &mail.shown)
                .await?;
            return Ok(());
        }
        if let Verdict::Unverified(why) = &mail.verdict {
            // A forged From: recorded, never answered, never relayed.
            let who = format!("{}, whose sender was not verified: {why}", mail.shown);
            let connection = &mut self.connection;
            self.refused
                .refuse(connection, format!("unverified {}", mail.from), &who)
                .await?;
            return Ok(());
        }
        if mail.automatic {
            tracing::info!(
                "{SOURCE}: skipped mail {uid} from {}: sent by a program",
                mail.from
            );
            return Ok(());
        }
        let asked = self.open.answered_by(&mail.from, &mail.answers);
        match (mail.answer(), asked) {
            (Some(allow), Some(id)) if mail.files.is_empty() => self.answer(&mail, id, allow).await,
            _ => {
                let key = match &mail.message_id {
                    Some(id) => format!("{SOURCE}:{id}"),
                    None => format!("{SOURCE}:{validity}:{uid}"),
                };
                self.relay(mail, key).await
            }
        }
    }

    /// Answers approval `id` for the sender of `mail`, and tells them how
    /// it went in a reply.
    async fn answer(
        &mut self,
        mail: &Incoming,
        id: String,
        allow: bool,
    ) -> Result<(), BridgeError> {
        let frame = ClientFrame::Approve {
            id: id.clone(),
            allow,
            by: Some(mail.from.clone()),
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
        let reply_id = new_message_id(&self.config.address);
        let thread = mail.thread();
        let reply = compose(
            &self.config.address,
            &mail.from,
            &reply_id,
            thread.as_ref(),
            NEW_SUBJECT,
            &said,
        );
        match reply {
            Ok(reply) => {
                let sent =
                    link::beside(&mut self.connection, self.smtp.send(reply), &mut |_| {}).await?;
                if let Err(err) = sent {
                    tracing::warn!("cannot tell {} how approval {id} went: {err:?}", mail.from);
                }
            }
            Err(err) => tracing::warn!("cannot tell {} how approval {id} went: {err}", mail.from),
        }
        Ok(())
    }

    /// Submits an allowed, verified person's mail with its files, and
    /// remembers it as the mail their replies answer.
    async fn relay(&mut self, mail: Incoming, key: String) -> Result<(), BridgeError> {
        let mut images = Vec::new();
        let mut media = Vec::new();
        for file in &mail.files {
            match self.attach(&key, file).await? {
                Attached::Image(sha256) => images.push(sha256),
                Attached::File(stored) => media.push(stored),
                Attached::Not => {}
            }
        }
        // The sender is known before their words go in, so the agent's
        // answer (or a question about a tool call) finds where to go.
        let thread = mail.thread();
        let known = self.chats.borrow().get(&mail.from) == Some(&thread);
        if !known {
            self.chats.send_modify(|chats| {
                chats.insert(mail.from.clone(), thread);
            });
            // A map of strings and threads always serializes.
            let value = serde_json::to_string(&*self.chats.borrow()).unwrap_or_default();
            link::set_state(&mut self.connection, CHATS_STATE, value, &mut |_| {}).await?;
        }
        let person = (!self.config.is_owner(&mail.from)).then(|| format!("email {}", mail.shown));
        let text = mail.text();
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
        Ok(())
    }

    /// Stores one file of a mail in the daemon: a picture as an image,
    /// anything else hearth reads (voice, documents) as a file; one that
    /// cannot be leaves a note saying why.
    async fn attach(&mut self, key: &str, file: &FilePart) -> Result<Attached, BridgeError> {
        let declared = file.content_type.as_deref();
        let name = file.name.clone();
        if declared.is_some_and(|kind| kind.starts_with("image/")) {
            let stored = if file.bytes.len() > MAX_IMAGE_BYTES {
                Err(format!(
                    "it is larger than {} MB",
                    MAX_IMAGE_BYTES / 1024 / 1024
                ))
            } else {
                match Attachment::from_bytes(file.bytes.clone()) {
                    Ok(image) => match images::put(&mut self.connection, &image, &mut |_| {}).await
                    {
                        Ok(stored) => Ok(stored.sha256),
                        Err(ImageFileError::Connection(err)) => {
                            return Err(LinkError::from(err).into())
                        }
                        Err(err) => Err(err.to_string()),
                    },
                    Err(_) => Err("the file is not a PNG, JPEG, GIF or WebP image".to_string()),
                }
            };
            return match stored {
                Ok(sha256) => Ok(Attached::Image(sha256)),
                Err(why) => {
                    files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
                    Ok(Attached::Not)
                }
            };
        }
        let Some(media_type) = files::media_type(declared, name.as_deref()) else {
            let kind = declared.unwrap_or("these");
            let why = format!("hearth does not read {kind} files");
            files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
            return Ok(Attached::Not);
        };
        let stored = if file.bytes.len() > MAX_MEDIA_BYTES {
            Err(format!(
                "it is larger than {} MB",
                MAX_MEDIA_BYTES / 1024 / 1024
            ))
        } else {
            files::store(&mut self.connection, media_type, &file.bytes, name, None).await?
        };
        match stored {
            Ok(stored) => Ok(Attached::File(stored)),
            Err(why) => {
                files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
                Ok(Attached::Not)
            }
        }
    }
}
