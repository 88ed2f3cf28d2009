//! Setup's Discord step: the bot token checked by asking Discord for the
//! Gateway's address, then the owner found by pairing — setup shows a
//! short random code, the person sends it to the bot in a direct message,
//! and the user id of the message that is exactly that code joins the
//! allowlist. No one looks up ids by hand.
//!
//! Setup pairs over a Gateway session of its own. It does not pair while
//! this home's Discord bridge runs (its lock is held): the bridge would
//! refuse the code's sender as a stranger before they are allowed, so
//! setup says how to pair (stop it, pair, start it).

use super::ask::{self, AskError, Asker};
use super::edit::Edit;
use super::telegram::random_code;
use super::SetupOptions;
use hearth_bridges::discord::bridge::intents;
use hearth_bridges::discord::config::{DiscordConfig, DEFAULT_API_BASE, DEFAULT_TOKEN_ENV};
use hearth_bridges::discord::rest::{self, RestError};
use hearth_protocol::home::Home;
use std::time::Duration;
use twilight_gateway::{Event, EventTypeFlags, Shard, ShardId, StreamExt};

/// How long setup waits for the code when `--pair-timeout` is not given.
pub const PAIR_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub enum DiscordStepError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error("{0}; copy the token again from the Developer Portal (Bot → Reset Token)")]
    BadToken(RestError),
    #[error("Discord refused the Message Content Intent: switch it on in the Developer Portal, under Bot → Privileged Gateway Intents, and run setup again (nothing about Discord was written)")]
    ContentIntent,
    #[error("the Discord Gateway connection ended while waiting for the code (nothing about Discord was written)")]
    GatewayClosed,
    #[error("no direct message with the code {code} reached the bot within {seconds} s; run setup again to get a new code (nothing about Discord was written)")]
    PairTimeout { code: String, seconds: u64 },
    #[error("cannot read a random code: {0}")]
    Random(std::io::Error),
    #[error("this home's Discord bridge runs and would refuse the code's sender before they are allowed; stop hearthd with `hearth stop`, pair with `hearth setup`, then start it again (nothing about Discord was written)")]
    BridgeRunning,
}

/// What the Discord step decided.
#[derive(Debug, Clone)]
pub struct Paired {
    pub token_env: String,
    /// The token, when it is new here and goes into `secrets.env`.
    pub new_token: Option<String>,
    /// The allowlist after the step: what the file had, and who joined.
    pub allow: Vec<u64>,
    /// The one server channel besides direct messages, when given.
    pub channel: Option<u64>,
    /// `api_base` to write, when it is not Discord's own.
    pub api_base: Option<String>,
}

impl Paired {
    pub fn edits(&self) -> Vec<Edit> {
        // Ids as text: TOML integers would hold them, but people copy them
        // from Discord as text and tools read them as such.
        let allow: Vec<toml::Value> = self
            .allow
            .iter()
            .map(|id| toml::Value::from(id.to_string()))
            .collect();
        let mut edits = vec![Edit::set("discord", "allow", allow)];
        if self.token_env != DEFAULT_TOKEN_ENV {
            edits.push(Edit::set("discord", "token_env", self.token_env.as_str()));
        }
        if let Some(channel) = self.channel {
            edits.push(Edit::set("discord", "channel", channel.to_string()));
        }
        if let Some(base) = &self.api_base {
            edits.push(Edit::set("discord", "api_base", base.as_str()));
        }
        edits
    }
}

/// Whether to set up Discord at all: a Discord flag says yes; else a
/// person is asked.
pub fn wanted(asker: &mut Asker<'_>, options: &SetupOptions) -> Result<bool, AskError> {
    if options.discord_token_env.is_some()
        || options.discord_pair
        || !options.discord_allow.is_empty()
        || options.discord_channel.is_some()
    {
        return Ok(true);
    }
    asker.confirm(
        "Talk to the agent from Discord too (a bot of your own)?",
        false,
    )
}

