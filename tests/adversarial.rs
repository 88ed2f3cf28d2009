//! Adversarial: inputs an attacker or a broken peer would send, each
//! answered with a clear error or a bounded cost, never with a dropped
//! connection, a silent misreading or memory the input chose. One test per
//! finding of issue 18 that is not tested elsewhere; loopback only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{ClientFrame, ErrorCode, EventKind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_model::{results_sent, FakeModel, Reply};
use hearth_tests::harness::{Daemon, TestHome, NO_SUMMARIES};
use hearth_tests::raw::Raw;
use std::os::unix::fs::PermissionsExt;
use tokio::net::{TcpStream, UnixStream};

const TOKEN: &str = "a-long-test-token-0123456789";

/// Connects over the Unix socket and says hello as `name`, with the owner
/// key.
async fn unix(home: &TestHome, name: &str) -> Raw<UnixStream> {
    let mut raw = Raw::connect(&home.hearth_home()).await;
    let key = format!(r#","owner_key":"{}""#, home.owner_key());
    raw.hello(name, &key).await;
    assert!(matches!(raw.answer().await, ServerFrame::Welcome { .. }));
    raw
}

/// Connects over TCP and says hello as `name` with the token.
async fn tcp(address: &str, name: &str) -> Raw<TcpStream> {
    let mut raw = Raw::connect_tcp(address).await;
    raw.hello(name, &format!(r#","token":"{TOKEN}""#)).await;
    assert!(matches!(raw.answer().await, ServerFrame::Welcome { .. }));
    raw
}

fn refused(frame: ServerFrame) -> (ErrorCode, String) {
    match frame {
        ServerFrame::Error { code, message, .. } => (code, message),
        other => panic!("expected an error, got {other:?}"),
    }
}

fn state_set(name: &str, value: &str) -> ClientFrame {
    ClientFrame::StateSet {
        name: name.to_string(),
        value: value.to_string(),
    }
}

/// Issue 18 item 9: `serde_json` keeps the last of two equal keys, so a
/// frame could say one thing to a proxy or a log reader and another to the
/// daemon. It is refused, and the connection goes on.
#[tokio::test]
async fn a_frame_with_a_key_twice_is_refused() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    let mut raw = unix(&home, "terminal").await;
    raw.text(r#"{"type":"submit","text":"hello","source":"terminal","text":"rm -rf ~"}"#)
        .await;
    let (code, message) = refused(raw.answer().await);
    assert_eq!(code, ErrorCode::BadFrame);
    assert!(message.contains("`text` is given twice"), "{message}");
    assert!(home.history().await.is_empty(), "nothing was logged");
    assert!(matches!(
        raw.request(&ClientFrame::Status).await,
        ServerFrame::Status(_)
    ));
}

/// Issue 18 item 9: `history` with `before` past every id (the largest id
/// a client can say) is the newest page, not an empty one.
#[tokio::test]
async fn history_before_the_largest_id_is_the_newest_page() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let frame = ClientFrame::Note {
            text: format!("note {n}"),
            source: "terminal".to_string(),
        };
        match client.request(frame).await {
            ServerFrame::Ack { id, .. } => ids.push(id),
            other => panic!("expected an ack, got {other:?}"),
        }
    }
    let page = |before: u64| ClientFrame::History {
        before: Some(before),
        limit: Some(2),
    };
    let shown = |frame: ServerFrame| match frame {
        ServerFrame::History { messages } => messages.iter().map(|m| m.id).collect::<Vec<_>>(),
        other => panic!("expected history, got {other:?}"),
    };
    for before in [u64::MAX, i64::MAX as u64 + 1, i64::MAX as u64] {
        assert_eq!(
            shown(client.request(page(before)).await),
            ids[1..],
            "{before}"
        );
    }
    assert_eq!(shown(client.request(page(ids[2])).await), ids[..2]);
}

/// Issue 18 item 9: one client cannot overwrite another's state (a
/// bridge's cursor would make it send again or skip what it owes), and a
/// bridge's states are written only over the owner's Unix socket.
#[tokio::test]
async fn a_client_cannot_overwrite_a_bridges_cursor() {
    let home = TestHome::new(bins!());
    home.write_config("[listen]\ntcp = \"127.0.0.1:0\"\n");
    let secrets = home.path().join("secrets.env");
    std::fs::write(&secrets, format!("HEARTH_TOKEN={TOKEN}\n")).unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let daemon = home.start();

    let mut bridge = unix(&home, "telegram").await;
    assert!(matches!(
        bridge.request(&state_set("telegram.cursor", "41")).await,
        ServerFrame::State { .. }
    ));
    let mut other = unix(&home, "terminal").await;
    let (code, message) = refused(other.request(&state_set("telegram.cursor", "0")).await);
    assert_eq!(code, ErrorCode::Refused);
    assert!(
        message.contains("belongs to the client `telegram`"),
        "{message}"
    );
    // Its own states it may write.
    assert!(matches!(
        other.request(&state_set("terminal.draft", "hi")).await,
        ServerFrame::State { .. }
    ));

    // Over TCP, not even a client that calls itself `telegram`.
    let address = tcp_address(&daemon);
    let mut remote = tcp(&address, "telegram").await;
    let (code, message) = refused(remote.request(&state_set("telegram.cursor", "0")).await);
    assert_eq!(code, ErrorCode::Refused);
    assert!(message.contains("only over the Unix socket"), "{message}");
    assert_eq!(
        home.stored_state("telegram.cursor").await.as_deref(),
        Some("41")
    );
}

/// The TCP address the daemon said it listens on.
fn tcp_address(daemon: &Daemon) -> String {
    let log = daemon.log_text();
    let line = log
        .lines()
        .find(|line| line.contains("listening on tcp "))
        .expect("a TCP listener");
    let at = line.find("listening on tcp ").unwrap() + "listening on tcp ".len();
    line[at..].split_whitespace().next().unwrap().to_string()
}

/// Issue 18 item 9: on a full disk (SQLite's `max_page_count` through the
/// log's fault hook) `state_set`, `schedule_add` and `note` answer a
/// `storage` error; the connection stays and answers the next frame.
#[tokio::test]
async fn a_full_disk_is_an_error_answer_not_a_dropped_connection() {
    let home = TestHome::new(bins!());
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let _ = client
        .submit("before the disk fills", "terminal", None)
        .await;
    assert!(daemon.stop());
    let pages: i64 = rusqlite::Connection::open(home.path().join("hearth.db"))
        .unwrap()
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    let cap = (pages + 2).to_string();
    let _daemon = Daemon::start_with_env(
        &home,
        &[(hearth_daemon::log::TEST_MAX_PAGES_ENV, cap.as_str())],
    );
    let mut raw = unix(&home, "terminal").await;
    let big = "a value that does not fit on the disk ".repeat(4000);
    let frames = [
        state_set("terminal.big", &big),
        ClientFrame::ScheduleAdd {
            when: "2099-01-01 09:00".to_string(),
            text: big.clone(),
        },
        ClientFrame::Note {
            text: big.clone(),
            source: "terminal".to_string(),
        },
    ];
    for frame in &frames {
        let (code, message) = refused(raw.request(frame).await);
        assert_eq!(code, ErrorCode::Storage, "{message}");
        assert!(message.contains("not"), "{message}");
    }
    assert!(matches!(
        raw.request(&ClientFrame::Status).await,
        ServerFrame::Status(_)
    ));
}

/// What a hostile model server answers every request with.
#[derive(Clone, Copy)]
enum Hostile {
    /// A 200 JSON body of 17 MiB, chunked (no length to refuse it by).
    HugeJson,
    /// An event stream whose first line never ends before 17 MiB.
    HugeLine,
    /// An event stream of nothing but keep-alive comments, forever.
    KeepAlives,
}

/// A model server on 127.0.0.1 that reads each request's head and body and
/// answers as `hostile` says, in HTTP/1.1 as a provider would.
async fn hostile_model(hostile: Hostile) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                // The request: its head, then as many body bytes as it says.
                let mut request = Vec::new();
                let mut buffer = [0u8; 65536];
                let body_start = loop {
                    let Ok(read) = stream.read(&mut buffer).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    request.extend_from_slice(&buffer[..read]);
                    if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        break end + 4;
                    }
                };
                let head = String::from_utf8_lossy(&request[..body_start]).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:"))
                    .and_then(|n| n.trim().parse().ok())
                    .unwrap_or(0);
                while request.len() < body_start + length {
                    let Ok(read) = stream.read(&mut buffer).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    request.extend_from_slice(&buffer[..read]);
                }
                let chunk = |bytes: &[u8]| {
                    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
                    out.extend_from_slice(bytes);
                    out.extend_from_slice(b"\r\n");
                    out
                };
                let kind = match hostile {
                    Hostile::HugeJson => "application/json",
                    Hostile::HugeLine | Hostile::KeepAlives => "text/event-stream",
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\ntransfer-encoding: chunked\r\n\r\n"
                );
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                match hostile {
                    Hostile::HugeJson | Hostile::HugeLine => {
                        let start: &[u8] = match hostile {
                            Hostile::HugeJson => {
                                br#"{"choices":[{"message":{"role":"assistant","content":""#
                            }
                            _ => b"data: ",
                        };
                        if stream.write_all(&chunk(start)).await.is_err() {
                            return;
                        }
                        let filler = chunk(&[b'x'; 1 << 20]);
                        for _ in 0..17 {
                            if stream.write_all(&filler).await.is_err() {
                                return;
                            }
                        }
                        let end: &[u8] = match hostile {
                            Hostile::HugeJson => br#""},"finish_reason":"stop"}]}"#,
                            _ => b"\n\n",
                        };
                        let _ = stream.write_all(&chunk(end)).await;
                        let _ = stream.write_all(b"0\r\n\r\n").await;
                    }
                    Hostile::KeepAlives => loop {
                        if stream.write_all(&chunk(b": keep-alive\n\n")).await.is_err() {
                            return;
                        }
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    },
                }
            });
        }
    });
    format!("http://{address}/v1")
}

