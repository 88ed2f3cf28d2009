//! Images: stored once, content-addressed, in the home's data folder, and
//! referenced from the log.
//!
//! An image lives in `images/<sha256>.<ext>`, written durably once by the
//! content-addressed store ([`crate::store`]), so a stored image survives a
//! power cut before anything that names it is acknowledged. Files are never
//! changed or removed: the append-only log may name them forever.
//!
//! A message names its images in its `data` as `{"images": [ImageRef…]}`;
//! clients see them on the message and its event. A `tool` message may also
//! name, as `recalled`, images it brings back to the model (`zoom(id, 1)` of
//! a message with images) without showing them to anyone again.
//!
//! A model request carries each image fitted to what every model provider
//! takes of an image in a request of that many images ([`fit::for_models`]:
//! smaller sides past 20 images): one that fits goes as stored; a larger
//! one is scaled down and re-encoded once, and the copy kept beside the
//! original in `images/fitted/<sha256>.<tag>-<max bytes>.<ext>`, so later turns send
//! the same bytes without decoding it again. One that cannot be read or
//! fitted is a [`LoadError`]: the request says in its place that it was
//! left out and why, and the turn writes a note saying so.

use crate::log::NewMessage;
use crate::model::Image;
use hearth_protocol::image::fit::{self, Destination, FitError, Fitted};
use hearth_protocol::image::{self, ImageError};
use hearth_protocol::{ErrorCode, ImageRef, ServerFrame};

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The most images one message may carry.
pub const MAX_IMAGES_PER_MESSAGE: usize = 16;

