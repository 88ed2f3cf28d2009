//! A small Chrome DevTools Protocol client for the browser tests: it starts
//! a real headless Chromium on a temporary profile, one per test binary,
//! and drives pages over CDP's WebSocket (tokio-tungstenite, already the
//! workspace's), a connection per test: open a page in a fresh browser
//! context, evaluate script, wait for a condition inside the page, set a
//! file input's files, read cookies, take a screenshot.
//!
//! [`Browser::launch`](crate::cdp::Browser::launch) returns `None` only when no Chromium is installed,
//! so a test can say so and skip; CI installs Debian's `chromium`.

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

/// How long a wait inside a page may take before the test fails.
const PAGE_DEADLINE_MS: u64 = 30_000;

/// The Chromium binary: `$CHROMIUM`, or the first of the usual names on PATH.
pub fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| {
            ["chromium", "chromium-browser", "google-chrome"].map(|name| dir.join(name))
        })
        .find(|candidate| candidate.is_file())
}

/// A DevTools connection to this test binary's Chromium.
///
/// The first test of a binary to launch one starts Chromium; the others
/// share it (a browser per test is slow on a small machine), each over its
/// own connection and in its own browser contexts, which the browser drops
/// when that connection closes: no test sees another's cookies, tabs or
/// console.
pub struct Browser {
    socket: WebSocketStream<TcpStream>,
    next_id: u64,
    /// Console messages and uncaught exceptions, shown when a wait fails.
    pub console: Vec<String>,
}

/// One tab, attached with its own CDP session.
pub struct Page {
    pub session: String,
    pub target: String,
}

/// The Chromium a test binary shares: where its DevTools listen.
struct Shared {
    devtools: String,
    /// Held until the test binary exits: the wrapper that started Chromium
    /// reads it, and ends Chromium (and removes its profile) at its end.
    _keeper: std::sync::Mutex<std::process::ChildStdin>,
    /// The wrapper, which outlives the test binary for as long as it takes
    /// to end Chromium.
    _wrapper: std::sync::Mutex<std::process::Child>,
}

/// Starts Chromium under `sh`, which waits for its standard input to
/// close — when the test binary exits, however it exits — and then ends
/// Chromium and removes the profile folder.
const KEEPER: &str = r#""$0" "$@" </dev/null &
browser=$!
read -r _
kill "$browser" 2>/dev/null
wait "$browser"
rm -rf "$HEARTH_CDP_PROFILE""#;

static SHARED: std::sync::OnceLock<Option<Shared>> = std::sync::OnceLock::new();

/// This binary's Chromium, started at the first call; `None` when none is
/// installed.
fn shared() -> Option<&'static Shared> {
    SHARED
        .get_or_init(|| {
            let binary = chromium()?;
            let profile = tempfile::Builder::new()
                .prefix("hearth-chromium-")
                .tempdir()
                .expect("a profile folder")
                .keep();
            let mut child = Command::new("sh")
                .arg("-c")
                .arg(KEEPER)
                .arg(&binary)
                .args([
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--no-first-run",
                    "--disable-dev-shm-usage",
                    "--remote-debugging-port=0",
                ])
                .arg(format!("--user-data-dir={}", profile.display()))
                .arg("about:blank")
                .env("HEARTH_CDP_PROFILE", &profile)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("chromium starts");
            let keeper = child.stdin.take().expect("the keeper's stdin");
            let stderr = child.stderr.take().expect("chromium's stderr");
            let (found, address) = std::sync::mpsc::channel();
            // Reads Chromium's stderr to its end, so it never blocks on it.
            std::thread::spawn(move || {
                let mut found = Some(found);
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(url) = line.strip_prefix("DevTools listening on ") {
                        if let Some(found) = found.take() {
                            let _ = found.send(url.trim().to_string());
                        }
                    }
                }
            });
            let devtools = address
                .recv_timeout(Duration::from_secs(60))
                .expect("chromium says where DevTools listens");
            Some(Shared {
                devtools,
                _keeper: std::sync::Mutex::new(keeper),
                _wrapper: std::sync::Mutex::new(child),
            })
        })
        .as_ref()
}

