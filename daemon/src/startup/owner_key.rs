//! The owner key, made fresh at each start: what a client of the Unix
//! socket must show in its `hello` ([`hearth_protocol::owner_key`] says why).

use super::error::{io, StartError};
use hearth_protocol::home::Home;
use hearth_protocol::owner_key::HEX_LEN;
use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Makes a new random key and writes it to [`Home::owner_key`], readable by
/// the user alone, in place of the last daemon's (a client that read the
/// old one is refused and reads the file again at its next connect).
/// Call it holding the home's lock, before the socket listens. The key is
/// returned to compare hellos with; it is never logged.
pub fn write_fresh(home: &Home) -> Result<String, StartError> {
    let path = home.owner_key();
    let key = random_hex().map_err(io(
        "cannot read random bytes for the owner key from",
        Path::new("/dev/urandom"),
    ))?;
    // Written aside and renamed: a client never reads half a key.
    let aside = path.with_extension("key.new");
    match fs::remove_file(&aside) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(io("cannot remove the leftover", &aside)(err)),
    }
    // `create_new`: a file or symlink planted there is not written through.
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&aside)
        .map_err(io("cannot write the owner key", &aside))?;
    file.write_all(format!("{key}\n").as_bytes())
        .map_err(io("cannot write the owner key", &aside))?;
    drop(file);
    fs::rename(&aside, &path).map_err(io("cannot write the owner key", &path))?;
    Ok(key)
}

/// 256 random bits from the kernel, as lowercase hex.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; HEX_LEN / 2];
    fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn each_start_writes_a_new_private_key_that_clients_read() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::at(dir.path());
        let first = write_fresh(&home).unwrap();
        assert_eq!(first.len(), HEX_LEN);
        assert!(first.bytes().all(|b| b.is_ascii_hexdigit()));
        let read = hearth_protocol::owner_key::read(&home.owner_key()).unwrap();
        assert_eq!(read.as_deref(), Some(first.as_str()));
        let mode = fs::metadata(home.owner_key()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
        let second = write_fresh(&home).unwrap();
        assert_ne!(first, second);
        let read = hearth_protocol::owner_key::read(&home.owner_key()).unwrap();
        assert_eq!(read.as_deref(), Some(second.as_str()));
    }
}
