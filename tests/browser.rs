//! End-to-end in a real browser: a headless Chromium (Debian's `chromium`)
//! driven over the DevTools protocol (`tests/support/cdp.rs`) against a
//! real `hearthd` with a fake model. The page is used as a person would:
//! log in with the link `hearth web` prints, send, watch the reply stream,
//! stop a turn, allow a tool call, attach an image, follow a restart, find
//! an old message with the conversation's search box and open it in
//! context; and the refusals hold in the browser: no cookie, a wrong or used code, a
//! WebSocket opened by another site's page, the cookie that Chromium sends to
//! another local server replayed by that server, a message that carries HTML.
//!
//! Screenshots of the conversation and the costs page at 360 px wide are
//! written to `target/web-artifacts/` for review.
//!
//! The other pages (memory, activity, schedules, agents, bridges) are in
//! `tests/browser_pages.rs`. One Chromium serves every test of this file, each test over its own
//! DevTools connection and in browser contexts of its own.
//!
//! Without Chromium installed these tests say so and pass; CI installs it.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{ClientFrame, Kind};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Finish, Reply, Usage};
use hearth_tests::harness::TestHome;
use hearth_tests::web::{
    browser, free_port, login_url, png, request, send, shown, upgrade_headers, web_home, LIVE,
};
use std::path::PathBuf;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn artifact(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/web-artifacts")
        .join(name)
}

fn usage(input: u64, cached: u64, output: u64) -> Usage {
    Usage {
        input,
        cached_input: cached,
        cache_write: 0,
        output,
    }
}

