//! Audio and documents: stored once, content-addressed, beside the images,
//! and referenced from the log.
//!
//! A voice note lives in `audio/<sha256>.<ext>`, a document in
//! `documents/<sha256>.<ext>`, each written durably once as `store.rs`
//! writes every content-addressed file. A document's text is read when it
//! is stored (`documents.rs`, bounded in time and size; an encrypted or
//! malformed file is refused then) and kept beside it as
//! `documents/<sha256>.pages.json`, so `read_attachment` pages through it
//! without parsing the file again.
//!
//! A message names its media in its `data` as `{"media": [MediaRef…]}`;
//! the text says what they are (`[voice 0:42] …`, `[file: "lease.pdf", 12
//! pages]`), and the bytes never travel in frames or events.

use crate::documents::{self, DocumentError};
use crate::images::ImageStore;
use crate::store;
use hearth_protocol::media::{self, MediaError, MAX_MEDIA_PER_MESSAGE};
use hearth_protocol::{ErrorCode, MediaAttachment, MediaKind, MediaRef, ServerFrame};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum MediaStoreError {
    #[error("{0}")]
    Refused(#[from] MediaError),
    #[error("{0}")]
    Document(#[from] DocumentError),
    #[error("`{0}` is not a file's sha256 (64 lowercase hex digits)")]
    BadName(String),
    #[error("there is no stored audio or document {0}; store it with `media_put` first")]
    Missing(String),
    #[error("a message carries at most {MAX_MEDIA_PER_MESSAGE} files, not {0}")]
    TooMany(usize),
    #[error("the media store at {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

impl MediaStoreError {
    /// The error code a client is told.
    pub fn code(&self) -> ErrorCode {
        match self {
            MediaStoreError::Refused(MediaError::TooLarge(_)) => ErrorCode::TooLarge,
            MediaStoreError::Refused(MediaError::MediaType(_))
            | MediaStoreError::Document(_)
            | MediaStoreError::Missing(_)
            | MediaStoreError::TooMany(_) => ErrorCode::Refused,
            MediaStoreError::Refused(_) | MediaStoreError::BadName(_) => ErrorCode::BadFrame,
            MediaStoreError::Io { .. } => ErrorCode::Storage,
        }
    }

    /// What a client is told.
    pub fn client_message(&self) -> String {
        match self {
            MediaStoreError::Io { .. } => format!("the file was not stored: {self}"),
            _ => format!("file refused: {self}"),
        }
    }

    /// The error frame that tells a client.
    pub fn frame(&self) -> ServerFrame {
        ServerFrame::Error {
            code: self.code(),
            message: self.client_message(),
        }
    }
}

impl From<store::WriteError> for MediaStoreError {
    fn from(err: store::WriteError) -> Self {
        MediaStoreError::Io {
            path: err.path,
            source: err.source,
        }
    }
}

/// The folders of stored audio and documents (and the image store, for a
/// `media_put` of an image). Cheap to clone.
#[derive(Debug, Clone)]
pub struct MediaStore {
    data_dir: PathBuf,
    images: ImageStore,
}

impl MediaStore {
    /// The store in `data_dir/audio` and `data_dir/documents`; the folders
    /// are made on first use.
    pub fn new(data_dir: &Path, images: ImageStore) -> MediaStore {
        MediaStore {
            data_dir: data_dir.to_path_buf(),
            images,
        }
    }

    /// Checks and stores `bytes` of `media_type` (a document's text read
    /// first); returns once the file is durable.
    pub async fn put(
        &self,
        media_type: &str,
        bytes: Vec<u8>,
        name: Option<String>,
        duration_secs: Option<u32>,
    ) -> Result<MediaRef, MediaStoreError> {
        let kind = media::check(media_type, &bytes)?;
        let pages = match kind {
            MediaKind::Document => Some(documents::pages(media_type, bytes.clone()).await?),
            MediaKind::Audio => None,
        };
        let store = self.clone();
        let media_type = media_type.to_string();
        tokio::task::spawn_blocking(move || {
            store.put_blocking(
                kind,
                &media_type,
                &bytes,
                pages.as_deref(),
                name,
                duration_secs,
            )
        })
        .await
        .map_err(|err| MediaStoreError::Io {
            path: self.data_dir.clone(),
            source: io::Error::other(err),
        })?
    }

    fn put_blocking(
        &self,
        kind: MediaKind,
        media_type: &str,
        bytes: &[u8],
        pages: Option<&[String]>,
        name: Option<String>,
        duration_secs: Option<u32>,
    ) -> Result<MediaRef, MediaStoreError> {
        let sha256 = store::sha256_hex(bytes);
        // `check` admitted only types with an extension.
        let extension = media::kind_of(media_type).map_or("bin", |(_, extension)| extension);
        let dir = self.data_dir.join(kind.folder());
        if let Some(pages) = pages {
            // The text first: a stored document always has its pages.
            let text = serde_json::to_vec(pages).unwrap_or_default();
            store::write_once(&dir, &format!("{sha256}.pages.json"), &text)?;
        }
        store::write_once(&dir, &format!("{sha256}.{extension}"), bytes)?;
        Ok(MediaRef {
            sha256,
            kind,
            media_type: media_type.to_string(),
            bytes: bytes.len() as u64,
            name,
            duration_secs,
            pages: pages.map(|pages| u32::try_from(pages.len()).unwrap_or(u32::MAX)),
        })
    }

    /// Answers `media_put`: checks and stores the payload; an image goes
    /// to the image store and is answered as `image_put` is.
    pub async fn answer_put(
        &self,
        media_type: &str,
        data_base64: &str,
        name: Option<String>,
        duration_secs: Option<u32>,
    ) -> ServerFrame {
        if hearth_protocol::image::extension(media_type).is_some() {
            return self.images.answer_put(media_type, data_base64).await;
        }
        let stored = match media::decode(media_type, data_base64) {
            Ok(bytes) => self.put(media_type, bytes, name, duration_secs).await,
            Err(err) => Err(err.into()),
        };
        match stored {
            Ok(media) => ServerFrame::MediaStored(Box::new(media)),
            Err(err) => {
                if let MediaStoreError::Io { .. } = err {
                    tracing::error!("{err}");
                }
                err.frame()
            }
        }
    }

    /// The stored files a `submit` names, in order, with what their
    /// platform said of them; an unknown one refuses the whole message.
    pub fn attach(&self, named: &[MediaAttachment]) -> Result<Vec<MediaRef>, MediaStoreError> {
        if named.len() > MAX_MEDIA_PER_MESSAGE {
            return Err(MediaStoreError::TooMany(named.len()));
        }
        named
            .iter()
            .map(|attachment| {
                let mut found = self.find(&attachment.sha256)?;
                found.name = attachment.name.as_ref().map(|name| clean_name(name));
                found.duration_secs = attachment.duration_secs;
                Ok(found)
            })
            .collect()
    }

    /// The stored file named by `sha256`, if there is one.
    pub fn find(&self, sha256: &str) -> Result<MediaRef, MediaStoreError> {
        if !store::is_sha256(sha256) {
            return Err(MediaStoreError::BadName(sha256.chars().take(80).collect()));
        }
        let tables = [
            (MediaKind::Audio, &media::AUDIO_TYPES[..]),
            (MediaKind::Document, &media::DOCUMENT_TYPES[..]),
        ];
        for (kind, table) in tables {
            for (media_type, extension) in table {
                let path = self.path_of(kind, sha256, extension);
                let Ok(meta) = fs::metadata(&path) else {
                    continue;
                };
                let pages = match kind {
                    MediaKind::Document => Some(self.pages_of(sha256)?.len()),
                    MediaKind::Audio => None,
                };
                return Ok(MediaRef {
                    sha256: sha256.to_string(),
                    kind,
                    media_type: media_type.to_string(),
                    bytes: meta.len(),
                    name: None,
                    duration_secs: None,
                    pages: pages.map(|pages| u32::try_from(pages).unwrap_or(u32::MAX)),
                });
            }
        }
        Err(MediaStoreError::Missing(sha256.to_string()))
    }

    /// A stored file's bytes.
    pub fn read(&self, media: &MediaRef) -> Result<Vec<u8>, MediaStoreError> {
        let extension = media::kind_of(&media.media_type)
            .map(|(_, extension)| extension)
            .ok_or_else(|| MediaStoreError::Missing(media.sha256.clone()))?;
        let path = self.path_of(media.kind, &media.sha256, extension);
        fs::read(&path).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => MediaStoreError::Missing(media.sha256.clone()),
            _ => MediaStoreError::Io { path, source },
        })
    }

    /// A stored document's text, page by page.
    pub fn pages_of(&self, sha256: &str) -> Result<Vec<String>, MediaStoreError> {
        if !store::is_sha256(sha256) {
            return Err(MediaStoreError::BadName(sha256.chars().take(80).collect()));
        }
        let path = self
            .data_dir
            .join(MediaKind::Document.folder())
            .join(format!("{sha256}.pages.json"));
        let text = fs::read(&path).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => MediaStoreError::Missing(sha256.to_string()),
            _ => MediaStoreError::Io {
                path: path.clone(),
                source,
            },
        })?;
        serde_json::from_slice(&text).map_err(|err| MediaStoreError::Io {
            path,
            source: io::Error::other(err),
        })
    }

    fn path_of(&self, kind: MediaKind, sha256: &str, extension: &str) -> PathBuf {
        self.data_dir
            .join(kind.folder())
            .join(format!("{sha256}.{extension}"))
    }
}

