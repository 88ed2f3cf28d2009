//! The linked device's bridge, run in the test's process: a fake device
//! that records what it is asked to send and serves the files it was
//! given, the relay on it, and a proxy that can hold back what the daemon
//! says. The test plays WhatsApp through [`Bridge`].

use hearth_bridges::whatsapp::web::bridge::{relay, WebError};
use hearth_bridges::whatsapp::web::device::{
    Chat, Device, DeviceError, Own, Received, WebEvent, WebFile, WebImage,
};
use hearth_bridges::whatsapp::WhatsAppConfig;
use hearth_protocol::home::Home;
use hearth_tests::bins;
use hearth_tests::fake_model::FakeModel;
use hearth_tests::harness::{eventually, TestHome, DEADLINE};
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// The linked account's number and privacy id.
pub const OWNER: &str = "15551234567";
pub const OWNER_LID: &str = "99000111";
pub const FRIEND: &str = "447946000958";
pub const STRANGER: &str = "4915100000000";
/// A contact of `[whatsapp] contacts`, not on the allowlist.
pub const ANNA: &str = "447700900123";

// ── the fake linked device ──────────────────────────────────────────────

/// A message the device was asked to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Sent {
    pub to: String,
    pub text: String,
    /// The id WhatsApp gave it.
    pub id: String,
}

/// A linked device that records its sends and serves the files it holds;
/// shared by the test and the bridge that uses it (the bridge runs on this
/// thread).
#[derive(Clone)]
pub struct FakeDevice(pub Rc<DeviceState>);

pub struct DeviceState {
    sent: RefCell<Vec<Sent>>,
    /// The chats "typing…" was shown in.
    pub composing: RefCell<Vec<String>>,
    /// While true, sends wait: a bridge stopped meanwhile never made them.
    hold: watch::Sender<bool>,
    /// Sends waiting now.
    held: Cell<usize>,
    /// What WhatsApp's media servers hold, by the direct path a received
    /// message names.
    files: RefCell<Vec<(String, Vec<u8>)>>,
    /// The direct paths downloaded, in order.
    pub downloads: RefCell<Vec<String>>,
    /// Direct paths whose next download never ends.
    stall_once: RefCell<Vec<String>>,
}

/// Counts a waiting send until it goes on or is dropped.
struct Waiting<'a>(&'a Cell<usize>);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.set(self.0.get() - 1);
    }
}

impl FakeDevice {
    pub fn new() -> FakeDevice {
        FakeDevice(Rc::new(DeviceState {
            sent: RefCell::default(),
            composing: RefCell::default(),
            hold: watch::channel(false).0,
            held: Cell::new(0),
            files: RefCell::default(),
            downloads: RefCell::default(),
            stall_once: RefCell::default(),
        }))
    }

    /// Makes the next download of `direct_path` never end.
    pub fn stall_once(&self, direct_path: &str) {
        self.0.stall_once.borrow_mut().push(direct_path.to_string());
    }

    /// Holds `bytes` at `direct_path`, for a received message to name.
    pub fn hold_file(&self, direct_path: &str, bytes: &[u8]) {
        let mut files = self.0.files.borrow_mut();
        files.push((direct_path.to_string(), bytes.to_vec()));
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.0.sent.borrow().clone()
    }

    /// The texts sent to `to`, in order.
    pub fn sent_to(&self, to: &str) -> Vec<String> {
        let sent = self.0.sent.borrow();
        sent.iter()
            .filter(|s| s.to == to)
            .map(|s| s.text.clone())
            .collect()
    }

    pub fn hold_sends(&self, hold: bool) {
        self.0.hold.send_replace(hold);
    }

    pub fn held(&self) -> usize {
        self.0.held.get()
    }
}

impl Device for FakeDevice {
    fn own(&self) -> Own {
        Own {
            number: Some(OWNER.into()),
            lid: Some(OWNER_LID.into()),
        }
    }

    async fn send_text(&self, to: &str, text: &str) -> Result<String, DeviceError> {
        let mut hold = self.0.hold.subscribe();
        if *hold.borrow_and_update() {
            self.0.held.set(self.0.held.get() + 1);
            let _waiting = Waiting(&self.0.held);
            let _ = hold.wait_for(|hold| !hold).await;
        }
        let mut sent = self.0.sent.borrow_mut();
        let id = format!("3EB0SENT{}", sent.len() + 1);
        sent.push(Sent {
            to: to.to_string(),
            text: text.to_string(),
            id: id.clone(),
        });
        Ok(id)
    }

