//! The fake Bot API's files: `getFile` and the download at
//! `/file/bot<TOKEN>/<file_path>` for the photos people send, and
//! `sendPhoto` (multipart form data) for the images the bot sends.

use super::{refusal, Shared, TOKEN};
use crate::fake_model::http::{self, Request};
use serde_json::{json, Value};
use std::io;
use tokio::net::TcpStream;

/// The photo a person sends unless a test gives its own bytes: a PNG
/// header of 1280x1280 pixels, which is all the bridge and the daemon read.
pub fn photo_bytes() -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(1280u32.to_be_bytes());
    bytes.extend(1280u32.to_be_bytes());
    bytes.extend([8, 2, 0, 0, 0]);
    bytes
}

/// `getFile`: the file's path, for a file a person sent.
pub(super) async fn get_file(
    stream: &mut TcpStream,
    shared: &Shared,
    body: &Value,
) -> io::Result<()> {
    let file_id = body["file_id"].as_str().unwrap_or_default().to_string();
    let size = shared.lock().files.get(&file_id).map(Vec::len);
    match size {
        Some(size) => {
            let file = json!({
                "file_id": file_id,
                "file_unique_id": format!("u-{file_id}"),
                "file_size": size,
                "file_path": format!("photos/{file_id}.png"),
            });
            http::write_json(stream, 200, &json!({"ok": true, "result": file})).await
        }
        None => http::write_json(stream, 400, &refusal(400, "Bad Request: invalid file_id")).await,
    }
}

/// The download: `GET /file/bot<TOKEN>/<file_path>`. True when `path` is one.
pub(super) async fn download(
    stream: &mut TcpStream,
    shared: &Shared,
    path: &str,
) -> Option<io::Result<()>> {
    let file_path = path.strip_prefix(&format!("/file/bot{TOKEN}/"))?;
    let file_id = file_path
        .strip_prefix("photos/")
        .and_then(|name| name.strip_suffix(".png"))
        .unwrap_or_default()
        .to_string();
    let bytes = {
        let mut state = shared.lock();
        state.calls.downloads.push(file_path.to_string());
        state.files.get(&file_id).cloned()
    };
    shared.bump();
    Some(match bytes {
        Some(bytes) => http::write_response(stream, 200, "image/png", &bytes).await,
        None => http::write_json(stream, 404, &refusal(404, "Not Found")).await,
    })
}

/// `sendPhoto` with the photo uploaded as a file: records the chat, the
/// part's type and its bytes.
pub(super) async fn send_photo(
    stream: &mut TcpStream,
    shared: &Shared,
    request: &Request,
    field_name: &str,
) -> io::Result<()> {
    let method = if field_name == "photo" {
        "sendPhoto"
    } else {
        "sendDocument"
    };
    let Some(parts) = http::form_parts(request) else {
        return http::write_json(stream, 400, &refusal(400, "Bad Request: not multipart")).await;
    };
    let field = |name: &str| {
        parts
            .iter()
            .find(|(head, _)| head.contains(&format!("name=\"{name}\"")))
    };
    let mut form = serde_json::Map::new();
    for (head, value) in &parts {
        let Some(name) = http::part_header(head, "content-disposition")
            .and_then(|disposition| disposition.split("name=\"").nth(1))
            .and_then(|rest| rest.split('"').next())
        else {
            continue;
        };
        let value = match http::part_header(head, "content-type") {
            Some(content_type) => json!({"content_type": content_type, "bytes": value.len()}),
            None => Value::String(String::from_utf8_lossy(value).into_owned()),
        };
        form.insert(name.to_string(), value);
    }
    let call = (method.to_string(), Value::Object(form));
    shared.lock().calls.requests.push(call);
    let chat_id = field("chat_id")
        .and_then(|(_, value)| std::str::from_utf8(value).ok()?.trim().parse::<i64>().ok());
    let (Some(chat_id), Some((head, bytes))) = (chat_id, field(field_name)) else {
        return http::write_json(
            stream,
            400,
            &refusal(400, "Bad Request: chat_id and photo are required"),
        )
        .await;
    };
    let media_type = http::part_header(head, "content-type")
        .unwrap_or_default()
        .to_string();
    let sent = (chat_id, media_type, bytes.clone());
    if field_name == "photo" {
        shared.lock().calls.photos.push(sent);
    } else {
        shared.lock().calls.documents.push(sent);
    }
    shared.bump();
    let message = json!({
        "message_id": 1,
        "chat": {"id": chat_id, "type": "private"},
        "date": 1_767_225_600,
        "photo": [{"file_id": "sent", "file_unique_id": "sent", "width": 1, "height": 1}],
    });
    http::write_json(stream, 200, &json!({"ok": true, "result": message})).await
}
