//! The frames themselves: what a client sends, what the daemon sends, and
//! the events and messages they carry.

use crate::activity::Activity;
use crate::image::{self, ImageRef};
use crate::media::{self, MediaAttachment, MediaRef};
use crate::memory::{Facts, MemoryNode, MemoryView, SearchHit};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The version a client states in `hello`; a different one is refused.
pub const PROTOCOL_VERSION: u32 = 1;

/// The largest frame the daemon accepts; larger frames get an `error` frame.
pub const MAX_FRAME_BYTES: usize = 1 << 20;

/// The kinds of message in the log.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A person's words; the source says where from.
    User,
    /// The agent's answer that ends a turn.
    Reply,
    /// What the agent says mid-chain beside tool calls.
    Echo,
    /// A tool call and its result.
    Tool,
    /// What the daemon records; starts no turn.
    Note,
    /// A subagent's report, starting with its name.
    Work,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::User,
        Kind::Reply,
        Kind::Echo,
        Kind::Tool,
        Kind::Note,
        Kind::Work,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Reply => "reply",
            Kind::Echo => "echo",
            Kind::Tool => "tool",
            Kind::Note => "note",
            Kind::Work => "work",
        }
    }

    pub fn parse(text: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One message of an agent's log, as clients see it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Message {
    /// The agent whose log holds the message.
    pub agent: String,
    /// Dense per agent: 0, 1, 2, …
    pub id: u64,
    pub kind: Kind,
    /// Where the message came from: `terminal`, `telegram`, `schedule`, … for
    /// user messages; the agent's name for what the agent says; `hearthd` for notes.
    pub source: String,
    pub text: String,
    /// For tool results (`ok`, `error`, `interrupted`) and reports
    /// (`finished`, `stopped`, `failed`): a [`crate::MessageStatus`]'s name,
    /// kept as text so a client reads a newer daemon's statuses too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// When it was logged, RFC 3339 with the local offset.
    pub at: String,
    /// For a reply: the ids of the messages its turn answered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<u64>,
    /// The images the message carries: a user's attachments, an image a
    /// tool showed. Fetch the bytes with `image_get`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRef>,
    /// For a tool message: a message the tool left for a bridge to send
    /// (`whatsapp_send`), delivered once by the bridge it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox: Option<Outbox>,
    /// For a user message: the client that submitted it, as it named itself
    /// in `hello` (`terminal@laptop`, `telegram`), so that a message typed
    /// in another terminal is told from one's own. Absent in messages
    /// logged before clients were named, and in what the daemon and the
    /// agent write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// For a voice note's transcript (or the words saying it could not be
    /// made): the id of the voice note, whose `[voice 0:42, transcribing]`
    /// it completes. A client shows the transcript as that message's
    /// words, once: in its place, or linked to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_of: Option<u64>,
}

/// The status of the note that records a failed turn; the turn's `error`
/// event says the same live, so a client that shows the note need not show
/// the event as well.
pub const NOTE_FAILED: &str = crate::MessageStatus::Failed.as_str();

/// The status of the note that records an approval request; the
/// `approval` event asks the same live.
pub const NOTE_APPROVAL: &str = crate::MessageStatus::Approval.as_str();

/// A message a tool left for a bridge to send to one person.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Outbox {
    /// The bridge that sends it, by its source name (`whatsapp`).
    pub via: String,
    /// The person, as the platform names them (a WhatsApp number's digits,
    /// or a business-scoped user id: see [`crate::whatsapp`]).
    pub to: String,
    pub text: String,
}

/// A phone number as WhatsApp names it (`wa_id`), the form of an outbox's
/// `to` for WhatsApp: its digits, without `+`, spaces, dashes, dots or
/// parentheses. `None` when anything else is left, or too few or too many
/// digits for a number with its country code.
pub fn whatsapp_number(text: &str) -> Option<String> {
    let digits: String = text
        .chars()
        .filter(|c| !matches!(c, '+' | ' ' | '-' | '.' | '(' | ')'))
        .collect();
    let plausible = (6..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit());
    plausible.then_some(digits)
}

