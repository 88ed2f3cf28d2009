//! Fitting an image to where it goes. Each destination documents what it
//! takes: Anthropic's Messages API refuses a base64 image over 5 MB (so
//! about 3.75 MB of bytes) or over 8000 pixels on a side, and over 2000
//! pixels on a side in a request of more than 20 images; OpenAI takes
//! PNG, JPEG, WebP and non-animated GIF up to 20 MB; Telegram's `sendPhoto`
//! takes up to 10 MB with width plus height at most 10,000 and a side ratio
//! of at most 20; a WhatsApp image message takes only JPEG and PNG up to
//! 5 MB. [`fit`] leaves an image that fits as it is (read from its header,
//! without decoding it), and otherwise decodes it, under limits that refuse
//! a decompression bomb before its pixels are allocated, scales it down
//! and re-encodes it (PNG when it has transparency, else JPEG) until it
//! fits. The original stays in the image store; only the copy sent is
//! changed. What cannot be made to fit as a photo (a side ratio no scaling
//! changes, bytes no size brings under the limit) is [`FitError::Unfit`],
//! so a bridge can send it as a document instead.

use super::{dimensions, sniff, MAX_PIXELS};
use image::codecs::gif::GifDecoder;
use image::codecs::jpeg::JpegEncoder;
use image::{AnimationDecoder, DynamicImage, ImageFormat, ImageReader, Limits};
use std::io::Cursor;

/// What one destination takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Destination {
    /// For messages: `Anthropic`, `a Telegram photo`.
    pub name: &'static str,
    /// The largest file, in bytes.
    pub max_bytes: usize,
    /// The longest side, in pixels.
    pub max_side: Option<u32>,
    /// The largest width plus height, in pixels.
    pub max_side_sum: Option<u32>,
    /// The largest ratio of the long side to the short one.
    pub max_ratio: Option<u32>,
    /// The media types it takes.
    pub media_types: &'static [&'static str],
    /// Whether a GIF must be a single frame.
    pub still_gif: bool,
    /// Names the copies fitted to it where they are kept (`models`).
    pub file_tag: &'static str,
}

/// Anthropic Messages: 5 MB of base64 (3/4 of it in bytes), 8000 px a side.
pub const ANTHROPIC: Destination = Destination {
    name: "Anthropic",
    max_bytes: 5_000_000 / 4 * 3,
    max_side: Some(8000),
    max_side_sum: None,
    max_ratio: None,
    media_types: &["image/jpeg", "image/png", "image/gif", "image/webp"],
    still_gif: false,
    file_tag: "anthropic",
};

/// OpenAI (Chat Completions and Responses): 20 MB, no animated GIF.
pub const OPENAI: Destination = Destination {
    name: "OpenAI",
    max_bytes: 20_000_000,
    max_side: None,
    max_side_sum: None,
    max_ratio: None,
    media_types: &["image/png", "image/jpeg", "image/webp", "image/gif"],
    still_gif: true,
    file_tag: "openai",
};

/// What every model provider hearth speaks takes: Anthropic's limits
/// (the tighter) and OpenAI's still GIFs. A request's images are fitted to
/// it once, whichever provider (or fallback) the request goes to, so the
/// bytes, and a prompt cache's prefix, stay the same across providers.
pub const MODELS: Destination = Destination {
    name: "the model",
    max_bytes: ANTHROPIC.max_bytes,
    max_side: ANTHROPIC.max_side,
    max_side_sum: None,
    max_ratio: None,
    media_types: ANTHROPIC.media_types,
    still_gif: true,
    file_tag: "models",
};

/// How many images a request may carry before Anthropic's smaller limit
/// on their sides applies.
///
/// Anthropic's vision guide ("General limits", platform.claude.com/docs/en/
/// build-with-claude/vision, read 2026-12-01): "The maximal dimensions per
/// image are 8000x8000 px. If you submit more than 20 images in one API
/// request, this limit is reduced to 2000x2000 px." The API refuses such a
/// request whole ("At least one of the image dimensions exceed max allowed
/// size for many-image requests: 2000 pixels").
pub const MANY_IMAGES: usize = 20;

