//! Where a key or token is found: the one rule the daemon and the bridges
//! both follow.
//!
//! A secret named `NAME` is the environment variable `NAME` when it is set,
//! else the line `NAME=value` of the home's `secrets.env`. Either way the
//! value is trimmed (a key never begins or ends with a space; a pasted one
//! often does) and an empty value counts as none. A `secrets.env` that other
//! users can read is never used: its keys would be theirs too.

use std::fmt;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// `secrets.env` grants something to group or others (`chmod 600` fixes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenSecrets {
    pub path: PathBuf,
}

impl fmt::Display for OpenSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        write!(
            f,
            "{path} is readable by other users; run `chmod 600 {path}`"
        )
    }
}

impl std::error::Error for OpenSecrets {}

/// Refuses a `secrets.env` that other users can read; one that is not
/// there is fine (it holds nothing).
pub fn check_file(secrets_file: &Path) -> Result<(), OpenSecrets> {
    match fs::metadata(secrets_file) {
        Ok(meta) if meta.permissions().mode() & 0o077 != 0 => Err(OpenSecrets {
            path: secrets_file.to_path_buf(),
        }),
        _ => Ok(()),
    }
}

/// The secret `name`: from the environment, else from `secrets_file`;
/// `None` when neither has it.
pub fn find(secrets_file: &Path, name: &str) -> Result<Option<String>, OpenSecrets> {
    let from_env = std::env::var(name).ok().and_then(|value| cleaned(&value));
    if from_env.is_some() {
        return Ok(from_env);
    }
    check_file(secrets_file)?;
    Ok(fs::read_to_string(secrets_file)
        .ok()
        .and_then(|text| secret_in(&text, name)))
}

/// The value of `name` in `secrets.env` text: `NAME=value` lines, `#`
/// comments, an optional `export `, optional quotes; trimmed, and `None`
/// when empty.
pub fn secret_in(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = assignment(line)?;
        if key != name {
            return None;
        }
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        cleaned(value)
    })
}

/// A value as a secret: trimmed, and none when nothing is left.
fn cleaned(value: &str) -> Option<String> {
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_string())
}

/// Every name `secrets.env` text gives a value to, in order.
pub fn names_in(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| assignment(line).map(|(key, _)| key))
        .collect()
}

/// A line's name and raw value (both trimmed), unless it is a comment or
/// assigns nothing.
fn assignment(line: &str) -> Option<(&str, &str)> {
    let line = line.trim();
    if line.starts_with('#') {
        return None;
    }
    let line = line.strip_prefix("export ").unwrap_or(line);
    let (key, value) = line.split_once('=')?;
    Some((key.trim(), value.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_file_lines_read() {
        let text = "# keys\nexport OPENAI_API_KEY=\"sk-1\"\nOTHER='x'\nEMPTY=\n#MISSING=y\n";
        assert_eq!(secret_in(text, "OPENAI_API_KEY").as_deref(), Some("sk-1"));
        assert_eq!(secret_in(text, "OTHER").as_deref(), Some("x"));
        assert_eq!(secret_in(text, "EMPTY"), None);
        assert_eq!(secret_in(text, "MISSING"), None);
        assert_eq!(names_in(text), ["OPENAI_API_KEY", "OTHER", "EMPTY"]);
    }

    #[test]
    fn values_are_trimmed_and_an_open_file_is_refused() {
        let dir = std::env::temp_dir().join(format!("hearth-secrets-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("secrets.env");
        let name = "HEARTH_PROTOCOL_UNIT_SECRET";
        assert_eq!(find(&file, name), Ok(None), "no file holds nothing");

        fs::write(&file, format!("{name}= from-file \n")).unwrap();
        fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(find(&file, name), Ok(Some("from-file".to_string())));
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        let refused = find(&file, name).unwrap_err();
        assert!(refused.to_string().contains("chmod 600"), "{refused}");

        // What the environment holds is cleaned the same way.
        assert_eq!(cleaned("  sk-env\n").as_deref(), Some("sk-env"));
        assert_eq!(cleaned(" "), None);
        fs::remove_dir_all(&dir).unwrap();
    }
}
