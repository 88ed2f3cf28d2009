//! End-to-end: who can reach the daemon. The Unix socket is private to its
//! user; the optional TCP listener refuses everything before a hello with
//! the right token; secrets never reach the logs.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::{SinkExt, StreamExt};
use hearth_protocol::{ClientFrame, ErrorCode, ServerFrame, PROTOCOL_VERSION};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{TestHome, DEADLINE};
use std::os::unix::fs::PermissionsExt;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

const TOKEN: &str = "a-long-test-token-0123456789";

fn home_with_tcp() -> TestHome {
    let home = TestHome::new(bins!());
    home.write_config("[listen]\ntcp = \"127.0.0.1:0\"\n");
    let secrets = home.path().join("secrets.env");
    std::fs::write(&secrets, format!("HEARTH_TOKEN={TOKEN}\n")).unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    home
}

/// The TCP address the daemon said it listens on.
fn tcp_address(output: &str) -> String {
    let line = output
        .lines()
        .find(|line| line.contains("listening on tcp "))
        .expect("a TCP listener");
    let rest = &line[line.find("listening on tcp ").unwrap() + "listening on tcp ".len()..];
    rest.split_whitespace().next().unwrap().to_string()
}

struct Tcp(WebSocketStream<TcpStream>);

impl Tcp {
    async fn connect(address: &str) -> Tcp {
        let stream = TcpStream::connect(address).await.unwrap();
        let (socket, _) = tokio_tungstenite::client_async(format!("ws://{address}/"), stream)
            .await
            .unwrap();
        Tcp(socket)
    }

    async fn send(&mut self, frame: &ClientFrame) {
        self.0
            .send(Message::Text(frame.encode().into()))
            .await
            .unwrap();
    }

    /// The next frame, or none once the daemon closed the connection.
    async fn frame(&mut self) -> Option<ServerFrame> {
        loop {
            let next = tokio::time::timeout(DEADLINE, self.0.next())
                .await
                .expect("in time");
            match next {
                Some(Ok(Message::Text(text))) => return Some(ServerFrame::decode(&text).unwrap()),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return None,
                Some(Ok(_)) => continue,
            }
        }
    }
}

fn hello(token: Option<&str>) -> ClientFrame {
    ClientFrame::Hello {
        client: "remote".into(),
        version: PROTOCOL_VERSION,
        since: None,
        agent: None,
        token: token.map(str::to_string),
        owner_key: None,
    }
}

fn refused_and_closed(first: Option<ServerFrame>) -> bool {
    matches!(
        first,
        Some(ServerFrame::Error {
            code: ErrorCode::Unauthorized,
            ..
        })
    )
}

#[tokio::test]
async fn the_tcp_listener_refuses_everything_before_a_good_hello() {
    let home = home_with_tcp();
    let daemon = home.start();
    let address = tcp_address(&daemon.log_text());

    let mut anonymous = Tcp::connect(&address).await;
    anonymous.send(&hello(None)).await;
    assert!(refused_and_closed(anonymous.frame().await));
    assert!(
        anonymous.frame().await.is_none(),
        "closed after the refusal"
    );

    let mut wrong = Tcp::connect(&address).await;
    wrong
        .send(&hello(Some("a-long-test-token-0123456780")))
        .await;
    assert!(refused_and_closed(wrong.frame().await));

    let mut eager = Tcp::connect(&address).await;
    eager
        .send(&ClientFrame::Submit {
            text: "let me in".into(),
            source: "x".into(),
            key: None,
            images: vec![],
            person: None,
            media: Vec::new(),
        })
        .await;
    assert!(refused_and_closed(eager.frame().await));

    let mut owner = Tcp::connect(&address).await;
    owner.send(&hello(Some(TOKEN))).await;
    assert!(matches!(
        owner.frame().await,
        Some(ServerFrame::Welcome { .. })
    ));
    owner
        .send(&ClientFrame::Submit {
            text: "hello from afar".into(),
            source: "remote".into(),
            key: None,
            images: vec![],
            person: None,
            media: Vec::new(),
        })
        .await;
    loop {
        match owner.frame().await {
            Some(ServerFrame::Ack { id, .. }) => {
                assert_eq!(id, 0, "only the owner's message was logged");
                break;
            }
            Some(ServerFrame::Event(_)) => continue,
            other => panic!("expected an ack, got {other:?}"),
        }
    }
}

