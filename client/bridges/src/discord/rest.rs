//! Discord's REST API as the bridge uses it, through twilight-http: the
//! client (pointed at `api_base`), the Gateway's address, a direct-message
//! channel, one message (with buttons or not), "typing…", an interaction's
//! answer, an attachment's bytes, the messages written in a channel since
//! one; and what a refusal means for delivery.
//!
//! Rate limits: twilight-http keeps Discord's buckets and waits out a 429
//! by its `Retry-After` and bucket headers before it sends again, so a send
//! here returns only once Discord took it or refused it for another reason.

use super::config::DiscordConfig;
use crate::bridge::courier::Refused;
use std::time::Duration;
use twilight_http::error::ErrorType;
use twilight_http::Client;
use twilight_model::channel::message::component::{ActionRow, Button, ButtonStyle};
use twilight_model::channel::message::{AllowedMentions, Component, MessageFlags};
use twilight_model::channel::Message;
use twilight_model::http::interaction::{
    InteractionResponse, InteractionResponseData, InteractionResponseType,
};
use twilight_model::id::marker::{ChannelMarker, InteractionMarker, MessageMarker, UserMarker};
use twilight_model::id::Id;

/// How long one REST call may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Discord's JSON error codes the bridge tells apart.
mod code {
    /// Cannot send messages to this user (DMs closed, no shared server).
    pub const CANNOT_MESSAGE_USER: u64 = 50007;
    /// Missing access, missing permissions: the bot cannot post there.
    pub const MISSING_ACCESS: u64 = 50001;
    pub const MISSING_PERMISSIONS: u64 = 50013;
    pub const UNKNOWN_CHANNEL: u64 = 10003;
}

#[derive(Debug, thiserror::Error)]
pub enum RestError {
    #[error("Discord refused the bot token (401): reset it in the Developer Portal and save it with `hearth setup`")]
    Unauthorized,
    #[error("Discord answered {status}: {message}")]
    Refused {
        status: u16,
        /// Discord's JSON error code, when it gave one.
        code: Option<u64>,
        message: String,
    },
    #[error("cannot reach Discord: {0}")]
    Unreachable(String),
}

impl RestError {
    /// What a refused send means for delivery: a token refused stops the
    /// bridge; a recipient that can never take a message is skipped; other
    /// trouble is tried again.
    pub fn refused<E: From<RestError>>(self) -> Refused<E> {
        match &self {
            RestError::Unauthorized => Refused::Fatal(self.into()),
            RestError::Refused { status, code, .. }
                if matches!(status, 400 | 403 | 404)
                    || code.is_some_and(|code| {
                        [
                            code::CANNOT_MESSAGE_USER,
                            code::MISSING_ACCESS,
                            code::MISSING_PERMISSIONS,
                            code::UNKNOWN_CHANNEL,
                        ]
                        .contains(&code)
                    }) =>
            {
                Refused::Skip(format!("{self}; skipped"))
            }
            _ => Refused::Retry(self.to_string()),
        }
    }
}

impl From<twilight_http::Error> for RestError {
    fn from(err: twilight_http::Error) -> RestError {
        match err.kind() {
            ErrorType::Unauthorized => RestError::Unauthorized,
            ErrorType::Response { status, .. } if status.get() == 401 => RestError::Unauthorized,
            ErrorType::Response { status, error, .. } => {
                let (code, message) = match error {
                    twilight_http::api_error::ApiError::General(general) => {
                        (Some(general.code), general.message.clone())
                    }
                    other => (None, other.to_string()),
                };
                RestError::Refused {
                    status: status.get(),
                    code,
                    message,
                }
            }
            _ => RestError::Unreachable(err.to_string()),
        }
    }
}

impl From<twilight_http::response::DeserializeBodyError> for RestError {
    fn from(err: twilight_http::response::DeserializeBodyError) -> RestError {
        RestError::Unreachable(format!("unreadable answer: {err}"))
    }
}

/// The REST client for `config`'s `api_base` with `token`. Any address but
/// Discord's own (a test's fake) is reached as given, over plain HTTP when
/// it says `http://`.
pub fn client(config: &DiscordConfig, token: String) -> Client {
    let builder = Client::builder()
        .token(token)
        .timeout(REQUEST_TIMEOUT)
        // A refused token is said once and the bridge stops; it must not
        // keep every later call from even trying after a fix and a restart.
        .remember_invalid_token(false);
    let builder = match config.api_base.split_once("://") {
        Some((scheme, host)) if config.api_base != super::config::DEFAULT_API_BASE => {
            builder.proxy(host.to_string(), scheme == "http")
        }
        _ => builder,
    };
    builder.build()
}

/// The Gateway's address for this bot (`GET /gateway/bot`); also the first
/// check of the token.
pub async fn gateway_url(client: &Client) -> Result<String, RestError> {
    let info = client.gateway().authed().await?.model().await?;
    Ok(info.url)
}

/// The direct-message channel with `user` (`POST /users/@me/channels`:
/// Discord answers the one that exists, or opens it).
pub async fn dm_channel(client: &Client, user: u64) -> Result<Id<ChannelMarker>, RestError> {
    let user: Id<UserMarker> = Id::new_checked(user).ok_or_else(|| RestError::Refused {
        status: 400,
        code: None,
        message: "user id 0".into(),
    })?;
    let channel = client.create_private_channel(user).await?.model().await?;
    Ok(channel.id)
}

