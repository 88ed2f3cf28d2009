//! The owner key: what a client of the Unix socket shows in its `hello` to
//! be let in as the owner.
//!
//! The socket's file mode lets in every process of the owner's user, and
//! that includes the commands the agent's own tools run. The key tells them
//! apart: at each start hearthd writes a fresh random key (256 bits, as
//! hex) to [`crate::home::Home::owner_key`], a file private to the user in
//! the home's data folder beside `hearth.db`, which the shell's confinement
//! never lets a command read. A client reads the file at each connect, so a
//! restarted daemon's new key is found by the next connect. The key is
//! never put in an environment or a log.

use std::io::{self, Read};
use std::path::Path;

/// The key file's name in the home's data folder.
pub const FILE: &str = "owner.key";

/// The key's length in hex digits (256 bits).
pub const HEX_LEN: usize = 64;

/// Reads the key at `path`; `None` when there is no such file (no daemon
/// wrote one: none runs, or one from before owner keys, which needs none).
/// A file that cannot be read is an error: a process the shell started
/// gets "permission denied" here.
pub fn read(path: &Path) -> io::Result<Option<String>> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    // Bounded: whatever the file holds, no more than a key and its newline
    // is read.
    let mut text = String::new();
    file.take(HEX_LEN as u64 + 2).read_to_string(&mut text)?;
    Ok(Some(text.trim().to_string()))
}

/// Whether `given` is `expected`, compared in time that does not depend on
/// where they differ.
pub fn matches(given: &str, expected: &str) -> bool {
    let (given, expected) = (given.as_bytes(), expected.as_bytes());
    let mut difference = given.len() ^ expected.len();
    for (at, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(at).copied().unwrap_or(0));
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_key_is_none_and_a_written_one_is_read_without_its_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        assert_eq!(read(&path).unwrap(), None);
        std::fs::write(&path, format!("{}\n", "a".repeat(HEX_LEN))).unwrap();
        assert_eq!(read(&path).unwrap(), Some("a".repeat(HEX_LEN)));
    }

    #[test]
    fn keys_match_only_when_equal() {
        assert!(matches("abc123", "abc123"));
        assert!(!matches("abc124", "abc123"));
        assert!(!matches("abc", "abc123"));
        assert!(!matches("abc1234", "abc123"));
        assert!(!matches("", "abc123"));
    }
}
