//! What the account receives, told as events: invites, membership changes,
//! messages (decrypted, with their files fetched and decrypted), reactions,
//! and messages that stayed encrypted. The account's own events are not
//! told.

use crate::wire::{Event, Media, Output};
use base64::Engine;
use matrix_sdk::deserialized_responses::EncryptionInfo;
use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::events::reaction::OriginalSyncReactionEvent;
use matrix_sdk::ruma::events::room::MediaSource;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::events::room::member::{
    OriginalSyncRoomMemberEvent, StrippedRoomMemberEvent,
};
use matrix_sdk::ruma::events::room::message::{
    MessageFormat, MessageType, OriginalSyncRoomMessageEvent, Relation,
};
use matrix_sdk::{Client, Room};
use tokio::sync::mpsc;

/// The largest file fetched (larger ones are told without their bytes).
const MAX_FILE_BYTES: u64 = 25 * 1024 * 1024;

type Out = mpsc::UnboundedSender<Output>;

fn tell(out: &Out, event: Event) {
    let _ = out.send(Output::Event(Box::new(event)));
}

/// Registers the handlers that tell `out` what the account receives.
pub fn subscribe(client: &Client, out: Out) {
    let to = out.clone();
    client.add_event_handler(
        move |event: StrippedRoomMemberEvent, room: Room, client: Client| {
            let out = to.clone();
            async move {
                if client.user_id() != Some(&*event.state_key) {
                    return;
                }
                if event.content.membership.as_str() == "invite" {
                    let direct = event.content.is_direct.unwrap_or(false);
                    tell(
                        &out,
                        Event::Invite {
                            room: room.room_id().to_string(),
                            inviter: event.sender.to_string(),
                            direct,
                        },
                    );
                }
            }
        },
    );
    let to = out.clone();
    client.add_event_handler(move |event: OriginalSyncRoomMemberEvent, room: Room| {
        let out = to.clone();
        async move {
            tell(
                &out,
                Event::Member {
                    room: room.room_id().to_string(),
                    user: event.state_key.to_string(),
                    membership: event.content.membership.as_str().to_string(),
                },
            );
        }
    });
    let to = out.clone();
    client.add_event_handler(
        move |event: OriginalSyncRoomMessageEvent,
              room: Room,
              client: Client,
              encryption: Option<EncryptionInfo>| {
            let out = to.clone();
            async move {
                if client.user_id() == Some(&*event.sender) {
                    return;
                }
                let message = message(&client, &room, event, encryption.is_some()).await;
                tell(&out, message);
            }
        },
    );
    let to = out.clone();
    client.add_event_handler(
        move |event: OriginalSyncReactionEvent, room: Room, client: Client| {
            let out = to.clone();
            async move {
                if client.user_id() == Some(&*event.sender) {
                    return;
                }
                tell(
                    &out,
                    Event::Reaction {
                        room: room.room_id().to_string(),
                        event_id: event.event_id.to_string(),
                        sender: event.sender.to_string(),
                        target: event.content.relates_to.event_id.to_string(),
                        key: event.content.relates_to.key,
                    },
                );
            }
        },
    );
    let to = out;
    client.add_event_handler(
        move |event: OriginalSyncRoomEncryptedEvent, room: Room, client: Client| {
            let out = to.clone();
            async move {
                if client.user_id() == Some(&*event.sender) {
                    return;
                }
                tell(
                    &out,
                    Event::Undecryptable {
                        room: room.room_id().to_string(),
                        event_id: event.event_id.to_string(),
                        sender: event.sender.to_string(),
                    },
                );
            }
        },
    );
}