/// What an event is about: a logged message's kind, or a change of the agent.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    User,
    Reply,
    Echo,
    Tool,
    Note,
    Work,
    /// The agent is up and its loop is running.
    Ready,
    /// A turn started.
    Busy,
    /// The turn ended.
    Idle,
    /// A turn (or the daemon) failed; `text` says what to fix.
    Error,
    /// A subagent started a run.
    Subagent,
    /// A piece of reply text as the model writes it; transient, never logged.
    Delta,
    /// A tool call waits for a person's approval, or (with
    /// [`Approval::allowed`] set) that wait ended. Live only, never logged:
    /// the request and the decision are logged as notes.
    Approval,
    /// What the agent is doing changed ([`Event::activity`]). Live only,
    /// never logged; a client that attaches gets the current one.
    Activity,
}

impl From<Kind> for EventKind {
    fn from(kind: Kind) -> EventKind {
        match kind {
            Kind::User => EventKind::User,
            Kind::Reply => EventKind::Reply,
            Kind::Echo => EventKind::Echo,
            Kind::Tool => EventKind::Tool,
            Kind::Note => EventKind::Note,
            Kind::Work => EventKind::Work,
        }
    }
}

impl EventKind {
    /// The message kind, when this event is a logged message.
    pub fn message_kind(self) -> Option<Kind> {
        Some(match self {
            EventKind::User => Kind::User,
            EventKind::Reply => Kind::Reply,
            EventKind::Echo => Kind::Echo,
            EventKind::Tool => Kind::Tool,
            EventKind::Note => Kind::Note,
            EventKind::Work => Kind::Work,
            _ => return None,
        })
    }
}

/// An event sent to every attached client. Logged messages carry all of
/// their fields; `ready`, `busy`, `idle`, `error`, `subagent` and `delta` carry
/// what applies to them (an `error` names in `answers` the messages whose turn failed).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: EventKind,
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<u64>,
    /// A logged message's images (see [`Message::images`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageRef>,
    /// For an `approval` event: the call that waits, and how it was decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Box<Approval>>,
    /// A logged tool message's outbox (see [`Message::outbox`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outbox: Option<Outbox>,
    /// A logged user message's client (see [`Message::client`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// A logged transcript's voice note (see [`Message::transcript_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_of: Option<u64>,
    /// For an `activity` event: what the agent is doing now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<Box<Activity>>,
}

/// A tool call that waits for a person's approval. The event's `text` says
/// it in one line (shell `git push`), or, once decided, how and by whom.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Approval {
    /// A short id to answer with: `approve {id, allow}`.
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The call's arguments, the JSON the model wrote.
    pub arguments: String,
    /// When the call is denied unless someone answered, local RFC 3339.
    pub deadline: String,
    /// How long the request waits in all, in seconds.
    pub timeout_secs: u64,
    /// None while the call waits; then whether it was allowed (a timeout
    /// or an interrupt denies it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<bool>,
}

impl Event {
    /// An event about the agent rather than a message (`busy`, `idle`, …).
    pub fn signal(kind: EventKind, agent: &str, text: Option<String>) -> Event {
        Event {
            kind,
            agent: agent.to_string(),
            id: None,
            text,
            source: None,
            status: None,
            at: None,
            answers: Vec::new(),
            images: Vec::new(),
            approval: None,
            outbox: None,
            client: None,
            transcript_of: None,
            activity: None,
        }
    }

    /// The `activity` event of an agent.
    pub fn activity(agent: &str, activity: Activity) -> Event {
        let mut event = Event::signal(EventKind::Activity, agent, None);
        event.activity = Some(Box::new(activity));
        event
    }

    /// The event of a logged message.
    pub fn message(message: &Message) -> Event {
        Event {
            kind: message.kind.into(),
            agent: message.agent.clone(),
            id: Some(message.id),
            text: Some(message.text.clone()),
            source: Some(message.source.clone()),
            status: message.status.clone(),
            at: Some(message.at.clone()),
            answers: message.answers.clone(),
            images: message.images.clone(),
            approval: None,
            outbox: message.outbox.clone(),
            client: message.client.clone(),
            transcript_of: message.transcript_of,
            activity: None,
        }
    }

