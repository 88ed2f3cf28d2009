//! A release folder served over HTTP on `127.0.0.1:0`, as a release page
//! serves it (`/latest/download/NAME`), for `hearth update` and
//! `install.sh`; and the release itself, made and signed by the tests.

use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{Ed25519KeyPair, KeyPair};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A signing key for test releases.
pub struct ReleaseSigner {
    pair: Ed25519KeyPair,
}

impl ReleaseSigner {
    pub fn new() -> ReleaseSigner {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
        ReleaseSigner {
            pair: Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap(),
        }
    }

    /// The public key as `HEARTH_RELEASE_KEY` takes it (base64).
    pub fn public_key(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.pair.public_key().as_ref())
    }

    fn sign(&self, bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(self.pair.sign(bytes))
    }
}

impl Default for ReleaseSigner {
    fn default() -> Self {
        ReleaseSigner::new()
    }
}

/// Writes a release of `version` into `folder`: each (name, program) as
/// `NAME-TARGET.gz`, `release.txt` with `changes`, `SHA256SUMS` and its
/// signature by `signer`.
pub fn write_release(
    folder: &Path,
    version: &str,
    changes: &str,
    target: &str,
    programs: &[(&str, &Path)],
    signer: &ReleaseSigner,
) {
    use flate2::write::GzEncoder;
    use sha2::{Digest, Sha256};
    std::fs::create_dir_all(folder).unwrap();
    let mut sums = String::new();
    let mut add = |name: &str, bytes: &[u8]| {
        std::fs::write(folder.join(name), bytes).unwrap();
        let digest: String = Sha256::digest(bytes)
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        sums.push_str(&format!("{digest}  {name}\n"));
    };
    add(
        "release.txt",
        format!("hearth {version}\n\n{changes}\n").as_bytes(),
    );
    for (name, program) in programs {
        let mut packed = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        packed.write_all(&std::fs::read(program).unwrap()).unwrap();
        add(&format!("{name}-{target}.gz"), &packed.finish().unwrap());
    }
    std::fs::write(folder.join("SHA256SUMS"), &sums).unwrap();
    std::fs::write(folder.join("SHA256SUMS.sig"), signer.sign(sums.as_bytes())).unwrap();
}

/// This machine's release target, as releases name it (as `hearth update`
/// asks for it).
pub fn this_target() -> &'static str {
    hearth_cli::update::release::this_target().expect("a platform releases are built for")
}

/// Serves a folder at `/latest/download/`; a file named in `cut` is sent
/// with its full length announced and half its bytes, then the connection
/// closes, as a download that breaks off.
pub struct ReleaseServer {
    pub address: String,
    cut: Arc<Mutex<Option<String>>>,
}

impl ReleaseServer {
    pub fn start(folder: &Path) -> ReleaseServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        let cut = Arc::new(Mutex::new(None));
        let folder = folder.to_path_buf();
        let cutting = cut.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let folder = folder.clone();
                let cutting = cutting.clone();
                std::thread::spawn(move || serve(stream, &folder, &cutting));
            }
        });
        ReleaseServer { address, cut }
    }

    /// From now on, `name` breaks off halfway (none: every file whole).
    pub fn cut(&self, name: Option<&str>) {
        *self.cut.lock().unwrap() = name.map(str::to_string);
    }
}

fn serve(mut stream: TcpStream, folder: &Path, cut: &Mutex<Option<String>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
    let name = path.strip_prefix("/latest/download/").unwrap_or("");
    let file: PathBuf = folder.join(name);
    let Ok(body) = std::fs::read(&file).map_err(|_| ()).and_then(|body| {
        if name.is_empty() || name.contains('/') {
            Err(())
        } else {
            Ok(body)
        }
    }) else {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        return;
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncontent-type: application/octet-stream\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let sent = if cut.lock().unwrap().as_deref() == Some(name) {
        &body[..body.len() / 2]
    } else {
        &body[..]
    };
    let _ = stream.write_all(sent);
    let _ = stream.flush();
}
