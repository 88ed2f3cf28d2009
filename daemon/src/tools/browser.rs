//! The browser the agent drives: one headless Chromium per agent
//! (`[tools.browser]`), started at its first use on a profile private to
//! the agent (`DATA/browser/AGENT`, mode 0700), closed when unused for
//! `idle_secs`, when the daemon stops, and with the daemon however it ends
//! (`chromium.rs`). One tab; its page is read as an outline of numbered
//! elements (`snapshot.rs`) or as text, acted on by number, scrolled, and
//! seen in a screenshot.
//!
//! - Every request Chromium makes is decided by `web_fetch`'s address rules
//!   (`addresses.rs`), the page's own navigations and loads among them, and
//!   every connection it opens goes through a gate that connects only to
//!   addresses those rules checked (`gate.rs`), a WebSocket among them; a
//!   refusal is said in the next answer.
//! - What a page says is outside text: every answer that carries the page
//!   is quoted as `web_fetch`'s are and has the page's provenance, so the
//!   turn is tainted and acting tools ask. Clicking and typing act (they
//!   send what the model chose to a site), so in a tainted turn they ask
//!   too (`tools.rs` says which tools act).
//! - Each action has `action_timeout_secs`; a page still busy then is
//!   stopped, and one that does not answer at all has its browser closed,
//!   so a hung page holds up nothing. A page's script heap is bounded
//!   (`page_memory_mb`), a screenshot is the 1280×800 viewport as a JPEG.

mod addresses;
mod chromium;
mod gate;
mod snapshot;
mod tools;

pub use tools::tools;

use super::{Outcome, Processes, Provenance};
use crate::config::tools::BrowserConfig;
use crate::config::tools::ToolsConfig;
use crate::images::ImageStore;
use addresses::Addresses;
use chromium::{Cdp, CdpError, Chromium, Launch};
use serde_json::{json, Value};
use snapshot::Element;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;
use tokio::time::Instant;

/// The viewport's size in CSS pixels, and so a screenshot's.
const VIEWPORT: (u32, u32) = (1280, 800);
/// A screenshot larger than this is taken again at a lower quality.
const MAX_SCREENSHOT_BYTES: usize = 1024 * 1024;
/// The most characters of a page's text one read returns.
const MAX_TEXT_CHARS: usize = 60_000;

#[derive(Debug, thiserror::Error)]
enum BrowserError {
    #[error("{0}")]
    Cdp(#[from] CdpError),
    #[error("cannot make the browser's profile folder {path}: {why}")]
    Profile { path: String, why: String },
    #[error("no page is open; open one with browser_open first")]
    NoPage,
    #[error("there is no element [{0}] on the page; read the page again (browser_read) for the current numbers")]
    NoElement(u64),
    #[error("element [{0}] is no longer on the page or cannot be reached; read the page again (browser_read) for the current numbers")]
    Gone(u64),
    #[error("the page did not answer within {0} s; the browser was closed (open the page again)")]
    Hung(u64),
    #[error("refused: {0}")]
    Refused(String),
    #[error("the page could not be opened: {0}")]
    Navigation(String),
    #[error("the screenshot could not be kept: {0}")]
    Screenshot(String),
}

/// One agent's browser, shared by its `browser_*` tools.
pub struct Browser {
    config: BrowserConfig,
    /// The agent's profile folder, `DATA/browser/AGENT`.
    profile: PathBuf,
    /// The tools' process groups: Chromium is killed with them at the stop.
    processes: Processes,
    addresses: Arc<Addresses>,
    /// Where screenshots are kept for the model to see; none: no screenshots.
    images: Option<ImageStore>,
    /// The running browser, started at the first action; one action at a time.
    session: tokio::sync::Mutex<Option<Session>>,
    /// Hands the idle watcher a way back to the browser without keeping it.
    me: Weak<Browser>,
}

/// A running Chromium with its one tab.
struct Session {
    chromium: Chromium,
    /// The tab's CDP session.
    page: String,
    /// The tab's target id, which is also its main frame's id.
    frame: String,
    /// The numbered elements of the last snapshot.
    elements: Vec<Element>,
    /// Requests refused since the last answer, in words.
    refused: Arc<Mutex<Vec<String>>>,
    /// When the last action ended; the idle watcher closes the browser after
    /// `idle_secs` of it.
    last_used: Instant,
    /// Which start this is, so an idle watcher closes only its own.
    generation: u64,
}

impl Browser {
    /// The browser of `agent`, on a profile under `data_dir`; nothing starts
    /// until the first action.
    pub fn new(
        config: &ToolsConfig,
        data_dir: &std::path::Path,
        agent: &str,
        processes: Processes,
        images: Option<ImageStore>,
    ) -> Arc<Browser> {
        let browser = &config.browser;
        Arc::new_cyclic(|me| Browser {
            config: browser.clone(),
            profile: data_dir.join("browser").join(agent),
            processes,
            addresses: Arc::new(Addresses::new(
                config.allow_private_network,
                &browser.allow_private,
            )),
            images,
            session: tokio::sync::Mutex::new(None),
            me: me.clone(),
        })
    }

