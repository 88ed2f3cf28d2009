//! Images both ways, and files in. In: an allowed person's image, voice
//! note, audio or document is downloaded from the Graph API (the media URL
//! its id names), stored in the daemon and submitted with its caption. Out: an
//! image a tool showed is uploaded (`POST /{phone_number_id}/media`) and
//! sent as an image message.

use super::bridge::{BridgeError, SOURCE};
use super::graph::{Graph, GraphError};
use super::payload::{MediaRef, PHOTO};
use crate::bridge::files;
use crate::bridge::link::{self, LinkError};
use crate::bridge::multipart;
use hearth_client::images::{self, Attachment, ImageFileError};
use hearth_client::Connection;
use hearth_protocol::MediaAttachment;
use serde_json::json;

/// The words, images and files of a received message: an image or a
/// file stored in the daemon goes along by reference with its caption;
/// media that cannot be fetched or are refused leave the placeholder (with
/// a note), and other media (video, stickers) are said by it alone.
pub async fn attach(
    graph: &Graph,
    connection: &mut Connection,
    key: &str,
    media: Option<&MediaRef>,
    words: String,
) -> Result<(String, Vec<String>, Vec<MediaAttachment>), BridgeError> {
    match media {
        Some(media) if media.kind == "image" => {
            let (words, images) = attach_image(graph, connection, key, media, words).await?;
            Ok((words, images, Vec::new()))
        }
        Some(media) if matches!(media.kind.as_str(), "audio" | "document") => {
            let (words, files) = attach_file(graph, connection, key, media, words).await?;
            Ok((words, Vec::new(), files))
        }
        _ => Ok((words, Vec::new(), Vec::new())),
    }
}

/// Downloads a voice note, audio or document and stores it in the daemon.
async fn attach_file(
    graph: &Graph,
    connection: &mut Connection,
    key: &str,
    media: &MediaRef,
    words: String,
) -> Result<(String, Vec<MediaAttachment>), BridgeError> {
    let fetched = link::beside(connection, graph.media(&media.id), &mut |_| {}).await?;
    let stored = match fetched {
        Ok(fetched) => {
            let platform = media.mime_type.as_deref().unwrap_or(&fetched.mime_type);
            match files::media_type(Some(platform), media.filename.as_deref()) {
                Some(media_type) => {
                    files::store(
                        connection,
                        media_type,
                        &fetched.bytes,
                        media.filename.clone(),
                        None,
                    )
                    .await?
                }
                None => Err(format!("hearth does not read {platform} files")),
            }
        }
        Err(err) => Err(err.to_string()),
    };
    match stored {
        Ok(stored) => Ok((media.caption.clone().unwrap_or_default(), vec![stored])),
        Err(why) => {
            files::not_attached(connection, SOURCE, key, &why).await?;
            Ok((words, Vec::new()))
        }
    }
}

/// Downloads a received image and stores it in the daemon: the words to
/// submit (the caption, or nothing for the `[photo]` placeholder) and the
/// image's hash; an image that cannot be fetched or is refused leaves the
/// words as they were, with a note.
async fn attach_image(
    graph: &Graph,
    connection: &mut Connection,
    key: &str,
    media: &MediaRef,
    words: String,
) -> Result<(String, Vec<String>), BridgeError> {
    let fetched = link::beside(connection, graph.media(&media.id), &mut |_| {}).await?;
    let stored = match fetched
        .map_err(|err| err.to_string())
        .and_then(|media| Attachment::from_bytes(media.bytes).map_err(|err| err.to_string()))
    {
        Ok(attachment) => match images::put(connection, &attachment, &mut |_| {}).await {
            Ok(stored) => Ok(stored),
            Err(ImageFileError::Connection(err)) => return Err(LinkError::from(err).into()),
            Err(err) => Err(err.to_string()),
        },
        Err(why) => Err(why),
    };
    match stored {
        Ok(stored) => {
            let words = if words == PHOTO { String::new() } else { words };
            Ok((words, vec![stored.sha256]))
        }
        Err(why) => {
            let note = format!("whatsapp: the image of message {key} was not attached: {why}");
            link::note(connection, SOURCE, note, &mut |_| {}).await?;
            Ok((words, Vec::new()))
        }
    }
}

impl Graph {
    /// Uploads an image and sends it to `to` as an image message; returns
    /// the new message's id. It must fit a WhatsApp image already (JPEG or
    /// PNG, 5 MB; see `bridge/fitting.rs`).
    pub async fn send_image(&self, to: &str, image: &Attachment) -> Result<String, GraphError> {
        self.send_media(to, image, "image").await
    }

    /// Uploads an image and sends it to `to` as a document (a file).
    pub async fn send_document(&self, to: &str, image: &Attachment) -> Result<String, GraphError> {
        self.send_media(to, image, "document").await
    }

    async fn send_media(
        &self,
        to: &str,
        image: &Attachment,
        kind: &str,
    ) -> Result<String, GraphError> {
        let extension = hearth_protocol::image::extension(image.media_type).unwrap_or("jpg");
        let form = multipart::form(
            &[
                ("messaging_product", "whatsapp"),
                ("type", image.media_type),
            ],
            "file",
            &format!("image.{extension}"),
            image.media_type,
            &image.bytes,
        );
        let uploaded = self.upload(form).await?;
        let media_id = uploaded["id"]
            .as_str()
            .ok_or_else(|| GraphError::BadAnswer(uploaded.to_string()))?;
        let mut object = json!({"id": media_id});
        if kind == "document" {
            object["filename"] = json!(format!("image.{extension}"));
        }
        let mut request = json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "type": kind,
        });
        request[kind] = object;
        super::graph::address(&mut request, to);
        let answer = self.post_message(&request).await?;
        answer["messages"][0]["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| GraphError::BadAnswer(answer.to_string()))
    }
}
