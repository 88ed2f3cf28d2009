//! The steps of `hearth setup`, in order: the model (and one real request
//! to it, before anything is saved), Telegram, Signal, email, Discord, Matrix, pointers for WhatsApp, the
//! service, the running daemon. Each step that changes the configuration
//! writes it only once the step succeeded and the new file reads as the
//! daemon and the bridge read it; a failed step writes nothing of its own.

use super::ask::{AskError, Asker};
use super::discord::{self, DiscordStepError};
use super::edit::{self, EditError};
use super::email::{self, EmailStepError};
use super::files::{self, FileError};
use super::matrix::{self, MatrixStepError};
use super::model::{self, ModelStepError};
use super::signal::{self, SignalStepError};
use super::telegram::{self, TelegramStepError};
use super::SetupOptions;
use hearth_bridges::discord::DiscordConfig;
use hearth_bridges::email::EmailConfig;
use hearth_bridges::matrix::MatrixConfig;
use hearth_bridges::signal::SignalConfig;
use hearth_bridges::telegram::TelegramConfig;
use hearth_config::config::Config;
use hearth_protocol::home::Home;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error(transparent)]
    Model(#[from] ModelStepError),
    #[error("the model is set up and saved, but Telegram is not: {0}")]
    Telegram(#[from] TelegramStepError),
    #[error("the model is set up and saved, but Signal is not: {0}")]
    Signal(#[from] SignalStepError),
    #[error("the model is set up and saved, but email is not: {0}")]
    Email(#[from] EmailStepError),
    #[error("the model is set up and saved, but Discord is not: {0}")]
    Discord(#[from] DiscordStepError),
    #[error("the model is set up and saved, but Matrix is not: {0}")]
    Matrix(#[from] MatrixStepError),
    #[error("{path}: {source}; fix the file (or move it away) and run setup again")]
    Edit { path: String, source: EditError },
    #[error("the new configuration would not load, so nothing was written: {0}")]
    Invalid(String),
    #[error(transparent)]
    File(#[from] FileError),
}

impl SetupError {
    /// Whether the person ended setup with Ctrl-C (exit 130, as a shell
    /// reports a program that Ctrl-C stopped).
    pub fn interrupted(&self) -> bool {
        matches!(
            self,
            SetupError::Ask(AskError::Interrupted)
                | SetupError::Model(ModelStepError::Ask(AskError::Interrupted))
                | SetupError::Telegram(TelegramStepError::Ask(AskError::Interrupted))
                | SetupError::Signal(SignalStepError::Ask(AskError::Interrupted))
                | SetupError::Email(EmailStepError::Ask(AskError::Interrupted))
                | SetupError::Discord(DiscordStepError::Ask(AskError::Interrupted))
                | SetupError::Matrix(MatrixStepError::Ask(AskError::Interrupted))
        )
    }
}

/// Runs the wizard on `home`; `explicit_home` is the `--home` given (for
/// the service's unit).
pub async fn run(
    home: &Home,
    explicit_home: Option<&Path>,
    options: SetupOptions,
    out: &mut dyn Write,
) -> Result<ExitCode, SetupError> {
    let mut asker = Asker::new(options.yes, out);
    let config_file = home.config_file();
    asker.say(&format!("hearth setup: {}", config_file.display()));
    let text = files::read_or_empty(&config_file)?;
    let current: toml::Table = {
        let checked = edit::apply(&text, &[]).map_err(|source| SetupError::Edit {
            path: config_file.display().to_string(),
            source,
        })?;
        toml::from_str(&checked).unwrap_or_default()
    };
    let table = |name: &str| current.get(name).and_then(toml::Value::as_table);

    // The model, proved by one request before anything is saved.
    let chosen = model::choose(&mut asker, &options, home).await?;
    asker.say(&format!("Sending one test request to {}…", chosen.label()));
    let answer = model::test(&chosen).await?;
    asker.say(&format!("✓ {} answered: {}", chosen.label(), clip(&answer)));
    let current_layout = table("agent")
        .and_then(|agent| agent.get("layout"))
        .and_then(toml::Value::as_str);
    let edits = chosen.edits(table("model"), current_layout);
    let text = edited(&config_file, &text, &edits)?;
    if chosen.store_key {
        if let Some(key) = &chosen.key {
            store_secret(home, chosen.config.key_env(), key)?;
        }
    }
    files::write_private(&config_file, &text)?;
    if chosen.layout == Some("small") {
        asker.say("The model's window is small: the agent uses the `small` layout.");
    }
    asker.say(&format!("✓ saved [model] in {}", config_file.display()));
    if let Some(memory) = memory_model(&config_file, &text) {
        asker.say(&format!(
            "Summaries of the agent's memory are written by {memory} ([memory] model changes it)."
        ));
    }

    // Telegram, when wanted.
    if !options.no_telegram && telegram::wanted(&mut asker, &options)? {
        let paired = telegram::run(&mut asker, &options, home, table("telegram")).await?;
        let text = edited(&config_file, &text, &paired.edits())?;
        TelegramConfig::parse(&config_file, &text)
            .map_err(|err| SetupError::Invalid(err.to_string()))?;
        if let Some(token) = &paired.new_token {
            store_secret(home, &paired.token_env, token)?;
        }
        files::write_private(&config_file, &text)?;
        asker.say("✓ saved [telegram]: hearthd starts the bridge");
    }

    // Signal, when wanted. The file is read again: Telegram's step may
    // have written it.
    if !options.no_signal && signal::wanted(&mut asker, &options)? {
        let text = files::read_or_empty(&config_file)?;
        let chosen = signal::run(&mut asker, &options, home, table("signal")).await?;
        let text = edited(&config_file, &text, &chosen.edits())?;
        SignalConfig::parse(&config_file, &text)
            .map_err(|err| SetupError::Invalid(err.to_string()))?;
        files::write_private(&config_file, &text)?;
        asker.say("✓ saved [signal]: hearthd starts the bridge");
    }

    // Email, when wanted; the login is proved before anything is written.
    if !options.email.skip && email::wanted(&mut asker, &options)? {
        let text = files::read_or_empty(&config_file)?;
        let chosen = email::run(&mut asker, &options, home, table("email")).await?;
        let text = edited(&config_file, &text, &chosen.edits())?;
        let config = EmailConfig::parse(&config_file, &text)
            .map_err(|err| SetupError::Invalid(err.to_string()))?;
        email::prove(&mut asker, &config, &chosen.password).await?;
        if let Some(password) = &chosen.new_password {
            store_secret(home, &chosen.password_env, password)?;
        }
        files::write_private(&config_file, &text)?;
        asker.say("✓ saved [email]: hearthd starts the bridge");
    }

    // Discord, when wanted; the file is read again, as for Signal.
    if !options.no_discord && discord::wanted(&mut asker, &options)? {
        let text = files::read_or_empty(&config_file)?;
        let paired = discord::run(&mut asker, &options, home, table("discord")).await?;
        let text = edited(&config_file, &text, &paired.edits())?;
        DiscordConfig::parse(&config_file, &text)
            .map_err(|err| SetupError::Invalid(err.to_string()))?;
        if let Some(token) = &paired.new_token {
            store_secret(home, &paired.token_env, token)?;
        }
        files::write_private(&config_file, &text)?;
        asker.say("✓ saved [discord]: hearthd starts the bridge");
    }

    // Matrix, when wanted; the file is read again likewise.
    if !options.matrix.skip && matrix::wanted(&mut asker, &options)? {
        let text = files::read_or_empty(&config_file)?;
        let chosen = matrix::run(&mut asker, &options, home, table("matrix")).await?;
        let text = edited(&config_file, &text, &chosen.edits())?;
        MatrixConfig::parse(&config_file, &text)
            .map_err(|err| SetupError::Invalid(err.to_string()))?;
        if let Some(password) = &chosen.new_password {
            store_secret(home, &chosen.password_env, password)?;
        }
        files::write_private(&config_file, &text)?;
        asker.say("✓ saved [matrix]: hearthd starts the bridge");
    }

    asker.say(WHATSAPP);
    // The service first: once it is installed, the daemon is started by
    // systemd, never by hand beside it.
    let service = service_step(&mut asker, &options, home, explicit_home).await?;
    daemon_step(&mut asker, home, service).await;
    Ok(ExitCode::SUCCESS)
}

/// The memory model of the configuration `text`, as `provider/model`,
/// when it is not the turns' own (`[memory]` in the README).
fn memory_model(path: &std::path::Path, text: &str) -> Option<String> {
    let config = hearth_config::config::Config::parse(path, text).ok()?;
    let memory = config.memory.model_for(&config.turn_model(None)?);
    let model = &memory.config;
    memory
        .own
        .then(|| format!("{}/{}", model.provider.name(), model.model))
}

/// What setup says about WhatsApp, which it does not configure itself.
const WHATSAPP: &str = "WhatsApp: add a [whatsapp] table to config.toml — the Cloud API \
(a business number: access token, app secret, verify token in secrets.env) or a linked \
personal account (backend = \"web\", then `hearth whatsapp link`). docs/whatsapp.md \
says what to set.";

/// `text` with `edits`, checked as the daemon reads it.
fn edited(path: &Path, text: &str, edits: &[edit::Edit]) -> Result<String, SetupError> {
    let new = edit::apply(text, edits).map_err(|source| SetupError::Edit {
        path: path.display().to_string(),
        source,
    })?;
    Config::parse(path, &new).map_err(|err| SetupError::Invalid(err.to_string()))?;
    Ok(new)
}

fn store_secret(home: &Home, name: &str, value: &str) -> Result<(), SetupError> {
    let path = home.secrets_file();
    let text = files::read_or_empty(&path)?;
    let text = files::set_secret(&text, name, value)?;
    files::write_private(&path, &text)?;
    Ok(())
}

/// A running daemon is told to read the new file (asked first on a
/// terminal); otherwise setup says how to start one: `hearth`, or the
/// service just installed.
async fn daemon_step(asker: &mut Asker<'_>, home: &Home, service: bool) {
    let Some(pid) = crate::life::lock_holder(home) else {
        if service {
            asker.say("Once the service runs, `hearth` attaches to it.");
        } else {
            asker.say("Start talking: `hearth` (it starts hearthd in the background).");
        }
        return;
    };
    let question =
        format!("hearthd (pid {pid}) is running: reload it now, so it uses this configuration?");
    match asker.confirm(&question, true) {
        Ok(true) => {
            if let Err(err) = crate::life::reload(home, asker.out()).await {
                asker.say(&format!(
                    "the reload failed ({err}); run `hearth reload` once it is fixed"
                ));
            }
        }
        _ => asker.say("Run `hearth reload` to apply it."),
    }
}

/// The systemd user service, when asked for; whether it was installed.
async fn service_step(
    asker: &mut Asker<'_>,
    options: &SetupOptions,
    home: &Home,
    explicit_home: Option<&Path>,
) -> Result<bool, SetupError> {
    let install = match options.service {
        Some(install) => install,
        None => asker.confirm(
            "Run hearthd as a systemd user service (`hearth service install`)?",
            false,
        )?,
    };
    if !install {
        return Ok(false);
    }
    match crate::service::install(home, explicit_home, false, asker.out()).await {
        Ok(_) => Ok(true),
        Err(err) => {
            asker.say(&format!("the service was not installed: {err}"));
            Ok(false)
        }
    }
}

/// The model's answer on one short line.
fn clip(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let safe = crate::look::sanitized(&line);
    if safe.chars().count() > 60 {
        let cut: String = safe.chars().take(59).collect();
        format!("“{cut}…”")
    } else {
        format!("“{safe}”")
    }
}

#[cfg(test)]
mod tests {
    use super::memory_model;
    use std::path::Path;

    #[test]
    fn setup_names_the_memory_model_only_when_it_is_not_the_turns() {
        let path = Path::new("config.toml");
        let own = "[model]\nprovider = \"openai\"\nmodel = \"gpt-5-mini\"\n";
        assert_eq!(
            memory_model(path, own).as_deref(),
            Some("openai/gpt-5-nano")
        );
        let local = "[model]\nprovider = \"openai-chat\"\nmodel = \"qwen3:8b\"\n\
                     base_url = \"http://127.0.0.1:11434/v1\"\n";
        assert_eq!(memory_model(path, local), None);
    }
}
