//! The inbound half: long-polls Telegram for messages and submits the
//! allowed users' words to the daemon; refuses everyone else.
//!
//! A batch of updates is confirmed to Telegram (by the next `getUpdates`
//! offset, which is also stored in the daemon) only after the daemon
//! acknowledged every message in it. Each message is submitted with the
//! key `telegram:<chat>:<message>`, so a batch seen again after a crash is
//! acknowledged as duplicates and logged once. A button press answers an
//! approval (see `approval.rs`).
//!
//! A bot with a webhook set cannot poll: Telegram answers 409. The bridge
//! then notes once how to fix it and keeps trying; with `delete_webhook` it
//! deletes the webhook itself, at start and after each such answer.

use super::api::{Api, Failure, Message, Update};
use super::approval;
use super::bridge::{BridgeError, CHATS_STATE, OFFSET_STATE, SOURCE};
use super::config::TelegramConfig;
use super::files;
use super::photos::{self, Photo};
use crate::bridge::backoff::Backoff;
use crate::bridge::link;
use crate::bridge::people::{remember_chat, Gate};
use hearth_client::Connection;
use std::collections::BTreeSet;
use std::convert::Infallible;
use tokio::sync::watch;

pub use crate::bridge::people::REFUSAL;

/// What to do with one incoming message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// An allowed user's words for the agent.
    Relay {
        chat_id: i64,
        key: String,
        text: String,
    },
    /// Someone not on the allowlist, in a private chat.
    Refuse {
        chat_id: i64,
        user_id: i64,
        handle: String,
    },
    /// Nothing to do, and why.
    Ignore(&'static str),
}

/// Decides what to do with a message. Only private chats count: in a group
/// the agent's replies would reach people nobody allowed, and strangers
/// there are not answered either.
pub fn classify(message: &Message, config: &TelegramConfig) -> Incoming {
    let Some(from) = &message.from else {
        return Incoming::Ignore("a message without a sender");
    };
    if message.chat.kind != "private" {
        return Incoming::Ignore("not a private chat");
    }
    if from.is_bot {
        return Incoming::Ignore("a message from a bot");
    }
    if !config.allows(from.id) {
        return Incoming::Refuse {
            chat_id: message.chat.id,
            user_id: from.id,
            handle: from.handle(),
        };
    }
    match message_text(message) {
        Some(text) => Incoming::Relay {
            chat_id: message.chat.id,
            key: format!("telegram:{}:{}", message.chat.id, message.message_id),
            text,
        },
        None => Incoming::Ignore("nothing to relay"),
    }
}

/// The words a message gives the agent: its text, else its caption, else a
/// placeholder naming what was sent. A photo itself goes along as an image
/// (see `photos.rs`), a voice note, audio, video note or document as a file
/// the daemon transcribes or reads (see `files.rs`); the placeholder stays
/// only when it could not be stored.
pub fn message_text(message: &Message) -> Option<String> {
    let words = message
        .text
        .as_deref()
        .or(message.caption.as_deref())
        .map(str::trim)
        .filter(|words| !words.is_empty());
    if let Some(words) = words {
        return Some(words.to_string());
    }
    let placeholder = if message.photo.is_some() {
        "[photo]".to_string()
    } else if message.voice.is_some() {
        "[voice message]".to_string()
    } else if message.video_note.is_some() || message.video.is_some() {
        "[video]".to_string()
    } else if message.audio.is_some() {
        "[audio]".to_string()
    } else if let Some(document) = &message.document {
        match &document.file_name {
            Some(name) => format!("[file: {}]", hearth_protocol::media::quoted_file_name(name)),
            None => "[file]".to_string(),
        }
    } else if let Some(sticker) = &message.sticker {
        match &sticker.emoji {
            Some(emoji) => format!("[sticker {emoji}]"),
            None => "[sticker]".to_string(),
        }
    } else {
        return None;
    };
    Some(placeholder)
}

/// The inbound half's state.
pub struct Inbound<'a> {
    api: &'a Api,
    config: &'a TelegramConfig,
    /// Submits, notes and state writes. The live events the daemon also
    /// sends here are read and dropped: the outbound half has its own.
    connection: Connection,
    /// The next `getUpdates` offset; `None` asks for every unconfirmed update.
    offset: Option<i64>,
    /// The chats that get the agent's messages, shared with the outbound half.
    chats: watch::Sender<BTreeSet<i64>>,
    /// Strangers' chats refused in this run, so each is told once.
    strangers: Gate<i64>,
    /// Whether the user was told that a webhook blocks polling.
    webhook_noted: bool,
    /// What `hearth status` shows as the bridge's problem (its problem
    /// state): `None` at start, when an earlier run may have left one, so
    /// the first poll that works clears it.
    problem_shown: Option<&'static str>,
}

/// The note for a bot whose webhook blocks polling.
pub const WEBHOOK_NOTE: &str = "telegram: the bot has a webhook set, so it cannot poll for messages; set [telegram] delete_webhook = true to let the bridge remove it, or delete it with the Bot API's deleteWebhook";

