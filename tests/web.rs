//! End-to-end: the browser client's HTTP side, attacked with hand-written
//! requests against a real `hearthd` — the login on every request, the
//! one-time code, the cookie and the key, the Origin check, the rate limit
//! per address, revoking.
//! `tests/browser.rs` drives the page itself in a real Chromium.
//!
//! The daemon listens on loopback here. A login is required on every
//! address alike (there is no loopback exception to test around), so
//! `every_request_without_a_session_is_refused` stands for a page fetched
//! from another address without login.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::{SinkExt, StreamExt};
use hearth_protocol::{ClientFrame, ErrorCode, ServerFrame, PROTOCOL_VERSION};
use hearth_tests::bins;
use hearth_tests::fake_model::FakeModel;
use hearth_tests::harness::{TestHome, DEADLINE};
use hearth_tests::web::{
    free_port, key_of, log_in, login_url, page_upgrade_headers, request, request_from,
    upgrade_headers, web_home_with, Login,
};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message as WsMessage;

struct Site {
    _model: FakeModel,
    home: TestHome,
    _daemon: hearth_tests::harness::Daemon,
    port: u16,
}

async fn site() -> Site {
    site_with("").await
}

/// A site whose `[web]` table also holds `extra`.
async fn site_with(extra: &str) -> Site {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let port = free_port();
    web_home_with(&home, &model, port, extra);
    let daemon = home.start();
    Site {
        _model: model,
        home,
        _daemon: daemon,
        port,
    }
}

fn path_of(url: &str, port: u16) -> String {
    url.split_once(&port.to_string())
        .map(|(_, path)| path.to_string())
        .expect("a link to the port")
}

#[tokio::test]
async fn every_request_without_a_session_is_refused() {
    let site = site().await;
    let origin = format!("http://127.0.0.1:{}", site.port);
    for path in [
        "/",
        "/index.html",
        "/app.js",
        "/app.css",
        "/chat.js",
        "/connection.js",
        "/sw.js",
        "/manifest.webmanifest",
    ] {
        let answer = request(site.port, path, &[]).await;
        assert_eq!(answer.status, 401, "{path}: {answer:?}");
        assert!(
            answer.body.contains("hearth web"),
            "{path}: {}",
            answer.body
        );
        assert!(!answer.body.contains("<script"), "{path}");
    }
    let forged = request(site.port, "/", &[("Cookie", "hearth_session=00ff")]).await;
    assert_eq!(forged.status, 401);
    let socket = request(site.port, "/ws", &upgrade_headers(&origin, "")).await;
    assert_eq!(socket.status, 401, "{socket:?}");
    // The icon holds nothing of the owner's; an unknown path is not found.
    assert_eq!(request(site.port, "/icon.svg", &[]).await.status, 200);
    assert_eq!(request(site.port, "/hearth.db", &[]).await.status, 404);
}

#[tokio::test]
async fn every_response_carries_the_security_headers() {
    let site = site().await;
    let url = login_url(&site.home).await;
    let cookie = log_in(site.port, &url).await.cookie;
    for (path, cookie) in [
        ("/", cookie.as_str()),
        ("/", ""),
        ("/nothing", ""),
        ("/login?code=x", ""),
    ] {
        let headers: Vec<(&str, &str)> = if cookie.is_empty() {
            vec![]
        } else {
            vec![("Cookie", cookie)]
        };
        let answer = request(site.port, path, &headers).await;
        let policy = answer
            .headers
            .get("content-security-policy")
            .expect("a CSP");
        for rule in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "connect-src 'self'",
        ] {
            assert!(policy.contains(rule), "{path}: {policy}");
        }
        assert!(
            !policy.contains("unsafe-inline") && !policy.contains("http"),
            "{policy}"
        );
        assert_eq!(
            answer
                .headers
                .get("x-content-type-options")
                .map(String::as_str),
            Some("nosniff")
        );
        assert_eq!(
            answer.headers.get("referrer-policy").map(String::as_str),
            Some("no-referrer")
        );
    }
    let page = request(site.port, "/", &[("Cookie", &cookie)]).await;
    assert_eq!(page.status, 200);
    // No inline script or style for the policy to forbid: the page loads its files.
    assert!(page
        .body
        .contains("<script type=\"module\" src=\"/app.js\"></script>"));
    assert!(!page.body.contains("style="), "inline style in the page");
    assert!(
        !page.body.contains("http://") && !page.body.contains("https://"),
        "a remote origin in the page"
    );
}