/// Nobody is pinged by what the agent writes (`@everyone` in a reply
/// stays text).
fn no_mentions() -> AllowedMentions {
    AllowedMentions::default()
}

/// The most messages Discord gives for one `GET /channels/{id}/messages`.
const MESSAGES_PER_PAGE: u16 = 100;

/// Every message in `channel` written after message `after`, oldest first
/// (`GET /channels/{id}/messages?after=…&limit=100`, page after page).
/// Discord gives the 100 oldest after the id asked for, newest first, so
/// each page is put in order and the next asked for after its newest, until
/// one comes back short. Only as many as Discord keeps.
pub async fn messages_after(
    client: &Client,
    channel: Id<ChannelMarker>,
    mut after: Id<MessageMarker>,
) -> Result<Vec<Message>, RestError> {
    let mut messages = Vec::new();
    loop {
        let page = client
            .channel_messages(channel)
            .limit(MESSAGES_PER_PAGE)
            .after(after)
            .await?
            .models()
            .await?;
        let full = page.len() >= usize::from(MESSAGES_PER_PAGE);
        let page = oldest_first(page, after);
        let newest = page.last().map(|message| message.id);
        messages.extend(page);
        match newest {
            Some(newest) if full => after = newest,
            _ => return Ok(messages),
        }
    }
}

/// A page of messages in the order they were written (by id), without any
/// at or before `after` (Discord gives none, a fake might).
fn oldest_first(mut page: Vec<Message>, after: Id<MessageMarker>) -> Vec<Message> {
    page.retain(|message| message.id > after);
    page.sort_by_key(|message| message.id);
    page
}

/// Sends `text` to `channel`, with `buttons` under it when given. The
/// answer's body is not read: once Discord said yes the message is out,
/// and a body this client cannot read must not send it again.
pub async fn send(
    client: &Client,
    channel: Id<ChannelMarker>,
    text: &str,
    buttons: &[Component],
) -> Result<(), RestError> {
    let mentions = no_mentions();
    let mut request = client
        .create_message(channel)
        .content(text)
        .allowed_mentions(Some(&mentions));
    if !buttons.is_empty() {
        request = request.components(buttons);
    }
    request.await?;
    Ok(())
}

/// Sends a file (an image the agent shows) to `channel`.
pub async fn send_file(
    client: &Client,
    channel: Id<ChannelMarker>,
    name: String,
    bytes: Vec<u8>,
) -> Result<(), RestError> {
    let attachments = [twilight_model::http::attachment::Attachment::from_bytes(
        name, bytes, 0,
    )];
    client
        .create_message(channel)
        .attachments(&attachments)
        .await?;
    Ok(())
}

/// Shows "typing…" in `channel` for about ten seconds.
pub async fn typing(client: &Client, channel: Id<ChannelMarker>) -> Result<(), RestError> {
    client.create_typing_trigger(channel).await?;
    Ok(())
}

/// The Allow and Deny buttons of approval `id`.
pub fn approval_buttons(id: &str) -> Vec<Component> {
    let button = |label: &str, style, answer: &str| {
        Component::Button(Button {
            custom_id: Some(super::approval::custom_id(id, answer)),
            disabled: false,
            emoji: None,
            id: None,
            label: Some(label.to_string()),
            sku_id: None,
            style,
            url: None,
        })
    };
    vec![Component::ActionRow(ActionRow {
        components: vec![
            button("Allow", ButtonStyle::Success, "allow"),
            button("Deny", ButtonStyle::Danger, "deny"),
        ],
        id: None,
    })]
}

/// Answers an interaction (a button pressed): with `update`, the message
/// of the buttons becomes `text` without them; else `text` is said only to
/// the one who pressed.
pub async fn answer_interaction(
    client: &Client,
    application: u64,
    interaction: Id<InteractionMarker>,
    token: &str,
    text: &str,
    update: bool,
) -> Result<(), RestError> {
    let Some(application) = Id::new_checked(application) else {
        return Err(RestError::Unreachable("no application id yet".into()));
    };
    let response = InteractionResponse {
        kind: if update {
            InteractionResponseType::UpdateMessage
        } else {
            InteractionResponseType::ChannelMessageWithSource
        },
        data: Some(InteractionResponseData {
            content: Some(text.to_string()),
            components: update.then(Vec::new),
            allowed_mentions: Some(no_mentions()),
            flags: (!update).then_some(MessageFlags::EPHEMERAL),
            ..InteractionResponseData::default()
        }),
    };
    client
        .interaction(application)
        .create_response(interaction, token, &response)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_skips_the_recipient_retries_or_stops_the_bridge() {
        let refused = |status, code| RestError::Refused {
            status,
            code,
            message: "x".into(),
        };
        let skip = refused(403, Some(code::CANNOT_MESSAGE_USER)).refused::<RestError>();
        assert!(
            matches!(skip, Refused::Skip(why) if why.contains("403") && why.ends_with("skipped"))
        );
        assert!(matches!(
            refused(502, None).refused::<RestError>(),
            Refused::Retry(_)
        ));
        assert!(matches!(
            RestError::Unauthorized.refused::<RestError>(),
            Refused::Fatal(RestError::Unauthorized)
        ));
    }
}
