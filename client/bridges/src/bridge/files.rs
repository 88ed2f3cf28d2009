//! A voice note or a document a person sent, on its way into the daemon:
//! the platform's media type made one hearth knows, the bytes stored with
//! `media_put`, and, when that fails, a note that says why while the
//! message still goes in with its placeholder. Every bridge does the same.

use super::link::{self, LinkError};
use hearth_client::media::{self, MediaFileError};
use hearth_client::Connection;
use hearth_protocol::media::{kind_of, type_of_name};
use hearth_protocol::MediaAttachment;

/// A platform's media type as hearth names it: parameters dropped
/// (`audio/ogg; codecs=opus` is `audio/ogg`), the usual aliases mapped
/// (`audio/x-m4a`, `audio/mp3`, `audio/x-wav`), else the file name's
/// extension; `None` for a type hearth does not read.
pub fn media_type(platform: Option<&str>, name: Option<&str>) -> Option<&'static str> {
    let bare = platform
        .map(|mime| {
            mime.split(';')
                .next()
                .unwrap_or(mime)
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let alias = match bare.as_str() {
        "audio/opus" | "audio/x-opus+ogg" => "audio/ogg",
        "audio/mp3" | "audio/x-mp3" | "audio/mpeg3" => "audio/mpeg",
        "audio/x-m4a" | "audio/aac" | "audio/m4a" => "audio/mp4",
        "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => "audio/wav",
        "audio/x-flac" => "audio/flac",
        "text/x-markdown" => "text/markdown",
        other => other,
    };
    hearth_protocol::media::AUDIO_TYPES
        .iter()
        .chain(hearth_protocol::media::DOCUMENT_TYPES.iter())
        .map(|(known, _)| *known)
        .find(|known| *known == alias)
        .or_else(|| name.and_then(type_of_name))
}

/// Stores a file in the daemon; `Ok(Err(why))` when it was refused or
/// could not be stored, for the caller's note. Only a lost connection is
/// an error.
pub async fn store(
    connection: &mut Connection,
    media_type: &str,
    bytes: &[u8],
    name: Option<String>,
    duration_secs: Option<u32>,
) -> Result<Result<MediaAttachment, String>, LinkError> {
    if kind_of(media_type).is_none() {
        return Ok(Err(format!("hearth does not read {media_type} files")));
    }
    match media::put(
        connection,
        media_type,
        bytes,
        name,
        duration_secs,
        &mut |_| {},
    )
    .await
    {
        Ok(stored) => Ok(Ok(stored)),
        Err(MediaFileError::Connection(err)) => Err(err.into()),
        Err(err) => Ok(Err(err.to_string())),
    }
}

/// Says in a note that the file of message `key` was not attached.
pub async fn not_attached(
    connection: &mut Connection,
    source: &str,
    key: &str,
    why: &str,
) -> Result<(), LinkError> {
    let note = format!("{source}: the file of message {key} was not attached: {why}");
    link::note(connection, source, note, &mut |_| {}).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_types_become_hearths() {
        assert_eq!(
            media_type(Some("audio/ogg; codecs=opus"), None),
            Some("audio/ogg")
        );
        assert_eq!(media_type(Some("audio/x-m4a"), None), Some("audio/mp4"));
        assert_eq!(
            media_type(Some("application/pdf"), Some("a.pdf")),
            Some("application/pdf")
        );
        assert_eq!(
            media_type(Some("application/octet-stream"), Some("notes.md")),
            Some("text/markdown")
        );
        assert_eq!(media_type(Some("application/zip"), Some("a.zip")), None);
        assert_eq!(media_type(None, None), None);
    }
}
