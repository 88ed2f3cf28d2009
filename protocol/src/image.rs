//! Images: what a message carries by content address, and the checks an
//! image's bytes pass before the daemon stores them.
//!
//! A client stores an image with `image_put {media_type, data_base64}` and
//! gets its [`ImageRef`] back; a `submit` then names it by `sha256`. The
//! daemon keeps each image once, under its SHA-256, and a message's images
//! travel as references: events and history carry [`ImageRef`]s, never
//! bytes, and `image_get {sha256}` returns the bytes. Only PNG, JPEG, GIF
//! and WebP are accepted, up to [`MAX_IMAGE_BYTES`], and the bytes must be
//! what the media type says (checked by their signature).
//!
//! [`fit`] fits an image to where it goes: each model provider's and
//! messaging platform's documented size, pixel and format limits.

pub mod fit;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Serialize};

/// The largest image accepted, decoded.
pub const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;

/// The most pixels an accepted image may have, by its header: what a
/// phone's largest camera makes, with room. Checked before anything
/// decodes the image, so a small file whose header claims 30000×30000
/// (a decompression bomb) is refused before a byte is allocated for it.
pub const MAX_PIXELS: u64 = 50_000_000;

/// The largest `image_put` frame: room for [`MAX_IMAGE_BYTES`] as base64
/// (4/3 as many bytes) and the frame around it. Every other frame is held to
/// [`crate::MAX_FRAME_BYTES`].
pub const MAX_IMAGE_FRAME_BYTES: usize = 14 * 1024 * 1024;

/// The media types accepted, with the file extension each is stored under.
pub const MEDIA_TYPES: [(&str, &str); 4] = [
    ("image/png", "png"),
    ("image/jpeg", "jpg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
];

/// One image a message carries: its content address and what it is.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// Lowercase hex SHA-256 of the bytes: the image's name in the store.
    pub sha256: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The size in pixels, when the header says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub height: Option<u32>,
    /// What the image was called where it came from (a file name), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl ImageRef {
    /// How a person is shown the image without its bytes:
    /// `cat.png, 640x480` or the hash's first 12 digits.
    pub fn label(&self) -> String {
        let name = match &self.name {
            Some(name) => name.clone(),
            None => self.sha256.chars().take(12).collect(),
        };
        match (self.width, self.height) {
            (Some(width), Some(height)) => format!("{name}, {width}x{height}"),
            _ => name,
        }
    }
}

/// Why image bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageError {
    /// Not one of [`MEDIA_TYPES`].
    MediaType(String),
    /// `data_base64` is not base64.
    Base64(String),
    Empty,
    /// Over [`MAX_IMAGE_BYTES`], decoded.
    TooLarge(usize),
    /// The bytes are not the declared type (or no image at all).
    Mismatch {
        declared: String,
        found: Option<&'static str>,
    },
    /// The header claims more than [`MAX_PIXELS`].
    TooManyPixels {
        width: u32,
        height: u32,
    },
    /// The signature is right but no header says the image's size (cut
    /// short, or a zero width or height): not a whole image.
    NoHeader(&'static str),
}

impl std::fmt::Display for ImageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let accepted = MEDIA_TYPES.map(|(media_type, _)| media_type).join(", ");
        match self {
            ImageError::MediaType(given) => {
                write!(
                    f,
                    "media type `{given}` is not accepted; send one of {accepted}"
                )
            }
            ImageError::Base64(why) => write!(f, "`data_base64` is not base64: {why}"),
            ImageError::Empty => f.write_str("the image is empty"),
            ImageError::TooLarge(bytes) => write!(
                f,
                "the image has {bytes} bytes, over the limit of {MAX_IMAGE_BYTES}"
            ),
            ImageError::Mismatch {
                declared,
                found: Some(found),
            } => write!(f, "the bytes are {found}, not {declared}"),
            ImageError::Mismatch {
                declared,
                found: None,
            } => write!(f, "the bytes are not an image ({declared} was declared)"),
            ImageError::TooManyPixels { width, height } => write!(
                f,
                "the image is {width}x{height} pixels, over the limit of {MAX_PIXELS} pixels"
            ),
            ImageError::NoHeader(media_type) => write!(
                f,
                "the bytes begin like {media_type} but no header gives a width and height; \
                 the image is cut short or not an image"
            ),
        }
    }
}