/// Anthropic Messages in a request of more than [`MANY_IMAGES`] images:
/// 2000 px a side.
pub const ANTHROPIC_MANY: Destination = Destination {
    name: "Anthropic in a request of more than 20 images",
    max_side: Some(2000),
    file_tag: "anthropic-many",
    ..ANTHROPIC
};

/// [`MODELS`] in a request of more than [`MANY_IMAGES`] images.
pub const MODELS_MANY: Destination = Destination {
    name: "the model in a request of more than 20 images",
    max_side: ANTHROPIC_MANY.max_side,
    file_tag: "models-many",
    ..MODELS
};

/// The most bytes a request's images may take together: 24 MB of base64.
/// Anthropic refuses a request over 32 MB (the vision guide above: "request
/// size limits (32 MB for standard endpoints ...)"), OpenAI one over 50 MB;
/// the rest is left to the conversation's text.
pub const MAX_REQUEST_IMAGE_BYTES: usize = 24_000_000 / 4 * 3;

/// What the model providers take of each image in a request carrying
/// `images` images in all: smaller sides past [`MANY_IMAGES`], and a share
/// of [`MAX_REQUEST_IMAGE_BYTES`] each once their own limit would add up
/// to more. The share is that of the next power of two of images, so it
/// changes (and images already sent are fitted anew, moving the prompt
/// cache's prefix) only at 5, 9, 17… images, not with each one.
pub fn for_models(images: usize) -> Destination {
    let base = if images > MANY_IMAGES {
        MODELS_MANY
    } else {
        MODELS
    };
    let shares = images.max(1).next_power_of_two();
    Destination {
        max_bytes: base.max_bytes.min(MAX_REQUEST_IMAGE_BYTES / shares),
        ..base
    }
}

/// Telegram `sendPhoto`: 10 MB, width + height at most 10,000, ratio at most 20.
pub const TELEGRAM_PHOTO: Destination = Destination {
    name: "a Telegram photo",
    max_bytes: 10_000_000,
    max_side: None,
    max_side_sum: Some(10_000),
    max_ratio: Some(20),
    media_types: &["image/jpeg", "image/png", "image/webp"],
    still_gif: false,
    file_tag: "telegram-photo",
};

/// A WhatsApp image message: JPEG or PNG, 5 MB.
pub const WHATSAPP_IMAGE: Destination = Destination {
    name: "a WhatsApp image",
    max_bytes: 5_000_000,
    max_side: None,
    max_side_sum: None,
    max_ratio: None,
    media_types: &["image/jpeg", "image/png"],
    still_gif: false,
    file_tag: "whatsapp-image",
};

/// The most a decode may allocate: every pixel of the largest accepted
/// image at four bytes, and some room.
const MAX_DECODE_BYTES: u64 = MAX_PIXELS * 4 + 16 * 1024 * 1024;

/// How many times the size is cut before giving up.
const MAX_TRIES: usize = 8;

/// The quality JPEG copies start at.
const JPEG_QUALITY: u8 = 85;

/// An image as it goes to a destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fitted {
    /// It fits as it is.
    AsIs,
    /// A copy that fits: its media type, bytes and size.
    Changed {
        media_type: &'static str,
        bytes: Vec<u8>,
        width: u32,
        height: u32,
    },
}

/// Why an image cannot go to a destination as an image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FitError {
    /// No scaling makes it fit (a side ratio over the limit, or bytes that
    /// stay too many): it can go as a file instead.
    #[error("{0}")]
    Unfit(String),
    /// The bytes are no image this build reads, or a broken one.
    #[error("the image cannot be read: {0}")]
    Unreadable(String),
    /// Decoding it would take more memory than any accepted image needs:
    /// a decompression bomb, refused before its pixels are allocated.
    #[error("the image is too large to decode ({0}); it was not opened")]
    TooLargeToDecode(String),
}

