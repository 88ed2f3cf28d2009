//! Setup's Telegram step: the bot token checked with `getMe`, then the
//! owner found by pairing — setup shows a short random code, the person
//! sends it to the bot from their phone, and the user id of the private
//! message that holds exactly that code joins the allowlist. No one reads
//! `getUpdates` by hand.
//!
//! Telegram gives a bot's messages to one poller at a time: a second
//! `getUpdates` ends the first with 409. So setup does not pair while this
//! home's Telegram bridge runs (its lock is held): it says which process
//! holds the bot and how to pair (stop it, pair, start it), rather than
//! fight the bridge for the messages or stop a running agent unasked. A
//! poller elsewhere (another machine, another home) shows up as that 409
//! while setup waits, and is named the same way.

use super::ask::{self, AskError, Asker};
use super::edit::Edit;
use super::SetupOptions;
use hearth_bridges::telegram::api::{Api, ApiError, Update};
use hearth_bridges::telegram::config::{DEFAULT_API_BASE, DEFAULT_TOKEN_ENV};
use hearth_protocol::home::Home;
use std::io::Read;
use std::time::Duration;
use tokio::time::Instant;

/// How long setup waits for the code when `--pair-timeout` is not given.
pub const PAIR_TIMEOUT: Duration = Duration::from_secs(300);

/// The longest single long poll while waiting for the code.
const POLL_SECS: u64 = 20;

#[derive(Debug, thiserror::Error)]
pub enum TelegramStepError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error("Telegram refused the bot token ({0}); copy it again from @BotFather")]
    BadToken(ApiError),
    #[error("cannot wait for the code: {0}")]
    Poll(ApiError),
    #[error("no private message with the code {code} reached @{bot} within {seconds} s; run setup again to get a new code (nothing about Telegram was written)")]
    PairTimeout {
        code: String,
        bot: String,
        seconds: u64,
    },
    #[error("cannot read a random code: {0}")]
    Random(std::io::Error),
    #[error("{running} and reads @{bot}'s messages, which Telegram gives to one program at a time, so setup cannot wait for the code now; {advice} (nothing about Telegram was written)")]
    BridgeRunning {
        /// Who runs the bridge, as a user reads it.
        running: String,
        bot: String,
        /// How to pair: stop it, pair, start it again.
        advice: &'static str,
    },
    #[error("another program reads @{bot}'s messages (Telegram: {description}): a hearth bridge on another machine or for another home, or another bot program with this token; stop it and run setup again (nothing about Telegram was written)")]
    OtherPoller { bot: String, description: String },
}

/// What the Telegram step decided.
#[derive(Debug, Clone)]
pub struct Paired {
    pub token_env: String,
    /// The token, when it is new here and goes into `secrets.env`.
    pub new_token: Option<String>,
    /// The allowlist after the step: what the file had, and who joined.
    pub allow: Vec<i64>,
    /// `api_base` to write, when it is not Telegram's own.
    pub api_base: Option<String>,
}

impl Paired {
    pub fn edits(&self) -> Vec<Edit> {
        let allow: Vec<toml::Value> = self.allow.iter().map(|id| toml::Value::from(*id)).collect();
        let mut edits = vec![Edit::set("telegram", "allow", allow)];
        if self.token_env != DEFAULT_TOKEN_ENV {
            edits.push(Edit::set("telegram", "token_env", self.token_env.as_str()));
        }
        if let Some(base) = &self.api_base {
            edits.push(Edit::set("telegram", "api_base", base.as_str()));
        }
        edits
    }
}

/// Whether to set up Telegram at all: a Telegram flag says yes; else a
/// person is asked.
pub fn wanted(asker: &mut Asker<'_>, options: &SetupOptions) -> Result<bool, AskError> {
    if options.telegram_token_env.is_some()
        || options.telegram_pair
        || !options.telegram_allow.is_empty()
    {
        return Ok(true);
    }
    asker.confirm(
        "Talk to the agent from Telegram too (a bot of your own)?",
        false,
    )
}

/// The token, `getMe`, then pairing (or the ids given). `current` is the
/// `[telegram]` table the file has now.
pub async fn run(
    asker: &mut Asker<'_>,
    options: &SetupOptions,
    home: &Home,
    current: Option<&toml::Table>,
) -> Result<Paired, TelegramStepError> {
    let current_env = current
        .and_then(|table| table.get("token_env"))
        .and_then(toml::Value::as_str);
    let token_env = options
        .telegram_token_env
        .clone()
        .or_else(|| current_env.map(str::to_string))
        .unwrap_or_else(|| DEFAULT_TOKEN_ENV.to_string());
    let api_base = options
        .telegram_api_base
        .clone()
        .or_else(|| {
            current
                .and_then(|table| table.get("api_base"))
                .and_then(toml::Value::as_str)
                .map(str::to_string)
        })
        .filter(|base| base.trim_end_matches('/') != DEFAULT_API_BASE);
    let (token, new_token) = ask::secret_or_ask(
        asker,
        home,
        &token_env,
        "Paste the bot token @BotFather gave you",
        "--telegram-token-env NAME (a variable holding the token)",
        "A token is needed: in Telegram, /newbot to @BotFather gives one.",
    )?;
    let api = Api::new(api_base.as_deref().unwrap_or(DEFAULT_API_BASE), &token)
        .map_err(TelegramStepError::BadToken)?;
    let bot = api.get_me().await.map_err(TelegramStepError::BadToken)?;
    let bot_name = bot.username.clone().unwrap_or(bot.first_name.clone());
    asker.say(&format!("✓ the token is the bot @{bot_name}"));

    let mut allow: Vec<i64> = current
        .and_then(|table| table.get("allow"))
        .and_then(toml::Value::as_array)
        .map(|ids| ids.iter().filter_map(toml::Value::as_integer).collect())
        .unwrap_or_default();
    let mut joined = options.telegram_allow.clone();
    let pair = options.telegram_pair
        || (options.telegram_allow.is_empty()
            && asker.confirm(
                "Pair your Telegram account now, with a code you send the bot?",
                true,
            )?);
    if pair {
        refuse_beside_the_bridge(home, &bot_name)?;
        let timeout = options.pair_timeout.unwrap_or(PAIR_TIMEOUT);
        joined.push(pair_by_code(asker, &api, &bot_name, timeout).await?);
    }
    for id in joined {
        if !allow.contains(&id) {
            allow.push(id);
        }
    }
    if allow.is_empty() {
        asker.say("No one is on the allowlist yet: the bridge lets nobody in until `allow` in [telegram] names your user id (run setup again with --telegram-pair).");
    }
    Ok(Paired {
        token_env,
        new_token,
        allow,
        api_base,
    })
}

