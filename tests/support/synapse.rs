//! A real Matrix homeserver for the Matrix bridge's tests: Synapse (the
//! `matrix-synapse` Python package, on SQLite), started once per test
//! binary on a port from `127.0.0.1:0` with a configuration generated in a
//! temporary folder, its users registered by shared secret; and
//! [`Person`], a Matrix client the test drives as someone who talks to the
//! agent: a second hearth-matrix (the bridge's own Matrix program, with
//! matrix-sdk and end-to-end encryption), spoken with as the bridge does.
//!
//! [`Synapse::shared`] returns `None` when Synapse is not installed, so a
//! test can say so and pass on a developer's machine; under CI (`CI` set)
//! it fails instead, since `.ci/run` installs it.

use hearth_bridges::matrix::sidecar::{Event, Events, Sidecar};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The shared secret users are registered with.
const SHARED_SECRET: &str = "hearth-test-registration";

/// Every test user's password.
pub const PASSWORD: &str = "correct horse battery staple";

/// The homeserver's name, the part after `:` in user ids.
pub const SERVER_NAME: &str = "localhost";

/// How long one request to a hearth-matrix may take.
const CALL: Duration = Duration::from_secs(60);

/// The Python that runs Synapse: `$SYNAPSE_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("SYNAPSE_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// Whether Synapse can be imported.
fn installed() -> bool {
    Command::new(python())
        .args(["-c", "import synapse.app.homeserver"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The hearth-matrix program, built from `client/matrix-client/` (its own
/// workspace) the first time a test asks: `$HEARTH_MATRIX` when set.
pub fn hearth_matrix() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if let Some(path) = std::env::var_os("HEARTH_MATRIX") {
                return PathBuf::from(path);
            }
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("client/matrix-client");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
            let built = Command::new(cargo)
                .arg("build")
                .arg("--manifest-path")
                .arg(manifest.join("Cargo.toml"))
                .status()
                .expect("cargo runs");
            assert!(built.success(), "hearth-matrix builds");
            manifest.join("target/debug/hearth-matrix")
        })
        .clone()
}

/// The Synapse a test binary shares.
pub struct Synapse {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// Held until the test binary exits: the wrapper that started Synapse
    /// reads it, and ends Synapse (and removes its folder) at its end.
    _keeper: Mutex<std::process::ChildStdin>,
    _wrapper: Mutex<std::process::Child>,
}

/// Starts Synapse under `sh`, which waits for its standard input to close
/// — when the test binary exits, however it exits — then ends Synapse and
/// removes its folder.
const KEEPER: &str = r#""$0" "$@" </dev/null >"$HEARTH_SYNAPSE_DIR/out.log" 2>&1 &
server=$!
read -r _
kill "$server" 2>/dev/null
wait "$server"
rm -rf "$HEARTH_SYNAPSE_DIR""#;

static SHARED: OnceLock<Option<Synapse>> = OnceLock::new();

/// Users registered so far, for unique names.
static USERS: AtomicU32 = AtomicU32::new(0);

impl Synapse {
    /// This binary's Synapse, started at the first call; `None` when
    /// Synapse is not installed and this is not CI.
    pub fn shared() -> Option<&'static Synapse> {
        SHARED.get_or_init(Synapse::start).as_ref()
    }

    fn start() -> Option<Synapse> {
        if !installed() {
            assert!(
                std::env::var_os("CI").is_none(),
                "Synapse is not installed (pip install matrix-synapse); .ci/run installs it"
            );
            eprintln!("Synapse is not installed (pip install matrix-synapse): skipping");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("hearth-synapse-")
            .tempdir()
            .expect("a folder for Synapse")
            .keep();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let config = dir.join("homeserver.yaml");
        std::fs::write(&config, config_text(&dir, port)).expect("Synapse's config written");
        let keys = Command::new(python())
            .args(["-m", "synapse.app.homeserver", "--generate-keys", "-c"])
            .arg(&config)
            .stdout(Stdio::null())
            .status()
            .expect("Synapse makes its signing key");
        assert!(keys.success(), "Synapse makes its signing key");
        let mut wrapper = Command::new("sh")
            .arg("-c")
            .arg(KEEPER)
            .arg(python())
            .args(["-m", "synapse.app.homeserver", "-c"])
            .arg(&config)
            .env("HEARTH_SYNAPSE_DIR", &dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("Synapse starts");
        let keeper = wrapper.stdin.take().expect("the keeper's pipe");
        let base_url = format!("http://127.0.0.1:{port}");
        let versions = format!("127.0.0.1:{port}");
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            if http_ok(&versions, "/_matrix/client/versions") {
                break;
            }
            let log = std::fs::read_to_string(dir.join("out.log")).unwrap_or_default();
            assert!(
                std::time::Instant::now() < deadline,
                "Synapse did not answer on {base_url}; it said:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(Synapse {
            base_url,
            _keeper: Mutex::new(keeper),
            _wrapper: Mutex::new(wrapper),
        })
    }

    /// Registers new users with the shared secret (Synapse's admin API:
    /// a nonce, then the user signed with HMAC-SHA1 of the secret); their
    /// ids (`@NAME-N:localhost`, unique in this binary), each with
    /// [`PASSWORD`].
    pub async fn register(&self, names: &[&str]) -> Vec<String> {
        let http = reqwest::Client::new();
        let url = format!("{}/_synapse/admin/v1/register", self.base_url);
        let mut users = Vec::new();
        for name in names {
            let local = format!("{name}-{}", USERS.fetch_add(1, Ordering::Relaxed));
            let nonce: Value = http
                .get(&url)
                .send()
                .await
                .expect("Synapse gives a nonce")
                .json()
                .await
                .expect("the nonce as JSON");
            let nonce = nonce["nonce"].as_str().expect("a nonce").to_string();
            let signed = format!("{nonce}\0{local}\0{PASSWORD}\0notadmin");
            let key = ring::hmac::Key::new(
                ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
                SHARED_SECRET.as_bytes(),
            );
            let mac: String = ring::hmac::sign(&key, signed.as_bytes())
                .as_ref()
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect();
            let body = json!({
                "nonce": nonce,
                "username": local,
                "password": PASSWORD,
                "admin": false,
                "mac": mac,
            });
            let response = http
                .post(&url)
                .json(&body)
                .send()
                .await
                .expect("Synapse answers the registration");
            let status = response.status();
            let said = response.text().await.unwrap_or_default();
            assert!(status.is_success(), "registering {local}: {status} {said}");
            users.push(format!("@{local}:{SERVER_NAME}"));
        }
        users
    }
}

/// Whether `GET path` on `host` answers 200 (a plain HTTP/1.0 request).
fn http_ok(host: &str, path: &str) -> bool {
    use std::io::Read;
    let Ok(mut stream) = std::net::TcpStream::connect(host) else {
        return false;
    };
    let request = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.ends_with(b"200")
}

/// A Synapse configuration for tests: SQLite, no federation, no rate
/// limits worth the name, registration by shared secret only.
fn config_text(dir: &Path, port: u16) -> String {
    let dir = dir.display();
    let generous = "{per_second: 1000, burst_count: 1000}";
    format!(
        r#"server_name: "{SERVER_NAME}"
pid_file: "{dir}/homeserver.pid"
listeners:
  - port: {port}
    bind_addresses: ["127.0.0.1"]
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: "{dir}/homeserver.db"
media_store_path: "{dir}/media"
signing_key_path: "{dir}/signing.key"
registration_shared_secret: "{SHARED_SECRET}"
macaroon_secret_key: "hearth-test-macaroon"
form_secret: "hearth-test-form"
report_stats: false
trusted_key_servers: []
suppress_key_server_warning: true
enable_metrics: false
presence:
  enabled: false
url_preview_enabled: false
rc_message: {generous}
rc_registration: {generous}
rc_room_creation: {generous}
rc_login:
  address: {generous}
  account: {generous}
  failed_attempts: {generous}
rc_joins:
  local: {generous}
  remote: {generous}
rc_invites:
  per_room: {generous}
  per_user: {generous}
  per_issuer: {generous}
rc_key_requests: {generous}
"#
    )
}

/// Someone on the homeserver, driven by the test through a hearth-matrix
/// of their own (their own device, keys and store).
pub struct Person {
    pub user: String,
    sidecar: Sidecar,
    events: Events,
    /// Every event received so far, oldest first.
    pub seen: Vec<Event>,
    _store: tempfile::TempDir,
}

impl Person {
    /// Logs `user` in as a new device and starts syncing.
    pub async fn login(synapse: &Synapse, user: &str) -> Person {
        let store = tempfile::tempdir().expect("a store folder");
        let (sidecar, events) = Sidecar::start(
            &hearth_matrix().display().to_string(),
            &store.path().join("store"),
        )
        .expect("hearth-matrix starts");
        let login = json!({
            "homeserver": synapse.base_url,
            "user": user,
            "password": PASSWORD,
            "device_name": "test phone",
        });
        sidecar.call("login", login, CALL).await.expect("logged in");
        sidecar
            .call("start", json!({}), CALL)
            .await
            .expect("syncing");
        let mut person = Person {
            user: user.to_string(),
            sidecar,
            events,
            seen: Vec::new(),
            _store: store,
        };
        person
            .wait_for("the first sync", |e| *e == Event::Ready)
            .await;
        person
    }

    /// Asks hearth-matrix `method`; its result.
    pub async fn call(&self, method: &str, params: Value) -> Value {
        match self.sidecar.call(method, params, CALL).await {
            Ok(result) => result,
            Err(err) => panic!("{} {method}: {err}", self.user),
        }
    }

    /// Creates an encrypted direct room with `user` (who is invited).
    pub async fn create_dm(&self, user: &str) -> String {
        let made = self.call("create_dm", json!({ "user": user })).await;
        made["room"].as_str().expect("a room id").to_string()
    }

    /// Sends a text message (a reply to `reply_to` when given); its event id.
    pub async fn send(&self, room: &str, body: &str, reply_to: Option<&str>) -> String {
        let request = json!({ "room": room, "body": body, "reply_to": reply_to });
        let sent = self.call("send", request).await;
        sent["event_id"].as_str().expect("an event id").to_string()
    }

    /// Sends a file (`kind`: `image`, `audio`, `voice`, `file`).
    pub async fn send_file(
        &self,
        room: &str,
        name: &str,
        media_type: &str,
        kind: &str,
        bytes: &[u8],
    ) {
        use base64::Engine;
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let request = json!({ "room": room, "name": name, "media_type": media_type, "kind": kind, "data": data });
        self.call("send_file", request).await;
    }

    /// Reacts to an event.
    pub async fn react(&self, room: &str, event_id: &str, key: &str) {
        let request = json!({ "room": room, "event_id": event_id, "key": key });
        self.call("react", request).await;
    }

    /// Waits (up to the harness's deadline) for an event received so far
    /// or later that `check` accepts; returns it.
    pub async fn wait_for(&mut self, what: &str, check: impl Fn(&Event) -> bool) -> Event {
        self.wait_until(what, |seen| seen.iter().any(&check)).await;
        self.seen
            .iter()
            .find(|e| check(e))
            .cloned()
            .expect("found above")
    }

    /// Waits (up to the harness's deadline) until the events received so
    /// far satisfy `check`.
    pub async fn wait_until(&mut self, what: &str, check: impl Fn(&[Event]) -> bool) {
        let deadline = tokio::time::Instant::now() + crate::harness::DEADLINE;
        while !check(&self.seen) {
            let next = tokio::time::timeout_at(deadline, self.events.recv()).await;
            match next {
                Ok(Some(event)) => self.seen.push(event),
                Ok(None) => panic!(
                    "{}'s hearth-matrix stopped while waiting for {what}",
                    self.user
                ),
                Err(_) => panic!(
                    "{} waited in vain for {what}; saw {:#?}",
                    self.user, self.seen
                ),
            }
        }
    }
}