    /// Runs `action` on the running browser (started first if need be),
    /// within the action time; its answer is quoted as the page's words
    /// when it carries them.
    async fn act<F>(&self, action: F) -> Outcome
    where
        F: for<'s> FnOnce(
            &'s mut Session,
            &'s Browser,
        )
            -> futures_util::future::BoxFuture<'s, Result<Answer, BrowserError>>,
    {
        let mut guard = self.session.lock().await;
        if guard.is_none() {
            match self.start().await {
                Ok(session) => *guard = Some(session),
                Err(err) => return Outcome::error(err.to_string()),
            }
        }
        let Some(session) = guard.as_mut() else {
            return Outcome::error(BrowserError::NoPage.to_string());
        };
        let limit = self.config.action_timeout();
        let result = match tokio::time::timeout(limit, action(session, self)).await {
            Ok(result) => result,
            Err(_) => {
                *guard = None;
                return Outcome::error(BrowserError::Hung(limit.as_secs()).to_string());
            }
        };
        let Some(session) = guard.as_mut() else {
            return Outcome::error(BrowserError::NoPage.to_string());
        };
        session.last_used = Instant::now();
        let refused: Vec<String> = std::mem::take(
            &mut *session
                .refused
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        match result {
            Ok(answer) => answer.outcome(&refused),
            Err(BrowserError::Cdp(CdpError::Closed(why))) => {
                *guard = None;
                Outcome::error(format!(
                    "the browser has closed{why}; the next action starts it again"
                ))
            }
            Err(err) => {
                let mut said = err.to_string();
                for refusal in &refused {
                    said.push_str(&format!("\nrefused: {refusal}"));
                }
                Outcome::error(said)
            }
        }
    }

    /// Starts Chromium on the profile and opens its tab.
    async fn start(&self) -> Result<Session, BrowserError> {
        private_folder(&self.profile)?;
        let refused = Arc::new(Mutex::new(Vec::new()));
        let launch = Launch {
            program: &self.config.binary,
            profile: &self.profile,
            page_memory_mb: self.config.page_memory_mb,
            no_sandbox: self.config.no_sandbox,
        };
        let start = Chromium::start(
            launch,
            &self.processes,
            self.addresses.clone(),
            refused.clone(),
        );
        let limit = self.config.action_timeout();
        let chromium = tokio::time::timeout(limit, async {
            let chromium = start.await?;
            open_tab(&chromium.cdp).await.map(|tab| (chromium, tab))
        })
        .await
        .map_err(|_| {
            BrowserError::Cdp(CdpError::Start {
                program: self.config.binary.clone(),
                why: format!("it did not answer within {} s", limit.as_secs()),
            })
        })?;
        let (chromium, (page, frame)) = chromium?;
        tracing::info!(pid = chromium.pid, "the browser started");
        static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let generation = GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tokio::spawn(close_when_idle(
            self.me.clone(),
            generation,
            self.config.idle(),
        ));
        Ok(Session {
            chromium,
            page,
            frame,
            elements: Vec::new(),
            refused,
            last_used: Instant::now(),
            generation,
        })
    }

    /// Opens `url` in the tab and answers with its outline.
    pub async fn open(&self, url: String) -> Outcome {
        if let Err(why) = self.addresses.check(&url).await {
            return Outcome::error(why);
        }
        self.act(move |session, browser| {
            Box::pin(async move {
                let cdp = session.chromium.cdp.clone();
                let mut events = cdp.events();
                let navigated = cdp
                    .send(Some(&session.page), "Page.navigate", json!({ "url": url }))
                    .await?;
                if let Some(error) = navigated.get("errorText").and_then(Value::as_str) {
                    let refused = !session
                        .refused
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .is_empty();
                    return Err(if refused {
                        BrowserError::Refused(format!("{url} was not loaded"))
                    } else {
                        BrowserError::Navigation(format!("{url}: {error}"))
                    });
                }
                let mut note = String::new();
                if let Some(loader) = navigated.get("loaderId").and_then(Value::as_str) {
                    let within = browser.config.action_timeout().mul_f64(0.8);
                    if !session.loaded(&mut events, within, Some(loader)).await {
                        let _ = cdp
                            .send(Some(&session.page), "Page.stopLoading", json!({}))
                            .await;
                        note = format!(
                            "[the page was still loading after {} s and was stopped]\n",
                            within.as_secs()
                        );
                    }
                }
                let mut answer = session.snapshot().await?;
                answer.text.insert_str(0, &note);
                Ok(answer)
            })
        })
        .await
    }

    /// The page as an outline (`snapshot`) or as its text.
    pub async fn read(&self, as_text: bool) -> Outcome {
        self.act(move |session, _| {
            Box::pin(async move {
                if as_text {
                    session.text().await
                } else {
                    session.snapshot().await
                }
            })
        })
        .await
    }

    /// Clicks element `number` of the last outline.
    pub async fn click(&self, number: u64) -> Outcome {
        self.act(move |session, browser| {
            Box::pin(async move {
                let element = session.element(number)?;
                let mut events = session.chromium.cdp.events();
                let (x, y) = session.middle(number, element.backend_node).await?;
                session.press(x, y).await?;
                let within = browser.config.action_timeout().mul_f64(0.8);
                session.settle(&mut events, within).await?;
                let mut answer = session.about().await?;
                answer.text.insert_str(
                    0,
                    &format!("Clicked [{number}] {} {:?}.\n", element.role, element.name),
                );
                Ok(answer)
            })
        })
        .await
    }

    /// Types `text` into element `number`, replacing what it held; Enter
    /// after it when `submit`.
    pub async fn type_text(&self, number: u64, text: String, submit: bool) -> Outcome {
        self.act(move |session, browser| {
            Box::pin(async move {
                let element = session.element(number)?;
                let mut events = session.chromium.cdp.events();
                session.focus(number, element.backend_node).await?;
                let cdp = &session.chromium.cdp;
                cdp.send(Some(&session.page), "Input.insertText", json!({ "text": text }))
                    .await?;
                if submit {
                    for kind in ["keyDown", "keyUp"] {
                        let mut key = json!({ "type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13 });
                        if kind == "keyDown" {
                            key["text"] = json!("\r");
                        }
                        cdp.send(Some(&session.page), "Input.dispatchKeyEvent", key).await?;
                    }
                }
                let within = browser.config.action_timeout().mul_f64(0.8);
                session.settle(&mut events, within).await?;
                let mut answer = session.about().await?;
                let enter = if submit { " and pressed Enter" } else { "" };
                answer.text.insert_str(
                    0,
                    &format!(
                        "Typed {} characters into [{number}] {} {:?}{enter}.\n",
                        text.chars().count(),
                        element.role,
                        element.name
                    ),
                );
                Ok(answer)
            })
        })
        .await
    }

    /// Scrolls the page by most of a screen, down or up.
    pub async fn scroll(&self, down: bool) -> Outcome {
        self.act(move |session, _| {
            Box::pin(async move {
                let (width, height) = VIEWPORT;
                let delta = if down { height as f64 * 0.8 } else { -(height as f64) * 0.8 };
                let wheel = json!({
                    "type": "mouseWheel", "x": width / 2, "y": height / 2, "deltaX": 0, "deltaY": delta
                });
                let cdp = &session.chromium.cdp;
                cdp.send(Some(&session.page), "Input.dispatchMouseEvent", wheel).await?;
                let place = session
                    .evaluate("`scrolled to ${Math.round(scrollY)} of ${Math.max(0, document.documentElement.scrollHeight - innerHeight)} pixels`")
                    .await?;
                let mut answer = session.snapshot().await?;
                answer.text.insert_str(0, &format!("{}\n", place.as_str().unwrap_or("scrolled")));
                Ok(answer)
            })
        })
        .await
    }

    /// A screenshot of what the tab shows, for the model to see.
    pub async fn screenshot(&self) -> Outcome {
        let Some(store) = self.images.clone() else {
            return Outcome::error("this agent has no image store, so it cannot see screenshots");
        };
        self.act(move |session, _| {
            Box::pin(async move {
                let mut answer = session.about().await?;
                let cdp = &session.chromium.cdp;
                let mut bytes = Vec::new();
                for quality in [80, 50, 25] {
                    let shot = cdp
                        .send(
                            Some(&session.page),
                            "Page.captureScreenshot",
                            json!({ "format": "jpeg", "quality": quality, "captureBeyondViewport": false }),
                        )
                        .await?;
                    let data = shot.get("data").and_then(Value::as_str).unwrap_or_default();
                    bytes = hearth_protocol::image::decode("image/jpeg", data)
                        .map_err(|err| BrowserError::Screenshot(err.to_string()))?;
                    if bytes.len() <= MAX_SCREENSHOT_BYTES {
                        break;
                    }
                }
                if bytes.len() > MAX_SCREENSHOT_BYTES {
                    return Err(BrowserError::Screenshot(format!(
                        "{} bytes even at the lowest quality",
                        bytes.len()
                    )));
                }
                let name = Some(format!("screenshot of {}", crate::provenance::bounded(&answer.url)));
                let stored = store
                    .put("image/jpeg", bytes, name)
                    .await
                    .map_err(|err| BrowserError::Screenshot(err.to_string()))?;
                answer.text.push_str(&format!(
                    "[screenshot {} ({}×{}), shown to you after this result]\n",
                    stored.sha256, VIEWPORT.0, VIEWPORT.1
                ));
                answer.images.push(stored);
                Ok(answer)
            })
        })
        .await
    }
}

/// What an action says: about the page at `url`, so quoted as its words.
struct Answer {
    url: String,
    text: String,
    images: Vec<hearth_protocol::ImageRef>,
}

impl Answer {
    /// The outcome: the page's words quoted, the refusals since the last
    /// answer said (hearth's words, outside the quotation).
    fn outcome(self, refused: &[String]) -> Outcome {
        let mut output = super::web::outside_text(&self.url, &self.text);
        for refusal in refused {
            output.push_str(&format!(
                "\n[hearth refused a request of the page: {refusal}]"
            ));
        }
        Outcome {
            recalled: self.images,
            provenance: Provenance::Web { url: self.url },
            ..Outcome::ok(output)
        }
    }
}

impl Session {
    /// Evaluates `expression` in the page; its value.
    async fn evaluate(&self, expression: &str) -> Result<Value, BrowserError> {
        let result = self
            .chromium
            .cdp
            .send(
                Some(&self.page),
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true }),
            )
            .await?;
        Ok(result["result"]["value"].clone())
    }

    /// The page's address and title, as the head of an answer.
    async fn about(&self) -> Result<Answer, BrowserError> {
        let head = self
            .evaluate("JSON.stringify([location.href, document.title])")
            .await?;
        let (url, title) = head
            .as_str()
            .and_then(|text| serde_json::from_str::<(String, String)>(text).ok())
            .unwrap_or_default();
        let text = format!("URL: {url}\nTitle: {title}\n");
        Ok(Answer {
            url,
            text,
            images: Vec::new(),
        })
    }

    /// The page as an outline with numbered elements (kept for later calls).
    async fn snapshot(&mut self) -> Result<Answer, BrowserError> {
        let mut answer = self.about().await?;
        let tree = self
            .chromium
            .cdp
            .send(Some(&self.page), "Accessibility.getFullAXTree", json!({}))
            .await?;
        let nodes = tree
            .get("nodes")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let snapshot = snapshot::outline(nodes);
        self.elements = snapshot.elements;
        answer.text.push('\n');
        answer.text.push_str(&snapshot.outline);
        Ok(answer)
    }

    /// The page's text as it shows it.
    async fn text(&self) -> Result<Answer, BrowserError> {
        let mut answer = self.about().await?;
        let text = self
            .evaluate("document.body ? document.body.innerText : ''")
            .await?;
        let text = text.as_str().unwrap_or_default();
        answer.text.push('\n');
        match text.char_indices().nth(MAX_TEXT_CHARS) {
            Some((at, _)) => {
                answer.text.push_str(&text[..at]);
                answer.text.push_str(&format!(
                    "\n[the text is cut at {MAX_TEXT_CHARS} characters]"
                ));
            }
            None => answer.text.push_str(text),
        }
        Ok(answer)
    }

    fn element(&self, number: u64) -> Result<Element, BrowserError> {
        let index = usize::try_from(number).ok().and_then(|n| n.checked_sub(1));
        index
            .and_then(|index| self.elements.get(index))
            .cloned()
            .ok_or(BrowserError::NoElement(number))
    }

    /// The middle of element `number` in the viewport, scrolled into view.
    async fn middle(&self, number: u64, node: i64) -> Result<(f64, f64), BrowserError> {
        let cdp = &self.chromium.cdp;
        let gone = |_| BrowserError::Gone(number);
        let node = json!({ "backendNodeId": node });
        cdp.send(Some(&self.page), "DOM.scrollIntoViewIfNeeded", node.clone())
            .await
            .map_err(gone)?;
        let model = cdp
            .send(Some(&self.page), "DOM.getBoxModel", node)
            .await
            .map_err(gone)?;
        let quad: Vec<f64> = model["model"]["border"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_f64)
            .collect();
        if quad.len() != 8 {
            return Err(BrowserError::Gone(number));
        }
        let x = (quad[0] + quad[2] + quad[4] + quad[6]) / 4.0;
        let y = (quad[1] + quad[3] + quad[5] + quad[7]) / 4.0;
        Ok((x, y))
    }

    /// A left click at (x, y), as a mouse makes it.
    async fn press(&self, x: f64, y: f64) -> Result<(), BrowserError> {
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            let event = json!({ "type": kind, "x": x, "y": y, "button": "left", "clickCount": 1 });
            self.chromium
                .cdp
                .send(Some(&self.page), "Input.dispatchMouseEvent", event)
                .await?;
        }
        Ok(())
    }