#[test]
fn a_tcp_listener_without_a_token_does_not_start() {
    let home = TestHome::new(bins!());
    home.write_config("[listen]\ntcp = \"127.0.0.1:0\"\n");
    let output = home.run_daemon_to_end();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("needs a token"), "{said}");
}

#[tokio::test]
async fn the_socket_and_its_folder_are_private_without_a_home_flag() {
    let root = tempfile::tempdir().unwrap();
    let runtime = root.path().join("run");
    std::fs::create_dir(&runtime).unwrap();
    let mut child = std::process::Command::new(bins!().hearthd)
        .env_remove("HEARTH_HOME")
        .env("HOME", root.path())
        .env("XDG_CONFIG_HOME", root.path().join("config"))
        .env("XDG_DATA_HOME", root.path().join("data"))
        .env("XDG_RUNTIME_DIR", &runtime)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let socket = runtime.join("hearth").join("hearth.sock");
    let xdg = hearth_protocol::home::Home {
        config_dir: root.path().join("config/hearth"),
        data_dir: root.path().join("data/hearth"),
        runtime_dir: runtime.join("hearth"),
    };
    let mut client = None;
    for _ in 0..600 {
        if let Ok(connected) = hearth_client::Connection::open(&xdg, "probe", None).await {
            client = Some(connected);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        client.is_some(),
        "the daemon answered on the XDG runtime socket"
    );
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    // Bound under umask 077 in a 0700 folder: private from its first moment.
    assert_eq!(mode(&socket) & 0o077, 0, "socket mode {:o}", mode(&socket));
    assert_eq!(mode(&runtime.join("hearth")), 0o700);
    assert_eq!(mode(&root.path().join("data").join("hearth")), 0o700);
    assert_eq!(mode(&root.path().join("config").join("hearth")), 0o700);
    assert_eq!(
        mode(&xdg.owner_key()),
        0o600,
        "the owner key is the user's alone"
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn api_keys_never_reach_the_daemon_log() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::Error {
        status: 401,
        body: serde_json::json!({"error": {"message": "Incorrect API key provided: sk-test-secret"}}),
    });
    let (id, _) = client.submit("hello", "terminal", None).await;
    client
        .wait_for(|e| e.kind == hearth_protocol::EventKind::Error && e.answers.contains(&id))
        .await;
    // The key went to the model server, and nowhere else the daemon writes.
    let sent = &model.requests()[0].headers["authorization"];
    assert_eq!(sent, "Bearer sk-test-secret");
    assert!(!daemon.log_text().contains("sk-test-secret"));
}

#[tokio::test]
async fn the_shell_never_sees_the_daemons_keys() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::ToolCalls {
        text: None,
        calls: vec![(
            "shell".into(),
            r#"{"command":"echo key=[$HEARTH_TEST_KEY]"}"#.into(),
        )],
    });
    model.push(Reply::Text("done".into()));
    let (id, _) = client.submit("print the key", "terminal", None).await;
    let tool = client
        .wait_for(|e| e.kind == hearth_protocol::EventKind::Tool)
        .await
        .text
        .unwrap();
    assert!(tool.contains("key=[]"), "{tool}");
    assert!(!tool.contains("sk-test-secret"));
    client.reply_to(id).await;
}