impl<'a> Inbound<'a> {
    pub fn new(
        api: &'a Api,
        config: &'a TelegramConfig,
        connection: Connection,
        offset: Option<i64>,
        chats: watch::Sender<BTreeSet<i64>>,
    ) -> Inbound<'a> {
        Inbound {
            api,
            config,
            connection,
            offset,
            chats,
            strangers: Gate::new(SOURCE),
            webhook_noted: false,
            problem_shown: None,
        }
    }

    /// Polls and relays until something fails for good.
    pub async fn run(mut self) -> Result<Infallible, BridgeError> {
        let mut backoff = Backoff::default();
        if self.config.delete_webhook {
            self.delete_webhook().await?;
        }
        loop {
            let poll = self
                .api
                .get_updates(self.offset, self.config.poll_timeout_secs);
            let polled = link::beside(&mut self.connection, poll, &mut |_| {}).await?;
            let updates = match polled {
                Ok(updates) => {
                    backoff.reset();
                    if self.problem_shown != Some("") {
                        self.show_problem("").await?;
                    }
                    updates
                }
                Err(error) => {
                    let wait = match error.failure() {
                        Failure::Unauthorized => {
                            return Err(BridgeError::Unauthorized {
                                error,
                                env: self.config.token_env.clone(),
                            })
                        }
                        Failure::Wait(wait) => wait,
                        _ if error.is_webhook_conflict() => {
                            self.webhook_in_the_way().await?;
                            backoff.next_wait()
                        }
                        _ => {
                            let wait = backoff.next_wait();
                            tracing::warn!("getUpdates failed: {error}; trying again in {wait:?}");
                            wait
                        }
                    };
                    let pause = tokio::time::sleep(wait);
                    link::beside(&mut self.connection, pause, &mut |_| {}).await?;
                    continue;
                }
            };
            let Some(last) = updates.iter().map(|update| update.update_id).max() else {
                continue;
            };
            for update in updates {
                self.take(update).await?;
            }
            // Only now is the batch confirmed: every message in it is durable.
            let next = last + 1;
            link::set_state(
                &mut self.connection,
                OFFSET_STATE,
                next.to_string(),
                &mut |_| {},
            )
            .await?;
            self.offset = Some(next);
        }
    }

    /// After Telegram said a webhook blocks polling: deletes it when allowed
    /// to, else tells the user once how to fix it.
    async fn webhook_in_the_way(&mut self) -> Result<(), BridgeError> {
        if self.config.delete_webhook {
            return self.delete_webhook().await;
        }
        if self.problem_shown != Some(WEBHOOK_NOTE) {
            self.show_problem(WEBHOOK_NOTE).await?;
        }
        if self.webhook_noted {
            tracing::debug!("getUpdates refused again: the bot has a webhook set");
            return Ok(());
        }
        self.webhook_noted = true;
        tracing::warn!("{WEBHOOK_NOTE}");
        link::note(
            &mut self.connection,
            SOURCE,
            WEBHOOK_NOTE.to_string(),
            &mut |_| {},
        )
        .await?;
        Ok(())
    }

    /// Says in `hearth status` what keeps the bridge from working (empty:
    /// nothing does).
    async fn show_problem(&mut self, problem: &'static str) -> Result<(), BridgeError> {
        let name = hearth_protocol::problem_state("telegram");
        link::set_state(
            &mut self.connection,
            &name,
            problem.to_string(),
            &mut |_| {},
        )
        .await?;
        self.problem_shown = Some(problem);
        Ok(())
    }

    /// Deletes the bot's webhook; a failure is logged, and the next 409
    /// tries again.
    async fn delete_webhook(&mut self) -> Result<(), BridgeError> {
        let delete = self.api.delete_webhook();
        match link::beside(&mut self.connection, delete, &mut |_| {}).await? {
            Ok(()) => tracing::info!("telegram: deleted the bot's webhook so it can poll"),
            Err(error) => tracing::warn!("cannot delete the bot's webhook: {error}"),
        }
        Ok(())
    }

    /// Relays, refuses or skips one update.
    async fn take(&mut self, update: Update) -> Result<(), BridgeError> {
        if let Some(query) = update.callback_query {
            return approval::take_press(self.api, self.config, &mut self.connection, query).await;
        }
        let Some(message) = update.message else {
            tracing::debug!("skipping update {}: not a message", update.update_id);
            return Ok(());
        };
        match classify(&message, self.config) {
            Incoming::Relay { chat_id, key, text } => {
                let photo = photos::largest(&message);
                let file = files::sent(&message);
                let caption = message
                    .caption
                    .as_deref()
                    .map(str::trim)
                    .filter(|caption| !caption.is_empty())
                    .map(str::to_string);
                self.relay(chat_id, key, text, photo, file, caption).await
            }
            Incoming::Refuse {
                chat_id,
                user_id,
                handle,
            } => {
                self.refuse(chat_id, &format!("user {user_id} ({handle})"))
                    .await
            }
            Incoming::Ignore(why) => {
                tracing::debug!("skipping update {}: {why}", update.update_id);
                Ok(())
            }
        }
    }

    async fn relay(
        &mut self,
        chat_id: i64,
        key: String,
        text: String,
        photo: Option<Photo>,
        file: Option<files::Sent>,
        caption: Option<String>,
    ) -> Result<(), BridgeError> {
        let (text, images, media) = match (photo, file) {
            (Some(photo), _) => {
                let (text, images) =
                    photos::attach(self.api, &mut self.connection, &key, photo, text).await?;
                (text, images, Vec::new())
            }
            (None, Some(file)) => {
                let (text, media) =
                    files::attach(self.api, &mut self.connection, &key, file, caption, text)
                        .await?;
                (text, Vec::new(), media)
            }
            (None, None) => (text, Vec::new(), Vec::new()),
        };
        // In a private chat the chat's id is its user's.
        let person = (!self.config.is_owner(chat_id)).then(|| format!("telegram user {chat_id}"));
        link::submit(
            &mut self.connection,
            SOURCE,
            key,
            text,
            images,
            person,
            media,
        )
        .await?;
        remember_chat(&mut self.connection, CHATS_STATE, &self.chats, chat_id).await?;
        Ok(())
    }

    /// Refuses a stranger (in a private chat, its id is the user's) and
    /// tells them so, the first time in this run.
    async fn refuse(&mut self, chat_id: i64, who: &str) -> Result<(), BridgeError> {
        let connection = &mut self.connection;
        self.strangers.refuse(connection, chat_id, who).await?;
        let api = self.api;
        let tell = |chat, refusal| api.send_message(chat, refusal, None);
        self.strangers.tell(connection, tell).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telegram::api::parse_updates;
    use serde_json::json;
    use std::path::Path;

    fn config() -> TelegramConfig {
        TelegramConfig::parse(Path::new("c"), "[telegram]\nallow = [42]\n").unwrap()
    }

    fn message(value: serde_json::Value) -> Message {
        let update = json!([{"update_id": 1, "message": value}]);
        parse_updates(update).unwrap().remove(0).message.unwrap()
    }

    fn private(from: i64, extra: serde_json::Value) -> Message {
        let mut value = json!({
            "message_id": 9, "date": 0,
            "from": {"id": from, "is_bot": false, "first_name": "Eve", "username": "eve"},
            "chat": {"id": from, "type": "private"},
        });
        for (key, field) in extra.as_object().unwrap() {
            value[key] = field.clone();
        }
        message(value)
    }

    #[test]
    fn an_allowed_users_text_is_relayed_with_its_key() {
        assert_eq!(
            classify(&private(42, json!({"text": " hello "})), &config()),
            Incoming::Relay {
                chat_id: 42,
                key: "telegram:42:9".into(),
                text: "hello".into()
            }
        );
    }

    #[test]
    fn strangers_are_refused_and_groups_and_bots_ignored() {
        assert_eq!(
            classify(&private(7, json!({"text": "hi"})), &config()),
            Incoming::Refuse {
                chat_id: 7,
                user_id: 7,
                handle: "@eve".into()
            }
        );
        let group = private(
            42,
            json!({"text": "hi", "chat": {"id": -100, "type": "group"}}),
        );
        assert_eq!(
            classify(&group, &config()),
            Incoming::Ignore("not a private chat")
        );
        let bot = private(
            42,
            json!({"from": {"id": 42, "is_bot": true, "first_name": "B"}}),
        );
        assert_eq!(
            classify(&bot, &config()),
            Incoming::Ignore("a message from a bot")
        );
        let nobody = TelegramConfig::parse(Path::new("c"), "[telegram]\nallow = []\n").unwrap();
        assert!(matches!(
            classify(&private(42, json!({"text": "hi"})), &nobody),
            Incoming::Refuse { .. }
        ));
    }

    #[test]
    fn captions_and_placeholders_stand_for_media() {
        let text = |extra| message_text(&private(42, extra));
        let photo = json!([{"file_id": "a", "file_unique_id": "b", "width": 1, "height": 1}]);
        assert_eq!(
            text(json!({"photo": photo, "caption": "my cat"})).as_deref(),
            Some("my cat")
        );
        assert_eq!(text(json!({"photo": photo})).as_deref(), Some("[photo]"));
        assert_eq!(
            text(json!({"voice": {"file_id": "v", "file_unique_id": "w", "duration": 3}}))
                .as_deref(),
            Some("[voice message]")
        );
        assert_eq!(
            text(
                json!({"document": {"file_id": "d", "file_unique_id": "e", "file_name": "a.pdf"}})
            )
            .as_deref(),
            Some("[file: \"a.pdf\"]")
        );
        assert_eq!(text(json!({"new_chat_title": "x"})), None);
        assert_eq!(
            classify(&private(42, json!({"pinned_message": {}})), &config()),
            Incoming::Ignore("nothing to relay")
        );
    }
}