/// A platform's file name as it is kept: see
/// [`hearth_protocol::media::clean_file_name`].
fn clean_name(name: &str) -> String {
    hearth_protocol::media::clean_file_name(name)
}

/// The media a message's data names (`data.media`).
pub fn refs(data: &crate::log::MessageData) -> Vec<MediaRef> {
    data.media.clone()
}

/// How a file is said in a message's text: `[voice 0:42]`,
/// `[file: "lease.pdf", 12 pages]`. `state` follows a voice note's length
/// (`transcribing`). The file's name is its sender's data, cleaned and
/// quoted again here (an older row may hold one kept before names were
/// cleaned), so it cannot close the label and speak as the message.
pub fn label(media: &MediaRef, state: Option<&str>) -> String {
    match media.kind {
        MediaKind::Audio => {
            let mut said = String::from("voice");
            if let Some(secs) = media.duration_secs {
                said.push(' ');
                said.push_str(&media::clock(secs));
            }
            match state {
                Some(state) => format!("[{said}, {state}]"),
                None => format!("[{said}]"),
            }
        }
        MediaKind::Document => {
            let name = media
                .name
                .as_deref()
                .map(media::clean_file_name)
                .filter(|name| !name.is_empty())
                .unwrap_or_else(|| {
                    format!(
                        "{}.{}",
                        &media.sha256[..12.min(media.sha256.len())],
                        extension_of(media)
                    )
                });
            let name = media::quoted_file_name(&name);
            match media.pages {
                Some(1) => format!("[file: {name}, 1 page]"),
                Some(pages) => format!("[file: {name}, {pages} pages]"),
                None => format!("[file: {name}]"),
            }
        }
    }
}

