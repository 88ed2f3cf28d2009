//! The inbound half: takes what the account receives and submits the
//! allowed people's words (and files) to the daemon; accepts invites from
//! them alone; refuses everyone else; takes the answers to approvals.
//!
//! Each message is submitted with the key `matrix:<event id>`, so one told
//! twice (a sync repeated after a crash) is logged once. Images go in as
//! images; voice notes, audio and documents are stored in the daemon,
//! which transcribes or reads them. A message in a thread is answered in
//! that thread (see [`Threads`]).

use super::approval::{reaction_answer, text_answer, Open};
use super::bridge::{BridgeError, Chat, CHATS_STATE, SOURCE};
use super::config::{user_id, MatrixConfig};
use super::sidecar::{Event, Events, Media, Sidecar, SidecarError};
use crate::bridge::files;
use crate::bridge::link::{self, LinkError};
use crate::bridge::people::{remember_chat, Gate};
use base64::Engine;
use hearth_client::images::{self, Attachment, ImageFileError};
use hearth_client::Connection;
use hearth_protocol::{ClientFrame, MediaAttachment, ServerFrame};
use serde_json::json;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::watch;

/// How long one request to hearth-matrix may take (a send retries a
/// homeserver's rate limits inside).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The thread each room's latest message from an allowed person was in
/// (none: the room's main timeline), so the agent answers where it was
/// asked. Shared by the two halves; this run only.
#[derive(Debug, Clone, Default)]
pub struct Threads(Arc<Mutex<HashMap<String, String>>>);

impl Threads {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        // A plain map: a panic while it was written leaves it usable.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The latest message in `room` was in `thread` (or in no thread).
    pub fn wrote(&self, room: &str, thread: Option<&str>) {
        match thread {
            Some(root) => self.lock().insert(room.to_string(), root.to_string()),
            None => self.lock().remove(room),
        };
    }

    /// The thread the agent's messages to `room` go in.
    pub fn of(&self, room: &str) -> Option<String> {
        self.lock().get(room).cloned()
    }
}

/// A file of a message, once taken.
enum Attached {
    Image(String),
    File(MediaAttachment),
    /// Not attached (a note says why).
    Not,
}

/// The inbound half's state.
pub struct Inbound<'a> {
    sidecar: &'a Sidecar,
    config: &'a MatrixConfig,
    /// Submits, notes and state writes; the live events the daemon also
    /// sends here are read and dropped.
    connection: Connection,
    events: Events,
    /// The rooms that get the agent's messages, shared with the outbound half.
    chats: watch::Sender<BTreeSet<Chat>>,
    /// Strangers refused in this run (by room), so each is told once.
    strangers: Gate<(String, String)>,
    /// Strangers whose invites were declined in this run, noted once each.
    declined: HashSet<String>,
    open: Open,
    threads: Threads,
    /// What `hearth status` says keeps the bridge from working (empty:
    /// nothing; `None`: not said yet in this run, so a stale one is cleared).
    problem_shown: Option<String>,
}