/// The image `bytes` of `media_type` as `destination` takes it.
pub fn fit(media_type: &str, bytes: &[u8], destination: &Destination) -> Result<Fitted, FitError> {
    let media_type = sniff(bytes).unwrap_or(media_type);
    let size = dimensions(bytes);
    if let Some((width, height)) = size {
        check_ratio(width, height, destination)?;
    }
    let taken = destination.media_types.contains(&media_type)
        && !(destination.still_gif && media_type == "image/gif" && animated(bytes)?);
    let fits = |width: u32, height: u32| {
        destination
            .max_side
            .is_none_or(|max| width.max(height) <= max)
            && destination
                .max_side_sum
                .is_none_or(|max| width.saturating_add(height) <= max)
    };
    if taken && bytes.len() <= destination.max_bytes && size.is_some_and(|(w, h)| fits(w, h)) {
        return Ok(Fitted::AsIs);
    }
    let image = decode(bytes)?;
    let (width, height) = (image.width(), image.height());
    check_ratio(width, height, destination)?;
    let mut scale = scale_to_fit(width, height, destination);
    let alpha = image.color().has_alpha();
    for _ in 0..MAX_TRIES {
        let w = ((f64::from(width) * scale).floor() as u32).max(1);
        let h = ((f64::from(height) * scale).floor() as u32).max(1);
        let scaled = if (w, h) == (width, height) {
            image.clone()
        } else {
            image.resize_exact(w, h, image::imageops::FilterType::Triangle)
        };
        let (media_type, encoded) = encode(&scaled, alpha, destination)?;
        if encoded.len() <= destination.max_bytes {
            return Ok(Fitted::Changed {
                media_type,
                bytes: encoded,
                width: w,
                height: h,
            });
        }
        // Bytes go with the area: aim under the limit, and a little more.
        let over = encoded.len() as f64 / destination.max_bytes as f64;
        scale *= (1.0 / over).sqrt().min(0.9) * 0.95;
    }
    Err(FitError::Unfit(format!(
        "no smaller copy of it fits in {} bytes for {}",
        destination.max_bytes, destination.name
    )))
}

fn check_ratio(width: u32, height: u32, destination: &Destination) -> Result<(), FitError> {
    let (long, short) = (width.max(height), width.min(height).max(1));
    match destination.max_ratio {
        Some(max) if long > short.saturating_mul(max) => Err(FitError::Unfit(format!(
            "its sides ({width}x{height}) are more than {max} times apart, which {} does not take",
            destination.name
        ))),
        _ => Ok(()),
    }
}

/// The factor (at most 1) that brings the sides within the destination's.
fn scale_to_fit(width: u32, height: u32, destination: &Destination) -> f64 {
    let mut scale: f64 = 1.0;
    if let Some(max) = destination.max_side {
        scale = scale.min(f64::from(max) / f64::from(width.max(height)));
    }
    if let Some(max) = destination.max_side_sum {
        scale = scale.min(f64::from(max) / (f64::from(width) + f64::from(height)));
    }
    scale
}

fn limits() -> Limits {
    let mut limits = Limits::default();
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    limits
}

/// Decodes under [`limits`]: a header claiming more pixels than any
/// accepted image has is refused before anything is allocated.
fn decode(bytes: &[u8]) -> Result<DynamicImage, FitError> {
    if let Some((width, height)) = dimensions(bytes) {
        let pixels = u64::from(width) * u64::from(height);
        if pixels > MAX_PIXELS {
            return Err(FitError::TooLargeToDecode(format!(
                "{width}x{height} is over {MAX_PIXELS} pixels"
            )));
        }
    }
    let mut reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|err| FitError::Unreadable(err.to_string()))?;
    reader.limits(limits());
    reader.decode().map_err(|err| match err {
        image::ImageError::Limits(limit) => FitError::TooLargeToDecode(limit.to_string()),
        other => FitError::Unreadable(other.to_string()),
    })
}

