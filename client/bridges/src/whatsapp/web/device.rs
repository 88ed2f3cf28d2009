//! The boundary with the WhatsApp Web library: what the bridge asks of a
//! linked device ([`Device`]) and what the device tells it ([`WebEvent`]),
//! in hearth's own words. `library.rs` is the implementation on
//! whatsapp-rust; the bridge's logic is tested against a fake one.

use std::time::Duration;
use tokio::sync::oneshot;
use whatsapp_rust::waproto::whatsapp as wa;

/// The library's messages a [`WebFile`] and a [`WebImage`] carry, for
/// whoever builds them (the bridge's tests, a fake device).
pub use wa::message::{AudioMessage, DocumentMessage, ImageMessage};

/// What the linked device tells the bridge, in order.
#[derive(Debug)]
pub enum WebEvent {
    /// A code to show for pairing (only while not linked); a new one
    /// replaces it after `valid_for`.
    Qr { code: String, valid_for: Duration },
    /// The phone scanned the code: the device is linked to `number`.
    Paired { number: String },
    /// The phone refused to link the device.
    PairFailed(String),
    /// No code was scanned before WhatsApp stopped issuing new ones.
    QrExhausted,
    /// Connected and logged in.
    Connected,
    /// The connection dropped; the library connects again by itself.
    Disconnected(String),
    /// Messages received. Answer `done` with `true` once every one of them
    /// is durable in the daemon (or deliberately skipped): only then does
    /// WhatsApp forget them. `false`, or dropping `done`, has WhatsApp
    /// deliver them again at the next connection.
    Messages {
        messages: Vec<Received>,
        done: oneshot::Sender<bool>,
    },
    /// The session is over and connecting again would not help.
    Stopped(Stop),
}

/// Why a session ended for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The device was unlinked (from the phone, or by WhatsApp).
    LoggedOut(String),
    /// Another program connected with this device's session.
    Replaced,
    /// WhatsApp banned the account for a while.
    Banned(String),
    /// The library gave up for another reason (an outdated client, a
    /// refused connection).
    Ended(String),
}

/// A message as the bridge sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// WhatsApp's id of the message.
    pub id: String,
    /// Where it was written.
    pub chat: Chat,
    /// The author's phone number (digits), when WhatsApp says it: a
    /// contact known only by a privacy id (LID) has none.
    pub from: Option<String>,
    /// The author's id as WhatsApp addresses them (`…@s.whatsapp.net` or
    /// `…@lid`), for a refusal that must reach someone without a number.
    pub from_address: String,
    /// Written by the linked account itself (on the phone, or by a device).
    pub from_me: bool,
    /// The name the author gave WhatsApp.
    pub name: String,
    /// The words: the text, or an image's caption.
    pub text: Option<String>,
    /// An image to download.
    pub image: Option<WebImage>,
    /// A voice note, audio file or document to download.
    pub file: Option<WebFile>,
}

/// Where a message was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chat {
    /// A chat with one person (or the owner's own "message yourself" chat).
    /// `number` is the other side's phone number when WhatsApp says it;
    /// `lid` its privacy id, when the chat is addressed by one.
    Direct {
        number: Option<String>,
        lid: Option<String>,
    },
    /// A group, a broadcast list, a channel, a status: never relayed.
    Other,
}

/// A received image, as the library needs it to download it.
#[derive(Debug, Clone, PartialEq)]
pub struct WebImage(pub Box<wa::message::ImageMessage>);

/// A received voice note, audio file or document, as the library needs it
/// to download it.
#[derive(Debug, Clone, PartialEq)]
pub enum WebFile {
    Audio(Box<wa::message::AudioMessage>),
    Document(Box<wa::message::DocumentMessage>),
}

impl WebFile {
    /// The media type WhatsApp gives it.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            WebFile::Audio(audio) => audio.mimetype.as_deref(),
            WebFile::Document(document) => document.mimetype.as_deref(),
        }
    }

    /// A document's file name.
    pub fn name(&self) -> Option<String> {
        match self {
            WebFile::Audio(_) => None,
            WebFile::Document(document) => document.file_name.clone(),
        }
    }

    /// A voice note's length, as WhatsApp says it.
    pub fn duration_secs(&self) -> Option<u32> {
        match self {
            WebFile::Audio(audio) => audio.seconds,
            WebFile::Document(_) => None,
        }
    }
}

/// The linked account's own ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Own {
    /// The phone number (digits).
    pub number: Option<String>,
    /// The privacy id (LID) WhatsApp also addresses the account by.
    pub lid: Option<String>,
}

/// A call to WhatsApp that did not go through.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DeviceError {
    /// Whether it may go through later (the device is reconnecting).
    pub retry: bool,
    pub message: String,
}

/// The linked device, as the bridge uses it. An address is a phone number
/// (digits) or a full WhatsApp id (`…@lid`). Calls take `&self`, so the
/// inbound and outbound halves share one device.
// The bridge runs on one thread, so nothing needs these futures to be `Send`.
#[allow(async_fn_in_trait)]
pub trait Device {
    /// The linked account's ids; empty when not linked.
    fn own(&self) -> Own;

    /// Whether the device is linked to an account.
    fn is_linked(&self) -> bool {
        self.own().number.is_some()
    }

    /// Sends text; returns the new message's id.
    async fn send_text(&self, to: &str, text: &str) -> Result<String, DeviceError>;

    /// Uploads an image and sends it; returns the new message's id.
    async fn send_image(
        &self,
        to: &str,
        bytes: Vec<u8>,
        media_type: &str,
    ) -> Result<String, DeviceError>;

    /// Shows "typing…" in a chat.
    async fn composing(&self, to: &str) -> Result<(), DeviceError>;

    /// Downloads a received image.
    async fn download(&self, image: &WebImage) -> Result<Vec<u8>, DeviceError>;

    /// Downloads a received voice note, audio file or document.
    async fn download_file(&self, file: &WebFile) -> Result<Vec<u8>, DeviceError> {
        let _ = file;
        Err(DeviceError {
            retry: false,
            message: "this device downloads no files".into(),
        })
    }
}