/// Refuses to pair while this home's Telegram bridge holds its lock: its
/// polls and setup's would end each other's.
fn refuse_beside_the_bridge(home: &Home, bot: &str) -> Result<(), TelegramStepError> {
    let lock = home.bridge_lock("telegram");
    if !hearth_protocol::lock::held(&lock) {
        return Ok(());
    }
    let bridge = hearth_protocol::lock::holder(&lock)
        .map_or_else(String::new, |pid| format!(" (pid {pid})"));
    let (running, advice) = match crate::life::lock_holder(home) {
        Some(daemon) => (
            format!("hearthd (pid {daemon}) runs the Telegram bridge{bridge}"),
            "stop it with `hearth stop`, pair with `hearth setup`, then `hearth` starts it again",
        ),
        None => (
            format!("a Telegram bridge{bridge} runs for this home"),
            "stop that bridge, pair with `hearth setup`, then start the bridge again",
        ),
    };
    Err(TelegramStepError::BridgeRunning {
        running,
        bot: bot.to_string(),
        advice,
    })
}

/// A failed `getUpdates` while pairing: another poller's 409 is named as
/// such.
fn poll_failed(err: ApiError, bot: &str) -> TelegramStepError {
    match err {
        ApiError::Refused {
            code: 409,
            description,
            ..
        } if !description.to_ascii_lowercase().contains("webhook") => {
            TelegramStepError::OtherPoller {
                bot: bot.to_string(),
                description,
            }
        }
        err => TelegramStepError::Poll(err),
    }
}

/// Shows a fresh code and long-polls until a private message that is
/// exactly the code arrives; returns its sender's user id. Updates that
/// were waiting before the code was shown are confirmed and passed over.
async fn pair_by_code(
    asker: &mut Asker<'_>,
    api: &Api,
    bot: &str,
    timeout: Duration,
) -> Result<i64, TelegramStepError> {
    let code = random_code().map_err(TelegramStepError::Random)?;
    let mut offset = next_offset(
        &api.get_updates(None, 0)
            .await
            .map_err(|err| poll_failed(err, bot))?,
        None,
    );
    asker.say(&format!(
        "Send this code to @{bot} from your phone, as a message of its own:\n\n    {code}\n\n(waiting up to {} s)",
        timeout.as_secs()
    ));
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(TelegramStepError::PairTimeout {
                code,
                bot: bot.to_string(),
                seconds: timeout.as_secs(),
            });
        }
        let poll = left.as_secs().clamp(1, POLL_SECS);
        let polled =
            tokio::time::timeout(left + Duration::from_secs(1), api.get_updates(offset, poll))
                .await;
        let updates = match polled {
            Ok(updates) => updates.map_err(|err| poll_failed(err, bot))?,
            Err(_) => Vec::new(),
        };
        offset = next_offset(&updates, offset);
        for update in &updates {
            let Some(message) = &update.message else {
                continue;
            };
            let (Some(from), Some(text)) = (&message.from, &message.text) else {
                continue;
            };
            if message.chat.kind != "private" || from.is_bot {
                continue;
            }
            if text.trim() == code {
                asker.say(&format!(
                    "✓ paired with {} (user id {})",
                    from.handle(),
                    from.id
                ));
                let welcome = "Paired with hearth: your messages here now reach your agent.";
                // The pairing holds whether or not the greeting goes out.
                let _ = api.send_message(message.chat.id, welcome, None).await;
                // Confirms the code's message, so the bridge does not take it.
                let _ = api.get_updates(offset, 0).await;
                return Ok(from.id);
            }
            asker.say(&format!(
                "(a message from {} that is not the code: passed over)",
                from.handle()
            ));
        }
    }
}

/// The offset that confirms every update seen so far.
fn next_offset(updates: &[Update], offset: Option<i64>) -> Option<i64> {
    updates
        .iter()
        .map(|update| update.update_id + 1)
        .max()
        .or(offset)
}

/// Six random digits, from the kernel's generator.
pub(super) fn random_code() -> std::io::Result<String> {
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(format!("{:06}", u64::from_le_bytes(bytes) % 1_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits_and_differ() {
        let (a, b) = (random_code().unwrap(), random_code().unwrap());
        assert_eq!(a.len(), 6);
        assert!(a.chars().all(|c| c.is_ascii_digit()));
        let more: Vec<String> = (0..5).map(|_| random_code().unwrap()).collect();
        assert!(more.iter().any(|code| *code != a) || b != a);
    }

    #[test]
    fn the_default_token_variable_is_not_written() {
        let paired = Paired {
            token_env: DEFAULT_TOKEN_ENV.to_string(),
            new_token: None,
            allow: vec![42],
            api_base: None,
        };
        assert_eq!(
            paired.edits(),
            vec![Edit::set("telegram", "allow", vec![toml::Value::from(42)])]
        );
    }
}
