//! The owner's record of installed skills (`skills-installed.json` in the
//! home's config folder) and the digest of a skill's folder.
//!
//! `hearth skills install` writes an entry after the owner said yes: the
//! skill's folder, where it came from, when, and the SHA-256 digest of its
//! files. A skill is the owner's while its folder and digest match an
//! entry; a file added, changed or removed since makes it outside text
//! again, until it is installed anew. The record lives beside
//! `config.toml`, where the agent's tools cannot write.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// One skill the owner installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    pub name: String,
    /// Its folder, resolved.
    pub folder: PathBuf,
    /// The path or URL it was installed from.
    pub source: String,
    /// RFC 3339.
    pub installed: String,
    /// [`digest`] of its folder when installed.
    pub digest: String,
}

/// Every skill installed, one entry per folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    pub installed: Vec<Installed>,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a record of installed skills: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl Record {
    /// The record at `path`; empty when there is none yet.
    pub fn load(path: &Path) -> Result<Record, RecordError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Record::default()),
            Err(source) => {
                return Err(RecordError::Read {
                    path: path.to_path_buf(),
                    source,
                })
            }
        };
        serde_json::from_str(&text).map_err(|source| RecordError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Writes the record whole (a new file renamed over the old), private
    /// to the owner.
    pub fn save(&self, path: &Path) -> Result<(), RecordError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let write = |source| RecordError::Write {
            path: path.to_path_buf(),
            source,
        };
        let partial = path.with_extension("json.partial");
        let text = serde_json::to_string_pretty(self).unwrap_or_default();
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)
            .map_err(write)?;
        file.write_all(text.as_bytes()).map_err(write)?;
        file.sync_all().map_err(write)?;
        std::fs::rename(&partial, path).map_err(write)
    }

    /// Records `entry`, replacing any entry of its folder.
    pub fn put(&mut self, entry: Installed) {
        self.installed.retain(|old| old.folder != entry.folder);
        self.installed.push(entry);
    }

    /// The entry of the skill in `dir`, when the owner installed it there.
    pub fn entry(&self, dir: &Path) -> Option<&Installed> {
        let dir = dir.canonicalize().ok()?;
        self.installed.iter().find(|entry| entry.folder == dir)
    }

    /// Whether the skill in `dir` is the owner's: installed there, its
    /// files unchanged since.
    pub fn trusts(&self, dir: &Path) -> bool {
        self.entry(dir)
            .is_some_and(|entry| digest(dir).is_some_and(|now| now == entry.digest))
    }
}

/// The SHA-256 of a skill's folder: each file's path, kind and bytes (a
/// link's target), in path order, hidden names included. `None` when the
/// folder cannot be read or is larger than a skill may be.
pub fn digest(dir: &Path) -> Option<String> {
    let mut entries = Vec::new();
    walk(dir, Path::new(""), &mut entries)?;
    entries.sort();
    let mut hash = Sha256::new();
    let mut total = 0u64;
    for (relative, kind) in entries {
        let full = dir.join(&relative);
        hash.update(relative.to_string_lossy().as_bytes());
        hash.update([0]);
        match kind {
            Kind::Link => {
                let target = std::fs::read_link(&full).ok()?;
                hash.update(b"link\0");
                hash.update(target.to_string_lossy().as_bytes());
            }
            Kind::File => {
                let bytes = std::fs::read(&full).ok()?;
                total += bytes.len() as u64;
                if total > super::MAX_FOLDER_BYTES {
                    return None;
                }
                hash.update(b"file\0");
                hash.update((bytes.len() as u64).to_le_bytes());
                hash.update(&bytes);
            }
        }
        hash.update([0]);
    }
    Some(
        hash.finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect(),
    )
}

/// The files of a skill's folder and their bytes in all, counting no
/// further than just past the limits.
pub fn size_of(dir: &Path) -> (usize, u64) {
    let mut entries = Vec::new();
    if walk(dir, Path::new(""), &mut entries).is_none() {
        return (usize::MAX, u64::MAX);
    }
    let bytes = entries
        .iter()
        .filter(|(_, kind)| *kind == Kind::File)
        .filter_map(|(relative, _)| std::fs::symlink_metadata(dir.join(relative)).ok())
        .map(|meta| meta.len())
        .sum();
    (entries.len(), bytes)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    File,
    Link,
}

/// The files and links beneath `dir/relative`; `None` past
/// [`super::MAX_FILES`] or when a folder cannot be read. Links are not
/// followed.
fn walk(dir: &Path, relative: &Path, into: &mut Vec<(PathBuf, Kind)>) -> Option<()> {
    for entry in std::fs::read_dir(dir.join(relative)).ok()? {
        let entry = entry.ok()?;
        let path = relative.join(entry.file_name());
        let kind = entry.file_type().ok()?;
        if kind.is_symlink() {
            into.push((path, Kind::Link));
        } else if kind.is_dir() {
            walk(dir, &path, into)?;
        } else if kind.is_file() {
            into.push((path, Kind::File));
        }
        if into.len() > super::MAX_FILES {
            return None;
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_is_trusted_until_a_file_of_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join("notes");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::write(skill.join("SKILL.md"), "---\nname: notes\n---\n").unwrap();
        std::fs::write(skill.join("scripts/run.sh"), "echo hi\n").unwrap();
        let mut record = Record::default();
        assert!(!record.trusts(&skill));
        record.put(Installed {
            name: "notes".into(),
            folder: skill.canonicalize().unwrap(),
            source: "/src/notes".into(),
            installed: "2026-01-01T00:00:00Z".into(),
            digest: digest(&skill).unwrap(),
        });
        let file = dir.path().join("skills-installed.json");
        record.save(&file).unwrap();
        let record = Record::load(&file).unwrap();
        assert!(record.trusts(&skill));
        std::fs::write(skill.join("scripts/extra.sh"), "rm -rf ~\n").unwrap();
        assert!(!record.trusts(&skill));
        std::fs::remove_file(skill.join("scripts/extra.sh")).unwrap();
        assert!(record.trusts(&skill));
        std::fs::write(skill.join("scripts/run.sh"), "echo bye\n").unwrap();
        assert!(!record.trusts(&skill));
        assert_eq!(
            Record::load(&dir.path().join("none.json")).unwrap(),
            Record::default()
        );
    }
}
