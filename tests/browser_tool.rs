//! End-to-end: the browser the agent drives (`browser_*`), a real headless
//! Chromium started by a real `hearthd`, called by the fake model, on
//! pages these tests serve on 127.0.0.1 (named in `[tools.browser]
//! allow_private`, as an owner would name a local server). A page is read
//! as numbered elements and as text, a button clicked and a field typed
//! into change it, a screenshot reaches the model as an image; loopback is
//! refused by default and a page that sends itself to a refused address is
//! stopped before the request leaves; in a turn the page tainted, clicking
//! and typing ask the owner first; Chromium is gone after the daemon stops,
//! after it is killed, and when it sits unused.
//!
//! Chromium is found as the other browser tests find it (`$CHROMIUM`, or
//! `chromium` on PATH). Without it these tests say so and pass, except under
//! CI (`$CI` set), where they fail: CI installs it (`.ci/run`).

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{Event, EventKind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::cdp::chromium;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{process_gone, read_request_head, until, Client, TestHome};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// The Chromium to drive, or `None` (said) when none is installed outside CI.
fn browser_binary() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "no Chromium found under CI: the browser tool's tests cannot run (.ci/run installs Debian's `chromium`)"
        );
        eprintln!("SKIPPED: no Chromium found (install Debian's `chromium`, or set CHROMIUM); the browser tool's tests did not run");
    }
    found
}

/// Serves `body` as HTML to every request on `127.0.0.1:0`; its address
/// (`http://127.0.0.1:PORT`) and how many requests it has had.
async fn serve(body: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                read_request_head(&mut stream).await;
                count.fetch_add(1, Ordering::SeqCst);
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    (base, served)
}

/// A home for `model` whose agent has the browser, with `browser` added to
/// `[tools.browser]` and `extra` after it.
fn home(model: &FakeModel, binary: &Path, browser: &str, extra: &str) -> TestHome {
    let home = TestHome::new(bins!());
    home.use_model_without_summaries(
        &model.base_url(),
        &format!(
            "\n[tools.browser]\nenabled = true\nbinary = {:?}\n{browser}\n\n{extra}",
            binary.display().to_string()
        ),
    );
    home
}

/// `[tools.browser] allow_private` naming the host and port of `base`.
fn allowing(base: &str) -> String {
    format!("allow_private = [{:?}]", base.trim_start_matches("http://"))
}

fn call(tool: &str, arguments: serde_json::Value) -> Reply {
    Reply::tool_call(tool, arguments.to_string())
}

/// The result of the last tool call sent in the model's request `index`.
fn last_result(model: &FakeModel, index: usize) -> String {
    let results = model.requests()[index].tool_results();
    results.last().cloned().unwrap_or_default()
}

/// The pids of the processes running Chromium on `home`'s browser profile.
fn chromium_processes(home: &TestHome) -> Vec<u32> {
    let profile = format!("--user-data-dir={}", home.path().join("browser").display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline);
        if cmdline.split('\0').any(|arg| arg.starts_with(&profile)) && !process_gone(pid) {
            found.push(pid);
        }
    }
    found
}

/// Waits for an unanswered approval of `tool`; answers it with `allow`.
async fn answer_approval(client: &mut Client, tool: &str, allow: bool) -> String {
    let wanted = |e: &Event| {
        e.kind == EventKind::Approval
            && e.approval
                .as_ref()
                .is_some_and(|a| a.allowed.is_none() && a.tool == tool)
    };
    let event = tokio::time::timeout(Duration::from_secs(90), client.wait_for(wanted))
        .await
        .unwrap_or_else(|_| panic!("`{tool}` never asked"));
    let id = event.approval.unwrap().id;
    // The request stays among the events seen; the next wait looks after it.
    client.events.clear();
    let answered = client.approve(&id, allow).await;
    assert!(
        !matches!(answered, ServerFrame::Error { .. }),
        "{answered:?}"
    );
    event.text.unwrap_or_default()
}

const COUNTER: &str = r#"<!doctype html><html><head><title>Counter</title></head><body>
<h1>Counter</h1>
<p id="out">Count: 0</p>
<button onclick="document.getElementById('out').textContent = 'Count: 1'">Add one</button>
<input id="name" aria-label="Your name" oninput="document.getElementById('echo').textContent = 'Hello, ' + this.value">
<p id="echo"></p>
</body></html>"#;

