//! Audio and documents on the client's side: files to attach (a voice
//! note from a bridge, `--file` on `hearth send`, `/file` in the terminal),
//! stored in the daemon with `media_put` before the `submit` that names
//! them.

use crate::connection::{ConnectError, Connection};
use hearth_protocol::media::{self, MAX_MEDIA_BYTES};
use hearth_protocol::{image, ClientFrame, MediaAttachment, MediaRef, ServerFrame};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum MediaFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} has {bytes} bytes; a file may have at most {MAX_MEDIA_BYTES} (20 MB)")]
    TooLarge { path: PathBuf, bytes: u64 },
    #[error("{path} is not a file hearth reads: attach a PDF, a text file (.txt, .md, .csv) or audio (.ogg, .mp3, .m4a, .wav, .webm, .flac)")]
    UnknownType { path: PathBuf },
    #[error("hearthd refused the file: {0}")]
    Refused(String),
    #[error("hearthd answered with an unexpected frame: {0}")]
    Unexpected(String),
    #[error(transparent)]
    Connection(#[from] ConnectError),
}

/// Stores `bytes` of `media_type` in the daemon and returns the reference
/// a `submit` names. `name` and `duration_secs` are what the platform said.
/// Frames that are not the answer go to `on_other`, in order.
pub async fn put(
    connection: &mut Connection,
    media_type: &str,
    bytes: &[u8],
    name: Option<String>,
    duration_secs: Option<u32>,
    on_other: &mut dyn FnMut(ServerFrame),
) -> Result<MediaAttachment, MediaFileError> {
    let frame = ClientFrame::MediaPut {
        media_type: media_type.to_string(),
        data_base64: image::encode(bytes),
        name: name.clone(),
        duration_secs,
    };
    connection.send(&frame).await?;
    loop {
        match connection.next().await? {
            None => return Err(ConnectError::Closed.into()),
            Some(ServerFrame::MediaStored(stored)) => return Ok(attachment(*stored, name)),
            Some(ServerFrame::Error { message, .. }) => {
                return Err(MediaFileError::Refused(message))
            }
            Some(other) => on_other(other),
        }
    }
}

fn attachment(stored: MediaRef, name: Option<String>) -> MediaAttachment {
    MediaAttachment {
        name: name.or(stored.name.clone()),
        ..stored.attachment()
    }
}

/// Reads a file to attach: its type from its name's extension, its size
/// checked before it is read.
pub fn read(path: &Path) -> Result<(&'static str, Vec<u8>), MediaFileError> {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().to_string())
        .unwrap_or_default();
    let media_type = media::type_of_name(&name).ok_or_else(|| MediaFileError::UnknownType {
        path: path.to_path_buf(),
    })?;
    let read_error = |source| MediaFileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::metadata(path).map_err(read_error)?.len();
    if bytes > MAX_MEDIA_BYTES as u64 {
        return Err(MediaFileError::TooLarge {
            path: path.to_path_buf(),
            bytes,
        });
    }
    Ok((media_type, std::fs::read(path).map_err(read_error)?))
}

/// Reads and stores files; returns what a `submit` names. Every file is
/// read before any is sent, so a bad one sends nothing.
pub async fn put_files(
    connection: &mut Connection,
    paths: &[PathBuf],
    on_other: &mut dyn FnMut(ServerFrame),
) -> Result<Vec<MediaAttachment>, MediaFileError> {
    let files = paths
        .iter()
        .map(|path| read(path).map(|file| (path, file)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut attached = Vec::with_capacity(files.len());
    for (path, (media_type, bytes)) in files {
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().to_string());
        attached.push(put(connection, media_type, &bytes, name, None, on_other).await?);
    }
    Ok(attached)
}

/// A terminal line that attaches a file: `/file PATH words…` gives the
/// path and the words; any other line gives none.
pub fn parse_line(line: &str) -> Option<(PathBuf, String)> {
    let after = line.trim_start().strip_prefix("/file ")?.trim_start();
    let (path, words) = after.split_once(char::is_whitespace).unwrap_or((after, ""));
    (!path.is_empty()).then(|| (PathBuf::from(path), words.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_attaches_a_file_with_slash_file() {
        assert_eq!(
            parse_line("/file lease.pdf what do I owe?"),
            Some((PathBuf::from("lease.pdf"), "what do I owe?".to_string()))
        );
        assert_eq!(
            parse_line("/file notes.md"),
            Some((PathBuf::from("notes.md"), String::new()))
        );
        assert_eq!(parse_line("/file "), None);
        assert_eq!(parse_line("hello"), None);
    }

    #[test]
    fn a_file_must_be_of_a_known_type() {
        let dir = tempfile::tempdir().unwrap();
        let zip = dir.path().join("a.zip");
        std::fs::write(&zip, b"PK").unwrap();
        assert!(matches!(
            read(&zip),
            Err(MediaFileError::UnknownType { .. })
        ));
        let notes = dir.path().join("notes.md");
        std::fs::write(&notes, b"# hi").unwrap();
        assert_eq!(read(&notes).unwrap(), ("text/markdown", b"# hi".to_vec()));
    }
}
