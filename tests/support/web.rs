//! What the web client's tests share: a home whose `[web]` listens on a
//! loopback port of its own, the login link `hearth web` prints, plain
//! HTTP/1.1 requests written by hand, so a test controls every header, a
//! small PNG to attach, and the browser tests' steps: the shared Chromium,
//! a message sent from the composer, a message looked for on the page.

use crate::cdp::{Browser, Page};
use crate::fake_model::FakeModel;
use crate::harness::{TestHome, DEADLINE};
use std::collections::BTreeMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A free loopback port: the daemon listens on the same one after a
/// restart, so an open page finds it again.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("its address").port()
}

/// A home for `model` whose web client listens on `port`, where
/// `write_file` waits for approval and the model has a price and a budget.
pub fn web_home(home: &TestHome, model: &FakeModel, port: u16) {
    web_home_with(home, model, port, "");
}

/// [`web_home`] with `extra` appended to its config.
pub fn web_home_with(home: &TestHome, model: &FakeModel, port: u16, extra: &str) {
    home.use_model_without_summaries(
        &model.base_url(),
        &format!(
            "\n[approvals]\ntools = [\"write_file\"]\ntimeout_secs = 300\n\n\
             [prices.\"fake-model\"]\ninput = 3.0\noutput = 15.0\ncached_input = 0.3\n\n\
             [budget]\ndaily_usd = 2.0\n\n[web]\nlisten = \"127.0.0.1:{port}\"\n\n{extra}"
        ),
    );
}

/// The login link `hearth web` prints.
pub async fn login_url(home: &TestHome) -> String {
    let output = home.hearth_async(&["web"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "hearth web: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .find(|line| line.starts_with("http://") || line.starts_with("https://"))
        .unwrap_or_else(|| panic!("no link in: {stdout}"))
        .to_string()
}

/// An HTTP answer: status, headers (names lowercase), body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub body: String,
}

/// Sends one request to `127.0.0.1:port` with exactly these headers (and
/// `Host`, `Connection: close`) and reads the whole answer. An upgrade that
/// succeeds is read up to the end of its head.
pub async fn request(port: u16, path: &str, headers: &[(&str, &str)]) -> Answer {
    request_from([127, 0, 0, 1].into(), port, path, headers).await
}

/// [`request`] from the loopback address `from` (any of 127.0.0.0/8): as
/// another machine would, for what counts per address.
pub async fn request_from(
    from: std::net::Ipv4Addr,
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
) -> Answer {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind((from, 0).into())
        .expect("a loopback source address");
    let mut stream = socket
        .connect(([127, 0, 0, 1], port).into())
        .await
        .expect("the web client accepts");
    let mut head = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    let upgrade = headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("upgrade"));
    if !upgrade {
        head.push_str("Connection: close\r\n");
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.expect("sent");
    let mut bytes = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let read = tokio::time::timeout(DEADLINE, stream.read(&mut buffer))
            .await
            .expect("an answer in time")
            .expect("readable");
        bytes.extend_from_slice(&buffer[..read]);
        if read == 0 || complete(&bytes) {
            break;
        }
    }
    let text = String::from_utf8_lossy(&bytes).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head}"));
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

/// Whether `bytes` hold a whole answer: a head, and as much body as its
/// `Content-Length` says (an upgrade has none).
fn complete(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse::<usize>().ok());
    match length {
        Some(length) => body.len() >= length,
        None => head.starts_with("HTTP/1.1 101"),
    }
}

/// The WebSocket upgrade's headers, with `origin` (none when empty) and
/// `cookie` (none when empty).
pub fn upgrade_headers<'a>(origin: &'a str, cookie: &'a str) -> Vec<(&'static str, &'a str)> {
    let mut headers = vec![
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Version", "13"),
        ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
    ];
    if !origin.is_empty() {
        headers.push(("Origin", origin));
    }
    if !cookie.is_empty() {
        headers.push(("Cookie", cookie));
    }
    headers
}

/// What a login gives a browser: the cookie, and the key the page keeps.
#[derive(Debug, Clone)]
pub struct Login {
    /// The `Cookie` header value to send.
    pub cookie: String,
    /// The session's key, from the fragment of the address the login
    /// answer moves on to (`/#key=…`).
    pub key: String,
}