/// Whether a GIF has more than one frame.
fn animated(bytes: &[u8]) -> Result<bool, FitError> {
    let mut decoder =
        GifDecoder::new(Cursor::new(bytes)).map_err(|err| FitError::Unreadable(err.to_string()))?;
    image::ImageDecoder::set_limits(&mut decoder, limits())
        .map_err(|err| FitError::TooLargeToDecode(err.to_string()))?;
    Ok(decoder.into_frames().take(2).count() > 1)
}

/// PNG for an image with transparency (when the destination takes PNG),
/// else JPEG.
fn encode(
    image: &DynamicImage,
    alpha: bool,
    destination: &Destination,
) -> Result<(&'static str, Vec<u8>), FitError> {
    let mut out = Cursor::new(Vec::new());
    let failed = |err: image::ImageError| FitError::Unreadable(err.to_string());
    if alpha && destination.media_types.contains(&"image/png") {
        image.write_to(&mut out, ImageFormat::Png).map_err(failed)?;
        return Ok(("image/png", out.into_inner()));
    }
    let rgb = image.to_rgb8();
    JpegEncoder::new_with_quality(&mut out, JPEG_QUALITY)
        .encode_image(&rgb)
        .map_err(failed)?;
    Ok(("image/jpeg", out.into_inner()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageBuffer, Rgb, Rgba};

    /// A generated PNG of `width`x`height`: noise, so it does not compress
    /// away, or a flat colour.
    fn png(width: u32, height: u32, noisy: bool) -> Vec<u8> {
        let mut seed: u32 = 7;
        let image = ImageBuffer::from_fn(width, height, |_, _| {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let v = if noisy { (seed >> 16) as u8 } else { 128 };
            Rgb([v, v.wrapping_mul(3), v.wrapping_add(40)])
        });
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(image)
            .write_to(&mut out, ImageFormat::Png)
            .unwrap();
        out.into_inner()
    }

    fn size_of(fitted: &Fitted) -> (u32, u32) {
        match fitted {
            Fitted::Changed { width, height, .. } => (*width, *height),
            Fitted::AsIs => panic!("expected a changed copy"),
        }
    }

    #[test]
    fn an_image_that_fits_is_left_as_it_is_without_decoding() {
        let small = png(40, 30, true);
        for destination in [ANTHROPIC, OPENAI, MODELS, TELEGRAM_PHOTO, WHATSAPP_IMAGE] {
            assert_eq!(fit("image/png", &small, &destination), Ok(Fitted::AsIs));
        }
        // A header alone is not decoded when it fits.
        let header = &small[..33];
        assert_eq!(fit("image/png", header, &ANTHROPIC), Ok(Fitted::AsIs));
    }

    #[test]
    fn a_side_over_the_limit_is_scaled_down() {
        let wide = png(9000, 40, false);
        let fitted = fit("image/png", &wide, &ANTHROPIC).unwrap();
        assert_eq!(size_of(&fitted), (8000, 35));
        let Fitted::Changed {
            bytes, media_type, ..
        } = &fitted
        else {
            unreachable!()
        };
        assert_eq!(*media_type, "image/jpeg");
        assert_eq!(dimensions(bytes), Some((8000, 35)));

        let big = png(9000, 1200, false);
        let (w, h) = size_of(&fit("image/png", &big, &TELEGRAM_PHOTO).unwrap());
        assert!(w + h <= 10_000 && w > 8500, "{w}x{h}");
    }

    #[test]
    fn a_request_of_more_than_twenty_images_takes_sides_of_2000() {
        assert_eq!(for_models(0), MODELS);
        assert_eq!(for_models(4), MODELS);
        assert_eq!(for_models(MANY_IMAGES).max_side, MODELS.max_side);
        assert_eq!(for_models(MANY_IMAGES + 1).max_side, MODELS_MANY.max_side);
        let wide = png(3000, 40, false);
        assert_eq!(fit("image/png", &wide, &for_models(20)), Ok(Fitted::AsIs));
        let fitted = fit("image/png", &wide, &for_models(21)).unwrap();
        assert_eq!(size_of(&fitted), (2000, 26));
        assert_eq!(
            size_of(&fit("image/png", &wide, &ANTHROPIC_MANY).unwrap()).0,
            2000
        );
        assert_ne!(
            MODELS.file_tag, MODELS_MANY.file_tag,
            "their copies kept apart"
        );
    }

    #[test]
    fn the_images_of_a_request_share_its_bytes() {
        // Up to four images keep their own limit; more share 18 MB of
        // bytes, by powers of two.
        for n in 1..=4 {
            assert_eq!(for_models(n).max_bytes, MODELS.max_bytes);
        }
        for n in 5..=8 {
            assert_eq!(for_models(n).max_bytes, MAX_REQUEST_IMAGE_BYTES / 8);
        }
        assert_eq!(for_models(16).max_bytes, MAX_REQUEST_IMAGE_BYTES / 16);
        assert_eq!(for_models(17).max_bytes, MAX_REQUEST_IMAGE_BYTES / 32);
        for n in [5, 16, 21, 100] {
            let each = for_models(n).max_bytes;
            assert!(each * n <= MAX_REQUEST_IMAGE_BYTES, "{n} images of {each}");
            assert!(each * 4 / 3 * n < 32_000_000, "under Anthropic's 32 MB");
        }
    }

    #[test]
    fn too_many_bytes_are_cut_until_they_fit() {
        let noisy = png(1500, 1500, true);
        assert!(noisy.len() > 5_000_000, "{} bytes", noisy.len());
        let fitted = fit("image/png", &noisy, &WHATSAPP_IMAGE).unwrap();
        let Fitted::Changed {
            bytes, media_type, ..
        } = fitted
        else {
            panic!("expected a copy");
        };
        assert_eq!(media_type, "image/jpeg");
        assert!(bytes.len() <= 5_000_000);
        let anthropic = fit("image/png", &noisy, &ANTHROPIC).unwrap();
        let Fitted::Changed { bytes, .. } = anthropic else {
            panic!("expected a copy");
        };
        assert!(bytes.len() <= ANTHROPIC.max_bytes);
    }

    #[test]
    fn a_format_the_destination_does_not_take_is_re_encoded() {
        let mut out = Cursor::new(Vec::new());
        let clear = ImageBuffer::from_pixel(20, 10, Rgba([0u8, 0, 0, 0]));
        DynamicImage::ImageRgba8(clear)
            .write_to(&mut out, ImageFormat::Gif)
            .unwrap();
        let gif = out.into_inner();
        let fitted = fit("image/gif", &gif, &WHATSAPP_IMAGE).unwrap();
        let Fitted::Changed { media_type, .. } = fitted else {
            panic!("expected a copy");
        };
        assert_eq!(media_type, "image/png", "transparency stays");
        assert_eq!(
            fit("image/gif", &gif, &OPENAI),
            Ok(Fitted::AsIs),
            "one frame"
        );
    }

    #[test]
    fn a_ratio_no_scaling_changes_is_unfit_and_a_bomb_is_refused_unopened() {
        let strip = png(2100, 100, false);
        let err = fit("image/png", &strip, &TELEGRAM_PHOTO).unwrap_err();
        assert!(matches!(err, FitError::Unfit(_)), "{err}");
        assert!(err.to_string().contains("more than 20 times"), "{err}");

        // A header that claims 30000x30000 over a few bytes.
        let mut bomb = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bomb.extend(30_000u32.to_be_bytes());
        bomb.extend(30_000u32.to_be_bytes());
        bomb.extend([8, 2, 0, 0, 0]);
        let err = fit("image/png", &bomb, &ANTHROPIC).unwrap_err();
        assert!(matches!(err, FitError::TooLargeToDecode(_)), "{err}");

        let err = fit("image/png", b"\x89PNG\r\n\x1a\nbroken", &WHATSAPP_IMAGE).unwrap_err();
        assert!(matches!(err, FitError::Unreadable(_)), "{err}");
    }
}
