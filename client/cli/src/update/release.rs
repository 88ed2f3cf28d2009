//! A release as `hearth update` and `install.sh` read it: where it is, what
//! it holds, and whether its key signed it.
//!
//! A release is a folder of files at `{address}/latest/download/`:
//!
//! - `release.txt`: the version on its first line, what changed after it;
//! - `SHA256SUMS`: one line per file, `<hex digest>  <name>`, as
//!   `sha256sum` writes it;
//! - `SHA256SUMS.sig`: the Ed25519 signature of `SHA256SUMS`, in base64;
//! - `hearth-<target>.gz` and `hearthd-<target>.gz`: the two programs for
//!   each target, gzipped.
//!
//! Only `SHA256SUMS` is signed: the signature vouches for the digests, and
//! the digests for the programs and `release.txt`.

use base64::Engine;
use ring::signature::{UnparsedPublicKey, ED25519};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The release folder's address, built in by the release workflow (the
/// repository's releases page); a build from source has none.
pub const BUILT_IN_ADDRESS: Option<&str> = option_env!("HEARTH_RELEASES_URL");

/// The public key that signs releases (32 bytes, base64), built in by the
/// release workflow; a build from source has none.
pub const BUILT_IN_KEY: Option<&str> = option_env!("HEARTH_RELEASE_KEY");

/// What can be wrong with a release.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ReleaseError {
    #[error("the release key `{0}` is not 32 bytes of base64")]
    BadKey(String),
    #[error("the release's signature does not verify with the release key: nothing was installed")]
    BadSignature,
    #[error("the release's SHA256SUMS is not `<digest>  <file>` lines (line {0})")]
    BadSums(usize),
    #[error("the release lists no {0}")]
    Missing(String),
    #[error("{0} does not match the digest the release lists: nothing was installed")]
    Mismatch(String),
    #[error("the release's release.txt names no version")]
    NoVersion,
}

/// A release key, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseKey([u8; 32]);

impl ReleaseKey {
    /// The key from its base64 text.
    pub fn parse(text: &str) -> Result<ReleaseKey, ReleaseError> {
        let bad = || ReleaseError::BadKey(text.trim().to_string());
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| bad())?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| bad())?;
        Ok(ReleaseKey(key))
    }
}

/// The digests a release lists, checked against its signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sums(BTreeMap<String, String>);

impl Sums {
    /// `sums` if `signature` (base64) is the key's signature of it.
    pub fn verified(sums: &[u8], signature: &[u8], key: &ReleaseKey) -> Result<Sums, ReleaseError> {
        let text = String::from_utf8_lossy(signature);
        let signature = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|_| ReleaseError::BadSignature)?;
        UnparsedPublicKey::new(&ED25519, &key.0)
            .verify(sums, &signature)
            .map_err(|_| ReleaseError::BadSignature)?;
        let mut digests = BTreeMap::new();
        for (number, line) in String::from_utf8_lossy(sums).lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let (digest, name) = line
                .split_once("  ")
                .ok_or(ReleaseError::BadSums(number + 1))?;
            if digest.len() != 64 || !digest.bytes().all(|byte| byte.is_ascii_hexdigit()) {
                return Err(ReleaseError::BadSums(number + 1));
            }
            digests.insert(name.trim().to_string(), digest.to_ascii_lowercase());
        }
        Ok(Sums(digests))
    }

    /// Whether `bytes` are the file `name` the release lists.
    pub fn check(&self, name: &str, bytes: &[u8]) -> Result<(), ReleaseError> {
        let listed = self
            .0
            .get(name)
            .ok_or_else(|| ReleaseError::Missing(name.to_string()))?;
        if hex(&Sha256::digest(bytes)) == *listed {
            Ok(())
        } else {
            Err(ReleaseError::Mismatch(name.to_string()))
        }
    }
}

/// What `release.txt` says: the version, and what changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notes {
    pub version: String,
    pub changes: String,
}

impl Notes {
    /// The notes from `release.txt`'s text (`hearth 0.2.0` or `0.2.0` on
    /// the first line).
    pub fn parse(text: &str) -> Result<Notes, ReleaseError> {
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default().trim();
        let version = first.strip_prefix("hearth ").unwrap_or(first).trim();
        let version = version.strip_prefix('v').unwrap_or(version);
        if version.is_empty() || !version.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(ReleaseError::NoVersion);
        }
        let changes = lines.collect::<Vec<_>>().join("\n").trim().to_string();
        Ok(Notes {
            version: version.to_string(),
            changes,
        })
    }
}

/// The release target of this build, as the release names its files
/// (`x86_64-unknown-linux-musl`, `aarch64-apple-darwin`, …); none for a
/// platform the releases do not build.
pub fn this_target() -> Option<&'static str> {
    match (std::env::consts::ARCH, std::env::consts::OS) {
        ("x86_64", "linux") => Some("x86_64-unknown-linux-musl"),
        ("aarch64", "linux") => Some("aarch64-unknown-linux-musl"),
        ("x86_64", "macos") => Some("x86_64-apple-darwin"),
        ("aarch64", "macos") => Some("aarch64-apple-darwin"),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{Ed25519KeyPair, KeyPair};

    fn signer() -> (Ed25519KeyPair, ReleaseKey) {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let key = ReleaseKey(pair.public_key().as_ref().try_into().unwrap());
        (pair, key)
    }

    fn signed(pair: &Ed25519KeyPair, sums: &str) -> Vec<u8> {
        base64::engine::general_purpose::STANDARD
            .encode(pair.sign(sums.as_bytes()))
            .into_bytes()
    }

    #[test]
    fn sums_signed_by_the_key_are_read_and_check_the_files() {
        let (pair, key) = signer();
        let sums = format!("{}  hearth-x.gz\n", hex(&Sha256::digest(b"program")));
        let verified = Sums::verified(sums.as_bytes(), &signed(&pair, &sums), &key).unwrap();
        assert_eq!(verified.check("hearth-x.gz", b"program"), Ok(()));
        assert_eq!(
            verified.check("hearth-x.gz", b"programme"),
            Err(ReleaseError::Mismatch("hearth-x.gz".into()))
        );
        assert_eq!(
            verified.check("hearthd-x.gz", b"program"),
            Err(ReleaseError::Missing("hearthd-x.gz".into()))
        );
    }

    #[test]
    fn sums_changed_after_signing_or_signed_by_another_key_are_refused() {
        let (pair, key) = signer();
        let (_, other) = signer();
        let sums = format!("{}  hearth-x.gz\n", hex(&Sha256::digest(b"program")));
        let signature = signed(&pair, &sums);
        let changed = sums.replace("hearth-x", "hearth-y");
        assert_eq!(
            Sums::verified(changed.as_bytes(), &signature, &key),
            Err(ReleaseError::BadSignature)
        );
        assert_eq!(
            Sums::verified(sums.as_bytes(), &signature, &other),
            Err(ReleaseError::BadSignature)
        );
        assert_eq!(
            Sums::verified(sums.as_bytes(), b"not base64!", &key),
            Err(ReleaseError::BadSignature)
        );
    }

    #[test]
    fn notes_read_the_version_and_the_changes() {
        let notes = Notes::parse("hearth v0.2.0\n\n- faster\n- smaller\n").unwrap();
        assert_eq!(notes.version, "0.2.0");
        assert_eq!(notes.changes, "- faster\n- smaller");
        assert_eq!(Notes::parse("\nfoo"), Err(ReleaseError::NoVersion));
        assert!(ReleaseKey::parse("short").is_err());
    }
}
