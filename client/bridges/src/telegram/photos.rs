//! Photos both ways. In: an owner's photo (its largest size) is fetched with
//! `getFile` and downloaded from `{api_base}/file/bot<token>/<file_path>`,
//! stored in the daemon and submitted with its caption. Out: an image a
//! tool showed is fitted to `sendPhoto`'s limits (10 MB, width plus height
//! at most 10,000, sides at most 20 times apart) and sent with it, uploaded
//! as multipart form data; one no copy can make a photo of goes with
//! `sendDocument` as the file it is.

use super::api::{read_envelope, Api, ApiError, Message};
use super::bridge::{BridgeError, SOURCE};
use crate::bridge::link::{self, LinkError};
use crate::bridge::multipart;
use hearth_client::images::{self, Attachment, ImageFileError};
use hearth_client::Connection;
use hearth_protocol::image::MAX_IMAGE_BYTES;
use serde_json::Value;
use std::time::Duration;

/// How long a download or an upload may take.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(60);

/// A photo an owner sent: its largest size's file, and its caption.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Photo {
    pub file_id: String,
    pub caption: Option<String>,
}

/// The message's photo, if it has one: the largest of its sizes (by pixels,
/// the last on a tie, as Telegram lists them smallest first).
pub fn largest(message: &Message) -> Option<Photo> {
    let sizes = message.photo.as_ref()?;
    let pixels = |size: &Value| {
        let side = |key: &str| size.get(key).and_then(Value::as_u64).unwrap_or(0);
        side("width") * side("height")
    };
    let best = sizes
        .iter()
        .filter(|size| size.get("file_id").and_then(Value::as_str).is_some())
        .max_by_key(|size| pixels(size))?;
    Some(Photo {
        file_id: best.get("file_id")?.as_str()?.to_string(),
        caption: message
            .caption
            .as_deref()
            .map(str::trim)
            .filter(|caption| !caption.is_empty())
            .map(str::to_string),
    })
}

/// Why a photo could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum PhotoError {
    #[error(transparent)]
    File(#[from] super::files::FileError),
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("the file is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage,
}

impl Api {
    /// Downloads a photo by its file id (see `files.rs`).
    pub async fn download(&self, file_id: &str) -> Result<Attachment, PhotoError> {
        let bytes = self.fetch_file(file_id, MAX_IMAGE_BYTES).await?;
        Attachment::from_bytes(bytes).map_err(|_| PhotoError::NotAnImage)
    }

    /// Sends an image to a chat with `sendPhoto`, uploaded as a file.
    pub async fn send_photo(&self, chat_id: i64, image: &Attachment) -> Result<(), ApiError> {
        self.upload("sendPhoto", "photo", chat_id, image).await
    }

    /// Sends an image to a chat as a file, with `sendDocument`.
    pub async fn send_document(&self, chat_id: i64, image: &Attachment) -> Result<(), ApiError> {
        self.upload("sendDocument", "document", chat_id, image)
            .await
    }

    async fn upload(
        &self,
        method: &str,
        field: &str,
        chat_id: i64,
        image: &Attachment,
    ) -> Result<(), ApiError> {
        let extension = hearth_protocol::image::extension(image.media_type).unwrap_or("jpg");
        let chat = chat_id.to_string();
        let form = multipart::form(
            &[("chat_id", &chat)],
            field,
            &format!("image.{extension}"),
            image.media_type,
            &image.bytes,
        );
        let response = self
            .http
            .post(format!("{}/{method}", self.bot_url))
            .header(reqwest::header::CONTENT_TYPE, form.content_type)
            .body(form.body)
            .timeout(TRANSFER_TIMEOUT)
            .send()
            .await
            .map_err(|err| ApiError::Network(err.without_url().to_string()))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|err| ApiError::Network(err.without_url().to_string()))?;
        read_envelope(status.as_u16(), &text).map(drop)
    }
}

/// Fetches an owner's photo and stores it in the daemon: the words to
/// submit (the caption, or nothing) and the image's hash. A photo that
/// cannot be fetched or is refused leaves the words as they were (the
/// caption, or `[photo]`) and a note saying why.
pub async fn attach(
    api: &Api,
    connection: &mut Connection,
    key: &str,
    photo: Photo,
    words: String,
) -> Result<(String, Vec<String>), BridgeError> {
    let fetched = link::beside(connection, api.download(&photo.file_id), &mut |_| {}).await?;
    let stored = match fetched {
        Ok(attachment) => match images::put(connection, &attachment, &mut |_| {}).await {
            Ok(stored) => Ok(stored),
            Err(ImageFileError::Connection(err)) => return Err(LinkError::from(err).into()),
            Err(err) => Err(err.to_string()),
        },
        Err(err) => Err(err.to_string()),
    };
    match stored {
        Ok(stored) => Ok((photo.caption.unwrap_or_default(), vec![stored.sha256])),
        Err(why) => {
            let note = format!("telegram: the photo of message {key} was not attached: {why}");
            link::note(connection, SOURCE, note, &mut |_| {}).await?;
            Ok((words, Vec::new()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telegram::api::parse_updates;
    use serde_json::json;

    #[test]
    fn the_largest_size_is_taken_with_the_caption() {
        let update = json!([{"update_id": 1, "message": {
            "message_id": 3, "chat": {"id": 42, "type": "private"},
            "photo": [
                {"file_id": "small", "file_unique_id": "s", "width": 90, "height": 90},
                {"file_id": "large", "file_unique_id": "l", "width": 1280, "height": 960},
                {"file_id": "mid", "file_unique_id": "m", "width": 320, "height": 240}
            ],
            "caption": " my cat "
        }}]);
        let message = parse_updates(update).unwrap().remove(0).message.unwrap();
        assert_eq!(
            largest(&message),
            Some(Photo {
                file_id: "large".into(),
                caption: Some("my cat".into())
            })
        );
        let text = json!([{"update_id": 2, "message": {
            "message_id": 4, "chat": {"id": 42, "type": "private"}, "text": "hi"
        }}]);
        let message = parse_updates(text).unwrap().remove(0).message.unwrap();
        assert_eq!(largest(&message), None);
    }
}