    async fn send_image(&self, to: &str, _: Vec<u8>, _: &str) -> Result<String, DeviceError> {
        self.send_text(to, "[image]").await
    }

    async fn composing(&self, to: &str) -> Result<(), DeviceError> {
        self.0.composing.borrow_mut().push(to.to_string());
        Ok(())
    }

    async fn download(&self, _: &WebImage) -> Result<Vec<u8>, DeviceError> {
        Err(DeviceError {
            retry: false,
            message: "no images in these tests".into(),
        })
    }

    /// The file the message's direct path names, as the library hands it
    /// over: downloaded and decrypted.
    async fn download_file(&self, file: &WebFile) -> Result<Vec<u8>, DeviceError> {
        let path = match file {
            WebFile::Audio(audio) => audio.direct_path.clone(),
            WebFile::Document(document) => document.direct_path.clone(),
        }
        .unwrap_or_default();
        self.0.downloads.borrow_mut().push(path.clone());
        let stalls = self.0.stall_once.borrow().iter().position(|p| *p == path);
        if let Some(at) = stalls {
            self.0.stall_once.borrow_mut().remove(at);
            std::future::pending::<()>().await;
        }
        let files = self.0.files.borrow();
        let found = files.iter().find(|(held, _)| *held == path);
        found.map(|(_, bytes)| bytes.clone()).ok_or(DeviceError {
            retry: false,
            message: format!("WhatsApp has no file at {path}"),
        })
    }
}

/// A message someone wrote to the owner in their chat.
pub fn from(number: &str, name: &str, id: &str, words: &str) -> Received {
    Received {
        id: id.into(),
        chat: Chat::Direct {
            number: Some(number.into()),
            lid: None,
        },
        from: Some(number.into()),
        from_address: format!("{number}@s.whatsapp.net"),
        from_me: false,
        name: name.into(),
        text: Some(words.into()),
        image: None,
        file: None,
    }
}

/// A message the owner wrote (on the phone) in `chat`.
pub fn by_owner(chat: Chat, id: &str, words: &str) -> Received {
    Received {
        id: id.into(),
        chat,
        from: Some(OWNER.into()),
        from_address: format!("{OWNER}@s.whatsapp.net"),
        from_me: true,
        name: "Ada".into(),
        text: Some(words.into()),
        image: None,
        file: None,
    }
}

pub fn chat_with(number: &str) -> Chat {
    Chat::Direct {
        number: Some(number.into()),
        lid: None,
    }
}

// ── the bridge, in this process ─────────────────────────────────────────

/// The relay running on this thread (inside a [`LocalSet`]) with the fake
/// device; the test plays WhatsApp through `events`.
pub struct Bridge {
    events: mpsc::UnboundedSender<WebEvent>,
    shutdown: oneshot::Sender<()>,
    running: JoinHandle<Result<(), WebError>>,
}

impl Bridge {
    /// Starts the relay on `home` and returns once it takes messages (and
    /// so once its delivery knows where it starts).
    pub async fn start(home: &TestHome, config: &WhatsAppConfig, device: &FakeDevice) -> Bridge {
        Bridge::start_on(Home::at(home.path()), config, device).await
    }

    /// Starts the relay with the daemon's socket where `home` says.
    pub async fn start_on(home: Home, config: &WhatsAppConfig, device: &FakeDevice) -> Bridge {
        let (events, events_in) = mpsc::unbounded_channel();
        let (shutdown, on_shutdown) = oneshot::channel::<()>();
        let config = config.clone();
        let device = device.clone();
        let running = tokio::task::spawn_local(async move {
            let shutdown = async {
                let _ = on_shutdown.await;
            };
            relay(&home, &config, &device, events_in, shutdown).await
        });
        let mut bridge = Bridge {
            events,
            shutdown,
            running,
        };
        // The inbound half starts after the outbound one, so nothing logged
        // from here on is missed.
        assert!(bridge.deliver(Vec::new()).await, "the bridge is running");
        bridge
    }

