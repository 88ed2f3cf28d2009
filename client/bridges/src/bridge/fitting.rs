//! An image a bridge sends, fitted to the platform first (pure but for the
//! thread it runs on): as a photo when it fits or a copy made to fit does
//! (see [`hearth_protocol::image::fit`]), as a document when no copy can be
//! a photo (a strip whose sides are too far apart), and refused, with the
//! reason in words, when it cannot be read at all.

use hearth_client::images::Attachment;
use hearth_protocol::image::fit::{fit, Destination, FitError, Fitted};

/// How an image goes out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outgoing {
    /// As a photo: the image itself or a copy made to fit.
    Photo(Attachment),
    /// As a file, unchanged: no photo can be made of it, and why.
    Document(Attachment, String),
    /// Not at all, and why.
    Refused(String),
}

/// What to send for `attachment` to `destination`. Scaling a large image
/// takes a while, so it runs off the async threads.
pub async fn prepare(attachment: &Attachment, destination: &'static Destination) -> Outgoing {
    let original = attachment.clone();
    let fitted = tokio::task::spawn_blocking(move || {
        let fitted = fit(original.media_type, &original.bytes, destination);
        (original, fitted)
    })
    .await;
    match fitted {
        Ok((original, Ok(Fitted::AsIs))) => Outgoing::Photo(original),
        Ok((
            _,
            Ok(Fitted::Changed {
                media_type, bytes, ..
            }),
        )) => Outgoing::Photo(Attachment { media_type, bytes }),
        Ok((original, Err(FitError::Unfit(why)))) => Outgoing::Document(original, why),
        Ok((_, Err(err))) => Outgoing::Refused(err.to_string()),
        Err(err) => Outgoing::Refused(format!("fitting it failed: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::image::fit::{TELEGRAM_PHOTO, WHATSAPP_IMAGE};

    fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend(width.to_be_bytes());
        bytes.extend(height.to_be_bytes());
        bytes.extend([8, 2, 0, 0, 0]);
        bytes
    }

    #[tokio::test]
    async fn a_photo_a_document_or_a_refusal() {
        let small = Attachment {
            media_type: "image/png",
            bytes: png_header(40, 30),
        };
        assert_eq!(
            prepare(&small, &TELEGRAM_PHOTO).await,
            Outgoing::Photo(small.clone())
        );
        let strip = Attachment {
            media_type: "image/png",
            bytes: png_header(4200, 100),
        };
        assert!(matches!(
            prepare(&strip, &TELEGRAM_PHOTO).await,
            Outgoing::Document(_, why) if why.contains("more than 20 times")
        ));
        // A GIF WhatsApp does not take, that cannot be read to convert it.
        let broken = Attachment {
            media_type: "image/gif",
            bytes: b"GIF89a\x10\x00\x10\x00broken".to_vec(),
        };
        assert!(matches!(
            prepare(&broken, &WHATSAPP_IMAGE).await,
            Outgoing::Refused(why) if why.contains("cannot be read")
        ));
    }
}
