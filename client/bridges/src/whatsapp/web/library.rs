//! The linked device on whatsapp-rust: the one file that calls the
//! library. Its session lives in its own SQLite file (the library's store,
//! on the same libsqlite3-sys as hearth's rusqlite), never in hearth.db.
//!
//! Events reach the bridge through a channel, in the order the library
//! dispatches them. Received messages come through the library's inbound
//! durability hook rather than its message event: the hook holds
//! WhatsApp's acknowledgement until the bridge says the daemon has them,
//! so a crash in between has WhatsApp deliver them again instead of losing
//! them. (The messages that bypass the hook, channel posts and recovered
//! placeholders, are never from an allowed person's direct chat.)

use super::convert;
use super::device::{Device, DeviceError, Own, Stop, WebEvent, WebFile, WebImage};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use whatsapp_rust::bot::{Bot, BotHandle};
use whatsapp_rust::buffa::MessageField;
use whatsapp_rust::download::MediaType;
use whatsapp_rust::store::SqliteStore;
use whatsapp_rust::upload::UploadOptions;
use whatsapp_rust::wacore::types::events::{Event, EventHandler, InboundMessage};
use whatsapp_rust::waproto::whatsapp as wa;
use whatsapp_rust::{Client, InboundDurabilityHook, Jid};

/// How long stopping waits for the library to flush its session.
const STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("cannot open the WhatsApp session in {path}: {message}")]
    Open { path: PathBuf, message: String },
}

/// The linked device: the library's client, started or not.
pub struct Library {
    client: Arc<Client>,
    /// The configured bot, until started.
    bot: std::sync::Mutex<Option<Bot>>,
    /// Once started: completes when the library's run loop has ended.
    finished: std::sync::Mutex<Option<oneshot::Receiver<()>>>,
    /// Tells the bridge when the library's run loop has ended.
    events: mpsc::UnboundedSender<WebEvent>,
}

impl Library {
    /// Opens (creating it when new) the session in `path`; nothing connects
    /// until [`Library::start`]. The file holds the device's keys, so it is
    /// readable by its owner only.
    pub async fn open(
        path: &Path,
    ) -> Result<(Library, mpsc::UnboundedReceiver<WebEvent>), LibraryError> {
        let failed = |message: String| LibraryError::Open {
            path: path.to_path_buf(),
            message,
        };
        let url = path
            .to_str()
            .ok_or_else(|| failed("the path is not UTF-8".into()))?;
        let store = SqliteStore::new(url)
            .await
            .map_err(|err| failed(err.to_string()))?;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        let (events_out, events_in) = mpsc::unbounded_channel();
        let bot = Bot::builder()
            .with_backend(store)
            .with_event_handler(Forward {
                events: events_out.clone(),
            })
            .with_inbound_durability_hook(HandOver {
                events: events_out.clone(),
            })
            // The agent needs what arrives from now on, not the phone's history.
            .skip_history_sync()
            .build()
            .await
            .map_err(|err| failed(err.to_string()))?;
        let library = Library {
            client: bot.client(),
            bot: std::sync::Mutex::new(Some(bot)),
            finished: std::sync::Mutex::new(None),
            events: events_out,
        };
        Ok((library, events_in))
    }

    /// Connects in the background, reconnecting with the library's backoff;
    /// when the library stops for good the bridge hears
    /// [`WebEvent::Stopped`]. Starting twice does nothing.
    pub fn start(&self) {
        let Some(bot) = self.bot.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return;
        };
        let handle: BotHandle = bot.spawn();
        let events = self.events.clone();
        let (finished_out, finished_in) = oneshot::channel();
        // The run loop ends after a stop the library announced first (logged
        // out, replaced, banned) or one it did not; either way the bridge
        // hears it, and the first reason it reads decides.
        tokio::spawn(async move {
            handle.await;
            let _ = finished_out.send(());
            let _ = events.send(WebEvent::Stopped(Stop::Ended(
                "the library stopped connecting".into(),
            )));
        });
        *self.finished.lock().unwrap_or_else(|p| p.into_inner()) = Some(finished_in);
    }

    /// Disconnects and waits (a little) for the library to flush the
    /// session to its file.
    pub async fn stop(&self) {
        let finished = self
            .finished
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        self.client.disconnect().await;
        if let Some(finished) = finished {
            let _ = tokio::time::timeout(STOP_TIMEOUT, finished).await;
        }
    }
}