#[tokio::test]
async fn the_agent_reads_a_page_clicks_and_types_with_the_owners_yes_and_sees_a_screenshot() {
    let Some(binary) = browser_binary() else {
        return;
    };
    let model = FakeModel::start().await;
    let (base, _) = serve(COUNTER).await;
    let home = home(&model, &binary, &allowing(&base), "");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let url = format!("{base}/counter");
    model.push(call("browser_open", json!({ "url": url })));
    model.push(call("browser_click", json!({ "element": 1 })));
    model.push(call("browser_read", json!({ "as": "text" })));
    model.push(call("browser_click", json!({ "element": 1 })));
    model.push(call("browser_read", json!({ "as": "text" })));
    model.push(call(
        "browser_type",
        json!({ "element": 2, "text": "Ada", "submit": false }),
    ));
    model.push(call("browser_read", json!({})));
    model.push(call("browser_screenshot", json!({})));
    model.push(Reply::text("done"));
    let (id, _) = client.submit("count on that page", "terminal", None).await;

    // The page tainted the turn: the first click asks, is denied, and the
    // page is as it was.
    let asked = answer_approval(&mut client, "browser_click", false).await;
    assert!(asked.contains(&format!("after reading {url}")), "{asked}");
    answer_approval(&mut client, "browser_click", true).await;
    answer_approval(&mut client, "browser_type", true).await;
    client.reply_to(id).await;

    let opened = last_result(&model, 1);
    let quoted = format!("[outside text: the page {url} as read, not the owner's words");
    assert!(opened.starts_with(&quoted), "{opened}");
    assert!(opened.contains("Title: Counter"), "{opened}");
    assert!(opened.contains("heading 1 \"Counter\""), "{opened}");
    assert!(opened.contains("[1] button \"Add one\""), "{opened}");
    assert!(opened.contains("[2] textbox \"Your name\""), "{opened}");
    assert!(opened.ends_with("[end of outside text]"), "{opened}");

    let denied = last_result(&model, 2);
    assert!(denied.contains("denied"), "{denied}");
    let unchanged = last_result(&model, 3);
    assert!(unchanged.contains("Count: 0"), "{unchanged}");
    let clicked = last_result(&model, 4);
    assert!(
        clicked.contains("Clicked [1] button \"Add one\""),
        "{clicked}"
    );
    let changed = last_result(&model, 5);
    assert!(changed.contains("Count: 1"), "{changed}");
    let typed = last_result(&model, 6);
    assert!(typed.contains("Typed 3 characters into [2]"), "{typed}");
    let outline = last_result(&model, 7);
    assert!(outline.contains("Hello, Ada"), "{outline}");
    assert!(outline.contains("value=\"Ada\""), "{outline}");

    let shot = last_result(&model, 8);
    assert!(shot.contains("[screenshot "), "{shot}");
    let messages = model.requests()[8].body["messages"].to_string();
    assert!(
        messages.contains("data:image/jpeg;base64,"),
        "the screenshot goes to the model"
    );
    // The profile is the agent's, private to the daemon's user.
    use std::os::unix::fs::PermissionsExt;
    let profile = home.path().join("browser/hearth");
    let mode = std::fs::metadata(&profile).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "{}", profile.display());
}

#[tokio::test]
async fn loopback_is_refused_by_default_and_a_page_cannot_send_itself_there() {
    let Some(binary) = browser_binary() else {
        return;
    };
    let (secret, secret_hits) = serve("<p>the owner's router</p>").await;
    // The owner allowed this page's server, not the other one.
    let leaky: &'static str = Box::leak(
        format!(
            "<!doctype html><title>Leaky</title><p>moving on</p>\
             <script>location.replace({:?})</script>",
            format!("{secret}/admin")
        )
        .into_boxed_str(),
    );
    let (base, _) = serve(leaky).await;
    let model = FakeModel::start().await;
    let home = home(&model, &binary, &allowing(&base), "");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(call("browser_open", json!({ "url": format!("{secret}/") })));
    let port = secret.rsplit(':').next().unwrap();
    model.push(call(
        "browser_open",
        json!({ "url": format!("http://localhost:{port}/") }),
    ));
    model.push(call("browser_open", json!({ "url": "file:///etc/passwd" })));
    model.push(call("browser_open", json!({ "url": format!("{base}/") })));
    model.push(call("browser_read", json!({ "as": "text" })));
    model.push(Reply::text("stopped"));
    let (id, _) = client.submit("open these", "terminal", None).await;
    client.reply_to(id).await;

    let loopback = last_result(&model, 1);
    assert!(
        loopback.starts_with("refused: 127.0.0.1 is a loopback address"),
        "{loopback}"
    );
    let named = last_result(&model, 2);
    assert!(named.contains("is a loopback address"), "{named}");
    let file = last_result(&model, 3);
    assert!(file.contains("only http and https"), "{file}");
    let moved = format!("{}\n{}", last_result(&model, 4), last_result(&model, 5));
    assert!(
        moved.contains(&format!(
            "[hearth refused a request of the page: {secret}/admin"
        )),
        "{moved}"
    );
    assert_eq!(
        secret_hits.load(Ordering::SeqCst),
        0,
        "no request reached the refused server"
    );
}