impl std::error::Error for ImageError {}

/// The extension an accepted media type is stored under.
pub fn extension(media_type: &str) -> Option<&'static str> {
    MEDIA_TYPES
        .iter()
        .find(|(known, _)| *known == media_type)
        .map(|(_, extension)| *extension)
}

/// The media type the bytes' signature says, if it is an accepted one.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Checks that `bytes` are an accepted image of `media_type`.
pub fn check(media_type: &str, bytes: &[u8]) -> Result<(), ImageError> {
    if extension(media_type).is_none() {
        return Err(ImageError::MediaType(media_type.to_string()));
    }
    if bytes.is_empty() {
        return Err(ImageError::Empty);
    }
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(ImageError::TooLarge(bytes.len()));
    }
    match sniff(bytes) {
        Some(found) if found == media_type => {}
        found => {
            return Err(ImageError::Mismatch {
                declared: media_type.to_string(),
                found,
            })
        }
    }
    // Past the signature: the header must give a size, and the size must fit.
    match dimensions(bytes) {
        Some((width, height)) if u64::from(width) * u64::from(height) > MAX_PIXELS => {
            Err(ImageError::TooManyPixels { width, height })
        }
        Some((width, height)) if width > 0 && height > 0 => Ok(()),
        _ => Err(ImageError::NoHeader(sniff(bytes).unwrap_or("an image"))),
    }
}

/// The bytes of an `image_put` payload, checked: an accepted type, base64,
/// not too large, and bytes of the declared type.
pub fn decode(media_type: &str, data_base64: &str) -> Result<Vec<u8>, ImageError> {
    if extension(media_type).is_none() {
        return Err(ImageError::MediaType(media_type.to_string()));
    }
    // Base64 is 4/3 of the bytes: a payload this long is too large decoded.
    if data_base64.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
        return Err(ImageError::TooLarge(data_base64.len() / 4 * 3));
    }
    let bytes = STANDARD
        .decode(data_base64.trim())
        .map_err(|err| ImageError::Base64(err.to_string()))?;
    check(media_type, &bytes)?;
    Ok(bytes)
}