/// Starts hearthd with `[model]` at a hostile server; the turn's error.
async fn turn_against(hostile: Hostile, stream: bool) -> String {
    let base_url = hostile_model(hostile).await;
    let home = TestHome::new(bins!());
    // One second without progress is the no-progress timer's test setting.
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"m\"\nbase_url = \"{base_url}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\nmax_retries = 0\ntimeout_secs = 1\nstream = {stream}\n"
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let (id, _) = client.submit("hello", "terminal", None).await;
    let ending = client
        .wait_for(|e| {
            (e.kind == EventKind::Reply || e.kind == EventKind::Error) && e.answers.contains(&id)
        })
        .await;
    assert_eq!(ending.kind, EventKind::Error, "{ending:?}");
    ending.text.unwrap_or_default()
}

/// Issue 18 item 5: a 17 MiB JSON answer is refused at 16 MiB, not read
/// whole and logged as a reply.
#[tokio::test]
async fn a_huge_json_answer_is_refused_at_its_cap() {
    let said = turn_against(Hostile::HugeJson, false).await;
    assert!(said.contains("larger than 16 MiB"), "{said}");
}

/// Issue 18 item 5: an event-stream line that never ends is refused at
/// 16 MiB rather than buffered whole.
#[tokio::test]
async fn a_huge_event_stream_line_is_refused_at_its_cap() {
    let said = turn_against(Hostile::HugeLine, true).await;
    assert!(said.contains("longer than 16777216 bytes"), "{said}");
}