    /// Focuses element `number` with what it holds selected, so typing
    /// replaces it.
    async fn focus(&self, number: u64, node: i64) -> Result<(), BrowserError> {
        let cdp = &self.chromium.cdp;
        let gone = |_| BrowserError::Gone(number);
        let resolved = cdp
            .send(
                Some(&self.page),
                "DOM.resolveNode",
                json!({ "backendNodeId": node }),
            )
            .await
            .map_err(gone)?;
        let object = resolved["object"]["objectId"].clone();
        let select = "function() { this.scrollIntoView({block: 'center'}); this.focus(); \
            if (typeof this.select === 'function') this.select(); \
            else if (this.isContentEditable) document.execCommand('selectAll'); }";
        cdp.send(
            Some(&self.page),
            "Runtime.callFunctionOn",
            json!({ "functionDeclaration": select, "objectId": object }),
        )
        .await
        .map_err(gone)?;
        Ok(())
    }

    /// After an input: when it started loading a new page in the tab, waits
    /// for it (at most `within`, then stops it).
    async fn settle(
        &self,
        events: &mut tokio::sync::broadcast::Receiver<chromium::Event>,
        within: Duration,
    ) -> Result<(), BrowserError> {
        // A round trip through the page: what the input started has begun.
        self.evaluate("1").await?;
        let mut navigating = false;
        while let Ok(event) = events.try_recv() {
            navigating |= self.is_own(&event)
                && matches!(
                    event.method.as_str(),
                    "Page.frameStartedLoading" | "Page.frameRequestedNavigation"
                )
                && event.params["frameId"].as_str() == Some(&self.frame);
        }
        if navigating && !self.loaded(events, within, None).await {
            let _ = self
                .chromium
                .cdp
                .send(Some(&self.page), "Page.stopLoading", json!({}))
                .await;
        }
        Ok(())
    }