/// How much of a stored file is read to find its size in pixels.
const HEAD_BYTES: u64 = 256 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Refused(#[from] ImageError),
    #[error("`{0}` is not an image's sha256 (64 lowercase hex digits)")]
    BadName(String),
    #[error("there is no stored image {0}; store it with `image_put` first")]
    Missing(String),
    #[error("a message carries at most {MAX_IMAGES_PER_MESSAGE} images, not {0}")]
    TooMany(usize),
    #[error("the image store at {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

impl StoreError {
    /// The error code a client is told.
    pub fn code(&self) -> ErrorCode {
        match self {
            StoreError::Refused(ImageError::TooLarge(_) | ImageError::TooManyPixels { .. }) => {
                ErrorCode::TooLarge
            }
            StoreError::Refused(ImageError::MediaType(_))
            | StoreError::Missing(_)
            | StoreError::TooMany(_) => ErrorCode::Refused,
            StoreError::Refused(_) | StoreError::BadName(_) => ErrorCode::BadFrame,
            StoreError::Io { .. } => ErrorCode::Storage,
        }
    }

    /// What a client is told.
    pub fn client_message(&self) -> String {
        match self {
            StoreError::Io { .. } => format!("the image was not stored: {self}"),
            _ => format!("image refused: {self}"),
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

/// The folder of stored images. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ImageStore {
    dir: PathBuf,
}

impl ImageStore {
    /// The store in `data_dir/images`; the folder is made on first use.
    pub fn new(data_dir: &Path) -> ImageStore {
        ImageStore {
            dir: data_dir.join("images"),
        }
    }

    /// Checks and stores `bytes` of `media_type`; returns once the file is
    /// durable. `name` is kept on the reference for people to see.
    pub async fn put(
        &self,
        media_type: &str,
        bytes: Vec<u8>,
        name: Option<String>,
    ) -> Result<ImageRef, StoreError> {
        image::check(media_type, &bytes)?;
        let store = self.clone();
        let media_type = media_type.to_string();
        tokio::task::spawn_blocking(move || store.put_blocking(&media_type, &bytes, name))
            .await
            .map_err(|err| StoreError::Io {
                path: self.dir.clone(),
                source: io::Error::other(err),
            })?
    }

    fn put_blocking(
        &self,
        media_type: &str,
        bytes: &[u8],
        name: Option<String>,
    ) -> Result<ImageRef, StoreError> {
        let sha256 = crate::store::sha256_hex(bytes);
        // `check` admitted only types with an extension.
        let extension = image::extension(media_type).unwrap_or("bin");
        let file_name = format!("{sha256}.{extension}");
        let (width, height) = image::dimensions(bytes).unzip();
        let stored = ImageRef {
            sha256,
            media_type: media_type.to_string(),
            width,
            height,
            name,
        };
        crate::store::write_once(&self.dir, &file_name, bytes).map_err(|err| StoreError::Io {
            path: err.path,
            source: err.source,
        })?;
        Ok(stored)
    }

    /// Answers `image_put`: checks and stores the payload.
    pub async fn answer_put(&self, media_type: &str, data_base64: &str) -> ServerFrame {
        let stored = match image::decode(media_type, data_base64) {
            Ok(bytes) => self.put(media_type, bytes, None).await,
            Err(err) => Err(err.into()),
        };
        match stored {
            Ok(image) => ServerFrame::ImageStored(image),
            Err(err) => {
                if let StoreError::Io { .. } = err {
                    tracing::error!("{err}");
                }
                err.frame()
            }
        }
    }

    /// Answers `image_get` with the bytes as base64.
    pub async fn answer_get(&self, sha256: &str) -> ServerFrame {
        let store = self.clone();
        let sha256 = sha256.to_string();
        let read = tokio::task::spawn_blocking(move || {
            let image = store.find(&sha256)?;
            let bytes = store.read(&image)?;
            Ok::<_, StoreError>((image, bytes))
        })
        .await;
        match read {
            Ok(Ok((image, bytes))) => ServerFrame::Image {
                sha256: image.sha256,
                media_type: image.media_type,
                data_base64: image::encode(&bytes),
            },
            Ok(Err(err)) => err.frame(),
            Err(err) => StoreError::Io {
                path: self.dir.clone(),
                source: io::Error::other(err),
            }
            .frame(),
        }
    }

    /// The stored images a `submit` names, in order; an unknown one refuses
    /// the whole message.
    pub fn attach(&self, hashes: &[String]) -> Result<Vec<ImageRef>, StoreError> {
        if hashes.len() > MAX_IMAGES_PER_MESSAGE {
            return Err(StoreError::TooMany(hashes.len()));
        }
        hashes.iter().map(|sha256| self.find(sha256)).collect()
    }

    /// The stored image named by `sha256`, if there is one.
    pub fn find(&self, sha256: &str) -> Result<ImageRef, StoreError> {
        let valid = sha256.len() == 64
            && sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !valid {
            return Err(StoreError::BadName(sha256.chars().take(80).collect()));
        }
        for (media_type, extension) in image::MEDIA_TYPES {
            let path = self.dir.join(format!("{sha256}.{extension}"));
            let Ok(file) = fs::File::open(&path) else {
                continue;
            };
            // The header is enough for the size; a JPEG's may follow
            // large metadata.
            let mut head = Vec::new();
            io::Read::read_to_end(&mut io::Read::take(file, HEAD_BYTES), &mut head)
                .map_err(|source| StoreError::Io { path, source })?;
            let (width, height) = image::dimensions(&head).unzip();
            return Ok(ImageRef {
                sha256: sha256.to_string(),
                media_type: media_type.to_string(),
                width,
                height,
                name: None,
            });
        }
        Err(StoreError::Missing(sha256.to_string()))
    }

    /// A stored image's bytes.
    pub fn read(&self, image: &ImageRef) -> Result<Vec<u8>, StoreError> {
        let extension = image::extension(&image.media_type)
            .ok_or_else(|| StoreError::Missing(image.sha256.clone()))?;
        let path = self.dir.join(format!("{}.{extension}", image.sha256));
        fs::read(&path).map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => StoreError::Missing(image.sha256.clone()),
            _ => StoreError::Io { path, source },
        })
    }

    /// An image as a model request carries it, fitted to what the model
    /// providers take of each image in that request (`destination`, from
    /// [`fit::for_models`]); the error says why it cannot go, so the
    /// request goes without it and says so, and one such image never fails
    /// every turn.
    pub fn load(&self, image: &ImageRef, destination: &Destination) -> Result<Image, LoadError> {
        let bytes = self.read(image)?;
        let (media_type, bytes) = self.fitted(image, bytes, destination)?;
        Ok(Image {
            media_type,
            data_base64: image::encode(&bytes),
        })
    }

    /// The bytes a model request carries for `image`: as stored when they
    /// fit, else the copy made to fit `destination` (kept in `fitted/` once
    /// made, named by the destination's tag).
    fn fitted(
        &self,
        image: &ImageRef,
        bytes: Vec<u8>,
        destination: &Destination,
    ) -> Result<(String, Vec<u8>), FitError> {
        let fitted_dir = self.dir.join("fitted");
        // The copy's name says the limits it was made for.
        let tag = format!("{}-{}", destination.file_tag, destination.max_bytes);
        for (media_type, extension) in [("image/jpeg", "jpg"), ("image/png", "png")] {
            let path = fitted_dir.join(format!("{}.{tag}.{extension}", image.sha256));
            if let Ok(copy) = fs::read(&path) {
                return Ok((media_type.to_string(), copy));
            }
        }
        match fit::fit(&image.media_type, &bytes, destination)? {
            Fitted::AsIs => Ok((image.media_type.clone(), bytes)),
            Fitted::Changed {
                media_type, bytes, ..
            } => {
                let extension = image::extension(media_type).unwrap_or("bin");
                let name = format!("{}.{tag}.{extension}", image.sha256);
                if let Err(err) = crate::store::write_once(&fitted_dir, &name, &bytes) {
                    tracing::warn!(
                        "the fitted copy of image {} was not kept: {}",
                        image.label(),
                        err.source
                    );
                }
                Ok((media_type.to_string(), bytes))
            }
        }
    }
}

/// Why an image goes to the model without its pixels.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Its file is gone or cannot be read.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// It cannot be made to fit what the model providers take.
    #[error("{0}")]
    Fit(#[from] FitError),
    /// This agent has no image store (a replay, a test).
    #[error("no image store is open")]
    NoStore,
}

/// A tool message naming the images its call showed (`images`) and those
/// it brought back to the model (`recalled`) beside its other details.
pub fn name_in_tool_message(
    mut message: NewMessage,
    shown: &[ImageRef],
    recalled: &[ImageRef],
) -> NewMessage {
    message.data.images = shown.to_vec();
    message.data.recalled = recalled.to_vec();
    message
}

/// A message's text as its memory line and the model see it: with images,
/// it starts by saying how many (`[2 images] caption`); never the bytes.
pub fn labelled(text: &str, images: usize) -> String {
    match images {
        0 => text.to_string(),
        1 => format!("[1 image] {text}"),
        n => format!("[{n} images] {text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend(3u32.to_be_bytes());
        bytes.extend(2u32.to_be_bytes());
        bytes
    }

    #[tokio::test]
    async fn an_image_is_stored_once_under_its_sha256() {
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::new(dir.path());
        let stored = store
            .put("image/png", png(), Some("a.png".into()))
            .await
            .unwrap();
        assert_eq!(stored.sha256, crate::store::sha256_hex(&png()));
        assert_eq!((stored.width, stored.height), (Some(3), Some(2)));
        let path = dir.path().join(format!("images/{}.png", stored.sha256));
        assert_eq!(fs::read(&path).unwrap(), png());
        let again = store.put("image/png", png(), None).await.unwrap();
        assert_eq!(again.sha256, stored.sha256);
        let files: Vec<_> = fs::read_dir(dir.path().join("images")).unwrap().collect();
        assert_eq!(files.len(), 1, "no temporary file is left behind");

        let found = store.find(&stored.sha256).unwrap();
        assert_eq!(found.media_type, "image/png");
        assert_eq!(store.read(&found).unwrap(), png());
        let loaded = store.load(&found, &fit::MODELS).unwrap();
        assert_eq!(loaded.data_base64, image::encode(&png()));
    }

    #[tokio::test]
    async fn bad_bytes_and_bad_names_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::new(dir.path());
        let err = store.put("image/jpeg", png(), None).await.unwrap_err();
        assert_eq!(err.to_string(), "the bytes are image/png, not image/jpeg");
        assert!(!dir.path().join("images").exists());
        assert!(matches!(
            store.find("../../etc/passwd"),
            Err(StoreError::BadName(_))
        ));
        assert!(matches!(
            store.find(&"0".repeat(64)),
            Err(StoreError::Missing(_))
        ));
    }

    #[test]
    fn a_message_names_its_images_and_labels_count_them() {
        let image = ImageRef {
            sha256: "f".repeat(64),
            media_type: "image/gif".into(),
            width: None,
            height: None,
            name: None,
        };
        let message = name_in_tool_message(
            NewMessage::new(hearth_protocol::Kind::Tool, "a", "t"),
            std::slice::from_ref(&image),
            &[],
        );
        assert_eq!(message.data.images, vec![image]);
        assert!(message.data.recalled.is_empty());
        assert_eq!(labelled("look", 0), "look");
        assert_eq!(labelled("look", 1), "[1 image] look");
        assert_eq!(labelled("look", 2), "[2 images] look");
    }
}