impl<'a> Inbound<'a> {
    pub fn new(
        sidecar: &'a Sidecar,
        config: &'a MatrixConfig,
        connection: Connection,
        events: Events,
        chats: watch::Sender<BTreeSet<Chat>>,
        open: Open,
        threads: Threads,
    ) -> Inbound<'a> {
        Inbound {
            sidecar,
            config,
            connection,
            events,
            chats,
            strangers: Gate::new(SOURCE),
            declined: HashSet::new(),
            open,
            threads,
            problem_shown: None,
        }
    }

    /// Takes events until hearth-matrix or the daemon goes away.
    pub async fn run(mut self) -> Result<Infallible, BridgeError> {
        loop {
            let next = self.events.recv();
            let event = link::beside(&mut self.connection, next, &mut |_| {}).await?;
            let Some(event) = event else {
                return Err(SidecarError::Closed.into());
            };
            match event {
                Event::Ready => {
                    tracing::info!("matrix: caught up with the homeserver");
                    self.show_problem(String::new()).await?;
                }
                Event::Invite { room, inviter, .. } => self.invited(room, inviter).await?,
                Event::Message {
                    room,
                    event_id,
                    sender,
                    body,
                    reply_to,
                    thread,
                    media,
                    ..
                } => {
                    if !self.config.allows(&sender) {
                        self.refuse(room, sender).await?;
                        continue;
                    }
                    self.threads.wrote(&room, thread.as_deref());
                    let body = match reply_to {
                        Some(_) => without_reply_fallback(&body).to_string(),
                        None => body,
                    };
                    let answer = text_answer(&body).filter(|_| media.is_none());
                    let asked = self.open.replied_to(&room, reply_to);
                    match (answer, asked) {
                        (Some(allow), Some(id)) => self.answer(&room, &sender, id, allow).await?,
                        _ => self.relay(room, sender, event_id, body, media).await?,
                    }
                }
                Event::Reaction {
                    room,
                    sender,
                    target,
                    key,
                    ..
                } => {
                    let answer = reaction_answer(&key).filter(|_| self.config.allows(&sender));
                    match (answer, self.open.reacted_to(&room, target)) {
                        (Some(allow), Some(id)) => self.answer(&room, &sender, id, allow).await?,
                        _ => tracing::debug!("skipping a reaction {key} from {sender}"),
                    }
                }
                Event::Undecryptable { room, sender, .. } if self.config.allows(&sender) => {
                    let note = format!("{SOURCE}: a message from {sender} in {room} could not be decrypted (its keys never reached hearth's device); ask them to send it again");
                    link::note(&mut self.connection, SOURCE, note, &mut |_| {}).await?;
                }
                Event::SyncError { message } => {
                    tracing::warn!("matrix: {message}");
                    self.show_problem(message).await?;
                }
                Event::Member { .. } | Event::Undecryptable { .. } | Event::Unknown => {}
            }
        }
    }

    /// Says in `hearth status` what keeps the bridge from working (empty:
    /// nothing does), when that changed.
    async fn show_problem(&mut self, problem: String) -> Result<(), BridgeError> {
        if self.problem_shown.as_ref() == Some(&problem) {
            return Ok(());
        }
        let name = hearth_protocol::problem_state(SOURCE);
        link::set_state(&mut self.connection, &name, problem.clone(), &mut |_| {}).await?;
        self.problem_shown = Some(problem);
        Ok(())
    }

    /// Accepts an invite from an allowed person; declines anyone else's,
    /// with a note the first time in this run.
    async fn invited(&mut self, room: String, inviter: String) -> Result<(), BridgeError> {
        if self.config.allows(&inviter) {
            let joined = self
                .sidecar
                .call("join", json!({ "room": room }), CALL_TIMEOUT);
            match link::beside(&mut self.connection, joined, &mut |_| {}).await? {
                Ok(_) => tracing::info!("matrix: joined {room}, invited by {inviter}"),
                Err(SidecarError::Closed) => return Err(SidecarError::Closed.into()),
                Err(err) => tracing::warn!("matrix: cannot join {room}: {err}"),
            }
            return Ok(());
        }
        let declined = self
            .sidecar
            .call("leave", json!({ "room": room }), CALL_TIMEOUT);
        match link::beside(&mut self.connection, declined, &mut |_| {}).await? {
            Ok(_) => {}
            Err(SidecarError::Closed) => return Err(SidecarError::Closed.into()),
            Err(err) => tracing::warn!("matrix: cannot decline the invite to {room}: {err}"),
        }
        if self.declined.insert(inviter.clone()) {
            let note = format!("{SOURCE}: declined an invite from {inviter}, who is not allowed");
            link::note(&mut self.connection, SOURCE, note, &mut |_| {}).await?;
        }
        Ok(())
    }

    /// Answers approval `id` for `from`, and tells the room how it went.
    async fn answer(
        &mut self,
        room: &str,
        from: &str,
        id: String,
        allow: bool,
    ) -> Result<(), BridgeError> {
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
        let told = self.sidecar.call(
            "send",
            json!({ "room": room, "body": said, "thread": self.threads.of(room) }),
            CALL_TIMEOUT,
        );
        match link::beside(&mut self.connection, told, &mut |_| {}).await? {
            Ok(_) => Ok(()),
            Err(SidecarError::Closed) => Err(SidecarError::Closed.into()),
            Err(err) => {
                tracing::warn!("matrix: cannot tell {room} how approval {id} went: {err}");
                Ok(())
            }
        }
    }

    /// Submits an allowed person's message with its file.
    async fn relay(
        &mut self,
        room: String,
        from: String,
        event_id: String,
        body: String,
        media: Option<Media>,
    ) -> Result<(), BridgeError> {
        let key = format!("{SOURCE}:{event_id}");
        let mut images = Vec::new();
        let mut stored = Vec::new();
        let mut words = Vec::new();
        if let Some(media) = &media {
            match self.attach(&key, media).await? {
                Attached::Image(sha256) => images.push(sha256),
                Attached::File(file) => stored.push(file),
                Attached::Not => words.push(placeholder(media)),
            }
        }
        if !body.trim().is_empty() {
            words.push(body);
        }
        let who = user_id(&from).unwrap_or(from);
        let person = (!self.config.is_owner(&who)).then(|| format!("matrix user {who}"));
        link::submit(
            &mut self.connection,
            SOURCE,
            key,
            words.join(" "),
            images,
            person,
            stored,
        )
        .await?;
        remember_chat(&mut self.connection, CHATS_STATE, &self.chats, (room, who)).await?;
        Ok(())
    }

    /// Stores one file in the daemon: an image as an image, anything else
    /// as a file; one that cannot be leaves a note saying why.
    async fn attach(&mut self, key: &str, media: &Media) -> Result<Attached, BridgeError> {
        let bytes = match (&media.data, &media.error) {
            (Some(data), _) => base64::engine::general_purpose::STANDARD.decode(data).ok(),
            _ => None,
        };
        let Some(bytes) = bytes else {
            let why = media
                .error
                .clone()
                .unwrap_or_else(|| "hearth-matrix sent it garbled".to_string());
            files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
            return Ok(Attached::Not);
        };
        let declared = media.media_type.as_deref();
        if declared.is_some_and(|kind| kind.starts_with("image/")) {
            let stored = match Attachment::from_bytes(bytes) {
                Ok(image) => match images::put(&mut self.connection, &image, &mut |_| {}).await {
                    Ok(stored) => Ok(stored.sha256),
                    Err(ImageFileError::Connection(err)) => return Err(LinkError::from(err).into()),
                    Err(err) => Err(err.to_string()),
                },
                Err(_) => Err("the file is not a PNG, JPEG, GIF or WebP image".to_string()),
            };
            return match stored {
                Ok(sha256) => Ok(Attached::Image(sha256)),
                Err(why) => {
                    files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
                    Ok(Attached::Not)
                }
            };
        }
        let Some(media_type) = files::media_type(declared, Some(&media.name)) else {
            let why = format!("hearth does not read {} files", declared.unwrap_or("these"));
            files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
            return Ok(Attached::Not);
        };
        let name = Some(media.name.clone());
        match files::store(&mut self.connection, media_type, &bytes, name, None).await? {
            Ok(file) => Ok(Attached::File(file)),
            Err(why) => {
                files::not_attached(&mut self.connection, SOURCE, key, &why).await?;
                Ok(Attached::Not)
            }
        }
    }

    /// Refuses a stranger's message and tells the room so, the first time
    /// in this run; nothing of theirs reaches the agent.
    async fn refuse(&mut self, room: String, from: String) -> Result<(), BridgeError> {
        let connection = &mut self.connection;
        self.strangers
            .refuse(connection, (room, from.clone()), &from)
            .await?;
        let sidecar = self.sidecar;
        let tell = |(room, _): (String, String), refusal: &'static str| async move {
            sidecar
                .call(
                    "send",
                    json!({ "room": room, "body": refusal }),
                    CALL_TIMEOUT,
                )
                .await
        };
        self.strangers.tell(connection, tell).await?;
        Ok(())
    }
}