    fn is_own(&self, event: &chromium::Event) -> bool {
        event.session.as_deref() == Some(self.page.as_str())
    }

    /// Waits for the tab's page to finish loading: the load of `loader`
    /// (a navigation's), or with none, the main frame's next stop; false
    /// after `within`.
    async fn loaded(
        &self,
        events: &mut tokio::sync::broadcast::Receiver<chromium::Event>,
        within: Duration,
        loader: Option<&str>,
    ) -> bool {
        // Events of the navigation `loader` names have come: a stop of the
        // main frame from then on is its end (the load event, or a page
        // that failed or was sent elsewhere). Earlier stops are a former
        // page's.
        let mut begun = loader.is_none();
        let mut ends = |event: &chromium::Event| {
            let params = &event.params;
            let names = |loader: &str| {
                params["loaderId"].as_str() == Some(loader)
                    || params["frame"]["loaderId"].as_str() == Some(loader)
            };
            if let Some(loader) = loader {
                if names(loader)
                    && event.method == "Page.lifecycleEvent"
                    && params["name"] == "load"
                {
                    return true;
                }
                begun |= names(loader);
            }
            begun
                && event.method == "Page.frameStoppedLoading"
                && params["frameId"].as_str() == Some(&self.frame)
        };
        let wait = async {
            loop {
                match events.recv().await {
                    Ok(event) if self.is_own(&event) && ends(&event) => return true,
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return false,
                }
            }
        };
        tokio::time::timeout(within, wait).await.unwrap_or(false)
    }
}