#[tokio::test]
async fn a_login_code_works_once_and_a_wrong_one_never() {
    let site = site().await;
    let url = login_url(&site.home).await;
    let path = path_of(&url, site.port);
    assert!(
        url.starts_with(&format!("http://127.0.0.1:{}/login?code=", site.port)),
        "{url}"
    );
    let wrong = request(site.port, &format!("{path}0"), &[]).await;
    assert_eq!(wrong.status, 403, "{wrong:?}");
    assert!(!wrong.headers.contains_key("set-cookie"));

    let first = request(site.port, &path, &[]).await;
    assert_eq!(first.status, 200, "{first:?}");
    let set = first.headers.get("set-cookie").expect("a session cookie");
    for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set.contains(part), "{set}");
    }
    assert!(
        !set.contains("Secure"),
        "plain http cannot keep a Secure cookie: {set}"
    );
    let again = request(site.port, &path, &[]).await;
    assert_eq!(again.status, 403, "a used code logged in again: {again:?}");

    // Behind a proxy that says the browser came over https, the cookie is Secure.
    let url = login_url(&site.home).await;
    let proxied = request(
        site.port,
        &path_of(&url, site.port),
        &[("X-Forwarded-Proto", "https")],
    )
    .await;
    assert!(
        proxied.headers["set-cookie"].contains("; Secure"),
        "{proxied:?}"
    );

    let cookie = set.split(';').next().unwrap();
    assert_eq!(
        request(site.port, "/app.js", &[("Cookie", cookie)])
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn too_many_failed_logins_refuse_that_address_but_never_the_owners() {
    let site = site().await;
    let stranger = [127, 0, 0, 2].into();
    for n in 0..5 {
        let guess = format!("/login?code=guess{n}");
        let answer = request_from(stranger, site.port, &guess, &[]).await;
        assert_eq!(answer.status, 403);
    }
    // Even the right code is refused from the guessing address, and not spent.
    let url = login_url(&site.home).await;
    let path = path_of(&url, site.port);
    let answer = request_from(stranger, site.port, &path, &[]).await;
    assert_eq!(answer.status, 429, "{answer:?}");
    assert!(!answer.headers.contains_key("set-cookie"));
    // The owner's browser, from its own address, logs in at once.
    let owner = request(site.port, &path, &[]).await;
    assert_eq!(
        owner.status, 200,
        "the stranger's failures refused the owner: {owner:?}"
    );
    assert!(owner.headers.contains_key("set-cookie"));
}

#[tokio::test]
async fn the_websocket_needs_the_pages_own_origin_and_a_session() {
    let site = site().await;
    let login = log_in(site.port, &login_url(&site.home).await).await;
    let protocols = login.protocols();
    let own = format!("http://127.0.0.1:{}", site.port);
    for origin in [
        "",
        "null",
        "http://evil.example",
        "http://127.0.0.1:1",
        "http://localhost",
    ] {
        let headers = page_upgrade_headers(origin, &login, &protocols);
        let answer = request(site.port, "/ws", &headers).await;
        assert_eq!(answer.status, 403, "origin {origin:?}: {answer:?}");
    }
    let headers = page_upgrade_headers(&own, &login, &protocols);
    let answer = request(site.port, "/ws", &headers).await;
    assert_eq!(answer.status, 101, "{answer:?}");
    assert_eq!(
        answer
            .headers
            .get("sec-websocket-protocol")
            .map(String::as_str),
        Some("hearth")
    );
}

/// What another local user's server on another loopback port gets when
/// the owner's browser visits it: the cookie (a browser sends it to every
/// port of the host; `tests/browser.rs` shows Chromium doing so), never the
/// key. Replayed to hearthd, with any headers a server can forge, it opens
/// nothing of the conversation.
#[tokio::test]
async fn a_session_cookie_replayed_from_another_port_opens_nothing_of_the_conversation() {
    let site = site().await;
    let login = log_in(site.port, &login_url(&site.home).await).await;
    let own = format!("http://127.0.0.1:{}", site.port);
    let stolen = Login {
        cookie: login.cookie.clone(),
        key: String::new(),
    };
    let without_key = upgrade_headers(&own, &stolen.cookie);
    let answer = request(site.port, "/ws", &without_key).await;
    assert_eq!(
        answer.status, 401,
        "the cookie alone opened the socket: {answer:?}"
    );
    for protocols in [
        "hearth".to_string(),
        "hearth, hearth-key.".to_string(),
        format!("hearth, hearth-key.{}", "0".repeat(64)),
        // The cookie's own value as the key.
        format!(
            "hearth, hearth-key.{}",
            stolen.cookie.trim_start_matches("hearth_session=")
        ),
    ] {
        let headers = page_upgrade_headers(&own, &stolen, &protocols);
        let answer = request(site.port, "/ws", &headers).await;
        assert_eq!(answer.status, 401, "{protocols}: {answer:?}");
    }
    // The key without the cookie opens nothing either.
    let protocols = login.protocols();
    let mut keyed = upgrade_headers(&own, "");
    keyed.push(("Sec-WebSocket-Protocol", &protocols));
    assert_eq!(request(site.port, "/ws", &keyed).await.status, 401);
    // Another session's key does not fit this cookie.
    let other = log_in(site.port, &login_url(&site.home).await).await;
    let crossed = Login {
        cookie: login.cookie.clone(),
        key: other.key.clone(),
    };
    let protocols = crossed.protocols();
    let headers = page_upgrade_headers(&own, &crossed, &protocols);
    assert_eq!(request(site.port, "/ws", &headers).await.status, 401);
    // The page's own script, with its key, still connects.
    let mut socket = browser_socket(site.port, &login).await;
    say(&mut socket, &hello()).await;
    assert!(matches!(
        next(&mut socket).await,
        Some(ServerFrame::Welcome { .. })
    ));
}

fn hello() -> ClientFrame {
    ClientFrame::Hello {
        client: "web".into(),
        version: PROTOCOL_VERSION,
        since: None,
        agent: None,
        token: None,
        owner_key: None,
    }
}

#[tokio::test]
async fn a_proxy_address_in_url_is_the_pages_origin_and_keeps_the_cookie_secure() {
    let site = site_with("url = \"https://hearth.example.org\"\n").await;
    let url = login_url(&site.home).await;
    assert!(
        url.starts_with("https://hearth.example.org/login?code="),
        "{url}"
    );
    let path = url.trim_start_matches("https://hearth.example.org");
    let answer = request(site.port, path, &[]).await;
    let set = answer.headers.get("set-cookie").expect("a session cookie");
    assert!(set.ends_with("; Secure"), "{set}");
    let login = Login {
        cookie: set.split(';').next().unwrap().to_string(),
        key: key_of(&answer),
    };
    let protocols = login.protocols();
    let proxied = request(
        site.port,
        "/ws",
        &page_upgrade_headers("https://hearth.example.org", &login, &protocols),
    )
    .await;
    assert_eq!(proxied.status, 101, "{proxied:?}");
    let other = request(
        site.port,
        "/ws",
        &page_upgrade_headers("https://evil.example.org", &login, &protocols),
    )
    .await;
    assert_eq!(other.status, 403, "{other:?}");
}

/// A WebSocket as the page opens it: the cookie, and the key as a subprotocol.
async fn browser_socket(port: u16, login: &Login) -> tokio_tungstenite::WebSocketStream<TcpStream> {
    let mut request = format!("ws://127.0.0.1:{port}/ws")
        .into_client_request()
        .unwrap();
    let headers = request.headers_mut();
    headers.insert("cookie", login.cookie.parse().unwrap());
    headers.insert("sec-websocket-protocol", login.protocols().parse().unwrap());
    headers.insert(
        "origin",
        format!("http://127.0.0.1:{port}").parse().unwrap(),
    );
    let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    let (socket, _) = tokio_tungstenite::client_async(request, stream)
        .await
        .unwrap();
    socket
}

async fn next(socket: &mut tokio_tungstenite::WebSocketStream<TcpStream>) -> Option<ServerFrame> {
    loop {
        match tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("a frame in time")
        {
            Some(Ok(WsMessage::Text(text))) => return Some(ServerFrame::decode(&text).unwrap()),
            Some(Ok(WsMessage::Close(_))) | None | Some(Err(_)) => return None,
            Some(Ok(_)) => continue,
        }
    }
}

async fn say(socket: &mut tokio_tungstenite::WebSocketStream<TcpStream>, frame: &ClientFrame) {
    socket
        .send(WsMessage::Text(frame.encode().into()))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_websocket_speaks_the_sockets_protocol_but_not_its_logins() {
    let site = site().await;
    let login = log_in(site.port, &login_url(&site.home).await).await;
    let mut socket = browser_socket(site.port, &login).await;
    say(&mut socket, &ClientFrame::Status).await;
    assert!(matches!(
        next(&mut socket).await,
        Some(ServerFrame::Error {
            code: ErrorCode::Sequence,
            ..
        })
    ));
    let hello = ClientFrame::Hello {
        client: "web".into(),
        version: PROTOCOL_VERSION,
        since: None,
        agent: None,
        token: None,
        owner_key: None,
    };
    say(&mut socket, &hello).await;
    assert!(matches!(
        next(&mut socket).await,
        Some(ServerFrame::Welcome { .. })
    ));
    let submit = ClientFrame::Submit {
        text: "from the browser".into(),
        source: "web".into(),
        key: None,
        images: vec![],
        person: None,
        media: Vec::new(),
    };
    say(&mut socket, &submit).await;
    let mut acked = false;
    while !acked {
        match next(&mut socket).await.expect("open") {
            ServerFrame::Ack { .. } => acked = true,
            ServerFrame::Event(_) => {}
            other => panic!("expected an ack, got {other:?}"),
        }
    }
    for frame in [
        ClientFrame::WebLogin,
        ClientFrame::WebSessions,
        ClientFrame::WebRevoke { id: 1 },
    ] {
        say(&mut socket, &frame).await;
        loop {
            match next(&mut socket).await.expect("open") {
                ServerFrame::Event(_) => continue,
                ServerFrame::Error { code, message } => {
                    assert_eq!(code, ErrorCode::Refused);
                    assert!(message.contains("Unix socket"), "{message}");
                    break;
                }
                other => panic!("a web frame was answered over the web: {other:?}"),
            }
        }
    }
}

#[tokio::test]
async fn a_revoked_session_is_disconnected_and_refused() {
    let site = site().await;
    let login = log_in(site.port, &login_url(&site.home).await).await;
    let mut socket = browser_socket(site.port, &login).await;
    let hello = ClientFrame::Hello {
        client: "web".into(),
        version: PROTOCOL_VERSION,
        since: None,
        agent: None,
        token: None,
        owner_key: None,
    };
    say(&mut socket, &hello).await;
    assert!(matches!(
        next(&mut socket).await,
        Some(ServerFrame::Welcome { .. })
    ));

    let listed = site.home.hearth_async(&["web", "sessions"]).await;
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    let line = listed.lines().next().expect("one session");
    assert!(line.contains("active"), "{listed}");
    let id = line.split_whitespace().next().unwrap().to_string();

    let revoked = site.home.hearth_async(&["web", "revoke", &id]).await;
    assert!(revoked.status.success(), "{revoked:?}");
    assert!(String::from_utf8_lossy(&revoked.stdout).contains("revoked now"));
    // Its open connection ends; nothing but a close comes.
    while let Some(frame) = next(&mut socket).await {
        assert!(matches!(frame, ServerFrame::Event(_)), "{frame:?}");
    }
    assert_eq!(
        request(site.port, "/", &[("Cookie", &login.cookie)])
            .await
            .status,
        401
    );
    let protocols = login.protocols();
    let own = format!("http://127.0.0.1:{}", site.port);
    let headers = page_upgrade_headers(&own, &login, &protocols);
    assert_eq!(request(site.port, "/ws", &headers).await.status, 401);
    let unknown = site.home.hearth_async(&["web", "revoke", "999"]).await;
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no such web session"));
}

#[tokio::test]
async fn hearth_web_says_how_to_turn_the_web_client_on() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    let output = home.hearth_async(&["web"]).await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("[web] listen"), "{stderr}");
}