/// An address as the library names it: a number's or a full id.
pub(super) fn jid(to: &str) -> Result<Jid, DeviceError> {
    let parsed = if to.contains('@') {
        to.parse::<Jid>().ok()
    } else {
        Some(Jid::pn(to))
    };
    parsed.ok_or_else(|| DeviceError {
        retry: false,
        message: format!("`{to}` is not a WhatsApp address"),
    })
}

impl Library {
    /// A failed call: worth another try only while the connection is down.
    fn failed(&self, err: impl std::fmt::Display) -> DeviceError {
        DeviceError {
            retry: !self.client.is_connected(),
            message: err.to_string(),
        }
    }
}

impl Device for Library {
    fn own(&self) -> Own {
        let device = self.client.persistence_manager().get_device_snapshot();
        Own {
            number: device.pn.as_ref().map(|pn| pn.user.to_string()),
            lid: device.lid.as_ref().map(|lid| lid.user.to_string()),
        }
    }

    async fn send_text(&self, to: &str, text: &str) -> Result<String, DeviceError> {
        let message = wa::Message {
            conversation: Some(text.to_string()),
            ..Default::default()
        };
        let sent = self.client.send_message(jid(to)?, message).await;
        sent.map(|sent| sent.message_id)
            .map_err(|err| self.failed(err))
    }

    async fn send_image(
        &self,
        to: &str,
        bytes: Vec<u8>,
        media_type: &str,
    ) -> Result<String, DeviceError> {
        let to = jid(to)?;
        let uploaded = self
            .client
            .upload(bytes, MediaType::Image, UploadOptions::default())
            .await
            .map_err(|err| self.failed(err))?;
        let image = wa::message::ImageMessage {
            url: Some(uploaded.url),
            direct_path: Some(uploaded.direct_path),
            mimetype: Some(media_type.to_string()),
            media_key: Some(uploaded.media_key.to_vec()),
            file_enc_sha256: Some(uploaded.file_enc_sha256.to_vec()),
            file_sha256: Some(uploaded.file_sha256.to_vec()),
            file_length: Some(uploaded.file_length),
            media_key_timestamp: Some(uploaded.media_key_timestamp),
            ..Default::default()
        };
        let message = wa::Message {
            image_message: MessageField::some(image),
            ..Default::default()
        };
        let sent = self.client.send_message(to, message).await;
        sent.map(|sent| sent.message_id)
            .map_err(|err| self.failed(err))
    }

    async fn composing(&self, to: &str) -> Result<(), DeviceError> {
        let to = jid(to)?;
        let shown = self.client.chatstate().send_composing(&to).await;
        shown.map_err(|err| self.failed(err))
    }

    async fn download(&self, image: &WebImage) -> Result<Vec<u8>, DeviceError> {
        let downloaded = self.client.download(image.0.as_ref()).await;
        downloaded.map_err(|err| self.failed(err))
    }

    async fn download_file(&self, file: &WebFile) -> Result<Vec<u8>, DeviceError> {
        let downloaded = match file {
            WebFile::Audio(audio) => self.client.download(audio.as_ref()).await,
            WebFile::Document(document) => self.client.download(document.as_ref()).await,
        };
        downloaded.map_err(|err| self.failed(err))
    }
}

/// Hands the library's events the bridge acts on to it, in dispatch order.
struct Forward {
    events: mpsc::UnboundedSender<WebEvent>,
}

impl EventHandler for Forward {
    fn handle_event(&self, event: Arc<Event>) {
        if let Some(event) = convert::event(&event) {
            let _ = self.events.send(event);
        }
    }
}

/// Hands received messages to the bridge and tells the library to
/// acknowledge them only once the bridge has them in the daemon.
struct HandOver {
    events: mpsc::UnboundedSender<WebEvent>,
}

#[whatsapp_rust::async_trait]
impl InboundDurabilityHook for HandOver {
    async fn on_messages(
        &self,
        _client: Arc<Client>,
        batch: &[InboundMessage],
    ) -> whatsapp_rust::anyhow::Result<()> {
        let messages = batch
            .iter()
            .map(|inbound| convert::received(&inbound.message, &inbound.info))
            .collect();
        let (done, taken) = oneshot::channel();
        self.events
            .send(WebEvent::Messages { messages, done })
            .map_err(|_| whatsapp_rust::anyhow::anyhow!("the bridge is gone"))?;
        match taken.await {
            Ok(true) => Ok(()),
            _ => Err(whatsapp_rust::anyhow::anyhow!(
                "the bridge did not take the messages; WhatsApp delivers them again"
            )),
        }
    }
}