    /// WhatsApp delivers `messages`; returns what the bridge answered on
    /// `done` (`false` when it dropped it).
    pub async fn deliver(&mut self, messages: Vec<Received>) -> bool {
        let answer = self.offer(messages);
        self.answer(answer).await
    }

    /// WhatsApp delivers `messages`; the bridge answers on what is returned.
    pub fn offer(&self, messages: Vec<Received>) -> oneshot::Receiver<bool> {
        let (done, answer) = oneshot::channel();
        self.events
            .send(WebEvent::Messages { messages, done })
            .expect("the bridge takes events");
        answer
    }

    /// What the bridge answers on `done` (`false` when it dropped it).
    pub async fn answer(&mut self, answer: oneshot::Receiver<bool>) -> bool {
        let answered = async {
            tokio::select! {
                answer = answer => answer.unwrap_or(false),
                ended = &mut self.running => panic!("the bridge stopped: {ended:?}"),
            }
        };
        tokio::time::timeout(DEADLINE, answered)
            .await
            .expect("the bridge answers in time")
    }

    /// Stops the bridge as its process would on a signal.
    pub async fn stop(self) {
        let _ = self.shutdown.send(());
        let ended = self.running.await.expect("the bridge's task");
        assert!(ended.is_ok(), "{ended:?}");
    }

    /// Drops the bridge wherever it is, as if its process were killed.
    pub async fn kill(self) {
        self.running.abort();
        let _ = self.running.await;
    }
}

/// A pass-through for the daemon's socket that can hold back what the
/// daemon says (its acks among it), so a test sees what the bridge does
/// before it hears back.
pub struct Proxy {
    /// The folder of the proxy's socket: the `runtime_dir` of the home the
    /// bridge is given.
    dir: tempfile::TempDir,
    hold: watch::Sender<bool>,
}

impl Proxy {
    /// Listens beside the daemon of `home`, passing everything through.
    pub fn start(home: &TestHome) -> Proxy {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let listener =
            UnixListener::bind(Home::at(dir.path()).socket()).expect("the proxy listens");
        let (hold, _) = watch::channel(false);
        let upstream = home.socket();
        let daemon_says = hold.clone();
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let daemon = UnixStream::connect(&upstream).await.expect("the daemon");
                let (from_client, to_client) = client.into_split();
                let (from_daemon, to_daemon) = daemon.into_split();
                tokio::spawn(pump(from_client, to_daemon, None));
                tokio::spawn(pump(from_daemon, to_client, Some(daemon_says.subscribe())));
            }
        });
        Proxy { dir, hold }
    }

    /// The bridge's home: the daemon's, with the socket through the proxy.
    pub fn home(&self, home: &TestHome) -> Home {
        Home {
            runtime_dir: self.dir.path().to_path_buf(),
            ..Home::at(home.path())
        }
    }

    /// Holds back (or lets through) what the daemon says.
    pub fn hold(&self, hold: bool) {
        self.hold.send_replace(hold);
    }
}

/// Copies bytes until either side closes, waiting while `hold` says so.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    mut hold: Option<watch::Receiver<bool>>,
) {
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let n = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(hold) = &mut hold {
            let _ = hold.wait_for(|hold| !hold).await;
        }
        if to.write_all(&buffer[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// `[whatsapp]` for the linked device, as written in `config.toml`.
pub fn web_table(allow: &[&str]) -> String {
    let allow: Vec<String> = allow.iter().map(|n| format!("\"+{n}\"")).collect();
    format!(
        "[whatsapp]\nbackend = \"web\"\nallow = [{}]\n",
        allow.join(", ")
    )
}

pub fn parse(text: &str) -> WhatsAppConfig {
    WhatsAppConfig::parse(Path::new("config.toml"), text).expect("a [whatsapp] table")
}

/// A home whose daemon talks to `model`, with no bridge of its own.
pub fn home(model: &FakeModel) -> TestHome {
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    home
}

/// Waits until the device sent `n` messages; returns them all.
pub async fn sends(device: &FakeDevice, n: usize) -> Vec<Sent> {
    eventually(&format!("{n} message(s) sent"), || {
        let sent = device.sent();
        std::future::ready((sent.len() >= n).then_some(sent))
    })
    .await
}