/// Bytes as standard base64, as frames and model requests carry them.
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Width and height in pixels from the image's header, when it says them.
pub fn dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    let be16 = |at: usize| {
        Some(u32::from(u16::from_be_bytes([
            *bytes.get(at)?,
            *bytes.get(at + 1)?,
        ])))
    };
    let le16 = |at: usize| {
        Some(u32::from(u16::from_le_bytes([
            *bytes.get(at)?,
            *bytes.get(at + 1)?,
        ])))
    };
    let le24 = |at: usize| {
        Some(u32::from_le_bytes([
            *bytes.get(at)?,
            *bytes.get(at + 1)?,
            *bytes.get(at + 2)?,
            0,
        ]))
    };
    let be32 = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    match sniff(bytes)? {
        // IHDR is always the first chunk, 13 bytes long.
        "image/png" => (bytes.get(8..16)? == b"\0\0\0\x0dIHDR")
            .then_some(())
            .and_then(|()| Some((be32(16)?, be32(20)?))),
        "image/gif" => Some((le16(6)?, le16(8)?)),
        "image/webp" => match bytes.get(12..16)? {
            b"VP8X" => Some((le24(24)? + 1, le24(27)? + 1)),
            b"VP8L" => {
                let bits = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
                Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
            }
            b"VP8 " => Some((le16(26)? & 0x3FFF, le16(28)? & 0x3FFF)),
            _ => None,
        },
        // JPEG: walk the segments to the first start-of-frame.
        _ => {
            let mut at = 2;
            loop {
                if *bytes.get(at)? != 0xFF {
                    return None;
                }
                let marker = *bytes.get(at + 1)?;
                let length = be16(at + 2)? as usize;
                let start_of_frame =
                    matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
                if start_of_frame {
                    return Some((be16(at + 7)?, be16(at + 5)?));
                }
                at += 2 + length;
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 2x3 PNG's first bytes: signature and IHDR.
    pub fn png(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend(width.to_be_bytes());
        bytes.extend(height.to_be_bytes());
        bytes.extend([8, 6, 0, 0, 0]);
        bytes
    }

    /// Issue 18: a 30000×30000 header is refused by its header alone.
    #[test]
    fn a_header_claiming_too_many_pixels_is_refused() {
        assert_eq!(
            check("image/png", &png(30_000, 30_000)),
            Err(ImageError::TooManyPixels {
                width: 30_000,
                height: 30_000
            })
        );
        assert_eq!(check("image/png", &png(8000, 6000)), Ok(()));
        let said = check("image/png", &png(30_000, 30_000))
            .unwrap_err()
            .to_string();
        assert!(said.contains("30000x30000"), "{said}");
    }

    /// Issue 18: the signature alone is not an image; the header must give
    /// a size.
    #[test]
    fn an_image_without_a_readable_header_is_refused() {
        let signature_only = b"\x89PNG\r\n\x1a\n".to_vec();
        assert_eq!(
            check("image/png", &signature_only),
            Err(ImageError::NoHeader("image/png"))
        );
        let mut wrong_chunk = png(2, 3);
        wrong_chunk[12..16].copy_from_slice(b"tEXt");
        assert!(check("image/png", &wrong_chunk).is_err());
        assert!(check("image/png", &png(0, 3)).is_err());
        let jpeg_without_frame = b"\xFF\xD8\xFF\xE0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0";
        assert!(check("image/jpeg", jpeg_without_frame).is_err());
        assert!(check("image/gif", b"GIF89a\x01\0").is_err());
        let said = check("image/png", &signature_only).unwrap_err().to_string();
        assert!(said.contains("cut short"), "{said}");
    }

    #[test]
    fn the_signature_must_match_the_declared_type() {
        assert_eq!(check("image/png", &png(2, 3)), Ok(()));
        assert_eq!(
            check("image/jpeg", &png(2, 3)),
            Err(ImageError::Mismatch {
                declared: "image/jpeg".into(),
                found: Some("image/png")
            })
        );
        let err = check("image/png", b"hello").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the bytes are not an image (image/png was declared)"
        );
        let err = check("application/pdf", b"%PDF").unwrap_err();
        assert!(err
            .to_string()
            .contains("image/png, image/jpeg, image/gif, image/webp"));
        assert_eq!(check("image/gif", b""), Err(ImageError::Empty));
    }

    #[test]
    fn payloads_decode_only_when_base64_and_small_enough() {
        let bytes = png(2, 3);
        assert_eq!(decode("image/png", &encode(&bytes)), Ok(bytes));
        assert!(matches!(
            decode("image/png", "not base64!"),
            Err(ImageError::Base64(_))
        ));
        let mut big = png(2, 3);
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        assert_eq!(
            decode("image/png", &encode(&big)),
            Err(ImageError::TooLarge(MAX_IMAGE_BYTES + 1))
        );
    }

    #[test]
    fn dimensions_come_from_the_header() {
        assert_eq!(dimensions(&png(640, 480)), Some((640, 480)));
        let gif = b"GIF89a\x20\x00\x10\x00";
        assert_eq!(dimensions(gif), Some((32, 16)));
        // SOI, an APP0 segment of 4 bytes, then SOF0 with height 7, width 9.
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0, 0xFF, 0xC0, 0, 11, 8, 0, 7, 0, 9,
        ];
        assert_eq!(dimensions(&jpeg), Some((9, 7)));
        assert_eq!(dimensions(b"nothing"), None);
        let label = ImageRef {
            sha256: "ab".repeat(32),
            media_type: "image/png".into(),
            width: Some(4),
            height: Some(5),
            name: None,
        }
        .label();
        assert_eq!(label, "abababababab, 4x5");
    }
}