/// What stands in the words for a file that was not attached.
fn placeholder(media: &Media) -> String {
    let kind = media.media_type.as_deref().unwrap_or_default();
    if kind.starts_with("image/") {
        "[photo]".to_string()
    } else if kind.starts_with("audio/") {
        "[voice message]".to_string()
    } else {
        format!("[file: \"{}\"]", media.name)
    }
}

/// A reply's own words, without the quote of the message it answers that
/// some Matrix apps put first (`> <@who:server> what they said`, then a
/// blank line).
pub fn without_reply_fallback(body: &str) -> &str {
    let mut quoted = 0;
    for line in body.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if !(bare.starts_with("> ") || bare == ">") {
            break;
        }
        quoted += line.len();
    }
    let rest = &body[quoted..];
    if quoted == 0 {
        return body;
    }
    rest.strip_prefix("\r\n")
        .or_else(|| rest.strip_prefix('\n'))
        .unwrap_or(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replys_quote_of_the_message_it_answers_is_dropped() {
        let body = "> <@hearth:example.org> hearth asks to run shell `ls`\n> Allow it?\n\nNo";
        assert_eq!(without_reply_fallback(body), "No");
        assert_eq!(without_reply_fallback("No"), "No");
        assert_eq!(without_reply_fallback("a > b"), "a > b");
    }

    #[test]
    fn the_thread_of_a_rooms_latest_message_is_where_the_answer_goes() {
        let threads = Threads::default();
        threads.wrote("!a:x", Some("$root"));
        assert_eq!(threads.of("!a:x").as_deref(), Some("$root"));
        threads.wrote("!a:x", None);
        assert_eq!(threads.of("!a:x"), None);
    }
}
