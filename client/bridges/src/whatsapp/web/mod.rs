//! The linked-device backend (`[whatsapp] backend = "web"`, built with
//! `--features whatsapp-web`): the bridge runs as a WhatsApp Web device
//! linked to the owner's personal account, through the whatsapp-rust
//! library, instead of through the Business Cloud API.
//!
//! What it relays, and what it never takes back in:
//!
//! - Only person-to-person chats; groups, broadcasts, channels and statuses
//!   are ignored.
//! - An allowed number's text and images go to the daemon with the key
//!   `whatsapp:<message id>` and source `whatsapp`, as with the Cloud API;
//!   someone else is refused once per run, with a note.
//! - Being the owner's own account, the device also sees what the owner
//!   writes to other people from the phone. Those messages (`from_me`) are
//!   skipped, except in the owner's "message yourself" chat when the
//!   owner's own number is allowed: that chat is how the owner talks to the
//!   agent from the same account, and the replies go there.
//! - The replies in that chat look like the owner's own messages, so the
//!   bridge remembers the ids of everything it sent (the last 512) and
//!   never takes those in. A send whose echo came back after a restart of
//!   the bridge would not be recognized; WhatsApp does not echo a device's
//!   own sends back to it, so this is a second guard, not the only one.
//!
//! - `device.rs`: the boundary: what the bridge asks of the device and what
//!   it is told, in hearth's words.
//! - `convert.rs`: the library's messages and events in those words (pure).
//! - `library.rs`: the device on whatsapp-rust, its session in
//!   `whatsapp-web.db` in the home's data folder.
//! - `inbound.rs`: the relay rules; messages in, acknowledged once durable.
//! - `outbound.rs`: the courier: replies, images, "typing…", `send_to`.
//! - `pairing.rs`: `hearth whatsapp link`'s QR code in the terminal.
//! - `bridge.rs`: start-up, the end of a session, linking.

pub mod bridge;
pub mod convert;
pub mod device;
pub mod inbound;
pub mod library;
pub mod outbound;
pub mod pairing;

#[cfg(test)]
mod tests;

pub use bridge::{link_device, run, WebError};