impl Browser {
    /// Connects to this binary's Chromium (starting it the first time), or
    /// `None` when none is installed.
    pub async fn launch() -> Option<Browser> {
        let url = &shared()?.devtools;
        let host = url
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .expect("a host in the DevTools address")
            .to_string();
        let stream = TcpStream::connect(&host).await.expect("DevTools accepts");
        let (socket, _) = tokio_tungstenite::client_async(url.as_str(), stream)
            .await
            .expect("the DevTools handshake");
        Some(Browser {
            socket,
            next_id: 0,
            console: Vec::new(),
        })
    }

    /// Calls `method`; returns its result, or panics with its error.
    pub async fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        match self.try_call(session, method, params).await {
            Ok(result) => result,
            Err(error) => panic!("{method} failed: {error}"),
        }
    }

    /// Calls `method`; its result or its error.
    pub async fn try_call(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut frame = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            frame["sessionId"] = json!(session);
        }
        self.socket
            .send(WsMessage::Text(frame.to_string().into()))
            .await
            .expect("sent to DevTools");
        loop {
            let message = tokio::time::timeout(Duration::from_secs(90), self.socket.next())
                .await
                .expect("DevTools answers in time")
                .expect("DevTools is connected")
                .expect("a DevTools frame");
            let WsMessage::Text(text) = message else {
                continue;
            };
            let value: Value = serde_json::from_str(&text).expect("DevTools speaks JSON");
            if value["id"] == json!(id) {
                if let Some(error) = value.get("error") {
                    return Err(error.clone());
                }
                return Ok(value["result"].clone());
            }
            self.note_event(&value);
        }
    }

    fn note_event(&mut self, value: &Value) {
        match value["method"].as_str() {
            Some("Runtime.consoleAPICalled") => {
                let args: Vec<String> = value["params"]["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|arg| arg["value"].to_string())
                    .collect();
                self.console.push(format!("console: {}", args.join(" ")));
            }
            Some("Runtime.exceptionThrown") => {
                let details = &value["params"]["exceptionDetails"];
                self.console.push(format!(
                    "exception: {} {}",
                    details["text"], details["exception"]["description"]
                ));
            }
            _ => {}
        }
    }

    /// A new tab in a new browser context (its own cookies), at
    /// `about:blank`, as wide as a phone.
    pub async fn new_page(&mut self) -> Page {
        let context = self
            .call(
                None,
                "Target.createBrowserContext",
                json!({ "disposeOnDetach": true }),
            )
            .await;
        let context = context["browserContextId"].clone();
        self.page_in(context).await
    }

    /// A new tab in the context of `other` (sharing its cookies).
    pub async fn page_beside(&mut self, other: &Page) -> Page {
        let info = self
            .call(
                None,
                "Target.getTargetInfo",
                json!({ "targetId": other.target }),
            )
            .await;
        self.page_in(info["targetInfo"]["browserContextId"].clone())
            .await
    }

    async fn page_in(&mut self, context: Value) -> Page {
        let created = self
            .call(
                None,
                "Target.createTarget",
                json!({ "url": "about:blank", "browserContextId": context }),
            )
            .await;
        let target = created["targetId"]
            .as_str()
            .expect("a target id")
            .to_string();
        let attached = self
            .call(
                None,
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
            )
            .await;
        let session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        let page = Page { session, target };
        for domain in ["Page.enable", "Runtime.enable", "Network.enable"] {
            self.call(Some(&page.session), domain, json!({})).await;
        }
        self.call(
            Some(&page.session),
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": 360, "height": 760, "deviceScaleFactor": 2, "mobile": true }),
        )
        .await;
        page
    }

    /// Opens `url` in `page` and waits until the document has loaded.
    pub async fn navigate(&mut self, page: &Page, url: &str) {
        let navigated = self
            .call(Some(&page.session), "Page.navigate", json!({ "url": url }))
            .await;
        assert!(
            navigated.get("errorText").is_none(),
            "navigating to {url}: {navigated}"
        );
        self.wait_for(
            page,
            "document.readyState === 'complete' && location.href !== 'about:blank'",
        )
        .await;
    }

    /// Evaluates `expression` in the page (awaiting a promise) and returns
    /// its value; panics on an exception.
    pub async fn eval(&mut self, page: &Page, expression: &str) -> Value {
        let result = self
            .call(
                Some(&page.session),
                "Runtime.evaluate",
                json!({ "expression": expression, "awaitPromise": true, "returnByValue": true }),
            )
            .await;
        if let Some(details) = result.get("exceptionDetails") {
            panic!(
                "script failed: {expression}\n{}\n{}",
                details["exception"]["description"],
                self.console.join("\n")
            );
        }
        result["result"]["value"].clone()
    }

    /// Waits inside the page until `condition` (a script expression) is
    /// truthy; returns its value. Fails the test after a generous deadline,
    /// with the page's console.
    pub async fn wait_for(&mut self, page: &Page, condition: &str) -> Value {
        let script = format!(
            "new Promise((resolve, reject) => {{
                const start = Date.now();
                const tick = () => {{
                    let value;
                    try {{ value = ({condition}); }} catch (err) {{ value = undefined; }}
                    if (value) resolve(value);
                    else if (Date.now() - start > {PAGE_DEADLINE_MS}) resolve({{ timedOut: true }});
                    else setTimeout(tick, 20);
                }};
                tick();
            }})"
        );
        loop {
            let result = self
                .try_call(
                    Some(&page.session),
                    "Runtime.evaluate",
                    json!({ "expression": script, "awaitPromise": true, "returnByValue": true }),
                )
                .await;
            match result {
                Ok(result) if result.get("exceptionDetails").is_none() => {
                    let value = result["result"]["value"].clone();
                    if value.get("timedOut").is_some() {
                        let body = self
                            .eval(page, "document.body ? document.body.innerText : ''")
                            .await;
                        panic!(
                            "the page never showed: {condition}\npage text: {body}\n{}",
                            self.console.join("\n")
                        );
                    }
                    return value;
                }
                // A navigation replaced the document under the wait: wait again.
                _ => continue,
            }
        }
    }

    /// Clicks the element `selector` names, as a person would (a mouse
    /// press and release at its middle).
    pub async fn click(&mut self, page: &Page, selector: &str) {
        let found = self
            .wait_for(
                page,
                &format!(
                    "(() => {{ const node = document.querySelector({selector:?});
                       if (!node || node.disabled) return null;
                       node.scrollIntoView({{ block: 'center' }});
                       const box = node.getBoundingClientRect();
                       return box.width > 0 ? {{ x: box.x + box.width / 2, y: box.y + box.height / 2 }} : null; }})()"
                ),
            )
            .await;
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                Some(&page.session),
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": found["x"], "y": found["y"], "button": "left", "clickCount": 1 }),
            )
            .await;
        }
    }

    /// Types `text` into the field `selector` names, as a keyboard would
    /// (the field focused, the text inserted), then presses Enter.
    pub async fn type_and_enter(&mut self, page: &Page, selector: &str, text: &str) {
        let focus = format!("document.querySelector({selector:?}).focus(); true");
        self.eval(page, &focus).await;
        self.call(
            Some(&page.session),
            "Input.insertText",
            json!({ "text": text }),
        )
        .await;
        let enter = json!({ "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13 });
        let mut down = enter.clone();
        down["type"] = json!("keyDown");
        down["text"] = json!("\r");
        let mut up = enter;
        up["type"] = json!("keyUp");
        for event in [down, up] {
            self.call(Some(&page.session), "Input.dispatchKeyEvent", event)
                .await;
        }
    }

    /// Sets the files of the file input `selector` names, as choosing them
    /// in the file picker would.
    pub async fn set_files(&mut self, page: &Page, selector: &str, files: &[PathBuf]) {
        let node = self
            .call(
                Some(&page.session),
                "Runtime.evaluate",
                json!({ "expression": format!("document.querySelector({selector:?})") }),
            )
            .await;
        let object = node["result"]["objectId"].clone();
        let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        self.call(
            Some(&page.session),
            "DOM.setFileInputFiles",
            json!({ "files": files, "objectId": object }),
        )
        .await;
    }

    /// The cookies the page's browser context holds.
    pub async fn cookies(&mut self, page: &Page) -> Vec<Value> {
        let result = self
            .call(Some(&page.session), "Network.getCookies", json!({}))
            .await;
        result["cookies"].as_array().cloned().unwrap_or_default()
    }

    /// A PNG screenshot of what the page shows now, written to `path`.
    pub async fn screenshot(&mut self, page: &Page, path: &std::path::Path) {
        use base64::Engine;
        let shot = self
            .call(
                Some(&page.session),
                "Page.captureScreenshot",
                json!({ "format": "png" }),
            )
            .await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("screenshot base64");
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("the artifacts folder");
        }
        std::fs::write(path, bytes).expect("the screenshot is written");
    }
}
