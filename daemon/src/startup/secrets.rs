//! Secrets: where API keys and tokens are found (the rule the bridges
//! follow too, `hearth_protocol::secrets`), and which environment
//! variables hold them (kept from the tools' commands).

use super::error::StartError;
use crate::config::Config;
use hearth_protocol::secrets::{self, names_in, secret_in};
use std::fs;
use std::path::Path;

/// A `secrets.env` that other users can read is refused: its keys would be
/// theirs too.
pub fn check_file(path: &Path) -> Result<(), StartError> {
    secrets::check_file(path).map_err(|open| StartError::OpenSecrets(open.path))
}

/// A secret from the environment, else from `secrets.env`, so a service
/// that does not inherit a shell's environment still finds it. None from a
/// `secrets.env` others can read (start-up refused one already).
pub fn find(secrets_file: &Path, name: &str) -> Option<String> {
    secrets::find(secrets_file, name).ok().flatten()
}

/// The environment variables that hold secrets: kept from the shell's
/// commands, so a command cannot print them into the log.
pub fn names(config: &Config) -> Vec<String> {
    let mut names: Vec<String> = [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OLLAMA_API_KEY",
        "TELEGRAM_BOT_TOKEN",
        "WHATSAPP_VERIFY_TOKEN",
        "WHATSAPP_APP_SECRET",
        "WHATSAPP_ACCESS_TOKEN",
        crate::tools::BRAVE_KEY_ENV,
    ]
    .map(str::to_string)
    .into();
    names.push(config.listen.token_env.clone());
    if let Some(model) = &config.model {
        names.push(model.key_env().to_string());
        names.extend(model.fallback.iter().map(|m| m.key_env().to_string()));
    }
    if let Some(transcription) = &config.transcription {
        names.push(transcription.api_key_env.clone());
    }
    // The bridges name their own variables in their tables (`*_env` keys).
    for table in [
        &config.telegram,
        &config.whatsapp,
        &config.signal,
        &config.email,
        &config.matrix,
    ]
    .into_iter()
    .flatten()
    {
        for (key, value) in table {
            if let (true, Some(name)) = (key.ends_with("_env"), value.as_str()) {
                names.push(name.to_string());
            }
        }
    }
    // A ChatGPT plan names no variable: its tokens live in a file.
    names.retain(|name| !name.is_empty());
    names.sort();
    names.dedup();
    names
}

/// Every secret value hearth holds: those of the variables [`names`] lists
/// (from the environment or `secrets.env`) and every value in
/// `secrets.env`, so that they can be masked wherever they would be logged.
pub fn values(config: &Config, secrets_file: &Path) -> Vec<String> {
    let mut values: Vec<String> = names(config)
        .iter()
        .filter_map(|name| find(secrets_file, name))
        .collect();
    if check_file(secrets_file).is_ok() {
        if let Ok(text) = fs::read_to_string(secrets_file) {
            values.extend(
                names_in(&text)
                    .into_iter()
                    .filter_map(|name| secret_in(&text, name)),
            );
        }
    }
    values
}