/// Opens the tab: a target of its own with its session, downloads denied,
/// the viewport fixed, and every request of the browser's paused for the
/// address rules. Returns the tab's session and its main frame's id.
async fn open_tab(cdp: &Cdp) -> Result<(String, String), BrowserError> {
    cdp.send(
        None,
        "Fetch.enable",
        json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] }),
    )
    .await?;
    cdp.send(
        None,
        "Browser.setDownloadBehavior",
        json!({ "behavior": "deny" }),
    )
    .await?;
    let created = cdp
        .send(None, "Target.createTarget", json!({ "url": "about:blank" }))
        .await?;
    let target = created["targetId"].as_str().unwrap_or_default().to_string();
    let attached = cdp
        .send(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        )
        .await?;
    let page = attached["sessionId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for domain in ["Page.enable", "DOM.enable", "Accessibility.enable"] {
        cdp.send(Some(&page), domain, json!({})).await?;
    }
    cdp.send(
        Some(&page),
        "Page.setLifecycleEventsEnabled",
        json!({ "enabled": true }),
    )
    .await?;
    // Requests of the tab go through the browser's interception too; the
    // tab's own makes sure none starts before it is decided.
    cdp.send(
        Some(&page),
        "Fetch.enable",
        json!({ "patterns": [{ "urlPattern": "*", "requestStage": "Request" }] }),
    )
    .await?;
    let (width, height) = VIEWPORT;
    cdp.send(
        Some(&page),
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
    )
    .await?;
    Ok((page, target))
}

