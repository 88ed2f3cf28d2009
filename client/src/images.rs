//! Images on the client's side: files to attach, storing them in the daemon
//! (`image_put`), fetching a shown one (`image_get`), and the terminal's way
//! of naming attachments in a line.
//!
//! A message's images are stored first, one `image_put` each, and the
//! `submit` then names them by `sha256`; the daemon acknowledges the message
//! only once both are durable.

use crate::connection::{ConnectError, Connection};
use hearth_protocol::image::{self, ImageError, MAX_IMAGE_BYTES};
use hearth_protocol::{ClientFrame, ImageRef, ServerFrame};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ImageFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} has {bytes} bytes; an image may have at most {MAX_IMAGE_BYTES}")]
    TooLarge { path: PathBuf, bytes: u64 },
    #[error("{path} is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage { path: PathBuf },
    #[error("hearthd refused the image: {0}")]
    Refused(String),
    #[error("hearthd answered with an unexpected frame: {0}")]
    Unexpected(String),
    #[error(transparent)]
    Connection(#[from] ConnectError),
}

/// An image ready to store: its type, bytes and what it was called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub media_type: &'static str,
    pub bytes: Vec<u8>,
}

impl Attachment {
    /// Bytes that must be an accepted image; the type comes from their signature.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Attachment, ImageError> {
        let media_type = image::sniff(&bytes).ok_or(ImageError::Mismatch {
            declared: "an image".to_string(),
            found: None,
        })?;
        image::check(media_type, &bytes)?;
        Ok(Attachment { media_type, bytes })
    }

    /// Reads an image file.
    pub fn read(path: &Path) -> Result<Attachment, ImageFileError> {
        let read_error = |source| ImageFileError::Read {
            path: path.to_path_buf(),
            source,
        };
        let bytes = std::fs::metadata(path).map_err(read_error)?.len();
        if bytes > MAX_IMAGE_BYTES as u64 {
            return Err(ImageFileError::TooLarge {
                path: path.to_path_buf(),
                bytes,
            });
        }
        let bytes = std::fs::read(path).map_err(read_error)?;
        Attachment::from_bytes(bytes).map_err(|_| ImageFileError::NotAnImage {
            path: path.to_path_buf(),
        })
    }
}

/// Stores one image in the daemon and returns its reference. Frames that
/// are not the answer (live events, an earlier message's ack) go to
/// `on_other`, in order.
pub async fn put(
    connection: &mut Connection,
    attachment: &Attachment,
    on_other: &mut dyn FnMut(ServerFrame),
) -> Result<ImageRef, ImageFileError> {
    let frame = ClientFrame::ImagePut {
        media_type: attachment.media_type.to_string(),
        data_base64: image::encode(&attachment.bytes),
    };
    connection.send(&frame).await?;
    loop {
        match connection.next().await? {
            None => return Err(ConnectError::Closed.into()),
            Some(ServerFrame::ImageStored(stored)) => return Ok(stored),
            Some(ServerFrame::Error { message, .. }) => {
                return Err(ImageFileError::Refused(message))
            }
            Some(other) => on_other(other),
        }
    }
}

/// Reads and stores image files; returns their hashes for `submit`.
pub async fn put_files(
    connection: &mut Connection,
    paths: &[PathBuf],
    on_other: &mut dyn FnMut(ServerFrame),
) -> Result<Vec<String>, ImageFileError> {
    // Every file is read before any is sent, so a bad one sends nothing.
    let attachments = paths
        .iter()
        .map(|path| Attachment::read(path))
        .collect::<Result<Vec<_>, _>>()?;
    let mut hashes = Vec::with_capacity(attachments.len());
    for attachment in &attachments {
        hashes.push(put(connection, attachment, on_other).await?.sha256);
    }
    Ok(hashes)
}

/// A stored image's bytes and media type. Frames that are not the answer go
/// to `on_other`, in order.
pub async fn get(
    connection: &mut Connection,
    sha256: &str,
    on_other: &mut dyn FnMut(ServerFrame),
) -> Result<Attachment, ImageFileError> {
    let frame = ClientFrame::ImageGet {
        sha256: sha256.to_string(),
    };
    connection.send(&frame).await?;
    loop {
        match connection.next().await? {
            None => return Err(ConnectError::Closed.into()),
            Some(ServerFrame::Image {
                data_base64,
                media_type,
                ..
            }) => {
                let bytes = image::decode(&media_type, &data_base64)
                    .map_err(|err| ImageFileError::Unexpected(err.to_string()))?;
                return Attachment::from_bytes(bytes)
                    .map_err(|err| ImageFileError::Unexpected(err.to_string()));
            }
            Some(ServerFrame::Error { message, .. }) => {
                return Err(ImageFileError::Refused(message))
            }
            Some(other) => on_other(other),
        }
    }
}

/// A terminal line's words and the image files it attaches:
/// `/image PATH words…`, or leading `@PATH` words that name files
/// (`@photo.jpg what is this?`). `exists` says whether a path names a file.
pub fn parse_line(line: &str, exists: impl Fn(&Path) -> bool) -> (String, Vec<PathBuf>) {
    let mut rest = line.trim_start();
    let mut paths = Vec::new();
    if let Some(after) = rest.strip_prefix("/image ") {
        let after = after.trim_start();
        let (path, words) = after.split_once(char::is_whitespace).unwrap_or((after, ""));
        if !path.is_empty() {
            paths.push(PathBuf::from(path));
        }
        rest = words;
    }
    loop {
        let trimmed = rest.trim_start();
        let (word, words) = trimmed
            .split_once(char::is_whitespace)
            .unwrap_or((trimmed, ""));
        match word.strip_prefix('@') {
            Some(path) if !path.is_empty() && exists(Path::new(path)) => {
                paths.push(PathBuf::from(path));
                rest = words;
            }
            _ => break,
        }
    }
    if paths.is_empty() {
        return (line.to_string(), paths);
    }
    (rest.trim().to_string(), paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_its_images_with_slash_image_or_at() {
        let exists = |path: &Path| path.extension().is_some();
        assert_eq!(
            parse_line("/image cat.png what is this?", exists),
            ("what is this?".to_string(), vec![PathBuf::from("cat.png")])
        );
        assert_eq!(
            parse_line("@a.jpg @b.png compare", exists),
            (
                "compare".to_string(),
                vec![PathBuf::from("a.jpg"), PathBuf::from("b.png")]
            )
        );
        assert_eq!(
            parse_line("/image cat.png", exists),
            (String::new(), vec![PathBuf::from("cat.png")])
        );
        // A handle is not a file: the line goes as typed.
        assert_eq!(
            parse_line("@ada said hi", exists),
            ("@ada said hi".to_string(), vec![])
        );
        assert_eq!(
            parse_line("plain words", exists),
            ("plain words".to_string(), vec![])
        );
    }

    #[test]
    fn a_file_must_be_an_image() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("a.png");
        std::fs::write(&text, "not really").unwrap();
        assert!(matches!(
            Attachment::read(&text),
            Err(ImageFileError::NotAnImage { .. })
        ));
        let gif = dir.path().join("b.gif");
        std::fs::write(&gif, b"GIF89a\x01\x00\x01\x00").unwrap();
        assert_eq!(Attachment::read(&gif).unwrap().media_type, "image/gif");
        assert!(matches!(
            Attachment::read(&dir.path().join("none.png")),
            Err(ImageFileError::Read { .. })
        ));
    }
}
