//! `show_image(path)`: sends an image from the working folder to the people
//! attached (the terminal prints a line for it; the bridges send it as a
//! photo). The image is stored content-addressed and named by the `tool`
//! message's `images`, which clients fetch with `image_get`. The model is not
//! sent the image again: it chose the file.

use super::folder::Folder;
use super::tool::{text_of, Call, Tool};
use super::Outcome;
use crate::images::ImageStore;
use crate::model::ToolSpec;
use futures_util::future::BoxFuture;
use hearth_protocol::image::{self, MAX_IMAGE_BYTES, MEDIA_TYPES};
use serde_json::{json, Value};
use std::io::Read;
use std::sync::Arc;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "show_image".to_string(),
        description: "Show an image file from your working folder to the person: it appears in \
their terminal and is sent as a photo on Telegram or WhatsApp. PNG, JPEG, GIF or WebP, at most \
10 MB."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The image file, relative to your working folder."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    }
}

/// `show_image` from `folder`, stored in `store`: acts (people see what it
/// shows).
pub struct ShowImage {
    pub folder: Arc<Folder>,
    pub store: ImageStore,
}

impl Tool for ShowImage {
    fn spec(&self) -> ToolSpec {
        spec()
    }

    fn detail(&self, arguments: &Value) -> Option<String> {
        text_of(arguments, "path")
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        Box::pin(async move { self::call(self.folder.clone(), &self.store, &call.arguments).await })
    }
}

/// Reads, checks and stores the image; the outcome names it in `images`.
pub async fn call(folder: Arc<Folder>, store: &ImageStore, arguments: &Value) -> Outcome {
    let path = arguments
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let read = {
        let path = path.clone();
        tokio::task::spawn_blocking(move || read(&folder, &path)).await
    };
    let (media_type, bytes, shown) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(why)) => return Outcome::error(why),
        Err(err) => return Outcome::error(format!("show_image failed: {err}")),
    };
    let size = bytes.len();
    match store.put(media_type, bytes, Some(shown.clone())).await {
        Ok(stored) => {
            let pixels = match (stored.width, stored.height) {
                (Some(width), Some(height)) => format!(", {width}x{height}"),
                _ => String::new(),
            };
            let mut outcome = Outcome::ok(format!(
                "shown {shown} ({media_type}{pixels}, {size} bytes)"
            ));
            outcome.images = vec![stored];
            outcome
        }
        Err(err) => Outcome::error(format!("cannot show {shown}: {err}")),
    }
}

/// The file's media type, bytes and the path as shown, or why it cannot be shown.
fn read(folder: &Folder, path: &str) -> Result<(&'static str, Vec<u8>, String), String> {
    let target = folder.resolve(path).map_err(|err| err.to_string())?;
    let shown = folder.show(&target);
    let meta = std::fs::metadata(&target).map_err(|err| format!("cannot read `{shown}`: {err}"))?;
    if meta.is_dir() {
        return Err(format!("`{shown}` is a folder, not an image"));
    }
    if meta.len() > MAX_IMAGE_BYTES as u64 {
        return Err(format!(
            "`{shown}` has {} bytes; an image may have at most {MAX_IMAGE_BYTES}",
            meta.len()
        ));
    }
    let relative = target.strip_prefix(folder.root()).unwrap_or(&target);
    let mut bytes = Vec::new();
    super::beneath::open(folder.root(), relative, super::beneath::Access::Read)
        .map_err(|err| format!("`{shown}` {err}"))?
        .take(MAX_IMAGE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read `{shown}`: {err}"))?;
    let Some(media_type) = image::sniff(&bytes) else {
        let accepted = MEDIA_TYPES.map(|(media_type, _)| media_type).join(", ");
        return Err(format!(
            "`{shown}` is not an image this tool can show ({accepted})"
        ));
    };
    Ok((media_type, bytes, shown))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Vec<u8> {
        let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        bytes.extend(4u32.to_be_bytes());
        bytes.extend(3u32.to_be_bytes());
        bytes
    }

    #[tokio::test]
    async fn an_image_in_the_folder_is_stored_and_named_and_others_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("cat.png"), png()).unwrap();
        std::fs::write(work.join("notes.txt"), "hello").unwrap();
        std::fs::write(dir.path().join("outside.png"), png()).unwrap();
        let folder = Arc::new(Folder::new(&work, &dir.path().join("agent"), false).unwrap());
        let store = ImageStore::new(dir.path());

        let outcome = call(folder.clone(), &store, &json!({"path": "cat.png"})).await;
        assert_eq!(
            outcome.status,
            hearth_protocol::MessageStatus::Ok,
            "{}",
            outcome.output
        );
        assert_eq!(outcome.output, "shown cat.png (image/png, 4x3, 24 bytes)");
        assert_eq!(outcome.images.len(), 1);
        assert_eq!(outcome.images[0].name.as_deref(), Some("cat.png"));
        assert_eq!(store.read(&outcome.images[0]).unwrap(), png());

        let text = call(folder.clone(), &store, &json!({"path": "notes.txt"})).await;
        assert_eq!(text.status, hearth_protocol::MessageStatus::Error);
        assert!(text.output.contains("is not an image"), "{}", text.output);
        let outside = call(folder, &store, &json!({"path": "../outside.png"})).await;
        assert_eq!(outside.status, hearth_protocol::MessageStatus::Error);
        assert!(
            outside.output.contains("outside the working folder"),
            "{}",
            outside.output
        );
    }
}