    /// The logged message this event carries, if it is one.
    pub fn as_message(&self) -> Option<Message> {
        Some(Message {
            agent: self.agent.clone(),
            id: self.id?,
            kind: self.kind.message_kind()?,
            source: self.source.clone().unwrap_or_default(),
            text: self.text.clone().unwrap_or_default(),
            status: self.status.clone(),
            at: self.at.clone().unwrap_or_default(),
            answers: self.answers.clone(),
            images: self.images.clone(),
            outbox: self.outbox.clone(),
            client: self.client.clone(),
            transcript_of: self.transcript_of,
        })
    }
}

/// Frames a client sends.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ClientFrame {
    /// The first frame: who the client is. With `since`, the daemon first sends
    /// every message with a greater id, then the live events, none twice.
    Hello {
        client: String,
        version: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        since: Option<u64>,
        /// Which agent's log to follow; the top agent when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent: Option<String>,
        /// Over TCP: the listener's token. The Unix socket needs none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        token: Option<String>,
        /// On the Unix socket: the owner key the running daemon wrote
        /// ([`crate::owner_key`]); a hello without the right one is refused
        /// there. Not sent over TCP, nor by the browser.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner_key: Option<String>,
    },
    /// A user message. Answered with `ack` once it is durable. The same `key`
    /// again is acknowledged with the first message's id and logged once.
    /// `images` names images stored before with `image_put`, by `sha256`;
    /// with images the text may be empty.
    Submit {
        text: String,
        #[serde(default = "default_source")]
        source: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<String>,
        /// Who wrote it, when a bridge relays someone other than the owner
        /// (`telegram user 99`, `+15551234567`): the message is then
        /// untrusted input, and the turn that takes it asks before acting.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        person: Option<String>,
        /// Audio and documents stored before with `media_put`, by `sha256`
        /// with what the platform said of them; with media the text may be
        /// empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        media: Vec<MediaAttachment>,
    },
    /// Stores an audio file or a document (see [`crate::media`]), or an
    /// image, for a later `submit`. Answered with `media_stored` (an image:
    /// `image_stored`) once the file is durable. `name` and `duration_secs`
    /// are what the file's platform said of it. This frame may be up to
    /// [`crate::media::MAX_MEDIA_FRAME_BYTES`].
    MediaPut {
        media_type: String,
        data_base64: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_secs: Option<u32>,
    },
    /// Stores an image (PNG, JPEG, GIF or WebP, at most
    /// [`image::MAX_IMAGE_BYTES`]) for a later `submit`. Answered with
    /// `image_stored` once the file is durable. This frame alone may be up to
    /// [`image::MAX_IMAGE_FRAME_BYTES`].
    ImagePut {
        media_type: String,
        data_base64: String,
    },
    /// Transcribes the voice note of message `id` again (after a failure,
    /// or with another `[transcription]`). Answered with `ack` once it is
    /// queued; the transcript follows as a user message of its own.
    Transcribe { id: u64 },
    /// Asks for a stored image's bytes; answered with `image`.
    ImageGet { sha256: String },
    /// Log a `note` (a bridge's refused sender, say); it starts no turn.
    /// Answered with `ack` once durable.
    Note {
        text: String,
        #[serde(default = "default_source")]
        source: String,
    },
    /// End the running turn, if any. Answered with `interrupted`.
    Interrupt,
    /// A page of the log: up to `limit` messages before `before` (newest page
    /// when absent), oldest first.
    History {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    /// Ask for a `status` frame.
    Status,
    /// Ask for an `mcp` frame: the MCP servers and their tools.
    Mcp,
    /// An event from another program, with an idempotency key. Stored
    /// durably and answered to this client alone with `receipt`; it enters the
    /// log between turns, once, however often the key arrives.
    Notify {
        key: String,
        text: String,
        #[serde(default = "default_notify_source")]
        source: String,
    },
    /// Add a schedule: `when` is a local time (`2026-12-24 18:00`) or a
    /// 5-field cron expression. Answered with `schedules` (the new one).
    ScheduleAdd { when: String, text: String },
    /// Answered with `schedules`, soonest first.
    ScheduleList,
    /// Answered with `schedules` (the cancelled one), or an error.
    ScheduleCancel { id: i64 },
    /// Write a consistent copy of the database to `path` (absolute: a new
    /// file, or an earlier backup of this log, brought up to date) while
    /// the daemon runs. Answered with `backed_up`.
    Backup { path: String },
    /// Read a client's small named state (a bridge's offset or cursor).
    StateGet { name: String },
    /// Write a client's small named state; answered with `state` once durable.
    StateSet { name: String, value: String },
    /// Model usage and cost per day and agent over the last `days` days
    /// (today included; 7 when absent). Answered with `stats`.
    Stats {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        days: Option<u32>,
    },
    /// Answers the `approval` event `id`: allow the call or deny it. The
    /// first answer decides; it is logged as a note naming this client (and
    /// `by`, the person, where the client knows one) and answered with
    /// `ack` (the note's id). An id that is unknown or already decided is
    /// refused.
    Approve {
        id: String,
        allow: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// Find messages and summary lines by their words (full-text, every
    /// word may match, best first). `before` and `after` are local dates or
    /// times (`2026-11-30`, `2026-11-30 18:00`); `kind` a message kind or
    /// `line`; `source` where a message came from. Answered with
    /// `search_results`, at most `limit` hits (10 when absent, at most
    /// [`crate::memory::MAX_SEARCH_HITS`]).
    Search {
        query: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<u32>,
    },
    /// Ask for the view as the agent's last turn saw it; answered with `memory`.
    Memory,
    /// Open node `id+n` of the memory: its line, the two lines it was made
    /// from, or for `n` = 1 the message itself. Answered with `memory_node`.
    MemoryShow { id: u64, n: u64 },
    /// The pinned facts; with `add` or `remove` (a fact's text, or its
    /// number from 1) it changes them first, logging a note that says so.
    /// Answered with `facts`, or refused (a full block, an unknown fact).
    Facts {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        add: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remove: Option<String>,
    },
    /// A one-time code that logs a browser in to the web client (`[web]`).
    /// Answered with `web_login`. Only over the Unix socket: its file mode
    /// is the check that the asker is the owner.
    WebLogin,
    /// The browser sessions; answered with `web_sessions`. Unix socket only.
    WebSessions,
    /// Ends browser session `id` at once (its open pages are disconnected);
    /// answered with `web_sessions` (the revoked one). Unix socket only.
    WebRevoke { id: i64 },
    /// Stop the daemon cleanly: answered with `stopping`, then every
    /// client's connection is closed with a close frame
    /// ([`crate::CLOSE_STOPPING`], or [`crate::CLOSE_RESTARTING`] with
    /// `restart`, which only changes what clients are told: the one who
    /// asked starts the next daemon).
    Stop {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        restart: bool,
    },
    /// Read `config.toml` again and apply what can change while the daemon
    /// runs. Answered with `reloaded`; a file that cannot be read or does
    /// not parse is refused (`error`, with its file and line) and the daemon
    /// keeps the configuration it runs.
    Reload,
    /// Brings history from another agent's store into the log (`hearth
    /// import`; see [`crate::import`]), oldest first, each message with its
    /// original time and marked as imported `from` there. Only over the
    /// Unix socket. A message whose key was imported before is skipped.
    /// The new ones are refused, and nothing is written, when the log
    /// already holds a message newer than the oldest of them (the daemon's
    /// own notes aside), unless `force`. With `dry_run` nothing is written:
    /// the answer says what would be. Answered with `imported`.
    Import {
        /// One of [`crate::import::SOURCES`].
        from: String,
        messages: Vec<crate::import::ImportMessage>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        force: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        dry_run: bool,
    },
}

fn default_source() -> String {
    "terminal".to_string()
}

fn default_notify_source() -> String {
    "notify".to_string()
}

/// Why the daemon refused a frame.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Not JSON, or JSON of the wrong shape.
    BadFrame,
    /// A `type` the daemon does not know.
    UnknownType,
    /// Larger than [`MAX_FRAME_BYTES`].
    TooLarge,
    /// Another protocol version.
    Version,
    /// A frame before `hello`, or a second `hello`.
    Sequence,
    /// A well-formed request the daemon cannot carry out.
    Refused,
    /// The log could not be written; nothing was accepted.
    Storage,
    /// Over TCP: no token, or the wrong one. The connection is closed.
    Unauthorized,
}

