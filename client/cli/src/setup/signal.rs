//! Setup's Signal step: the agent's number (the account signal-cli is
//! registered or linked as), how the bridge reaches signal-cli, and who is
//! allowed — numbers given, or the owner found by pairing: setup shows a
//! short random code, the person sends it to the agent's number from their
//! phone, and the sender of the message that is exactly that code joins
//! the allowlist.
//!
//! Pairing reads the messages signal-cli receives, which the bridge reads
//! too; so setup does not pair while this home's Signal bridge runs (its
//! lock is held), and says how to (stop it, pair, start it).

use super::ask::{AskError, Asker};
use super::edit::Edit;
use super::SetupOptions;
use hearth_bridges::signal::api;
use hearth_bridges::signal::config::{address, Reach, DEFAULT_COMMAND};
use hearth_bridges::signal::envelope;
use hearth_bridges::signal::format::Styled;
use hearth_bridges::signal::rpc::{Notifications, Rpc, RpcError};
use hearth_bridges::signal::signal_cli::{self, SignalCli, StartError};
use hearth_protocol::home::Home;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum SignalStepError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error("`{0}` is not a phone number with its country code, like +15550001111")]
    BadNumber(String),
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Rpc(#[from] RpcError),
    #[error("no message with the code {code} reached {account} within {seconds} s; run setup again to get a new code (nothing about Signal was written)")]
    PairTimeout {
        code: String,
        account: String,
        seconds: u64,
    },
    #[error("cannot read a random code: {0}")]
    Random(std::io::Error),
    #[error("this home's Signal bridge runs and reads the messages signal-cli receives, so setup cannot wait for the code now; stop hearthd with `hearth stop`, pair with `hearth setup`, then start it again (nothing about Signal was written)")]
    BridgeRunning,
}

/// What the Signal step decided.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub account: String,
    pub reach: Reach,
    /// The allowlist after the step: what the file had, and who joined.
    pub allow: Vec<String>,
}

impl Chosen {
    pub fn edits(&self) -> Vec<Edit> {
        let allow: Vec<toml::Value> = self
            .allow
            .iter()
            .map(|who| toml::Value::from(who.as_str()))
            .collect();
        let mut edits = vec![
            Edit::set("signal", "account", self.account.as_str()),
            Edit::set("signal", "allow", allow),
            Edit::remove("signal", "socket"),
            Edit::remove("signal", "tcp"),
            Edit::remove("signal", "command"),
        ];
        let reach = match &self.reach {
            Reach::Socket(path) => Some(Edit::set("signal", "socket", path.display().to_string())),
            Reach::Tcp(address) => Some(Edit::set("signal", "tcp", address.as_str())),
            Reach::Command(program) if program == DEFAULT_COMMAND => None,
            Reach::Command(program) => Some(Edit::set("signal", "command", program.as_str())),
        };
        edits.extend(reach);
        edits
    }
}

/// Whether to set up Signal at all: a Signal flag says yes; else a person
/// is asked.
pub fn wanted(asker: &mut Asker<'_>, options: &SetupOptions) -> Result<bool, AskError> {
    if options.signal_account.is_some()
        || options.signal_pair
        || !options.signal_allow.is_empty()
        || options.signal_socket.is_some()
        || options.signal_tcp.is_some()
        || options.signal_command.is_some()
    {
        return Ok(true);
    }
    asker.confirm(
        "Talk to the agent from Signal too (through signal-cli, with a number of its own)?",
        false,
    )
}

