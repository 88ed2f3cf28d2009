//! Content-addressed files, as the image store (`images.rs`) and the media
//! store (`media.rs`) keep them: named by their SHA-256, written durably
//! once, never changed or removed.
//!
//! A file is written to a temporary file in its folder, synced, renamed
//! into place and the folder synced, so a stored file survives a power cut
//! before anything that names it is acknowledged. The same bytes again find
//! the file already there. Folders are 0700, files 0600.

use sha2::{Digest, Sha256};
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Names temporary files apart within this process.
static NEXT_TEMPORARY: AtomicU64 = AtomicU64::new(0);

/// A write that failed, with the file it was for.
#[derive(Debug)]
pub struct WriteError {
    pub path: PathBuf,
    pub source: io::Error,
}

/// Lowercase hex SHA-256 of `bytes`: a stored file's name.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Whether `name` is a SHA-256 as the stores name files: 64 lowercase hex
/// digits, so it can never climb out of a store's folder.
pub fn is_sha256(name: &str) -> bool {
    name.len() == 64
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Writes `bytes` as `dir/file_name` unless a file of that size is there
/// already; returns once the file is durable. `dir` is made if missing.
pub fn write_once(dir: &Path, file_name: &str, bytes: &[u8]) -> Result<PathBuf, WriteError> {
    let path = dir.join(file_name);
    if fs::metadata(&path).is_ok_and(|meta| meta.len() == bytes.len() as u64) {
        return Ok(path);
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| WriteError {
            path: dir.to_path_buf(),
            source,
        })?;
    let temporary = dir.join(format!(
        ".{file_name}.{}-{}.tmp",
        std::process::id(),
        NEXT_TEMPORARY.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temporary, &path)?;
        fs::File::open(dir)?.sync_all()
    })();
    match written {
        Ok(()) => Ok(path),
        Err(source) => {
            let _ = fs::remove_file(&temporary);
            Err(WriteError { path, source })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_file_is_written_once_private_and_without_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("audio");
        let name = format!("{}.ogg", sha256_hex(b"OggS"));
        let path = write_once(&folder, &name, b"OggS").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"OggS");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let folder_mode = fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
        assert_eq!(folder_mode, 0o700);
        write_once(&folder, &name, b"OggS").unwrap();
        assert_eq!(fs::read_dir(&folder).unwrap().count(), 1);
        assert!(is_sha256(&sha256_hex(b"x")));
        assert!(!is_sha256("../../etc/passwd"));
    }
}