/// Frames the daemon sends.
// Events are most of the frames sent and are moved, not stored in bulk:
// boxing the largest variant would add an allocation to each of them.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ServerFrame {
    /// The answer to `hello`.
    Welcome {
        version: u32,
        agent: String,
        #[serde(default)]
        last_id: Option<u64>,
        busy: bool,
    },
    /// A submitted message is durable under `id`; `duplicate` when its key
    /// had been seen and nothing new was logged.
    Ack { id: u64, duplicate: bool },
    /// A live event.
    Event(Event),
    /// The answer to `interrupt`: whether a turn was running and was ended.
    Interrupted { running: bool },
    /// The answer to `history`, oldest first.
    History { messages: Vec<Message> },
    /// The answer to `status` (boxed: it is the largest frame by far).
    Status(Box<Status>),
    /// The answer to `mcp`: every configured server, by name.
    Mcp { servers: Vec<McpServer> },
    /// The answer to `notify`, to its sender alone.
    Receipt { status: ReceiptStatus, seq: i64 },
    /// The answer to the schedule frames.
    Schedules { schedules: Vec<ScheduleInfo> },
    /// The answer to `backup`: the copy's size, and for an earlier backup
    /// brought up to date, the messages it took (none: a whole new copy).
    BackedUp {
        path: String,
        bytes: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        added: Option<u64>,
    },
    /// The answer to `state_get` and `state_set`.
    State {
        name: String,
        #[serde(default)]
        value: Option<String>,
    },
    /// The answer to `image_put`: the image is durable under this reference.
    ImageStored(ImageRef),
    /// The answer to `media_put` of audio or a document: the file is
    /// durable under this reference.
    MediaStored(Box<MediaRef>),
    /// The answer to `image_get`.
    Image {
        sha256: String,
        media_type: String,
        data_base64: String,
    },
    /// The answer to `stats`: one row per day and agent with requests,
    /// oldest day first, over the `days` days ending today.
    Stats {
        days: u32,
        rows: Vec<StatsRow>,
        /// What was spent against the configured budget.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        budget: Option<BudgetUse>,
    },
    /// The answer to `web_login`: the address that logs a browser in, with
    /// its one-time code, and when the code stops working (local RFC 3339).
    WebLogin { url: String, expires: String },
    /// The answer to `web_sessions` and `web_revoke`, newest first.
    WebSessions { sessions: Vec<WebSession> },
    /// The answer to `search`, best first.
    SearchResults { hits: Vec<SearchHit> },
    /// The answer to `memory`.
    Memory(MemoryView),
    /// The answer to `memory_show`.
    MemoryNode(Box<MemoryNode>),
    /// The answer to `facts`.
    Facts(Facts),
    /// The answer to `stop`: the daemon `pid` is stopping; its lock is
    /// free once the process has exited.
    Stopping { pid: u32 },
    /// The answer to `reload`: the configuration was read again.
    Reloaded {
        /// What changed and now applies (`model`, `budget`, `approvals`,
        /// `limits`, `tools`, `telegram`, …), in the file's words.
        #[serde(default)]
        applied: Vec<String>,
        /// What changed but applies only after `hearth restart` (`listen`,
        /// `agents`, `memory`, …).
        #[serde(default)]
        needs_restart: Vec<String>,
    },
    /// The answer to `import`: how many of its messages were logged (with
    /// a dry run: would be), how many had been imported before and were
    /// skipped, and the ids the logged ones got.
    Imported {
        imported: u64,
        known: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_id: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_id: Option<u64>,
    },
    /// A frame was refused; nothing changed.
    Error { code: ErrorCode, message: String },
}

mod codec;
mod unique;
pub use codec::FrameError;

mod names;
pub use names::client_frame_types;

mod replies;
pub use replies::{
    AgentStatus, BudgetUse, McpCall, McpServer, PlanLimits, PlanWindow, ReceiptStatus,
    ScheduleInfo, StatsRow, Status, WebSession,
};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fuzz;
