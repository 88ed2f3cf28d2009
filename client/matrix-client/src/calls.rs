//! What each request does. Every answer is JSON, every failure a sentence.

use crate::account::{self, Secret};
use crate::events;
use crate::wire::{Call, Output};
use base64::Engine;
use matrix_sdk::attachment::{
    AttachmentConfig, AttachmentInfo, BaseAudioInfo, BaseFileInfo, BaseImageInfo,
};
use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::events::reaction::ReactionEventContent;
use matrix_sdk::ruma::events::relation::{Annotation, InReplyTo, Reply, Thread};
use matrix_sdk::ruma::events::room::message::{Relation, RoomMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedUserId};
use matrix_sdk::{Client, Room};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OnceCell, mpsc};

/// The wait between syncs that failed.
const SYNC_RETRY: Duration = Duration::from_secs(5);

/// The account's requests, shared by the tasks that run them.
#[derive(Clone)]
pub struct Calls {
    store: Arc<PathBuf>,
    out: mpsc::UnboundedSender<Output>,
    /// Set by `login`; every other request needs it.
    client: Arc<OnceCell<Client>>,
}

impl Calls {
    pub fn new(store: PathBuf, out: mpsc::UnboundedSender<Output>) -> Calls {
        Calls {
            store: Arc::new(store),
            out,
            client: Arc::new(OnceCell::new()),
        }
    }

    fn client(&self) -> Result<&Client, String> {
        self.client
            .get()
            .ok_or_else(|| "not logged in: ask `login` first".to_string())
    }

    fn room(&self, room: &str) -> Result<Room, String> {
        let id = OwnedRoomId::try_from(room).map_err(|_| format!("`{room}` is not a room id"))?;
        self.client()?
            .get_room(&id)
            .ok_or_else(|| format!("the account knows no room {room}"))
    }

    pub async fn handle(&self, call: Call) -> Result<Value, String> {
        match call {
            Call::Login {
                homeserver,
                user,
                password,
                access_token,
                device_name,
            } => {
                let secret = match (password, access_token) {
                    (Some(password), _) => Secret::Password(password),
                    (None, Some(token)) => Secret::AccessToken(token),
                    (None, None) => return Err("give a password or an access token".into()),
                };
                let client =
                    account::open(&self.store, &homeserver, &user, secret, &device_name).await?;
                let device = client.device_id().map(|id| id.to_string());
                let user_id = client.user_id().map(|id| id.to_string());
                self.client
                    .set(client)
                    .map_err(|_| "logged in already".to_string())?;
                Ok(json!({ "user_id": user_id, "device_id": device }))
            }
            Call::Start => {
                let client = self.client()?.clone();
                events::subscribe(&client, self.out.clone());
                tokio::spawn(sync(client, self.out.clone()));
                Ok(json!({}))
            }
            Call::Join { room } => {
                let room = self.room(&room)?;
                room.join()
                    .await
                    .map_err(|err| format!("cannot join: {err}"))?;
                Ok(json!({}))
            }
            Call::Invite { room, user } => {
                let room = self.room(&room)?;
                let user = OwnedUserId::try_from(user.as_str())
                    .map_err(|_| format!("`{user}` is not a user id"))?;
                room.invite_user_by_id(&user)
                    .await
                    .map_err(|err| format!("cannot invite: {err}"))?;
                Ok(json!({}))
            }
            Call::Leave { room } => {
                let room = self.room(&room)?;
                room.leave()
                    .await
                    .map_err(|err| format!("cannot leave: {err}"))?;
                Ok(json!({}))
            }
            Call::Send {
                room,
                body,
                html,
                reply_to,
                thread,
            } => {
                let room = self.room(&room)?;
                let mut content = match html {
                    Some(html) => RoomMessageEventContent::text_html(body, html),
                    None => RoomMessageEventContent::text_plain(body),
                };
                content.relates_to = relation(reply_to, thread)?;
                let sent = room
                    .send(content)
                    .await
                    .map_err(|err| format!("cannot send: {err}"))?;
                Ok(json!({ "event_id": sent.response.event_id }))
            }
            Call::SendFile {
                room,
                name,
                media_type,
                kind,
                data,
            } => {
                let room = self.room(&room)?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data)
                    .map_err(|_| "the file's data is not base64".to_string())?;
                let mime: mime::Mime = media_type
                    .parse()
                    .map_err(|_| format!("`{media_type}` is not a media type"))?;
                let size = u32::try_from(bytes.len()).ok().map(Into::into);
                let info = match kind.as_str() {
                    "image" => AttachmentInfo::Image(BaseImageInfo {
                        size,
                        ..Default::default()
                    }),
                    "audio" => AttachmentInfo::Audio(BaseAudioInfo {
                        size,
                        ..Default::default()
                    }),
                    "voice" => AttachmentInfo::Voice(BaseAudioInfo {
                        size,
                        ..Default::default()
                    }),
                    _ => AttachmentInfo::File(BaseFileInfo { size }),
                };
                let config = AttachmentConfig::new().info(info);
                let sent = room
                    .send_attachment(name, &mime, bytes, config)
                    .await
                    .map_err(|err| format!("cannot send the file: {err}"))?;
                Ok(json!({ "event_id": sent.event_id }))
            }
            Call::React {
                room,
                event_id,
                key,
            } => {
                let room = self.room(&room)?;
                let target = event_id_of(&event_id)?;
                let content = ReactionEventContent::new(Annotation::new(target, key));
                let sent = room
                    .send(content)
                    .await
                    .map_err(|err| format!("cannot react: {err}"))?;
                Ok(json!({ "event_id": sent.response.event_id }))
            }
            Call::Typing { room, typing } => {
                let room = self.room(&room)?;
                room.typing_notice(typing)
                    .await
                    .map_err(|err| format!("cannot show typing: {err}"))?;
                Ok(json!({}))
            }
            Call::CreateDm { user } => {
                let user = OwnedUserId::try_from(user.as_str())
                    .map_err(|_| format!("`{user}` is not a user id"))?;
                let room = self
                    .client()?
                    .create_dm(&user)
                    .await
                    .map_err(|err| format!("cannot create the room: {err}"))?;
                Ok(json!({ "room": room.room_id() }))
            }
        }
    }
}

