//! Secrets: where API keys and tokens are found, and which environment
//! variables hold them (kept from the tools' commands).

use super::error::StartError;
use crate::config::Config;
use hearth_protocol::home::secret_in;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A `secrets.env` that other users can read is refused: its keys would be
/// theirs too.
pub fn check_file(path: &Path) -> Result<(), StartError> {
    match fs::metadata(path) {
        Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
            Err(StartError::OpenSecrets(path.to_path_buf()))
        }
        _ => Ok(()),
    }
}

/// A secret from the environment, else from `secrets.env` (`NAME=value`
/// lines, `#` comments, optional quotes), so a service that does not inherit
/// a shell's environment still finds it.
pub fn find(secrets_file: &Path, name: &str) -> Option<String> {
    if let Some(value) = std::env::var(name).ok().filter(|v| !v.is_empty()) {
        return Some(value);
    }
    check_file(secrets_file).ok()?;
    let text = fs::read_to_string(secrets_file).ok()?;
    secret_in(&text, name)
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
    for table in [&config.telegram, &config.whatsapp].into_iter().flatten() {
        for (key, value) in table {
            if let (true, Some(name)) = (key.ends_with("_env"), value.as_str()) {
                names.push(name.to_string());
            }
        }
    }
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
            values.extend(text.lines().filter_map(|line| {
                let line = line.trim();
                if line.starts_with('#') {
                    return None;
                }
                let (name, _) = line.split_once('=')?;
                secret_in(&text, name.trim())
            }));
        }
    }
    values
}
