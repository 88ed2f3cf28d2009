//! Files from the owner: a voice note, an audio file, a video note or a
//! document (a PDF, a text file) is fetched with `getFile` and downloaded
//! from `{api_base}/file/bot<token>/<file_path>`, stored in the daemon with
//! `media_put` and submitted with the message, its length (Telegram's
//! `duration`) said to the daemon. Photos are `photos.rs`'s; the download
//! is shared.

use super::api::{read_envelope, Api, ApiError, Message};
use super::bridge::{BridgeError, SOURCE};
use crate::bridge::{files, link};
use hearth_client::Connection;
use hearth_protocol::media::{kind_of, MAX_MEDIA_BYTES};
use hearth_protocol::MediaAttachment;
use serde_json::{json, Value};
use std::time::Duration;

/// How long a download may take.
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(60);

/// Why a file could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("the file is {0} bytes, over the limit of {1}")]
    TooLarge(u64, usize),
    #[error("Telegram gave no path for the file")]
    NoPath,
    #[error("hearth does not read {0} files")]
    Unsupported(String),
}

/// A file an owner sent, as the message describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub file_id: String,
    /// What the daemon is told the file is.
    pub media_type: String,
    pub name: Option<String>,
    /// Telegram's `duration`, for voice, audio and video notes.
    pub duration_secs: Option<u32>,
}

/// The file a message carries, if it is one hearth reads or may read: a
/// `voice` (Ogg Opus), an `audio` file, a `video_note` (MP4) or a
/// `document`. The type comes from Telegram's `mime_type`, else the file
/// name; a type hearth does not read is kept, to be refused in words.
pub fn sent(message: &Message) -> Option<Sent> {
    let field =
        |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let duration = |value: &Value| {
        value
            .get("duration")
            .and_then(Value::as_u64)
            .and_then(|secs| u32::try_from(secs).ok())
    };
    let (value, default_type) = if let Some(voice) = &message.voice {
        (voice, "audio/ogg")
    } else if let Some(audio) = &message.audio {
        (audio, "audio/mpeg")
    } else if let Some(note) = &message.video_note {
        (note, "video/mp4")
    } else if let Some(document) = &message.document {
        let name = document.file_name.clone();
        let media_type = files::media_type(document.mime_type.as_deref(), name.as_deref())
            .map(str::to_string)
            .or_else(|| document.mime_type.clone())
            .unwrap_or_else(|| "application/octet-stream".to_string());
        return Some(Sent {
            file_id: document.file_id.clone()?,
            media_type,
            name,
            duration_secs: None,
        });
    } else {
        return None;
    };
    // Telegram says `audio/mpeg` for MP3s and `audio/ogg` for voice notes;
    // a type hearth does not know falls back to the kind's usual one.
    let media_type = files::media_type(field(value, "mime_type").as_deref(), None)
        .unwrap_or(default_type)
        .to_string();
    Some(Sent {
        file_id: field(value, "file_id")?,
        media_type,
        name: field(value, "file_name"),
        duration_secs: duration(value),
    })
}

impl Api {
    /// Downloads a file by its id: `getFile`, then the file itself, at most
    /// `limit` bytes.
    pub async fn fetch_file(&self, file_id: &str, limit: usize) -> Result<Vec<u8>, FileError> {
        let body = json!({"file_id": file_id});
        let file = self.call("getFile", &body, TRANSFER_TIMEOUT).await?;
        if let Some(size) = file.get("file_size").and_then(Value::as_u64) {
            if size > limit as u64 {
                return Err(FileError::TooLarge(size, limit));
            }
        }
        let path = file
            .get("file_path")
            .and_then(Value::as_str)
            .ok_or(FileError::NoPath)?;
        // `bot_url` is `{api_base}/bot{token}`; a token has no `/`.
        let (base, token) = self.bot_url.rsplit_once("/bot").ok_or(FileError::NoPath)?;
        let response = self
            .http
            .get(format!("{base}/file/bot{token}/{path}"))
            .timeout(TRANSFER_TIMEOUT)
            .send()
            .await
            .map_err(network)?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.map_err(network)?;
            return Err(read_envelope(status.as_u16(), &text)
                .err()
                .unwrap_or_else(|| ApiError::BadAnswer("a download that failed".into()))
                .into());
        }
        if let Some(length) = response.content_length() {
            if length > limit as u64 {
                return Err(FileError::TooLarge(length, limit));
            }
        }
        let bytes = response.bytes().await.map_err(network)?;
        if bytes.len() > limit {
            return Err(FileError::TooLarge(bytes.len() as u64, limit));
        }
        Ok(bytes.to_vec())
    }
}