/// The account, the way to signal-cli, then pairing (or the numbers
/// given). `current` is the `[signal]` table the file has now.
pub async fn run(
    asker: &mut Asker<'_>,
    options: &SetupOptions,
    home: &Home,
    current: Option<&toml::Table>,
) -> Result<Chosen, SignalStepError> {
    let text = |key: &str| {
        current
            .and_then(|table| table.get(key))
            .and_then(toml::Value::as_str)
            .map(str::to_string)
    };
    let account = match options.signal_account.clone().or_else(|| text("account")) {
        Some(account) => account,
        None => asker.text(
            "The agent's Signal number (the account signal-cli is registered or linked as)",
            None,
            "--signal-account NUMBER",
        )?,
    };
    let account = address(&account)
        .filter(|number| number.starts_with('+'))
        .ok_or(SignalStepError::BadNumber(account))?;
    let reach = if let Some(socket) = &options.signal_socket {
        Reach::Socket(socket.clone())
    } else if let Some(tcp) = &options.signal_tcp {
        Reach::Tcp(tcp.clone())
    } else if let Some(command) = &options.signal_command {
        Reach::Command(command.clone())
    } else if let Some(socket) = text("socket") {
        Reach::Socket(socket.into())
    } else if let Some(tcp) = text("tcp") {
        Reach::Tcp(tcp)
    } else {
        Reach::Command(text("command").unwrap_or_else(|| DEFAULT_COMMAND.to_string()))
    };

    let mut allow: Vec<String> = current
        .and_then(|table| table.get("allow"))
        .and_then(toml::Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter_map(toml::Value::as_str)
                .filter_map(address)
                .collect()
        })
        .unwrap_or_default();
    let mut joined = Vec::new();
    for given in &options.signal_allow {
        joined.push(address(given).ok_or_else(|| SignalStepError::BadNumber(given.clone()))?);
    }
    let pair = options.signal_pair
        || (options.signal_allow.is_empty()
            && asker.confirm(
                "Pair your own Signal number now, with a code you send the agent's number?",
                true,
            )?);
    if pair {
        if hearth_protocol::lock::held(&home.bridge_lock("signal")) {
            return Err(SignalStepError::BridgeRunning);
        }
        let timeout = options
            .pair_timeout
            .unwrap_or(super::telegram::PAIR_TIMEOUT);
        joined.push(pair_by_code(asker, home, &account, &reach, timeout).await?);
    }
    for who in joined {
        if !allow.contains(&who) {
            allow.push(who);
        }
    }
    if allow.is_empty() {
        asker.say("No one is on the allowlist yet: the bridge lets nobody in until `allow` in [signal] names your number (run setup again with --signal-pair).");
    }
    Ok(Chosen {
        account,
        reach,
        allow,
    })
}

/// Reaches signal-cli as the bridge would (starting it when `reach` says so).
async fn connect(
    home: &Home,
    account: &str,
    reach: &Reach,
) -> Result<(Option<SignalCli>, Rpc, Notifications), SignalStepError> {
    Ok(match reach {
        Reach::Socket(path) => {
            let (rpc, notifications) = Rpc::unix(path, account).await?;
            (None, rpc, notifications)
        }
        Reach::Tcp(address) => {
            let (rpc, notifications) = Rpc::tcp(address, account).await?;
            (None, rpc, notifications)
        }
        Reach::Command(program) => {
            let socket = signal_cli::socket_path(home);
            let (started, rpc, notifications) =
                signal_cli::start(program, account, &socket).await?;
            (Some(started), rpc, notifications)
        }
    })
}

/// Shows a fresh code and waits until a direct message that is exactly
/// the code arrives; returns its sender.
async fn pair_by_code(
    asker: &mut Asker<'_>,
    home: &Home,
    account: &str,
    reach: &Reach,
    timeout: Duration,
) -> Result<String, SignalStepError> {
    let (_started, rpc, mut notifications) = connect(home, account, reach).await?;
    api::subscribe(&rpc).await?;
    let code = super::telegram::random_code().map_err(SignalStepError::Random)?;
    asker.say(&format!(
        "Send this code to {account} on Signal from your phone, as a message of its own:\n\n    {code}\n\n(waiting up to {} s)",
        timeout.as_secs()
    ));
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let received = match tokio::time::timeout(left, notifications.recv()).await {
            Err(_) => {
                return Err(SignalStepError::PairTimeout {
                    code,
                    account: account.to_string(),
                    seconds: timeout.as_secs(),
                })
            }
            Ok(None) => return Err(RpcError::Closed.into()),
            Ok(Some(received)) => received,
        };
        let Some(envelope) = envelope::parse(&received) else {
            continue;
        };
        let (Some(data), Some(from)) = (&envelope.data_message, envelope::sender(&envelope)) else {
            continue;
        };
        if data.group_info.is_some() || from == account {
            continue;
        }
        let text = data.message.as_deref().unwrap_or_default().trim();
        if text == code {
            asker.say(&format!("✓ paired with {from}"));
            let welcome =
                Styled::plain("Paired with hearth: your messages here now reach your agent.");
            // The pairing holds whether or not the greeting goes out.
            let _ = api::send_text(&rpc, &from, &welcome).await;
            return Ok(from);
        }
        if !text.is_empty() {
            asker.say(&format!(
                "(a message from {from} that is not the code: passed over)"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_command_is_not_written_and_other_ways_replace_each_other() {
        let chosen = Chosen {
            account: "+15550001111".into(),
            reach: Reach::Command(DEFAULT_COMMAND.into()),
            allow: vec!["+15551234567".into()],
        };
        let edits = chosen.edits();
        assert_eq!(edits[0], Edit::set("signal", "account", "+15550001111"));
        assert!(edits
            .iter()
            .all(|edit| edit.value.is_none() || edit.key != "command"));
        let tcp = Chosen {
            reach: Reach::Tcp("127.0.0.1:7583".into()),
            ..chosen
        };
        assert_eq!(
            tcp.edits().last(),
            Some(&Edit::set("signal", "tcp", "127.0.0.1:7583"))
        );
    }
}