/// Issue 18 item 5: keep-alive comments are no progress: a server that
/// sends only those times out like a silent one (here after one second).
#[tokio::test]
async fn keep_alives_alone_do_not_hold_off_the_no_progress_timer() {
    let said = turn_against(Hostile::KeepAlives, true).await;
    assert!(
        said.contains("no progress from the model for 1 seconds"),
        "{said}"
    );
}

/// A home whose `[model]` is the fake model, with no summaries to write.
fn home_with(model: &FakeModel) -> TestHome {
    let home = TestHome::new(bins!());
    let layout = home.layout_file();
    std::fs::write(&layout, NO_SUMMARIES).unwrap();
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\nmax_retries = 0\n\n[agent]\nlayout = \"{}\"\n",
        model.base_url(),
        layout.display()
    ));
    home
}

/// Issue 18 item 5: a call's arguments are clipped in the log like its
/// output (a 200,000-character path), and what is logged is still JSON.
#[tokio::test]
async fn a_tool_calls_huge_arguments_are_logged_clipped() {
    let model = FakeModel::start().await;
    let home = home_with(&model);
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let arguments = format!(r#"{{"path": "{}"}}"#, "p".repeat(200_000));
    model.push(Reply::tool_call("read_file", arguments));
    model.push(Reply::text("done"));
    let (id, _) = client.submit("read it", "terminal", None).await;
    client.reply_to(id).await;
    let log = home.history().await;
    let tool = log
        .iter()
        .find(|m| m.kind == hearth_protocol::Kind::Tool)
        .expect("a tool message");
    assert!(
        tool.text.len() < 100_000,
        "{} bytes logged",
        tool.text.len()
    );
    assert!(
        tool.text.contains("characters clipped"),
        "{:.300}",
        tool.text
    );
}

/// Issue 18 item 5: a client that never reads holds a bounded number of
/// bytes of the daemon's memory, whatever is sent meanwhile (here 6 MiB of
/// notes); once it reads, it is caught up from the log, every message once
/// and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_holds_a_bounded_queue() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    let mut silent = unix(&home, "silent").await;
    let mut client = home.connect("terminal", None).await;
    // Small enough that a note and its event fit the socket's buffers at once.
    let text = "n".repeat(96 * 1024);
    let mut last = 0;
    for _ in 0..64 {
        let frame = ClientFrame::Note {
            text: text.clone(),
            source: "terminal".to_string(),
        };
        match client.request(frame).await {
            ServerFrame::Ack { id, .. } => last = id,
            other => panic!("expected an ack, got {other:?}"),
        }
        client.events.clear();
    }
    let queued = match client.request(ClientFrame::Status).await {
        ServerFrame::Status(status) => status.queued_bytes.expect("queued bytes reported"),
        other => panic!("expected status, got {other:?}"),
    };
    let bound = hearth_daemon::server::MAX_QUEUED_BYTES as u64 + (1 << 20);
    assert!(queued <= bound, "{queued} bytes queued");
    // It reads now: every note, once and in order.
    let mut ids = Vec::new();
    while ids.last() != Some(&last) {
        let next = silent.next_frame().await;
        if let ServerFrame::Event(event) = next.expect("the connection is open") {
            if let (Some(id), Some(_)) = (event.id, event.kind.message_kind()) {
                ids.push(id);
            }
        }
    }
    assert_eq!(ids, (0..=last).collect::<Vec<_>>());
}