/// Closes the browser of `generation` once it has been unused for `idle`;
/// ends when that browser is gone or replaced.
async fn close_when_idle(browser: Weak<Browser>, generation: u64, idle: Duration) {
    let mut wait = idle;
    loop {
        tokio::time::sleep(wait).await;
        let Some(browser) = browser.upgrade() else {
            return;
        };
        // An action under way is use: look again an idle time later.
        let Ok(mut guard) = browser.session.try_lock() else {
            wait = idle;
            continue;
        };
        let Some(session) = guard.as_ref().filter(|s| s.generation == generation) else {
            return;
        };
        let unused = session.last_used.elapsed();
        if unused >= idle {
            tracing::info!(
                "the browser was unused for {} s; closing it",
                unused.as_secs()
            );
            *guard = None;
            return;
        }
        wait = idle - unused;
    }
}

/// Makes `path` (and its parents) with the profile private to the daemon's
/// user: 0700.
fn private_folder(path: &std::path::Path) -> Result<(), BrowserError> {
    use std::os::unix::fs::PermissionsExt;
    let failed = |err: std::io::Error| BrowserError::Profile {
        path: path.display().to_string(),
        why: err.to_string(),
    };
    std::fs::create_dir_all(path).map_err(failed)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).map_err(failed)?;
    if let Some(parent) = path.parent() {
        std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o700)).map_err(failed)?;
    }
    Ok(())
}
