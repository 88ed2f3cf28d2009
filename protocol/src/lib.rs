//! hearth-protocol: the frames that `hearthd` and every client exchange.
//!
//! The protocol is JSON in WebSocket text frames, over the daemon's Unix
//! socket. A client sends [`ClientFrame`]s and receives [`ServerFrame`]s. The
//! first frame a client sends is `hello`; the daemon answers `welcome` and from
//! then on sends every [`Event`] live: each logged [`Message`], and the agent's
//! `ready`, `busy`, `idle`, `error` and `subagent` events. An `approval` event
//! asks for a person's yes or no to a tool call ([`Approval`]); any client
//! answers it with an `approve` frame, and the first answer decides. An
//! `activity` event says what the agent is doing now ([`Activity`]: thinking,
//! a tool, a retry and its wait, summaries it waits for, compaction in the
//! background); it is never logged, and a client that attaches gets the
//! current one. A daemon that stops closes every connection with a close
//! frame ([`CLOSE_GOING_AWAY`], the reason [`CLOSE_STOPPING`] or
//! [`CLOSE_RESTARTING`]); `stop` and `reload` frames ask it to stop and to
//! read its configuration again.
//!
//! Each frame is one JSON object whose `type` names it. A frame that is not
//! JSON, has an unknown type, is larger than [`MAX_FRAME_BYTES`] or speaks
//! another [`PROTOCOL_VERSION`] is answered with an `error` frame and changes
//! nothing.
//!
//! A message may carry images, by content address: a client stores one with
//! `image_put` and names it in `submit`; events carry references and
//! `image_get` returns the bytes ([`image`]). Voice notes, audio files and
//! documents are stored the same way with `media_put` and named in
//! `submit`'s `media` ([`media`]).
//!
//! `search`, `memory`, `memory_show` and `facts` let a person look at what
//! the agent remembers ([`memory`]).
//!
//! A `tool` or `work` message's `status` is one of [`MessageStatus`]'s names.
//!
//! What the daemon and the bridges must agree on lives here once: [`home`]
//! says where a home keeps its files (and whether it is one folder),
//! [`secrets`] where a key or token is found, [`lock`] how one process of a
//! kind per home is kept, [`exit`] the status of a configuration that cannot
//! work, and [`bridge_tables`] the `[whatsapp]` table both read (and what
//! a bridge sends besides replies).
//!
//! [`import`] holds what an `import` frame carries: another agent's
//! history, brought in by `hearth import`.
//!
//! [`owner_key`] is what a client of the Unix socket shows in its `hello`
//! to be let in as the owner, and where it finds it.
//!
//! [`ending`] names the statuses of a cut or refused reply and the line
//! every client shows with one. [`whatsapp`] reads a WhatsApp person's two
//! names: a phone number or a business-scoped user id.

mod activity;
pub mod bridge_tables;
pub mod ending;
pub mod exit;
mod frames;
pub mod home;
pub mod image;
pub mod import;
pub mod lock;
pub mod media;
pub mod memory;
pub mod owner_key;
pub mod secrets;
mod status;
pub mod whatsapp;

pub use activity::*;
pub use frames::*;
pub use image::ImageRef;
pub use media::{MediaAttachment, MediaKind, MediaRef};
pub use memory::{Facts, MemoryLine, MemoryNode, MemoryView, SearchHit};
pub use status::MessageStatus;
