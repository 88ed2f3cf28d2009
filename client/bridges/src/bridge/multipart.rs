//! A `multipart/form-data` body of text fields and one file, as the
//! platforms' upload calls take it (Telegram's `sendPhoto`, WhatsApp's
//! media upload). Built by hand: one file and a few fields need no crate.

/// The boundary between parts: never inside the text fields (short values
/// the bridge writes); that these 29 bytes occur in an image by chance is
/// not a practical concern.
const BOUNDARY: &str = "hearth-part-7f3c9a1e5b2d4068";

/// A body and its `Content-Type` header.
pub struct Form {
    pub content_type: String,
    pub body: Vec<u8>,
}

/// The fields in order, then the file as `file_field` named `file_name`.
pub fn form(
    fields: &[(&str, &str)],
    file_field: &str,
    file_name: &str,
    media_type: &str,
    bytes: &[u8],
) -> Form {
    let mut body = Vec::with_capacity(bytes.len() + 512);
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{file_field}\"; filename=\"{file_name}\"\r\nContent-Type: {media_type}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    Form {
        content_type: format!("multipart/form-data; boundary={BOUNDARY}"),
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_then_the_file_between_boundaries() {
        let form = form(
            &[("chat_id", "42")],
            "photo",
            "image.png",
            "image/png",
            b"PNG",
        );
        assert_eq!(
            form.content_type,
            "multipart/form-data; boundary=hearth-part-7f3c9a1e5b2d4068"
        );
        assert_eq!(
            String::from_utf8(form.body).unwrap(),
            "--hearth-part-7f3c9a1e5b2d4068\r\nContent-Disposition: form-data; name=\"chat_id\"\r\n\r\n42\r\n\
             --hearth-part-7f3c9a1e5b2d4068\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"image.png\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n\
             --hearth-part-7f3c9a1e5b2d4068--\r\n"
        );
    }
}