impl Login {
    /// The `Sec-WebSocket-Protocol` header the page sends with its key.
    pub fn protocols(&self) -> String {
        format!("hearth, hearth-key.{}", self.key)
    }
}

/// The key in a login answer's body (the page it moves on to).
pub fn key_of(answer: &Answer) -> String {
    let start = answer
        .body
        .find("/#key=")
        .expect("a key in the login's answer")
        + 6;
    answer.body[start..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect()
}

/// Logs in with `url` over plain HTTP: the cookie and the key.
pub async fn log_in(port: u16, url: &str) -> Login {
    let path = url
        .split_once(&format!("{port}"))
        .map_or(url, |(_, path)| path);
    let answer = request(port, path, &[]).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let set = answer.headers.get("set-cookie").expect("a session cookie");
    let cookie = set.split(';').next().expect("name=value").to_string();
    let key = key_of(&answer);
    assert_eq!(key.len(), 64, "{answer:?}");
    Login { cookie, key }
}

/// [`upgrade_headers`] with the login's cookie and key, as the page sends them.
pub fn page_upgrade_headers<'a>(
    origin: &'a str,
    login: &'a Login,
    protocols: &'a str,
) -> Vec<(&'static str, &'a str)> {
    let mut headers = upgrade_headers(origin, &login.cookie);
    headers.push(("Sec-WebSocket-Protocol", protocols));
    headers
}

/// A PNG of `width` × `height` pixels in two colours, stored uncompressed.
pub fn png(width: u32, height: u32) -> Vec<u8> {
    fn crc(bytes: &[u8]) -> u32 {
        let mut crc = 0xffff_ffffu32;
        for &byte in bytes {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xedb8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend_from_slice(data);
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc(&body).to_be_bytes());
    }
    let mut raw = Vec::new();
    for y in 0..height {
        raw.push(0);
        for x in 0..width {
            let warm = (x / 8 + y / 8) % 2 == 0;
            raw.extend_from_slice(if warm {
                &[240, 160, 60]
            } else {
                &[122, 59, 18]
            });
        }
    }
    let mut zlib = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65_535).collect();
    for (n, block) in blocks.iter().enumerate() {
        zlib.push(u8::from(n + 1 == blocks.len()));
        let len = block.len() as u16;
        zlib.extend_from_slice(&len.to_le_bytes());
        zlib.extend_from_slice(&(!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in &raw {
        a = (a + u32::from(byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    zlib.extend_from_slice(&((b << 16) | a).to_be_bytes());
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &header);
    chunk(&mut out, b"IDAT", &zlib);
    chunk(&mut out, b"IEND", &[]);
    out
}

/// This test binary's Chromium, or `None` (said on stderr) when none is
/// installed.
pub async fn browser() -> Option<Browser> {
    let browser = Browser::launch().await;
    if browser.is_none() {
        eprintln!(
            "SKIPPED: no Chromium found (install Debian's `chromium`, or set CHROMIUM); \
             the browser tests did not run"
        );
    }
    browser
}

/// Whether the page shows its connection to the daemon live.
pub const LIVE: &str = "document.querySelector('#state')?.className === 'live'";

/// Opens a new page at `home`'s login link and waits until it is live.
pub async fn open_live_page(browser: &mut Browser, home: &TestHome) -> Page {
    let page = browser.new_page().await;
    browser.navigate(&page, &login_url(home).await).await;
    browser.wait_for(&page, LIVE).await;
    page
}

/// Types `text` into the composer and presses Send.
pub async fn send(browser: &mut Browser, page: &Page, text: &str) {
    let set = format!(
        "document.querySelector('#input').value = {}; true",
        serde_json::to_string(text).expect("text as JSON")
    );
    browser.eval(page, &set).await;
    browser.click(page, "#send").await;
    browser
        .wait_for(page, "document.querySelector('#input').value === ''")
        .await;
}

/// Whether a message of `kind` whose text contains `text` is shown.
pub fn shown(kind: &str, text: &str) -> String {
    format!(
        "[...document.querySelectorAll('#messages .kind-{kind}')].some(m => m.textContent.includes({}))",
        serde_json::to_string(text).expect("text as JSON")
    )
}
