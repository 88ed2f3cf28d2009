//! The bridge's life: read the configuration and the token, take the
//! home's bridge lock, ask Discord for the Gateway's address (which checks
//! the token), read the bridge's state from the daemon, then run the
//! inbound half (the Gateway) and the outbound half (REST) until one
//! fails, the daemon goes away, or the process is told to stop.
//!
//! Everything the bridge must remember lives in the daemon's database (the
//! delivery cursor, the chats written from, how far each chat was read), so
//! the process keeps nothing and may be killed at any moment: hearthd
//! starts it again.

use super::config::{ConfigError, DiscordConfig};
use super::inbound::Inbound;
use super::marks::ReadMarks;
use super::outbound::Outbound;
use super::rest::{self, RestError};
use crate::bridge::delivery::{run_halves, Cursor};
use crate::bridge::link::{self, LinkError};
use crate::bridge::lock::{lock, LockError};
use crate::bridge::people::parse_chats;
use hearth_client::connect_running;
use hearth_protocol::home::Home;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use tokio::sync::watch;
use twilight_gateway::{Intents, Shard, ShardId};

/// What the bridge's messages and notes say they came from.
pub const SOURCE: &str = "discord";

/// The id of the last log message delivered or skipped, or `start` when
/// none was yet and the log was empty.
pub const CURSOR_STATE: &str = "discord.cursor";

/// The chats written from, as a JSON list (see [`Chat`]).
pub const CHATS_STATE: &str = "discord.chats";

/// The newest message taken in each chat's channel (see [`ReadMarks`]).
pub const READ_STATE: &str = "discord.read";

/// What the bot reads: direct messages, server messages (only the
/// allowlisted channel's are taken) and their content, a privileged intent
/// switched on in the Developer Portal.
pub fn intents() -> Intents {
    Intents::DIRECT_MESSAGES | Intents::GUILD_MESSAGES | Intents::MESSAGE_CONTENT
}

/// Where the agent's messages go: an allowed person's direct messages, or
/// the allowlisted channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Chat {
    /// A user id: their direct messages with the bot.
    Person(u64),
    /// A channel id in a server.
    Channel(u64),
}

impl fmt::Display for Chat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Chat::Person(user) => write!(f, "user {user}"),
            Chat::Channel(channel) => write!(f, "channel {channel}"),
        }
    }
}

/// Why the Gateway ended the bridge.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("the Discord Gateway refused the bot token (4004): reset it in the Developer Portal and save it with `hearth setup`")]
    TokenRefused,
    #[error("Discord refused the Message Content Intent (4014): switch it on in the Developer Portal, under Bot → Privileged Gateway Intents, then `hearth restart`")]
    ContentIntent,
    #[error("the Discord Gateway connection ended")]
    Closed,
}

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error(transparent)]
    Rest(#[from] RestError),
    #[error(transparent)]
    Gateway(#[from] GatewayError),
}

impl BridgeError {
    /// Whether the bridge cannot run until its configuration is fixed, so
    /// starting it again would only fail again.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            BridgeError::Config(_)
                | BridgeError::Rest(RestError::Unauthorized)
                | BridgeError::Gateway(GatewayError::TokenRefused | GatewayError::ContentIntent)
        )
    }
}

/// Runs the bridge for `home` until `shutdown` completes or it fails. Why it
/// cannot start is said on stderr, which hearthd keeps in its log and shows
/// in `hearth status` — never in the agent's conversation.
pub async fn run(home: &Home, shutdown: impl Future<Output = ()>) -> Result<(), BridgeError> {
    let config = DiscordConfig::load(home)?;
    let token = config.token(home)?;
    let _lock = lock(&home.bridge_lock("discord"), "Discord", "discord")?;
    let client = rest::client(&config, token.clone());
    let gateway = rest::gateway_url(&client).await?;
    let (mut control, _) = connect_running(home, None, "discord", None)
        .await
        .map_err(LinkError::from)?;
    let cursor = link::read_state(&mut control, CURSOR_STATE, Cursor::parse).await?;
    let chats: BTreeSet<Chat> = link::read_state(&mut control, CHATS_STATE, parse_chats)
        .await?
        .unwrap_or_default();
    let (chats_out, chats_in) = watch::channel(chats);
    let mut marks = link::read_state(&mut control, READ_STATE, ReadMarks::parse)
        .await?
        .unwrap_or_default();
    marks.keep_channel(config.channel);

    // The outbound half starts first: it fixes where delivery begins before
    // any new message can be logged by the inbound half.
    let outbound = Outbound::start(home, &client, &config, cursor, chats_in).await?;
    // Only now are messages taken from Discord: both halves are ready.
    let shard_config = twilight_gateway::ConfigBuilder::new(token, intents())
        .proxy_url(gateway)
        .build();
    let shard = Shard::with_config(ShardId::ONE, shard_config);
    let inbound = Inbound::new(&client, &config, control, shard, chats_out, marks);
    tracing::info!(
        "discord bridge running for {} allowed people{}",
        config.allow.len(),
        config
            .channel
            .map(|channel| format!(" and channel {channel}"))
            .unwrap_or_default()
    );
    let (stop, stopping) = watch::channel(false);
    run_halves(outbound.run(stopping), inbound.run(), shutdown, stop).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chats_are_stored_by_kind_and_id() {
        let chats: BTreeSet<Chat> = [Chat::Person(7), Chat::Channel(9)].into();
        let stored = serde_json::to_string(&chats).unwrap();
        assert_eq!(stored, r#"[{"person":7},{"channel":9}]"#);
        assert_eq!(parse_chats::<Chat>(&stored), Some(chats));
    }
}