/// A message as an event, with its file fetched.
async fn message(
    client: &Client,
    room: &Room,
    event: OriginalSyncRoomMessageEvent,
    encrypted: bool,
) -> Event {
    let (reply_to, thread) = match &event.content.relates_to {
        Some(Relation::Reply(reply)) => (Some(reply.in_reply_to.event_id.to_string()), None),
        Some(Relation::Thread(thread)) => (
            thread
                .in_reply_to
                .as_ref()
                .filter(|_| !thread.is_falling_back)
                .map(|reply| reply.event_id.to_string()),
            Some(thread.event_id.to_string()),
        ),
        _ => (None, None),
    };
    let html = |formatted: &Option<matrix_sdk::ruma::events::room::message::FormattedBody>| {
        formatted
            .as_ref()
            .filter(|formatted| formatted.format == MessageFormat::Html)
            .map(|formatted| formatted.body.clone())
    };
    let (kind, body, formatted, file) = match &event.content.msgtype {
        MessageType::Text(text) => ("text", text.body.clone(), html(&text.formatted), None),
        MessageType::Notice(notice) => {
            ("notice", notice.body.clone(), html(&notice.formatted), None)
        }
        MessageType::Emote(emote) => ("emote", emote.body.clone(), html(&emote.formatted), None),
        MessageType::Image(image) => {
            let media_type = image.info.as_ref().and_then(|info| info.mimetype.clone());
            let name = image.filename.clone().unwrap_or_else(|| image.body.clone());
            let size = image
                .info
                .as_ref()
                .and_then(|info| info.size)
                .map(u64::from);
            (
                "image",
                caption(&image.filename, &image.body),
                None,
                Some((image.source.clone(), name, media_type, size)),
            )
        }
        MessageType::Audio(audio) => {
            let media_type = audio.info.as_ref().and_then(|info| info.mimetype.clone());
            let name = audio.filename.clone().unwrap_or_else(|| audio.body.clone());
            let size = audio
                .info
                .as_ref()
                .and_then(|info| info.size)
                .map(u64::from);
            // A voice note is an audio message to hearth: both are transcribed.
            (
                "audio",
                caption(&audio.filename, &audio.body),
                None,
                Some((audio.source.clone(), name, media_type, size)),
            )
        }
        MessageType::Video(video) => {
            let media_type = video.info.as_ref().and_then(|info| info.mimetype.clone());
            let name = video.filename.clone().unwrap_or_else(|| video.body.clone());
            let size = video
                .info
                .as_ref()
                .and_then(|info| info.size)
                .map(u64::from);
            (
                "video",
                caption(&video.filename, &video.body),
                None,
                Some((video.source.clone(), name, media_type, size)),
            )
        }
        MessageType::File(file) => {
            let media_type = file.info.as_ref().and_then(|info| info.mimetype.clone());
            let name = file.filename.clone().unwrap_or_else(|| file.body.clone());
            let size = file.info.as_ref().and_then(|info| info.size).map(u64::from);
            (
                "file",
                caption(&file.filename, &file.body),
                None,
                Some((file.source.clone(), name, media_type, size)),
            )
        }
        other => (other.msgtype(), other.body().to_string(), None, None),
    };
    let media = match file {
        Some((source, name, media_type, size)) => {
            Some(fetch(client, source, name, media_type, size).await)
        }
        None => None,
    };
    Event::Message {
        room: room.room_id().to_string(),
        event_id: event.event_id.to_string(),
        sender: event.sender.to_string(),
        kind: kind.to_string(),
        body,
        html: formatted,
        reply_to,
        thread,
        encrypted,
        media,
    }
}

/// A file message's words: its body when a file name is given beside it
/// (then the body is a caption), else none (the body is the file's name).
fn caption(filename: &Option<String>, body: &str) -> String {
    match filename {
        Some(name) if name != body => body.to_string(),
        _ => String::new(),
    }
}

/// Fetches (and decrypts) a message's file.
async fn fetch(
    client: &Client,
    source: MediaSource,
    name: String,
    media_type: Option<String>,
    size: Option<u64>,
) -> Media {
    if size.is_some_and(|size| size > MAX_FILE_BYTES) {
        return Media {
            name,
            media_type,
            data: None,
            error: Some(format!(
                "it is larger than {} MB",
                MAX_FILE_BYTES / 1024 / 1024
            )),
        };
    }
    let request = MediaRequestParameters {
        source,
        format: MediaFormat::File,
    };
    match client.media().get_media_content(&request, false).await {
        Ok(bytes) => Media {
            name,
            media_type,
            data: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
            error: None,
        },
        Err(err) => Media {
            name,
            media_type,
            data: None,
            error: Some(format!("it could not be fetched: {err}")),
        },
    }
}
