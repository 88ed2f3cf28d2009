//! `hearth update`: the newest release, checked and put in place of the
//! programs that run, then the daemon restarted on it.
//!
//! Nothing is replaced until everything is in hand and checked: the
//! release's `SHA256SUMS` must carry the release key's signature, both
//! programs must match their digests and run (`--version`), and only then
//! are they renamed over the old ones, `hearthd` first. A download that is
//! cut, a signature that does not verify or a program that does not run
//! leaves the old programs as they were. `release.rs` says what a release
//! holds.

pub mod release;

use crate::life::{self, LifeError};
use flate2::read::GzDecoder;
use hearth_protocol::home::Home;
use release::{Notes, ReleaseError, ReleaseKey, Sums};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// The most bytes a downloaded file may take (a gzipped program is about
/// a tenth of this).
const MOST_DOWNLOADED: u64 = 128 * 1024 * 1024;

/// The most bytes a program may take once unpacked.
const MOST_UNPACKED: u64 = 256 * 1024 * 1024;

/// How long one file's download may take.
const DOWNLOAD_TIME: Duration = Duration::from_secs(600);

/// What `hearth update` does.
#[derive(Debug, Clone, Copy, Default)]
pub struct UpdateRequest {
    /// Only say whether a newer release is out.
    pub check: bool,
    /// Install the release even when it is the version that runs.
    pub force: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    #[error("this hearth was built from source and knows no release address: update the clone (`git pull`) and run `cargo install --locked --path .` again (or set HEARTH_RELEASES_URL and HEARTH_RELEASE_KEY)")]
    FromSource,
    #[error("this hearth was built without the release key: set HEARTH_RELEASE_KEY to the key the releases are signed with")]
    NoKey,
    #[error("releases are built for Linux and macOS on x86_64 and aarch64, not for {0}: build hearth from source")]
    Platform(String),
    #[error("cannot fetch {url}: {reason}; nothing was installed")]
    Fetch { url: String, reason: String },
    #[error(transparent)]
    Release(#[from] ReleaseError),
    #[error("cannot write {}: {reason}; hearth was installed where this user cannot write, so update it the way it was installed", path.display())]
    Write { path: PathBuf, reason: String },
    #[error("the new {name} does not run here ({reason}); nothing was installed")]
    DoesNotRun { name: String, reason: String },
    #[error("hearth was updated, but restarting hearthd failed: {0}")]
    Restart(#[from] LifeError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Installs the newest release over this `hearth` and the `hearthd` beside
/// it, then restarts a running daemon.
pub async fn update(
    home: &Home,
    explicit_home: Option<&Path>,
    request: UpdateRequest,
    out: &mut dyn Write,
) -> Result<ExitCode, UpdateError> {
    let address = std::env::var("HEARTH_RELEASES_URL")
        .ok()
        .filter(|address| !address.trim().is_empty())
        .or_else(|| release::BUILT_IN_ADDRESS.map(str::to_string))
        .ok_or(UpdateError::FromSource)?;
    let key = ReleaseKey::parse(&release_key()?)?;
    let folder = format!("{}/latest/download", address.trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(15))
        .timeout(DOWNLOAD_TIME)
        .build()
        .map_err(|err| UpdateError::Fetch {
            url: folder.clone(),
            reason: err.to_string(),
        })?;
    let fetch = |name: &str| fetch(&client, format!("{folder}/{name}"));

    let sums = fetch("SHA256SUMS").await?;
    let signature = fetch("SHA256SUMS.sig").await?;
    let sums = Sums::verified(&sums, &signature, &key)?;
    let notes = fetch("release.txt").await?;
    sums.check("release.txt", &notes)?;
    let notes = Notes::parse(&String::from_utf8_lossy(&notes))?;
    let running = env!("CARGO_PKG_VERSION");
    if notes.version == running && !request.force {
        writeln!(out, "hearth {running} is the newest release")?;
        return Ok(ExitCode::SUCCESS);
    }
    if request.check {
        writeln!(out, "hearth {} is out (this is {running}):", notes.version)?;
        write_changes(&notes, out)?;
        writeln!(out, "`hearth update` installs it")?;
        return Ok(ExitCode::SUCCESS);
    }

    let target = release::this_target().ok_or_else(|| {
        UpdateError::Platform(format!(
            "{} {}",
            std::env::consts::OS,
            std::env::consts::ARCH
        ))
    })?;
    let hearth = std::env::current_exe()?.canonicalize()?;
    let folder_of_programs = hearth
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut staged = Staged::default();
    for name in ["hearthd", "hearth"] {
        let file = format!("{name}-{target}.gz");
        let packed = fetch(&file).await?;
        sums.check(&file, &packed)?;
        let path = folder_of_programs.join(name);
        let new = staged.unpack(name, &packed, &path)?;
        runs(name, &new)?;
    }
    staged.put_in_place()?;
    writeln!(
        out,
        "updated hearth {running} → {} in {}",
        notes.version,
        folder_of_programs.display()
    )?;
    write_changes(&notes, out)?;
    if life::lock_holder(home).is_some() {
        life::restart(home, explicit_home, out).await?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The key releases are signed with: the built-in one, else the
/// environment's (a build from source has none built in).
fn release_key() -> Result<String, UpdateError> {
    if let Some(key) = release::BUILT_IN_KEY {
        return Ok(key.to_string());
    }
    std::env::var("HEARTH_RELEASE_KEY")
        .ok()
        .filter(|key| !key.trim().is_empty())
        .ok_or(UpdateError::NoKey)
}

fn write_changes(notes: &Notes, out: &mut dyn Write) -> std::io::Result<()> {
    if !notes.changes.is_empty() {
        writeln!(out, "{}", notes.changes)?;
    }
    Ok(())
}

/// One file of the release, whole, or the reason it could not be had.
async fn fetch(client: &reqwest::Client, url: String) -> Result<Vec<u8>, UpdateError> {
    let failed = |reason: String| UpdateError::Fetch {
        url: url.clone(),
        reason,
    };
    let mut response = client
        .get(&url)
        .send()
        .await
        .map_err(|err| failed(err.to_string()))?;
    if !response.status().is_success() {
        return Err(failed(format!("the server answered {}", response.status())));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| failed(format!("the download was cut ({err})")))?
    {
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 > MOST_DOWNLOADED {
            return Err(failed(format!("larger than {MOST_DOWNLOADED} bytes")));
        }
    }
    Ok(bytes)
}

/// Whether the program at `path` runs here: `--version` answers.
fn runs(name: &str, path: &Path) -> Result<(), UpdateError> {
    let does_not_run = |reason: String| UpdateError::DoesNotRun {
        name: name.to_string(),
        reason,
    };
    let output = std::process::Command::new(path)
        .arg("--version")
        .output()
        .map_err(|err| does_not_run(err.to_string()))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(does_not_run(format!(
            "`--version` ended with {}",
            output.status
        )))
    }
}

/// The new programs, unpacked beside the old ones under hidden names, and
/// removed again unless they were put in place.
#[derive(Default)]
struct Staged {
    /// (the new program's file, the file it replaces)
    files: Vec<(PathBuf, PathBuf)>,
}

impl Staged {
    /// Unpacks `packed` beside `replaces` as an executable file, synced.
    fn unpack(
        &mut self,
        name: &str,
        packed: &[u8],
        replaces: &Path,
    ) -> Result<PathBuf, UpdateError> {
        let new = replaces.with_file_name(format!(".{name}.new"));
        let cannot_write = |err: std::io::Error| UpdateError::Write {
            path: new.clone(),
            reason: err.to_string(),
        };
        let mut file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o755)
                .open(&new)
                .map_err(cannot_write)?
        };
        self.files.push((new.clone(), replaces.to_path_buf()));
        let mut program = GzDecoder::new(packed).take(MOST_UNPACKED + 1);
        let written =
            std::io::copy(&mut program, &mut file).map_err(|err| UpdateError::DoesNotRun {
                name: name.to_string(),
                reason: format!("it does not unpack: {err}"),
            })?;
        if written > MOST_UNPACKED {
            return Err(UpdateError::DoesNotRun {
                name: name.to_string(),
                reason: format!("larger than {MOST_UNPACKED} bytes unpacked"),
            });
        }
        file.sync_all().map_err(cannot_write)?;
        Ok(new)
    }

    /// Renames each new program over its old one, in the order staged; if
    /// one rename fails, the ones done are undone from the copies kept.
    fn put_in_place(mut self) -> Result<(), UpdateError> {
        let files = std::mem::take(&mut self.files);
        let mut kept = Vec::new();
        let mut result = Ok(());
        for (new, old) in &files {
            let copy = old.with_file_name(format!(
                ".{}.old",
                old.file_name().unwrap_or_default().to_string_lossy()
            ));
            let _ = std::fs::remove_file(&copy);
            if old.exists() {
                if let Err(err) = std::fs::hard_link(old, &copy) {
                    result = Err(write_error(old, err));
                    break;
                }
                kept.push((copy.clone(), old.clone()));
            }
            if let Err(err) = std::fs::rename(new, old) {
                result = Err(write_error(old, err));
                break;
            }
        }
        if result.is_err() {
            for (copy, old) in kept.iter().rev() {
                let _ = std::fs::rename(copy, old);
            }
        } else {
            for (copy, _) in &kept {
                let _ = std::fs::remove_file(copy);
            }
            if let Some((_, old)) = files.first() {
                if let Some(folder) = old.parent() {
                    let _ = std::fs::File::open(folder).and_then(|folder| folder.sync_all());
                }
            }
        }
        for (new, _) in &files {
            let _ = std::fs::remove_file(new);
        }
        result
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for (new, _) in &self.files {
            let _ = std::fs::remove_file(new);
        }
    }
}

fn write_error(path: &Path, err: std::io::Error) -> UpdateError {
    UpdateError::Write {
        path: path.to_path_buf(),
        reason: err.to_string(),
    }
}
