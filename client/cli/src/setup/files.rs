//! The files `hearth setup` writes: `config.toml` and `secrets.env`, each
//! written whole to a private temporary file beside it and renamed over the
//! old one (so a crash leaves the old file or the new one, never half of
//! one), mode 0600, in a config folder of mode 0700.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("a secret cannot hold a line break or a quote (\"); this one for {0} does")]
    BadSecret(String),
}

/// The text of `path`, or empty when there is no such file.
pub fn read_or_empty(path: &Path) -> Result<String, FileError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(FileError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Makes `dir` (and what leads to it) and leaves it 0700.
pub fn private_dir(dir: &Path) -> Result<(), FileError> {
    let failed = |source| FileError::Write {
        path: dir.to_path_buf(),
        source,
    };
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(failed)?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(failed)
}

/// Replaces `path` with `text`, mode 0600, atomically.
pub fn write_private(path: &Path, text: &str) -> Result<(), FileError> {
    let failed = |source| FileError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    private_dir(dir)?;
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = dir.join(format!(".{name}.setup-{}", std::process::id()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&temporary)?;
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    written.map_err(failed)
}

/// `secrets.env` text with `name` set to `value`: its line replaced where
/// it stands (an `export` form too), or added at the end; every other line
/// kept. Values are written bare, or in double quotes when they hold a
/// space or `#`, as hearth reads them (`secrets::secret_in`).
pub fn set_secret(text: &str, name: &str, value: &str) -> Result<String, FileError> {
    if value.contains(['\n', '\r', '"']) {
        return Err(FileError::BadSecret(name.to_string()));
    }
    let value = if value.contains(|c: char| c.is_whitespace() || c == '#') {
        format!("\"{value}\"")
    } else {
        value.to_string()
    };
    let line = format!("{name}={value}");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let names_it = |line: &String| {
        let trimmed = line.trim();
        let trimmed = trimmed.strip_prefix("export ").unwrap_or(trimmed);
        trimmed
            .split_once('=')
            .is_some_and(|(key, _)| key.trim() == name)
    };
    match lines.iter().position(names_it) {
        Some(at) => lines[at] = line,
        None => lines.push(line),
    }
    let mut text = lines.join("\n");
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::secrets::secret_in;

    #[test]
    fn a_secret_is_replaced_in_place_and_others_kept() {
        let text = "# keys\nOPENAI_API_KEY=old\nexport OTHER=x\n";
        let new = set_secret(text, "OPENAI_API_KEY", "sk-new").unwrap();
        assert_eq!(new, "# keys\nOPENAI_API_KEY=sk-new\nexport OTHER=x\n");
        let added = set_secret(&new, "TELEGRAM_BOT_TOKEN", "1:a b").unwrap();
        assert_eq!(
            secret_in(&added, "TELEGRAM_BOT_TOKEN").as_deref(),
            Some("1:a b")
        );
        assert_eq!(secret_in(&added, "OTHER").as_deref(), Some("x"));
        assert!(set_secret("", "K", "a\nb").is_err());
    }

    #[test]
    fn files_are_private_in_a_private_folder() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let file = home.join("secrets.env");
        write_private(&file, "K=v\n").unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(&home), 0o700);
        assert_eq!(fs::read_to_string(&file).unwrap(), "K=v\n");
        assert_eq!(
            fs::read_dir(&home).unwrap().count(),
            1,
            "no temporary file left"
        );
    }
}