fn extension_of(media: &MediaRef) -> &'static str {
    media::kind_of(&media.media_type).map_or("bin", |(_, extension)| extension)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &tempfile::TempDir) -> MediaStore {
        MediaStore::new(dir.path(), ImageStore::new(dir.path()))
    }

    #[tokio::test]
    async fn audio_is_stored_once_under_its_sha256_and_found_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        let voice = b"OggS\0\x02voice".to_vec();
        let stored = store
            .put("audio/ogg", voice.clone(), Some("v.ogg".into()), Some(42))
            .await
            .unwrap();
        assert_eq!(stored.kind, MediaKind::Audio);
        let path = dir.path().join(format!("audio/{}.ogg", stored.sha256));
        assert_eq!(fs::read(&path).unwrap(), voice);
        let named = store.attach(&[stored.attachment()]).unwrap();
        assert_eq!(named, vec![stored.clone()]);
        assert_eq!(store.read(&stored).unwrap(), voice);
        assert_eq!(
            label(&stored, Some("transcribing")),
            "[voice 0:42, transcribing]"
        );
        assert!(matches!(
            store.find("../x"),
            Err(MediaStoreError::BadName(_))
        ));
        assert!(matches!(
            store.find(&"0".repeat(64)),
            Err(MediaStoreError::Missing(_))
        ));
    }

    #[tokio::test]
    async fn a_text_document_keeps_its_pages() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        let stored = store
            .put("text/plain", b"line one\nline two\n".to_vec(), None, None)
            .await
            .unwrap();
        assert_eq!(stored.pages, Some(1));
        let pages = store.pages_of(&stored.sha256).unwrap();
        assert_eq!(pages, vec!["line one\nline two\n".to_string()]);
        let found = store
            .attach(&[MediaAttachment {
                sha256: stored.sha256.clone(),
                name: Some("../../notes.txt".into()),
                duration_secs: None,
            }])
            .unwrap();
        assert_eq!(label(&found[0], None), "[file: \"notes.txt\", 1 page]");
    }
}
