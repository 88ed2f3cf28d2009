//! Frames in and out of JSON text: decoding a client's frame with the
//! reasons it can be refused (not JSON, an unknown type, too large), and
//! encoding the daemon's.

use super::unique;
use super::*;

/// Why a text frame could not be read as a [`ClientFrame`].
#[derive(Debug, Clone, PartialEq)]
pub struct FrameError {
    pub code: ErrorCode,
    pub message: String,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FrameError {}

impl ClientFrame {
    /// Reads one text frame, telling apart the ways it can be wrong.
    pub fn decode(text: &str) -> Result<ClientFrame, FrameError> {
        let too_large = |limit: usize| FrameError {
            code: ErrorCode::TooLarge,
            message: format!(
                "frame of {} bytes is over the limit of {limit} bytes",
                text.len()
            ),
        };
        if text.len() > media::MAX_MEDIA_FRAME_BYTES {
            return Err(too_large(media::MAX_MEDIA_FRAME_BYTES));
        }
        // Each key once: two `text` keys would otherwise pass as the last.
        let value = unique::parse(text).map_err(|err| FrameError {
            code: ErrorCode::BadFrame,
            message: format!("frame is not JSON with each key once: {err}"),
        })?;
        let kind = value
            .get("type")
            .and_then(|t| t.as_str())
            .map(str::to_string)
            .ok_or(FrameError {
                code: ErrorCode::BadFrame,
                message: "frame is not a JSON object with a string `type`".to_string(),
            })?;
        // Only `image_put` and `media_put` may be larger than the usual limit.
        let limit = match kind.as_str() {
            "image_put" => image::MAX_IMAGE_FRAME_BYTES,
            "media_put" => media::MAX_MEDIA_FRAME_BYTES,
            _ => MAX_FRAME_BYTES,
        };
        if text.len() > limit {
            return Err(too_large(limit));
        }
        if !client_frame_types().contains(&kind.as_str()) {
            return Err(FrameError {
                code: ErrorCode::UnknownType,
                message: format!(
                    "unknown frame type `{kind}`; expected one of {}",
                    client_frame_types().join(", ")
                ),
            });
        }
        serde_json::from_value(value).map_err(|err| FrameError {
            code: ErrorCode::BadFrame,
            message: format!("bad `{kind}` frame: {err}"),
        })
    }

    pub fn encode(&self) -> String {
        // Serializing these plain structs cannot fail: no maps with non-string keys.
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl ServerFrame {
    pub fn encode(&self) -> String {
        // As above: plain data, always serializable.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn decode(text: &str) -> Result<ServerFrame, serde_json::Error> {
        serde_json::from_str(text)
    }
}