#[test]
fn a_working_folder_that_holds_the_home_is_refused_at_start() {
    let home = TestHome::new(bins!());
    home.write_config("[agent]\nworkdir = \".\"\n");
    std::fs::write(home.path().join("secrets.env"), "OPENAI_API_KEY=sk-x\n").unwrap();
    std::fs::set_permissions(
        home.path().join("secrets.env"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let output = home.run_daemon_to_end();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{said}");
    assert!(said.contains("holds the home's private files"), "{said}");
    assert!(said.contains("[agent] workdir"), "{said}");
}

/// Opens `count` TCP connections that never send a byte.
async fn idle_connections(address: &str, count: usize) -> Vec<TcpStream> {
    let mut idle = Vec::new();
    for _ in 0..count {
        idle.push(TcpStream::connect(address).await.unwrap());
    }
    idle
}

/// Whether the daemon closed `stream` (a read sees the end or an error).
async fn closed_by_daemon(stream: &mut TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut byte = [0u8; 1];
    matches!(
        tokio::time::timeout(DEADLINE, stream.read(&mut byte)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

#[tokio::test]
async fn a_flood_of_silent_tcp_connections_never_locks_the_owner_out() {
    let home = home_with_tcp();
    let daemon = hearth_tests::harness::Daemon::start_with_env(
        &home,
        &[("HEARTH_TEST_HELLO_DEADLINE_MS", "500")],
    );
    let address = tcp_address(&daemon.log_text());
    // Far more than may wait for their hello, from one address.
    let mut idle = idle_connections(&address, 300).await;
    // The owner's socket answers at once, and so does a TCP client with the
    // token once the silent ones are closed.
    let mut owner = home.connect("terminal", None).await;
    let (id, _) = owner.submit("still here", "terminal", None).await;
    assert_eq!(id, 0);
    // Silent connections are closed: those over the cap at once, the rest
    // when their deadline passes.
    for stream in idle.iter_mut() {
        assert!(
            closed_by_daemon(stream).await,
            "a silent connection stays open"
        );
    }
    let mut tcp = Tcp::connect(&address).await;
    tcp.send(&hello(Some(TOKEN))).await;
    assert!(matches!(
        tcp.frame().await,
        Some(ServerFrame::Welcome { .. })
    ));
}

#[tokio::test]
async fn junk_before_hello_over_tcp_closes_the_connection() {
    let home = home_with_tcp();
    let daemon = home.start();
    let address = tcp_address(&daemon.log_text());
    let mut tcp = Tcp::connect(&address).await;
    tcp.0
        .send(Message::Text("this is not json".into()))
        .await
        .unwrap();
    assert!(matches!(tcp.frame().await, Some(ServerFrame::Error { .. })));
    assert!(
        tcp.frame().await.is_none(),
        "closed after its first bad frame"
    );

    let mut tcp = Tcp::connect(&address).await;
    let wrong_version = r#"{"type":"hello","client":"x","version":99}"#;
    tcp.0
        .send(Message::Text(wrong_version.into()))
        .await
        .unwrap();
    assert!(matches!(tcp.frame().await, Some(ServerFrame::Error { .. })));
    assert!(tcp.frame().await.is_none());
}

#[tokio::test]
async fn a_large_frame_before_hello_is_never_read_whole() {
    let home = home_with_tcp();
    let daemon = home.start();
    let address = tcp_address(&daemon.log_text());
    let mut tcp = Tcp::connect(&address).await;
    // 8 MiB, far over what a stranger may send before its hello.
    let huge = format!(r#"{{"type":"submit","text":"{}"}}"#, "x".repeat(8 << 20));
    let sent = tcp.0.send(Message::Text(huge.into())).await;
    // The daemon stops reading and closes: the send or the next read fails.
    if sent.is_ok() {
        assert!(tcp.frame().await.is_none(), "the connection is closed");
    }
    let mut owner = home.connect("terminal", None).await;
    assert_eq!(owner.submit("fine", "terminal", None).await.0, 0);
}

/// A Chat Completions endpoint that answers 200 with the request's
/// `Authorization` header in its text, padded so that the memory summarizes
/// it (with another call that echoes the header again).
async fn echoing_model() -> String {
    echoing_endpoint(|authorization| {
        let content = format!("you sent {authorization}. {}", "padding ".repeat(100));
        let body = serde_json::json!({
            "id": "echo", "object": "chat.completion", "created": 0, "model": "fake-model",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
        })
        .to_string();
        ("200 OK", body)
    })
    .await
}

/// An endpoint that answers every request with `respond`'s status line and
/// body, given the request's `Authorization` header line.
async fn echoing_endpoint(respond: fn(&str) -> (&'static str, String)) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 65536];
                // Headers, then the body by its length.
                loop {
                    let Ok(n) = stream.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&request).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let length = text[..end]
                            .lines()
                            .find_map(|line| {
                                let (name, value) = line.split_once(':')?;
                                name.eq_ignore_ascii_case("content-length")
                                    .then(|| value.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        if request.len() >= end + 4 + length {
                            break;
                        }
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let authorization = text
                    .lines()
                    .find(|line| line.to_ascii_lowercase().starts_with("authorization:"))
                    .unwrap_or("")
                    .to_string();
                let (status, body) = respond(&authorization);
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    format!("http://{address}/v1")
}

#[tokio::test]
async fn a_key_echoed_by_a_model_reaches_no_log_no_summary_and_no_stderr() {
    let base_url = echoing_model().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{base_url}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\nstream = false\ntimeout_secs = 30\n"
    ));
    let daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let (id, _) = client.submit("what did you get?", "terminal", None).await;
    let reply = client.reply_to(id).await;
    let text = reply.text.unwrap_or_default();
    assert!(text.contains("you sent"), "{text}");
    assert!(!text.contains("sk-test-secret"), "{text}");
    // The reply is long, so the memory writes a summary of it, through the
    // same endpoint that echoes the key again.
    let database = home.path().join("hearth.db");
    let lines: Vec<String> = hearth_tests::harness::eventually("the reply's summary", || {
        let database = database.clone();
        async move {
            let connection = rusqlite::Connection::open(&database).ok()?;
            let mut statement = connection.prepare("SELECT text FROM nodes").ok()?;
            let lines: Vec<String> = statement
                .query_map([], |row| row.get(0))
                .ok()?
                .filter_map(Result::ok)
                .collect();
            (lines.iter().any(|line| line.contains("you sent"))).then_some(lines)
        }
    })
    .await;
    assert!(
        lines.iter().all(|line| !line.contains("sk-test-secret")),
        "{lines:?}"
    );
    for message in home.history().await {
        assert!(!message.text.contains("sk-test-secret"), "{}", message.text);
    }
    assert!(
        !daemon.log_text().contains("sk-test-secret"),
        "stderr holds the key"
    );
}

/// `count` connections to `address` from the loopback address `from` that
/// never say anything.
async fn idle_from(address: &str, from: [u8; 4], count: usize) -> Vec<TcpStream> {
    let target: std::net::SocketAddr = address.parse().unwrap();
    let mut idle = Vec::new();
    for _ in 0..count {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind((from, 0).into()).unwrap();
        idle.push(socket.connect(target).await.unwrap());
    }
    idle
}

/// Connects from `from`, says hello with the token; whether it is welcomed.
async fn welcomed_from(address: &str, from: [u8; 4]) -> bool {
    let stream = idle_from(address, from, 1).await.pop().unwrap();
    let Ok((socket, _)) = tokio_tungstenite::client_async(format!("ws://{address}/"), stream).await
    else {
        return false;
    };
    let mut tcp = Tcp(socket);
    tcp.send(&hello(Some(TOKEN))).await;
    matches!(tcp.frame().await, Some(ServerFrame::Welcome { .. }))
}

#[tokio::test]
async fn the_owners_hello_gets_in_past_64_idle_tcp_connections() {
    let home = home_with_tcp();
    // The hello deadline stays ten seconds: the owner does not wait it out.
    let daemon = home.start();
    let address = tcp_address(&daemon.log_text());
    // Every place that waits for a hello is taken: eight addresses at their
    // cap, eight more from the owner's own address.
    let mut idle = Vec::new();
    for host in 2..10u8 {
        idle.extend(idle_from(&address, [127, 0, 0, host], 8).await);
    }
    idle.extend(idle_from(&address, [127, 0, 0, 1], 8).await);
    assert!(
        welcomed_from(&address, [127, 0, 0, 1]).await,
        "the owner's hello was refused behind idle connections"
    );
    assert!(welcomed_from(&address, [127, 0, 0, 20]).await);
    // The oldest idle ones made room; the daemon closed them.
    assert!(closed_by_daemon(&mut idle[0]).await);
    drop(idle);
}

/// Up to `count` connections to `address`, each from another loopback
/// address, every third sending `start` (half a request) and then nothing.
/// A daemon out of descriptors stops accepting, and the flood ends there.
async fn flood_from_many(address: &str, count: usize, start: &[u8]) -> Vec<TcpStream> {
    use tokio::io::AsyncWriteExt;
    let target: std::net::SocketAddr = address.parse().unwrap();
    raise_own_descriptor_limit();
    let mut flood = Vec::new();
    for n in 0..count {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        let from = [127, 1, (n / 200) as u8, (n % 200) as u8 + 2];
        socket.bind((from, 0).into()).unwrap();
        // Patient: on a loaded machine a connection may wait in the
        // listener's backlog; only a daemon that stopped accepting leaves
        // it there past this.
        let wait = std::time::Duration::from_secs(10);
        let Ok(Ok(mut stream)) = tokio::time::timeout(wait, socket.connect(target)).await else {
            break;
        };
        if n % 3 == 0 {
            let _ = stream.write_all(start).await;
        }
        flood.push(stream);
    }
    flood
}

/// Raises this test process's own soft descriptor limit to its hard one:
/// the flood's sockets are the test's too, and the suite's other tests
/// hold descriptors of their own at the same time.
fn raise_own_descriptor_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and fill a live `rlimit`.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Lowers the soft descriptor limit of process `pid` to `limit`.
fn lower_descriptor_limit(pid: u32, limit: u64) {
    let pid = libc::pid_t::try_from(pid).unwrap();
    let mut now = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a read of our child's limit into a live `rlimit`.
    let read = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, std::ptr::null(), &mut now) };
    assert_eq!(read, 0, "reading hearthd's descriptor limit");
    let lower = libc::rlimit {
        rlim_cur: limit,
        rlim_max: now.rlim_max,
    };
    // SAFETY: as above, a write from a live `rlimit`.
    let set = unsafe { libc::prlimit(pid, libc::RLIMIT_NOFILE, &lower, std::ptr::null_mut()) };
    assert_eq!(set, 0, "lowering hearthd's descriptor limit");
}

/// How many descriptors process `pid` holds.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[tokio::test]
async fn a_flood_of_web_connections_never_locks_the_owner_out_of_the_socket_or_the_page() {
    use hearth_tests::web::{free_port, log_in, login_url, page_upgrade_headers, request};
    let home = TestHome::new(bins!());
    let port = free_port();
    home.write_config(&format!("[web]\nlisten = \"127.0.0.1:{port}\"\n"));
    let daemon = home.start();
    let web = format!("127.0.0.1:{port}");
    // A daemon with few descriptors: the flood below is far more.
    lower_descriptor_limit(daemon.pid(), 256);
    let before = descriptors(daemon.pid());
    let mut flood = flood_from_many(&web, 600, b"GET / HTTP/1.1\r\nHost: x\r\n").await;
    assert_eq!(flood.len(), 600, "the web port stopped accepting");

    // The owner's socket answers.
    let status = tokio::time::timeout(DEADLINE, home.hearth_async(&["status"]))
        .await
        .expect("hearth status answers under the flood");
    assert!(status.status.success(), "{status:?}");
    let mut owner = home.connect("terminal", None).await;
    assert_eq!(owner.submit("still here", "terminal", None).await.0, 0);
    // The owner's browser logs in and its socket is welcomed.
    let login = log_in(port, &login_url(&home).await).await;
    let protocols = login.protocols();
    let origin = format!("http://{web}");
    let upgraded = request(
        port,
        "/ws",
        &page_upgrade_headers(&origin, &login, &protocols),
    )
    .await;
    assert_eq!(upgraded.status, 101, "{upgraded:?}");
    // The daemon holds a bounded part of the flood (an eighth of its
    // descriptors per door): the oldest were closed.
    assert!(closed_by_daemon(&mut flood[0]).await);
    let open = descriptors(daemon.pid());
    assert!(
        open <= before + 2 * 256 / 8 + 8,
        "{open} descriptors open, {before} before the flood"
    );
    drop(flood);
}

#[tokio::test]
async fn idle_connections_on_the_unix_socket_never_keep_the_owners_hello_out() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    // More than may wait for their hello, as a process the owner runs (a
    // tool's, say) could open, and never say a word.
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(
            tokio::net::UnixStream::connect(home.socket())
                .await
                .unwrap(),
        );
    }
    let mut owner = home.connect("terminal", None).await;
    assert_eq!(owner.submit("still here", "terminal", None).await.0, 0);
    // The oldest idle ones made room.
    use tokio::io::AsyncReadExt;
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(DEADLINE, idle[0].read(&mut byte)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the oldest stays open"
    );
    drop(idle);
}

#[tokio::test]
async fn a_silent_or_half_sent_web_connection_is_closed_at_its_deadline() {
    use hearth_tests::web::{free_port, log_in, login_url};
    use tokio::io::AsyncWriteExt;
    let home = TestHome::new(bins!());
    let port = free_port();
    home.write_config(&format!("[web]\nlisten = \"127.0.0.1:{port}\"\n"));
    let _daemon = hearth_tests::harness::Daemon::start_with_env(
        &home,
        &[("HEARTH_TEST_HELLO_DEADLINE_MS", "500")],
    );
    let web = format!("127.0.0.1:{port}");
    let mut silent = TcpStream::connect(&web).await.unwrap();
    let mut half = TcpStream::connect(&web).await.unwrap();
    half.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // A replayed cookie fetches the page's files, but keeps no connection.
    let login = log_in(port, &login_url(&home).await).await;
    let mut replayed = TcpStream::connect(&web).await.unwrap();
    let keep = format!(
        "GET /app.css HTTP/1.1\r\nHost: {web}\r\nCookie: {}\r\n\r\n",
        login.cookie
    );
    replayed.write_all(keep.as_bytes()).await.unwrap();
    for stream in [&mut silent, &mut half] {
        assert!(
            closed_by_daemon(stream).await,
            "a web connection stays open"
        );
    }
    use tokio::io::AsyncReadExt;
    let mut answer = Vec::new();
    let read = tokio::time::timeout(DEADLINE, replayed.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "a kept-alive connection stays open");
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn a_key_echoed_in_a_model_error_reaches_no_client() {
    // A router answers 200 with its upstream's error inside, which echoes
    // the header, as some proxies do.
    let base_url = echoing_endpoint(|authorization| {
        let body = serde_json::json!({"error": {
            "message": format!("this key is not allowed here: {authorization}"),
            "code": 401
        }});
        ("200 OK", body.to_string())
    })
    .await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{base_url}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\nstream = false\ntimeout_secs = 30\n"
    ));
    let daemon = home.start();
    // A client attached live, and `hearth send --wait`.
    let mut live = home.connect("terminal", None).await;
    let sent = home.hearth_async(&["send", "--wait", "hello?"]).await;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&sent.stdout),
        String::from_utf8_lossy(&sent.stderr)
    );
    assert!(said.contains("this key is not allowed here"), "{said}");
    assert!(!said.contains("sk-test-secret"), "{said}");
    let error = live
        .wait_for(|event| event.kind == hearth_protocol::EventKind::Error)
        .await;
    let text = error.text.unwrap_or_default();
    assert!(text.contains("this key is not allowed here"), "{text}");
    assert!(!text.contains("sk-test-secret"), "{text}");
    for event in &live.events {
        let frame = serde_json::to_string(event).unwrap();
        assert!(!frame.contains("sk-test-secret"), "{frame}");
    }
    assert!(!daemon.log_text().contains("sk-test-secret"));
}

#[tokio::test]
async fn a_key_a_model_streams_in_pieces_reaches_no_client() {
    // The fake model streams its text four characters a delta: a key is
    // split across deltas, none of which looks like one alone.
    let model = FakeModel::start().await;
    model.push(Reply::text(
        "the keys are sk-proj-ABCDEFGHIJKLMNOPQRSTUV1234 and sk-test-secret, ok",
    ));
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    let mut live = home.connect("terminal", None).await;
    let (id, _) = live.submit("what are the keys?", "terminal", None).await;
    let reply = live.reply_to(id).await;
    let streamed: String = live
        .events
        .iter()
        .filter(|event| event.kind == hearth_protocol::EventKind::Delta)
        .filter_map(|event| event.text.clone())
        .collect();
    assert!(streamed.starts_with("the keys are "), "{streamed}");
    assert!(streamed.ends_with(", ok"), "{streamed}");
    for key in ["ABCDEFGHIJKLMNOPQRSTUV1234", "sk-test-secret"] {
        assert!(!streamed.contains(key), "{streamed}");
        assert!(!reply.text.clone().unwrap().contains(key));
    }
}