fn event_id_of(text: &str) -> Result<OwnedEventId, String> {
    OwnedEventId::try_from(text).map_err(|_| format!("`{text}` is not an event id"))
}

/// A message's place: in a thread (replying to `reply_to` there, if given),
/// a reply, or neither.
fn relation(
    reply_to: Option<String>,
    thread: Option<String>,
) -> Result<
    Option<
        Relation<matrix_sdk::ruma::events::room::message::RoomMessageEventContentWithoutRelation>,
    >,
    String,
> {
    let reply_to = reply_to.as_deref().map(event_id_of).transpose()?;
    let thread = thread.as_deref().map(event_id_of).transpose()?;
    Ok(match (thread, reply_to) {
        (Some(root), Some(reply_to)) => Some(Relation::Thread(Thread::reply(root, reply_to))),
        (Some(root), None) => Some(Relation::Thread(Thread::without_fallback(root))),
        (None, Some(reply_to)) => Some(Relation::Reply(Reply::new(InReplyTo::new(reply_to)))),
        (None, None) => None,
    })
}

/// Syncs for as long as the process lives, from where the store says the
/// last sync stopped, so what came while the account was away is told
/// once. `ready` goes out after the first sync and after the first one
/// that works again after failures; `sync_error` after each failure.
async fn sync(client: Client, out: mpsc::UnboundedSender<Output>) {
    let settings = SyncSettings::default().timeout(Duration::from_secs(30));
    let mut caught_up = false;
    loop {
        match client.sync_once(settings.clone()).await {
            Ok(_) => {
                if !std::mem::replace(&mut caught_up, true) {
                    let _ = out.send(Output::Event(Box::new(crate::wire::Event::Ready)));
                }
            }
            Err(err) => {
                caught_up = false;
                let message = format!("syncing with the homeserver failed: {err}");
                let _ = out.send(Output::Event(Box::new(crate::wire::Event::SyncError {
                    message,
                })));
                tokio::time::sleep(SYNC_RETRY).await;
            }
        }
    }
}