#[tokio::test]
async fn the_page_logs_in_streams_approves_shows_images_and_follows_a_restart() {
    let Some(mut browser) = browser().await else {
        return;
    };
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let port = free_port();
    web_home(&home, &model, port);
    let mut daemon = home.start();

    // Log in with the printed link: the page opens, live, with an HttpOnly cookie.
    let url = login_url(&home).await;
    let page = browser.new_page().await;
    browser.navigate(&page, &url).await;
    browser
        .wait_for(
            &page,
            "location.pathname === '/' && document.querySelector('#state').className === 'live'",
        )
        .await;
    let cookies = browser.cookies(&page).await;
    let session = cookies
        .iter()
        .find(|c| c["name"] == "hearth_session")
        .expect("a session cookie");
    assert_eq!(session["httpOnly"], true, "{session}");
    assert_eq!(session["sameSite"], "Strict", "{session}");
    assert_eq!(browser.eval(&page, "document.cookie").await, "");
    // The session's key left the address bar for this origin's storage.
    assert_eq!(browser.eval(&page, "location.hash").await, "");
    assert_eq!(
        browser
            .eval(&page, "localStorage.getItem('hearth-key').length")
            .await,
        64
    );

    // A reply streams in as the model writes it; Stop ends the turn.
    model.push(Reply::hang("Thinking **out loud**"));
    send(&mut browser, &page, "hello from the phone").await;
    browser
        .wait_for(&page, &shown("user", "hello from the phone"))
        .await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#streaming strong')?.textContent === 'out loud'",
        )
        .await;
    browser.click(&page, "#interrupt").await;
    browser
        .wait_for(&page, "!document.querySelector('#streaming') && document.querySelector('#interrupt').disabled")
        .await;

    // A whole reply, rendered as Markdown, with its source and time.
    model.push(Reply::with_usage(
        Reply::text("Here is **the answer**:\n\n- one\n- two"),
        usage(12_000, 9_000, 300),
    ));
    send(&mut browser, &page, "and now?").await;
    browser
        .wait_for(&page, "[...document.querySelectorAll('.kind-reply .md strong')].some(s => s.textContent === 'the answer')")
        .await;
    assert_eq!(
        browser
            .eval(&page, "[...document.querySelectorAll('.kind-reply .md li')].map(li => li.textContent).join(',')")
            .await,
        "one,two"
    );
    assert_eq!(
        browser
            .eval(
                &page,
                "[...document.querySelectorAll('.kind-user header .meta')][0].textContent"
            )
            .await,
        "web"
    );

    // A reply cut at the output limit says so, in the words every client uses.
    model.push(Reply::ended("Half an ans", Finish::Length));
    send(&mut browser, &page, "a long one").await;
    browser
        .wait_for(&page, "[...document.querySelectorAll('.kind-reply .ending')].some(p => p.textContent.includes('raise max_tokens in [model]'))")
        .await;

    // A tool call that waits for approval: Allow on the page runs it.
    model.push(Reply::tool_call(
        "write_file",
        r#"{"path":"note.txt","content":"from the web"}"#,
    ));
    model.push(Reply::with_usage(
        Reply::text("Written."),
        usage(15_000, 12_000, 40),
    ));
    send(&mut browser, &page, "write a note").await;
    browser.click(&page, ".approval .allow").await;
    browser.wait_for(&page, &shown("reply", "Written.")).await;
    browser
        .wait_for(&page, "!document.querySelector('.approval')")
        .await;
    let note = home.path().join("agents/hearth/work/note.txt");
    assert_eq!(std::fs::read_to_string(&note).unwrap(), "from the web");

    // An image chosen in the file picker is stored, sent and shown inline.
    let image = home.path().join("tiles.png");
    std::fs::write(&image, png(96, 64)).unwrap();
    browser.set_files(&page, "#file", &[image]).await;
    browser
        .wait_for(&page, "document.querySelector('#attachments img')")
        .await;
    model.push(Reply::text("A tiled picture."));
    send(&mut browser, &page, "what is this?").await;
    browser
        .wait_for(&page, "[...document.querySelectorAll('.kind-user .images img')].some(i => i.src.startsWith('blob:') && i.complete && i.naturalWidth === 96)")
        .await;
    browser
        .wait_for(&page, &shown("reply", "A tiled picture."))
        .await;
    assert!(model
        .requests()
        .last()
        .unwrap()
        .body
        .to_string()
        .contains("image/png"));

    // Pasted into the message box and dropped on the conversation, too.
    let bytes = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(png(48, 48))
    };
    let paste_and_drop = format!(
        "const bytes = Uint8Array.from(atob('{bytes}'), c => c.charCodeAt(0));
         const file = () => {{ const t = new DataTransfer(); t.items.add(new File([bytes], 'small.png', {{ type: 'image/png' }})); return t; }};
         document.querySelector('#input').dispatchEvent(new ClipboardEvent('paste', {{ clipboardData: file(), bubbles: true, cancelable: true }}));
         document.querySelector('#chat').dispatchEvent(new DragEvent('drop', {{ dataTransfer: file(), bubbles: true, cancelable: true }}));
         true"
    );
    browser.eval(&page, &paste_and_drop).await;
    browser
        .wait_for(
            &page,
            "document.querySelectorAll('#attachments img').length === 2",
        )
        .await;
    model.push(Reply::text("Two more."));
    send(&mut browser, &page, "and these").await;
    browser
        .wait_for(&page, "[...document.querySelectorAll('.kind-user')].some(m => m.textContent.includes('and these') && m.querySelectorAll('.images img').length === 2)")
        .await;
    browser.wait_for(&page, &shown("reply", "Two more.")).await;

    // Messages that carry HTML stay text: nothing runs, no element appears.
    let mut phone = home.connect("telegram", None).await;
    model.push(Reply::text(
        "Echo: <img src=x onerror=\"window.__pwned=2\"> and [a link](javascript:window.__pwned=3)",
    ));
    phone
        .submit(
            "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=1\">",
            "telegram",
            None,
        )
        .await;
    browser
        .wait_for(&page, &shown("user", "<script>window.__pwned=1</script>"))
        .await;
    browser
        .wait_for(&page, &shown("reply", "Echo: <img src=x"))
        .await;
    let injected = browser
        .eval(&page, "document.querySelectorAll('#messages script, #messages .md img, #messages [onerror], #messages a[href^=\"javascript\"]').length + (window.__pwned ?? 0)")
        .await;
    assert_eq!(injected, 0, "markup from a message became part of the page");

    browser
        .eval(
            &page,
            "window.scrollTo(0, 0); document.querySelector('main').scrollTop = 1e9; true",
        )
        .await;
    browser
        .screenshot(&page, &artifact("conversation-360.png"))
        .await;

    // The costs page: a chart of spend per day and agent, the budget's use.
    browser.click(&page, "nav [data-page=costs]").await;
    browser
        .wait_for(
            &page,
            "document.querySelectorAll('#costs svg.chart rect.bar').length > 0",
        )
        .await;
    let summary = browser
        .eval(&page, "document.querySelector('#costs').textContent")
        .await;
    let summary = summary.as_str().unwrap().to_string();
    assert!(summary.contains("Spend per day"), "{summary}");
    assert!(summary.contains("of $2.00"), "the budget's use: {summary}");
    assert!(summary.contains("cached"), "{summary}");
    browser.screenshot(&page, &artifact("costs-360.png")).await;
    browser.click(&page, "nav [data-page=chat]").await;

    // hearthd restarts: the page reconnects and shows what comes next, once.
    assert!(daemon.stop(), "hearthd stops cleanly");
    browser
        .wait_for(
            &page,
            "document.querySelector('#state').className !== 'live'",
        )
        .await;
    daemon = home.start();
    browser.wait_for(&page, LIVE).await;
    let mut phone = home.connect("telegram", None).await;
    model.push(Reply::text("Still here after the restart."));
    let (asked, _) = phone.submit("are you there?", "telegram", None).await;
    phone.reply_to(asked).await;
    browser
        .wait_for(&page, &shown("reply", "Still here after the restart."))
        .await;
    let ids = browser
        .eval(
            &page,
            "[...document.querySelectorAll('#messages [data-id]')].map(m => Number(m.dataset.id))",
        )
        .await;
    let ids: Vec<u64> = serde_json::from_value(ids).unwrap();
    let logged: Vec<u64> = home.history().await.iter().map(|m| m.id).collect();
    assert_eq!(ids, logged, "the page shows every message once, in order");
    drop(daemon);
}

