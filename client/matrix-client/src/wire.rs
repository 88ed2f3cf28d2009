//! What goes over stdin and stdout: one JSON object a line.
//!
//! In (stdin): requests, `{"id": 1, "method": "send", ...}`; each is
//! answered once, in any order, by `{"id": 1, "result": {...}}` or
//! `{"id": 1, "error": "words"}`. Out (stdout) besides the answers: events,
//! `{"event": "message", ...}`, from the moment `start` is asked.
//!
//! The hearth bridge (`client/bridges/src/matrix/sidecar.rs`) holds the same
//! shapes; a change here is a change there.

use serde::{Deserialize, Serialize};

/// One request read from stdin.
#[derive(Debug, Deserialize)]
pub struct Request {
    pub id: u64,
    #[serde(flatten)]
    pub call: Call,
}

/// What a request asks.
#[derive(Debug, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Call {
    /// Log in, or take up the session this store holds for `user`. With a
    /// password the first start logs in as a new device and keeps its
    /// session; with an access token the token's device is taken up.
    /// Answers `{"user_id", "device_id"}`.
    Login {
        homeserver: String,
        user: String,
        #[serde(default)]
        password: Option<String>,
        #[serde(default)]
        access_token: Option<String>,
        device_name: String,
    },
    /// Start syncing: events flow from now on. Answers `{}` at once;
    /// `ready` follows after the first sync.
    Start,
    /// Accept the invite to `room`.
    Join { room: String },
    /// Invite `user` to `room`.
    Invite { room: String, user: String },
    /// Decline the invite to `room`, or leave it.
    Leave { room: String },
    /// Send a text message; `html` is its `formatted_body`. Answers
    /// `{"event_id"}`.
    Send {
        room: String,
        body: String,
        #[serde(default)]
        html: Option<String>,
        #[serde(default)]
        reply_to: Option<String>,
        #[serde(default)]
        thread: Option<String>,
    },
    /// Send a file: `kind` is `image`, `audio`, `voice` or `file`.
    /// Answers `{"event_id"}`.
    SendFile {
        room: String,
        name: String,
        media_type: String,
        kind: String,
        data: String,
    },
    /// React to an event. Answers `{"event_id"}`.
    React {
        room: String,
        event_id: String,
        key: String,
    },
    /// Show or stop "typing…" in a room.
    Typing { room: String, typing: bool },
    /// Create an encrypted direct room with `user` and invite them.
    /// Answers `{"room"}`.
    CreateDm { user: String },
}

/// What goes out on stdout.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Output {
    Answer {
        id: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<serde_json::Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    // Boxed: a message event is far larger than an answer.
    Event(Box<Event>),
}

/// A file of a message, fetched (and decrypted) already.
#[derive(Debug, Serialize)]
pub struct Media {
    pub name: String,
    pub media_type: Option<String>,
    /// The bytes as base64; absent when they could not be fetched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// Why the bytes are absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Something that happened in a room the account is in.
#[derive(Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The first sync is done (what the account missed while it was away
    /// has been told), or syncing works again after failures.
    Ready,
    /// Someone invited the account to a room.
    Invite {
        room: String,
        inviter: String,
        direct: bool,
    },
    /// Someone's membership of a room changed (`join`, `leave`, `invite`…).
    Member {
        room: String,
        user: String,
        membership: String,
    },
    /// A message from someone else, decrypted.
    Message {
        room: String,
        event_id: String,
        sender: String,
        /// `text`, `notice`, `emote`, `image`, `audio`, `voice`, `video`,
        /// `file`, or another type's name.
        kind: String,
        body: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        html: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reply_to: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thread: Option<String>,
        encrypted: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        media: Option<Media>,
    },
    /// A reaction from someone else to `target`.
    Reaction {
        room: String,
        event_id: String,
        sender: String,
        target: String,
        key: String,
    },
    /// A message that could not be decrypted (its keys never came).
    Undecryptable {
        room: String,
        event_id: String,
        sender: String,
    },
    /// Syncing failed and is tried again.
    SyncError { message: String },
}