fn network(err: reqwest::Error) -> FileError {
    FileError::Api(ApiError::Network(err.without_url().to_string()))
}

/// Fetches an owner's file and stores it in the daemon: the words to
/// submit (the caption, or nothing: the daemon says what the file is) and
/// the file to name. A file that cannot be fetched or is refused leaves the
/// words as they were (the placeholder naming it) and a note saying why.
pub async fn attach(
    api: &Api,
    connection: &mut Connection,
    key: &str,
    file: Sent,
    caption: Option<String>,
    words: String,
) -> Result<(String, Vec<MediaAttachment>), BridgeError> {
    let fetched = if kind_of(&file.media_type).is_some() {
        link::beside(
            connection,
            api.fetch_file(&file.file_id, MAX_MEDIA_BYTES),
            &mut |_| {},
        )
        .await?
        .map_err(|err| err.to_string())
    } else {
        Err(format!("hearth does not read {} files", file.media_type))
    };
    let stored = match fetched {
        Ok(bytes) => {
            files::store(
                connection,
                &file.media_type,
                &bytes,
                file.name.clone(),
                file.duration_secs,
            )
            .await?
        }
        Err(why) => Err(why),
    };
    match stored {
        Ok(stored) => Ok((caption.unwrap_or_default(), vec![stored])),
        Err(why) => {
            files::not_attached(connection, SOURCE, key, &why).await?;
            Ok((words, Vec::new()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telegram::api::parse_updates;

    fn message(body: Value) -> Message {
        let mut message = json!({"message_id": 3, "chat": {"id": 42, "type": "private"}});
        if let (Some(object), Some(extra)) = (message.as_object_mut(), body.as_object()) {
            object.extend(extra.clone());
        }
        let update = json!([{"update_id": 1, "message": message}]);
        parse_updates(update).unwrap().remove(0).message.unwrap()
    }

    #[test]
    fn voice_audio_video_notes_and_documents_are_told_apart() {
        let voice = message(json!({"voice": {"file_id": "v", "file_unique_id": "u",
            "duration": 42, "mime_type": "audio/ogg", "file_size": 9000}}));
        assert_eq!(
            sent(&voice),
            Some(Sent {
                file_id: "v".into(),
                media_type: "audio/ogg".into(),
                name: None,
                duration_secs: Some(42)
            })
        );
        let note = message(json!({"video_note": {"file_id": "n", "file_unique_id": "u",
            "length": 240, "duration": 7}}));
        assert_eq!(sent(&note).unwrap().media_type, "video/mp4");
        let audio = message(json!({"audio": {"file_id": "a", "file_unique_id": "u",
            "duration": 200, "file_name": "song.m4a", "mime_type": "audio/x-m4a"}}));
        assert_eq!(sent(&audio).unwrap().media_type, "audio/mp4");
        let pdf = message(json!({"document": {"file_id": "d", "file_unique_id": "u",
            "file_name": "lease.pdf", "mime_type": "application/pdf"}}));
        let pdf = sent(&pdf).unwrap();
        assert_eq!(
            (pdf.media_type.as_str(), pdf.name.as_deref()),
            ("application/pdf", Some("lease.pdf"))
        );
        let notes = message(json!({"document": {"file_id": "t", "file_unique_id": "u",
            "file_name": "notes.md", "mime_type": "application/octet-stream"}}));
        assert_eq!(sent(&notes).unwrap().media_type, "text/markdown");
        let zip = message(json!({"document": {"file_id": "z", "file_unique_id": "u",
            "file_name": "a.zip", "mime_type": "application/zip"}}));
        assert_eq!(sent(&zip).unwrap().media_type, "application/zip");
        assert_eq!(sent(&message(json!({"text": "hi"}))), None);
    }
}