/// Another local user's server on another port: it answers every request
/// with a page and hands over the `Cookie` header each one carried.
async fn cookie_thief() -> (u16, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (cookies, stolen) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let mut buffer = [0u8; 8192];
            let read = stream.read(&mut buffer).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buffer[..read]).to_string();
            let cookie = head
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("cookie")
                        .then(|| value.trim().to_string())
                })
                .unwrap_or_default();
            if head.starts_with("GET / ") {
                let _ = cookies.send(cookie);
            }
            let body = "<!doctype html><title>thanks</title>";
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    (port, stolen)
}

/// Serves one page with an inline script on another port: another site's
/// page, which tries the daemon's WebSocket.
async fn evil_site(target_port: u16) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let body = format!(
        "<!doctype html><title>waiting</title><script>
         const socket = new WebSocket('ws://127.0.0.1:{target_port}/ws');
         let opened = false;
         socket.onopen = () => {{ opened = true; socket.send(JSON.stringify({{type: 'hello', client: 'evil', version: 1}})); }};
         socket.onmessage = (m) => {{ document.title = 'read: ' + m.data.slice(0, 40); }};
         socket.onclose = () => {{ if (!opened) document.title = 'refused'; }};
         </script>"
    );
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer).await;
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
    });
    port
}

#[tokio::test]
async fn the_page_refuses_strangers_pages_back_to_the_first_message_and_finds_an_old_one() {
    let Some(mut browser) = browser().await else {
        return;
    };
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let port = free_port();
    web_home(&home, &model, port);
    let _daemon = home.start();
    let base = format!("http://127.0.0.1:{port}");
    let body = "document.body ? document.body.innerText : ''";

    // No cookie: the page is not served, so none of its script runs.
    let stranger = browser.new_page().await;
    browser.navigate(&stranger, &format!("{base}/")).await;
    let text = browser.eval(&stranger, body).await;
    assert!(text.as_str().unwrap().contains("Log in first"), "{text}");
    assert_eq!(
        browser.eval(&stranger, "typeof window.hearth").await,
        "undefined"
    );

    // A wrong code, then a used one, log no one in.
    browser
        .navigate(&stranger, &format!("{base}/login?code=0123456789abcdef"))
        .await;
    assert!(browser
        .eval(&stranger, body)
        .await
        .as_str()
        .unwrap()
        .contains("does not work"));
    let url = login_url(&home).await;
    let owner = browser.new_page().await;
    browser.navigate(&owner, &url).await;
    browser.wait_for(&owner, LIVE).await;
    browser.navigate(&stranger, &url).await;
    assert!(browser
        .eval(&stranger, body)
        .await
        .as_str()
        .unwrap()
        .contains("does not work"));
    browser.navigate(&stranger, &format!("{base}/")).await;
    assert!(browser
        .eval(&stranger, body)
        .await
        .as_str()
        .unwrap()
        .contains("Log in first"));

    // Another site's page in the owner's browser: the browser sends the
    // cookie to the loopback port, and the Origin check refuses it.
    let evil = evil_site(port).await;
    let beside = browser.page_beside(&owner).await;
    browser
        .navigate(&beside, &format!("http://127.0.0.1:{evil}/"))
        .await;
    let title = browser
        .wait_for(&beside, "document.title !== 'waiting' && document.title")
        .await;
    assert_eq!(title, "refused");

    // Another local user's server on another port, which the owner visits:
    // Chromium sends it the session cookie (cookies know no ports), but not
    // the key, and the cookie replayed to hearthd opens no WebSocket.
    let (thief, mut stolen) = cookie_thief().await;
    browser
        .navigate(&beside, &format!("http://127.0.0.1:{thief}/"))
        .await;
    let cookie = tokio::time::timeout(hearth_tests::harness::DEADLINE, stolen.recv())
        .await
        .expect("the thief was visited")
        .expect("a request");
    assert!(
        cookie.contains("hearth_session="),
        "Chromium kept the cookie from the other port: {cookie:?}"
    );
    assert_eq!(
        browser
            .eval(&beside, "localStorage.getItem('hearth-key')")
            .await,
        serde_json::Value::Null
    );
    let replayed = request(port, "/ws", &upgrade_headers(&base, &cookie)).await;
    assert_eq!(
        replayed.status, 401,
        "the replayed cookie opened the socket: {replayed:?}"
    );
    // The owner's page is live still.
    browser.wait_for(&owner, LIVE).await;

    // The page speaks the socket's protocol but cannot mint logins.
    let refused = browser
        .eval(&owner, "window.hearth.connection.request({type: 'web_login'}).then(() => 'answered', e => e.message)")
        .await;
    assert!(
        refused.as_str().unwrap().contains("Unix socket"),
        "{refused}"
    );

    // An installable app whose service worker keeps only the page's files.
    let manifest = browser
        .call(
            Some(&owner.session),
            "Page.getAppManifest",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(manifest["errors"], serde_json::json!([]), "{manifest}");
    assert!(
        manifest["data"].as_str().unwrap_or("").contains("icon.svg"),
        "{manifest}"
    );
    browser
        .eval(
            &owner,
            "navigator.serviceWorker.ready.then(() => fetch('/app.js')).then(() => true)",
        )
        .await;
    let keys = "caches.open('hearth-page-1').then(c => c.keys()).then(keys => keys.map(k => new URL(k.url).pathname))";
    let deadline = std::time::Instant::now() + hearth_tests::harness::DEADLINE;
    let cached = loop {
        let cached = browser.eval(&owner, keys).await;
        if cached
            .as_array()
            .is_some_and(|paths| paths.iter().any(|p| p == "/app.js"))
        {
            break cached;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the page was never cached: {cached}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let cached: Vec<String> = serde_json::from_value(cached).unwrap();
    let page_files = [
        "/",
        "/app.css",
        "/app.js",
        "/connection.js",
        "/markdown.js",
        "/chat.js",
        "/pages.js",
        "/chart.js",
        "/manifest.webmanifest",
        "/icon.svg",
    ];
    assert!(
        cached
            .iter()
            .all(|path| page_files.contains(&path.as_str())),
        "the service worker cached {cached:?}"
    );

    // The Markdown renderer makes only a few plain elements, whatever it is fed.
    let payloads = [
        "<script>window.__pwned=1</script>",
        "<img src=x onerror=window.__pwned=1>",
        "[x](javascript:window.__pwned=1) [y](data:text/html,<script>1</script>) [z]( vbscript:1)",
        "![img](http://example.org/a.png)",
        "**<b onmouseover=1>bold</b>** _<i>it</i>_ `<code>`",
        "```\n<script>1</script>\n```",
        "> <iframe src=//evil></iframe>\n- <svg onload=1>\n1. <a href=javascript:1>a</a>",
        "# <style>*{}</style>heading",
        "[ok](https://example.org/?a=\"b\"onclick=1)",
    ];
    let check = format!(
        "import('/markdown.js').then(({{ renderMarkdown }}) => {{
           const allowed = new Set(['DIV','P','BR','CODE','PRE','STRONG','EM','A','UL','OL','LI','BLOCKQUOTE','H3','H4','H5','H6']);
           const bad = [];
           for (const text of {}) {{
             const root = renderMarkdown(text);
             for (const node of [root, ...root.querySelectorAll('*')]) {{
               if (!allowed.has(node.tagName)) bad.push(text + ' made ' + node.tagName);
               for (const attribute of node.attributes) {{
                 if (!['class', 'href', 'rel', 'target'].includes(attribute.name)) bad.push(text + ' set ' + attribute.name);
               }}
               if (node.tagName === 'A' && !/^(https?|mailto):/.test(node.href)) bad.push(text + ' linked ' + node.href);
             }}
           }}
           return bad.concat(window.__pwned ? ['ran'] : []);
         }})",
        serde_json::to_string(&payloads).unwrap()
    );
    assert_eq!(browser.eval(&owner, &check).await, serde_json::json!([]));

    // History pages back to the first message.
    let mut script = home.connect("script", None).await;
    for n in 0..70 {
        let frame = ClientFrame::Note {
            text: match n {
                5 => "note number 5, about the blue heron at the pond".to_string(),
                _ => format!("note number {n}"),
            },
            source: "script".into(),
        };
        script.request(frame).await;
    }
    let notes = home
        .history()
        .await
        .iter()
        .filter(|m| m.kind == Kind::Note)
        .count();
    assert!(notes >= 70, "{notes} notes");
    browser.navigate(&owner, &format!("{base}/")).await;
    browser
        .wait_for(
            &owner,
            "document.querySelectorAll('#messages [data-id]').length === 50",
        )
        .await;
    browser.click(&owner, "#older").await;
    browser
        .wait_for(&owner, "document.querySelector('#messages [data-id]').dataset.id === '0' && !document.querySelector('#first').hidden")
        .await;
    let count = browser
        .eval(
            &owner,
            "document.querySelectorAll('#messages [data-id]').length",
        )
        .await;
    assert_eq!(count.as_u64(), Some(home.history().await.len() as u64));

    // Search finds an old message and opens it in its context: the window
    // around it, the hit marked and in sight, the messages before it above.
    let heron = home
        .history()
        .await
        .into_iter()
        .find(|m| m.text.contains("blue heron"))
        .unwrap()
        .id;
    browser.navigate(&owner, &format!("{base}/")).await;
    browser
        .wait_for(&owner, &format!("document.querySelectorAll('#messages [data-id]').length === 50 && !document.querySelector('#messages [data-id=\"{heron}\"]')"))
        .await;
    browser.type_and_enter(&owner, "#query", "heron").await;
    let hit = format!("#results button[data-id=\"{heron}\"]");
    let marked = browser
        .wait_for(
            &owner,
            &format!("document.querySelector('{hit} mark')?.textContent"),
        )
        .await;
    assert_eq!(marked, "heron");
    browser.click(&owner, &hit).await;
    let found = format!("#messages .found[data-id=\"{heron}\"]");
    browser
        .wait_for(&owner, &format!("(() => {{ const hit = document.querySelector('{found}'); if (!hit) return false;
            const box = hit.getBoundingClientRect(), view = document.querySelector('main').getBoundingClientRect();
            return box.top >= view.top && box.bottom <= view.bottom; }})()"))
        .await;
    let window = browser
        .eval(
            &owner,
            "[...document.querySelectorAll('#messages [data-id]')].map(m => Number(m.dataset.id))",
        )
        .await;
    let window: Vec<u64> = serde_json::from_value(window).unwrap();
    assert!(
        window.contains(&(heron - 1)) && window.contains(&(heron + 1)),
        "{window:?}"
    );
    assert_eq!(
        browser
            .eval(
                &owner,
                "document.querySelectorAll('#messages .found').length"
            )
            .await,
        1
    );
    browser.click(&owner, "#newer").await;
    browser
        .wait_for(&owner, "document.querySelector('#newer').hidden && !document.querySelector('#messages .found')")
        .await;
}
