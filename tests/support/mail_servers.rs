//! Real mail servers for the email bridge's tests, each in a temporary
//! folder: Debian's Dovecot as the IMAP server (a passwd-file login, a
//! Maildir, IMAP on 127.0.0.1), and an SMTP server of Python's `aiosmtpd`
//! that keeps every mail it takes as a numbered file, and can hold the
//! answer to one while the test kills the sender. `.ci/run` installs both;
//! a test whose server is missing fails and says how to install it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader as AsyncBufReader};
use tokio::net::TcpStream;

/// The mailbox the tests log in to.
pub const USER: &str = "agent";
pub const PASSWORD: &str = "imap-secret";

/// How often starting Dovecot is tried on a new port: the port is found
/// free, then given to Dovecot, and another process may take it between.
const PORT_TRIES: usize = 5;

/// A free port on 127.0.0.1 at the moment of asking.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// Whether something accepts connections on `port` of 127.0.0.1.
fn listening(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// A running Dovecot with one mailbox, [`USER`].
pub struct Dovecot {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Dovecot {
    /// Starts Dovecot; panics with how to install it when it is missing.
    pub fn start() -> Dovecot {
        ["/usr/sbin/dovecot", "/usr/local/sbin/dovecot"]
            .into_iter()
            .find(|path| Path::new(path).is_file())
            .expect("Dovecot is not installed: apt-get install -y dovecot-imapd (.ci/run does)");
        let dir = tempfile::tempdir().expect("a temporary folder");
        let root = id("-u") == "0";
        for _ in 0..PORT_TRIES {
            let port = free_port();
            write_config(dir.path(), port, root);
            if let Some(child) = listening_dovecot(dir.path(), port) {
                return Dovecot { child, port, dir };
            }
        }
        let log = std::fs::read_to_string(dir.path().join("dovecot.log")).unwrap_or_default();
        panic!("Dovecot did not start listening; its log:\n{log}");
    }

    /// Stops Dovecot, which drops every connection, and starts it again
    /// on the same port with the same mailbox.
    pub fn restart(&mut self) {
        self.stop();
        self.child = listening_dovecot(self.dir.path(), self.port)
            .expect("dovecot starts again on its port");
    }

    /// Stops Dovecot and waits until it has.
    fn stop(&mut self) {
        // SIGTERM: the master stops its own processes with it.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Puts a mail in the inbox with IMAP's APPEND, as a receiving server
    /// delivers one.
    pub async fn append(&self, mail: &str) {
        let stream = TcpStream::connect(("127.0.0.1", self.port))
            .await
            .expect("dovecot accepts");
        let (read, mut write) = stream.into_split();
        let mut lines = AsyncBufReader::new(read).lines();
        answered(&mut lines, "* OK").await;
        let login = format!("a LOGIN {USER} {PASSWORD}\r\n");
        write.write_all(login.as_bytes()).await.unwrap();
        answered(&mut lines, "a ").await;
        let mail = mail.replace("\r\n", "\n").replace('\n', "\r\n");
        let append = format!("b APPEND INBOX {{{}}}\r\n", mail.len());
        write.write_all(append.as_bytes()).await.unwrap();
        answered(&mut lines, "+").await;
        write.write_all(mail.as_bytes()).await.unwrap();
        write.write_all(b"\r\n").await.unwrap();
        answered(&mut lines, "b ").await;
        write.write_all(b"c LOGOUT\r\n").await.unwrap();
    }
}

/// Reads Dovecot's lines up to the one that starts with `prefix`, which
/// must not be a refusal.
async fn answered(
    lines: &mut tokio::io::Lines<AsyncBufReader<tokio::net::tcp::OwnedReadHalf>>,
    prefix: &str,
) {
    loop {
        let line = lines
            .next_line()
            .await
            .expect("dovecot answers")
            .expect("dovecot stays");
        if line.starts_with(prefix) {
            assert!(
                !line.contains(" NO ") && !line.contains(" BAD "),
                "dovecot: {line}"
            );
            return;
        }
    }
}

impl Drop for Dovecot {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Dovecot started with the configuration in `dir`, once it listens on
/// `port`; `None` when it exits first (the port was taken meanwhile).
fn listening_dovecot(dir: &Path, port: u16) -> Option<Child> {
    let program = ["/usr/sbin/dovecot", "/usr/local/sbin/dovecot"]
        .into_iter()
        .find(|path| Path::new(path).is_file())?;
    let mut child = Command::new(program)
        .args(["-F", "-c"])
        .arg(dir.join("dovecot.conf"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("dovecot starts");
    for _ in 0..200 {
        if listening(port) {
            return Some(child);
        }
        if child.try_wait().ok().flatten().is_some() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// What `id` says of this process with `option` (`-u`: the user's number).
fn id(option: &str) -> String {
    let out = Command::new("id").arg(option).output().expect("id runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Dovecot's configuration for a home in `dir`, IMAP on `port`. As root,
/// Dovecot refuses to keep mail as root: `nobody` keeps it.
fn write_config(dir: &Path, port: u16, root: bool) {
    let mail = dir.join("mail");
    std::fs::create_dir_all(dir.join("run")).unwrap();
    std::fs::create_dir_all(&mail).unwrap();
    std::fs::write(dir.join("passwd"), format!("{USER}:{{PLAIN}}{PASSWORD}\n")).unwrap();
    let (user, group, uid, gid) = if root {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        Command::new("chown")
            .args(["-R", "nobody:nogroup"])
            .arg(&mail)
            .status()
            .expect("chown runs");
        (
            "nobody".to_string(),
            "nogroup".to_string(),
            "nobody".to_string(),
            "nogroup".to_string(),
        )
    } else {
        (id("-un"), id("-gn"), id("-u"), id("-g"))
    };
    let d = dir.display();
    let conf = format!(
        "base_dir = {d}/run\nstate_dir = {d}/run\nlog_path = {d}/dovecot.log\n\
         protocols = imap\nlisten = 127.0.0.1\nssl = no\ndisable_plaintext_auth = no\n\
         auth_mechanisms = plain login\n\
         default_internal_user = {user}\ndefault_internal_group = {group}\n\
         default_login_user = {user}\nfirst_valid_uid = 1\nfirst_valid_gid = 1\n\
         passdb {{\n  driver = passwd-file\n  args = scheme=PLAIN username_format=%u {d}/passwd\n}}\n\
         userdb {{\n  driver = static\n  args = uid={uid} gid={gid} home={d}/mail/%u\n}}\n\
         mail_location = maildir:{d}/mail/%u\n\
         service imap-login {{\n  inet_listener imap {{\n    address = 127.0.0.1\n    port = {port}\n  }}\n\
           inet_listener imaps {{\n    port = 0\n  }}\n  chroot =\n}}\n\
         service anvil {{\n  chroot =\n}}\n"
    );
    std::fs::write(dir.join("dovecot.conf"), conf).unwrap();
}

/// The SMTP server: takes every mail, keeps each as `NNNNNN.eml` in its
/// folder; while the file `hold` exists it holds its answer to a mail, and
/// drops a mail whose sender went away meanwhile.
const SMTP_SERVER: &str = r#"
import asyncio, os, sys
from aiosmtpd.smtp import SMTP
folder = sys.argv[1]
count = 0
class Keep:
    async def handle_DATA(self, server, session, envelope):
        global count
        hold = os.path.join(folder, "hold")
        if os.path.exists(hold):
            open(os.path.join(folder, "holding"), "w").close()
            while os.path.exists(hold):
                await asyncio.sleep(0.02)
            # A sender killed meanwhile: its end of the connection is closed.
            gone = server.transport is None or server.transport.is_closing()
            if gone or server._reader.at_eof():
                os.remove(os.path.join(folder, "holding"))
                return "421 the sender went away"
        count += 1
        path = os.path.join(folder, "%06d.eml" % count)
        with open(path + ".part", "wb") as f:
            f.write(envelope.original_content or envelope.content)
        os.rename(path + ".part", path)
        return "250 kept"
async def main():
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: SMTP(Keep()), "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"#;

/// A running SMTP server that keeps what it is sent.
pub struct SmtpCapture {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl SmtpCapture {
    /// Starts the server; panics with how to install it when it is missing.
    pub fn start() -> SmtpCapture {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let mut child = Command::new("python3")
            .args(["-c", SMTP_SERVER])
            .arg(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("its output");
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let Ok(port) = line.trim().parse() else {
            let mut said = String::new();
            if let Some(stderr) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut said);
            }
            panic!("the SMTP server did not start (pip install aiosmtpd; .ci/run does): {said}");
        };
        SmtpCapture { child, port, dir }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The mails taken so far, in order, as sent.
    pub fn mails(&self) -> Vec<String> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "eml"))
            .collect();
        names.sort();
        names
            .iter()
            .map(|path| std::fs::read_to_string(path).unwrap())
            .collect()
    }

    /// Waits until `count` mails were taken, and returns them.
    pub async fn wait_for(&self, count: usize) -> Vec<String> {
        crate::harness::until(&format!("{count} mails sent"), || {
            self.mails().len() >= count
        })
        .await;
        self.mails()
    }

    /// Holds (or stops holding) the answer to the next mail.
    pub fn hold(&self, on: bool) {
        let hold = self.dir.path().join("hold");
        if on {
            std::fs::write(hold, "").unwrap();
        } else {
            let _ = std::fs::remove_file(hold);
        }
    }

    /// Whether a mail is being held.
    pub fn holding(&self) -> bool {
        self.dir.path().join("holding").exists()
    }
}

impl Drop for SmtpCapture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
