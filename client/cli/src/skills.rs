//! `hearth skills`: the skills each agent finds (`SKILL.md` folders, see
//! `hearth_log::skills`), whether the owner installed each, and why any
//! folder was refused; `hearth skills install PATH|URL`: a skill copied
//! into the home's skills folder (or an agent's) after the owner says yes,
//! and recorded with where it came from, so its words count as the owner's.
//!
//! Neither needs the daemon: both read and write the home's folders, and
//! the daemon reads them afresh at each request.

use hearth_log::skills::{
    self, digest, read_skill_dir, Folders, Installed, Record, RecordError, SKILL_FILE,
};
use hearth_protocol::home::Home;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The agent `hearth skills` speaks of when none is named: the config's
/// default top agent.
const DEFAULT_AGENT: &str = "hearth";

#[derive(Debug, thiserror::Error)]
pub enum SkillsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{from} is not a skill: {why}")]
    NotASkill { from: String, why: String },
    #[error("cannot download {url}: {why}")]
    Download { url: String, why: String },
    #[error("not installed: the answer was no")]
    Declined,
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error("cannot write the output: {0}")]
    Output(#[from] std::io::Error),
}

/// Prints the skills of `agent` (the top agent by default): each with the
/// folder it came from and whether the owner installed it, then each folder
/// refused and why.
pub fn list(
    home: &Home,
    agent: Option<&str>,
    out: &mut dyn Write,
) -> Result<ExitCode, SkillsError> {
    let agent = agent.unwrap_or(DEFAULT_AGENT);
    let folders = Folders::of(home, agent);
    write!(out, "{}", text(&folders, agent))?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The listing `hearth skills` prints.
pub fn text(folders: &Folders, agent: &str) -> String {
    let catalog = folders.scan();
    let record = Record::load(&folders.record).unwrap_or_default();
    let mut text = format!(
        "skills of agent `{agent}` (from {} and {}):\n",
        folders.agent.display(),
        folders.home.display()
    );
    if catalog.skills.is_empty() {
        text.push_str(
            "  none: put a folder with a SKILL.md in either, or `hearth skills install PATH|URL`\n",
        );
    }
    for skill in catalog.skills.values() {
        let whose = match record.entry(&skill.dir) {
            Some(entry) if skill.trusted => format!("installed from {}", entry.source),
            Some(entry) => format!(
                "untrusted: changed since it was installed from {} (install it again to trust it)",
                entry.source
            ),
            None => "untrusted: not installed by you (`hearth skills install` it to trust it)"
                .to_string(),
        };
        text.push_str(&format!(
            "  {}: {}\n    {} ({whose})\n",
            skill.name,
            skill.description,
            skill.dir.display()
        ));
    }
    if !catalog.refused.is_empty() {
        text.push_str("refused:\n");
        for refused in &catalog.refused {
            text.push_str(&format!("  {}: {}\n", refused.dir.display(), refused.why));
        }
    }
    text
}

/// What `hearth skills install` is given.
pub struct InstallRequest {
    /// A folder holding a `SKILL.md`, a `SKILL.md` file, or an http(s) URL
    /// of a `SKILL.md`.
    pub source: String,
    /// Into this agent's own folder; the home's, shared, when none.
    pub agent: Option<String>,
    /// Installs without asking (the owner said yes on the command line).
    pub yes: bool,
}

/// Installs the skill at `request.source` after asking the owner on
/// `answers` (unless `yes`), then records it. A skill already in its place
/// (dropped into a skills folder) is recorded where it is.
pub async fn install(
    home: &Home,
    request: InstallRequest,
    answers: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, SkillsError> {
    let folder = match &request.agent {
        Some(agent) => Folders::of(home, agent).agent,
        None => skills::home_folder(home),
    };
    create_dir(&folder)?;
    let is_url = request.source.starts_with("http://") || request.source.starts_with("https://");
    // A downloaded SKILL.md waits in a folder of its own until it is copied.
    let staged = tempfile_dir(&folder)?;
    let source_dir = if is_url {
        let text = download(&request.source).await?;
        let path = staged.join(SKILL_FILE);
        std::fs::write(&path, text).map_err(|source| SkillsError::Write { path, source })?;
        staged.clone()
    } else {
        let path = PathBuf::from(&request.source);
        if path.is_file() {
            path.parent()
                .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
        } else {
            path
        }
    };
    let result = install_from(&source_dir, &folder, home, &request, answers, out);
    let _ = std::fs::remove_dir_all(&staged);
    result
}

fn install_from(
    source_dir: &Path,
    folder: &Path,
    home: &Home,
    request: &InstallRequest,
    answers: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<ExitCode, SkillsError> {
    let skill = read_skill_dir(source_dir).map_err(|refused| SkillsError::NotASkill {
        from: request.source.clone(),
        why: refused.why,
    })?;
    let target = folder.join(&skill.name);
    let in_place = same_folder(source_dir, &target);
    writeln!(out, "skill `{}`: {}", skill.name, skill.description)?;
    writeln!(out, "from {}", request.source)?;
    if in_place {
        writeln!(out, "already in {}", target.display())?;
    } else if target.exists() {
        writeln!(out, "replacing the skill in {}", target.display())?;
    } else {
        writeln!(out, "into {}", target.display())?;
    }
    if !request.yes {
        write!(
            out,
            "Install it as your own? The agent will take its words as yours, and may follow it \
             and run its scripts without the outside-text approvals (the shell still asks \
             where [approvals] says). [y/N] "
        )?;
        out.flush()?;
        let mut answer = String::new();
        answers.read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes" | "Yes") {
            return Err(SkillsError::Declined);
        }
    }
    if !in_place {
        let partial = folder.join(format!(".{}.partial", skill.name));
        let _ = std::fs::remove_dir_all(&partial);
        copy_dir(source_dir, &partial)?;
        if target.exists() {
            std::fs::remove_dir_all(&target).map_err(|source| SkillsError::Write {
                path: target.clone(),
                source,
            })?;
        }
        std::fs::rename(&partial, &target).map_err(|source| SkillsError::Write {
            path: target.clone(),
            source,
        })?;
    }
    let resolved = target.canonicalize().map_err(|source| SkillsError::Read {
        path: target.clone(),
        source,
    })?;
    let digest = digest(&target).ok_or_else(|| SkillsError::NotASkill {
        from: request.source.clone(),
        why: "its folder cannot be read whole".into(),
    })?;
    let record_file = skills::record_file(home);
    let mut record = Record::load(&record_file)?;
    record.put(Installed {
        name: skill.name.clone(),
        folder: resolved,
        source: request.source.clone(),
        installed: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        digest,
    });
    record.save(&record_file)?;
    writeln!(out, "installed `{}` in {}", skill.name, target.display())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Whether `a` and `b` are the same folder.
fn same_folder(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn create_dir(path: &Path) -> Result<(), SkillsError> {
    std::fs::create_dir_all(path).map_err(|source| SkillsError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// A new hidden folder in `folder` for a download, named by the process.
fn tempfile_dir(folder: &Path) -> Result<PathBuf, SkillsError> {
    let dir = folder.join(format!(".download-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    create_dir(&dir)?;
    Ok(dir)
}

/// Copies a skill's folder: its files and folders; links are left out (one
/// could lead anywhere once copied).
fn copy_dir(from: &Path, to: &Path) -> Result<(), SkillsError> {
    create_dir(to)?;
    let read = |source| SkillsError::Read {
        path: from.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(from).map_err(read)? {
        let entry = entry.map_err(read)?;
        let kind = entry.file_type().map_err(read)?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).map_err(|source| SkillsError::Write {
                path: target.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

/// The body of a `SKILL.md` at `url`, no larger than a skill's may be.
async fn download(url: &str) -> Result<String, SkillsError> {
    let failed = |why: String| SkillsError::Download {
        url: url.to_string(),
        why,
    };
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|err| failed(err.to_string()))?;
    let mut response = client
        .get(url)
        .send()
        .await
        .map_err(|err| failed(err.to_string()))?;
    if !response.status().is_success() {
        return Err(failed(format!("the server answered {}", response.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| failed(err.to_string()))?
    {
        body.extend_from_slice(&chunk);
        if body.len() as u64 > skills::MAX_SKILL_FILE {
            return Err(failed(format!(
                "it is over {} bytes, more than a SKILL.md may be",
                skills::MAX_SKILL_FILE
            )));
        }
    }
    String::from_utf8(body).map_err(|_| failed("it is not UTF-8 text".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill_source(dir: &Path) -> PathBuf {
        let source = dir.join("src/notes");
        std::fs::create_dir_all(source.join("scripts")).unwrap();
        std::fs::write(
            source.join(SKILL_FILE),
            "---\nname: notes\ndescription: Keeps notes.\n---\nDo it.\n",
        )
        .unwrap();
        std::fs::write(source.join("scripts/tidy.sh"), "echo tidy\n").unwrap();
        source
    }

    #[tokio::test]
    async fn a_skill_md_at_a_url_is_installed_with_the_url_as_its_source() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/notes/SKILL.md", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 4096];
            let _ = stream.read(&mut head).await.unwrap();
            let body = "---\nname: notes\ndescription: Keeps notes.\n---\nDo it.\n";
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(answer.as_bytes()).await.unwrap();
        });
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let request = InstallRequest {
            source: url.clone(),
            agent: Some("scout".into()),
            yes: true,
        };
        install(&home, request, &mut &b""[..], &mut Vec::new())
            .await
            .unwrap();
        let folders = Folders::of(&home, "scout");
        let catalog = folders.scan();
        assert!(catalog.skills["notes"].trusted, "{catalog:?}");
        assert_eq!(catalog.skills["notes"].dir, folders.agent.join("notes"));
        let record = Record::load(&folders.record).unwrap();
        assert_eq!(record.installed[0].source, url);
        let left: Vec<_> = std::fs::read_dir(&folders.agent)
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(left.len(), 1, "only the skill is left: {left:?}");
    }

    #[tokio::test]
    async fn installing_asks_the_owner_and_a_no_installs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(&dir.path().join("home"));
        let source = skill_source(dir.path());
        let request = |yes| InstallRequest {
            source: source.display().to_string(),
            agent: None,
            yes,
        };
        let mut out = Vec::new();
        let refused = install(&home, request(false), &mut &b"n\n"[..], &mut out).await;
        assert!(matches!(refused, Err(SkillsError::Declined)), "{refused:?}");
        let asked = String::from_utf8_lossy(&out);
        assert!(asked.contains("skill `notes`: Keeps notes."), "{asked}");
        assert!(asked.contains("Install it as your own?"), "{asked}");
        let folders = Folders::of(&home, "hearth");
        assert!(folders.scan().skills.is_empty());
        let mut out = Vec::new();
        install(&home, request(false), &mut &b"y\n"[..], &mut out)
            .await
            .unwrap();
        let catalog = folders.scan();
        assert!(catalog.skills["notes"].trusted);
        assert!(folders.home.join("notes/scripts/tidy.sh").is_file());
        let listing = text(&folders, "hearth");
        assert!(
            listing.contains(&format!("(installed from {})", source.display())),
            "{listing}"
        );
    }
}