/// The peak resident memory of a process (`VmHWM`), in bytes.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

/// Issue 18 item 5: `read_file` with `limit: 1` on a file of one 48 MiB
/// line reads a bounded part of it: the daemon's peak memory grows far less
/// than the file, and the result says where the read stopped.
#[tokio::test]
async fn read_file_of_one_huge_line_reads_a_bounded_part() {
    let model = FakeModel::start().await;
    let home = home_with(&model);
    let work = home.work_dir();
    std::fs::create_dir_all(&work).unwrap();
    {
        use std::io::Write;
        let mut file = std::fs::File::create(work.join("huge.txt")).unwrap();
        let block = vec![b'a'; 1 << 20];
        for _ in 0..48 {
            file.write_all(&block).unwrap();
        }
    }
    let daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let before = peak_memory(daemon.pid());
    model.push(Reply::tool_call(
        "read_file",
        r#"{"path": "huge.txt", "limit": 1}"#,
    ));
    model.push(Reply::text("done"));
    let (id, _) = client.submit("read it", "terminal", None).await;
    client.reply_to(id).await;
    let sent = results_sent(&model, 1);
    let said = &sent[0][sent[0].len().saturating_sub(300)..];
    assert!(said.contains("one read goes through 32 MiB"), "{said}");
    let grown = peak_memory(daemon.pid()).saturating_sub(before);
    assert!(grown < 16 << 20, "the peak grew by {grown} bytes");
    std::fs::remove_file(work.join("huge.txt")).unwrap();
}