/// The token, its check, then pairing (or the ids given). `current` is the
/// `[discord]` table the file has now.
pub async fn run(
    asker: &mut Asker<'_>,
    options: &SetupOptions,
    home: &Home,
    current: Option<&toml::Table>,
) -> Result<Paired, DiscordStepError> {
    let text_of = |key: &str| {
        current
            .and_then(|table| table.get(key))
            .and_then(toml::Value::as_str)
            .map(str::to_string)
    };
    let token_env = options
        .discord_token_env
        .clone()
        .or_else(|| text_of("token_env"))
        .unwrap_or_else(|| DEFAULT_TOKEN_ENV.to_string());
    let api_base = options
        .discord_api_base
        .clone()
        .or_else(|| text_of("api_base"))
        .map(|base| base.trim_end_matches('/').to_string())
        .filter(|base| base != DEFAULT_API_BASE);
    let (token, new_token) = ask::secret_or_ask(
        asker,
        home,
        &token_env,
        "Paste the bot's token (Developer Portal → your application → Bot → Reset Token)",
        "--discord-token-env NAME (a variable holding the token)",
        "A token is needed: create an application at https://discord.com/developers/applications, then Bot → Reset Token.",
    )?;
    let config = DiscordConfig {
        token_env: token_env.clone(),
        allow: Vec::new(),
        owner: None,
        channel: None,
        api_base: api_base.clone().unwrap_or_else(|| DEFAULT_API_BASE.into()),
        send: Vec::new(),
    };
    let client = rest::client(&config, token.clone());
    let gateway = rest::gateway_url(&client)
        .await
        .map_err(DiscordStepError::BadToken)?;
    asker.say("✓ Discord took the bot token");

    let mut allow: Vec<u64> = current
        .and_then(|table| table.get("allow"))
        .and_then(toml::Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(|id| match id {
                    toml::Value::Integer(n) => u64::try_from(*n).ok(),
                    toml::Value::String(text) => text.parse().ok(),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let mut joined = options.discord_allow.clone();
    let pair = options.discord_pair
        || (options.discord_allow.is_empty()
            && asker.confirm(
                "Pair your Discord account now, with a code you send the bot?",
                true,
            )?);
    if pair {
        if hearth_protocol::lock::held(&home.bridge_lock("discord")) {
            return Err(DiscordStepError::BridgeRunning);
        }
        let timeout = options.pair_timeout.unwrap_or(PAIR_TIMEOUT);
        let shard_config = twilight_gateway::ConfigBuilder::new(token, intents())
            .proxy_url(gateway)
            .build();
        let shard = Shard::with_config(ShardId::ONE, shard_config);
        joined.push(pair_by_code(asker, &client, shard, timeout).await?);
    }
    for id in joined {
        if !allow.contains(&id) {
            allow.push(id);
        }
    }
    if allow.is_empty() {
        asker.say("No one is on the allowlist yet: the bridge lets nobody in until `allow` in [discord] names your user id (run setup again with --discord-pair).");
    }
    let channel = options.discord_channel;
    Ok(Paired {
        token_env,
        new_token,
        allow,
        channel,
        api_base,
    })
}

/// Shows a fresh code and reads the Gateway until a direct message that
/// is exactly the code arrives; returns its sender's user id.
async fn pair_by_code(
    asker: &mut Asker<'_>,
    client: &twilight_http::Client,
    mut shard: Shard,
    timeout: Duration,
) -> Result<u64, DiscordStepError> {
    let code = random_code().map_err(DiscordStepError::Random)?;
    asker.say(&format!(
        "Send this code to the bot in a direct message, as a message of its own:\n\n    {code}\n\n(waiting up to {} s)",
        timeout.as_secs()
    ));
    let wanted = EventTypeFlags::READY | EventTypeFlags::MESSAGE_CREATE;
    let waited = tokio::time::timeout(timeout, async {
        loop {
            let event = match shard.next_event(wanted).await {
                None => return Err(DiscordStepError::GatewayClosed),
                // One unreadable event: the next may be the code.
                Some(Err(_)) => continue,
                Some(Ok(event)) => event,
            };
            match event {
                Event::GatewayClose(Some(frame)) if frame.code == 4004 => {
                    return Err(DiscordStepError::BadToken(RestError::Unauthorized))
                }
                Event::GatewayClose(Some(frame)) if frame.code == 4014 => {
                    return Err(DiscordStepError::ContentIntent)
                }
                Event::MessageCreate(message)
                    if message.guild_id.is_none() && !message.author.bot =>
                {
                    let who = &message.author;
                    if message.content.trim() == code {
                        asker.say(&format!("✓ paired with {} (user id {})", who.name, who.id));
                        let welcome =
                            "Paired with hearth: your messages here now reach your agent.";
                        // The pairing holds whether or not the greeting goes out.
                        let _ = rest::send(client, message.channel_id, welcome, &[]).await;
                        return Ok(who.id.get());
                    }
                    asker.say(&format!(
                        "(a message from {} that is not the code: passed over)",
                        who.name
                    ));
                }
                _ => {}
            }
        }
    })
    .await;
    waited.unwrap_or(Err(DiscordStepError::PairTimeout {
        code,
        seconds: timeout.as_secs(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_written_as_text_and_defaults_are_not_written() {
        let paired = Paired {
            token_env: DEFAULT_TOKEN_ENV.to_string(),
            new_token: None,
            allow: vec![123456789012345678],
            channel: Some(42),
            api_base: None,
        };
        assert_eq!(
            paired.edits(),
            vec![
                Edit::set(
                    "discord",
                    "allow",
                    vec![toml::Value::from("123456789012345678")]
                ),
                Edit::set("discord", "channel", "42"),
            ]
        );
    }
}