#[tokio::test]
async fn chromium_is_gone_after_the_daemon_stops_after_it_is_killed_and_when_unused() {
    let Some(binary) = browser_binary() else {
        return;
    };
    let (base, _) = serve(COUNTER).await;
    let model = FakeModel::start().await;
    let home = home(&model, &binary, &allowing(&base), "");
    let open = || call("browser_open", json!({ "url": format!("{base}/") }));

    for ending in ["stop", "kill"] {
        let mut daemon = home.start();
        let mut client = home.connect("terminal", None).await;
        model.push(open());
        model.push(Reply::text("opened"));
        let (id, _) = client.submit("open it", "terminal", None).await;
        client.reply_to(id).await;
        let running = chromium_processes(&home);
        assert!(!running.is_empty(), "Chromium runs after a page was opened");
        if ending == "stop" {
            assert!(daemon.stop());
        } else {
            daemon.kill9();
        }
        until(
            &format!("Chromium gone after the daemon's {ending}"),
            || running.iter().all(|&pid| process_gone(pid)) && chromium_processes(&home).is_empty(),
        )
        .await;
    }

    // Unused for its idle time, it closes by itself; the daemon runs on.
    let idle = home.path().join("config.toml");
    let config = std::fs::read_to_string(&idle).unwrap();
    std::fs::write(
        &idle,
        config.replace("enabled = true", "enabled = true\nidle_secs = 1"),
    )
    .unwrap();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(open());
    model.push(Reply::text("opened"));
    let (id, _) = client.submit("open it", "terminal", None).await;
    client.reply_to(id).await;
    until("Chromium closed when unused", || {
        chromium_processes(&home).is_empty()
    })
    .await;
}

/// Accepts connections on `127.0.0.1:0` and counts them, answering none.
async fn counting_listener() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let count = Arc::new(AtomicUsize::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    (address, count)
}

#[tokio::test]
async fn what_a_page_loads_from_a_refused_address_never_leaves() {
    let Some(binary) = browser_binary() else {
        return;
    };
    let (refused, connections) = counting_listener().await;
    let page: &'static str = Box::leak(
        format!(
            "<!doctype html><title>Loader</title><p>loading</p>\
             <iframe src=\"http://{refused}/frame\"></iframe><img src=\"http://{refused}/pixel.png\">\
             <script>\
               fetch('http://{refused}/data').catch(() => {{}});\
               navigator.sendBeacon('http://{refused}/beacon', 'hello');\
               const socket = new WebSocket('ws://{refused}/socket');\
               socket.onerror = () => {{ document.querySelector('p').textContent = 'socket refused'; }};\
               socket.onopen = () => {{ document.querySelector('p').textContent = 'socket open'; }};\
             </script>"
        )
        .into_boxed_str(),
    );
    let (base, _) = serve(page).await;
    let model = FakeModel::start().await;
    let home = home(&model, &binary, &allowing(&base), "");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(call("browser_open", json!({ "url": format!("{base}/") })));
    model.push(call("browser_read", json!({ "as": "text" })));
    model.push(Reply::text("read"));
    let (id, _) = client.submit("open it", "terminal", None).await;
    client.reply_to(id).await;
    let opened = format!("{}\n{}", last_result(&model, 1), last_result(&model, 2));
    // The WebSocket, which the request rules never see, was refused by the
    // gate every connection goes through.
    assert!(opened.contains("socket refused"), "{opened}");
    for path in ["frame", "pixel.png", "data", "beacon"] {
        let refusal = format!("[hearth refused a request of the page: http://{refused}/{path}: 127.0.0.1 is a loopback address");
        assert!(opened.contains(&refusal), "{opened}");
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "nothing reached the refused address, not even a connection made ahead"
    );
}

#[tokio::test]
async fn a_page_that_never_answers_has_its_browser_closed_and_the_next_action_starts_afresh() {
    let Some(binary) = browser_binary() else {
        return;
    };
    let (base, _) =
        serve("<!doctype html><title>Busy</title><button onclick=\"for (;;) {}\">Spin</button>")
            .await;
    let model = FakeModel::start().await;
    let browser = format!("{}\naction_timeout_secs = 10", allowing(&base));
    let home = home(
        &model,
        &binary,
        &browser,
        "[approvals]\nuntrusted_ok = [\"browser_click\"]\n",
    );
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(call("browser_open", json!({ "url": format!("{base}/") })));
    model.push(call("browser_click", json!({ "element": 1 })));
    model.push(call(
        "browser_open",
        json!({ "url": format!("{base}/again") }),
    ));
    model.push(Reply::text("it spun"));
    let (id, _) = client.submit("press it", "terminal", None).await;
    client.reply_to(id).await;
    let spun = last_result(&model, 2);
    assert_eq!(
        spun,
        "the page did not answer within 10 s; the browser was closed (open the page again)"
    );
    let again = last_result(&model, 3);
    assert!(again.contains("Title: Busy"), "{again}");
    assert!(again.contains("[1] button \"Spin\""), "{again}");
}
