//! Adversarial: inputs an attacker or a broken peer would send, each
//! answered with a clear error or a bounded cost, never with a dropped
//! connection, a silent misreading or memory the input chose. One test per
//! finding of issue 18 that is not tested elsewhere; loopback only.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures_util::{SinkExt, StreamExt};
use hearth_protocol::{ClientFrame, ErrorCode, ServerFrame, PROTOCOL_VERSION};
use hearth_tests::bins;
use hearth_tests::harness::{Daemon, TestHome, DEADLINE};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tokio::net::{TcpStream, UnixStream};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_tungstenite::WebSocketStream;

const TOKEN: &str = "a-long-test-token-0123456789";

/// A bare WebSocket client that sends text as given.
struct Raw<S>(WebSocketStream<S>);

impl Raw<UnixStream> {
    /// Connects over the Unix socket and says hello as `name`.
    async fn unix(socket: &Path, name: &str) -> Raw<UnixStream> {
        let stream = UnixStream::connect(socket).await.expect("connected");
        let (socket, _) = tokio_tungstenite::client_async("ws://hearthd/", stream)
            .await
            .expect("a WebSocket");
        let mut raw = Raw(socket);
        raw.hello(name, None).await;
        raw
    }
}

impl Raw<TcpStream> {
    /// Connects over TCP and says hello as `name` with the token.
    async fn tcp(address: &str, name: &str) -> Raw<TcpStream> {
        let stream = TcpStream::connect(address).await.expect("connected");
        let (socket, _) = tokio_tungstenite::client_async(format!("ws://{address}/"), stream)
            .await
            .expect("a WebSocket");
        let mut raw = Raw(socket);
        raw.hello(name, Some(TOKEN)).await;
        raw
    }
}

impl<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin> Raw<S> {
    async fn hello(&mut self, name: &str, token: Option<&str>) {
        let token = token.map_or(String::new(), |token| format!(r#","token":"{token}""#));
        self.text(&format!(
            r#"{{"type":"hello","client":"{name}","version":{PROTOCOL_VERSION}{token}}}"#
        ))
        .await;
        assert!(matches!(self.answer().await, ServerFrame::Welcome { .. }));
    }

    async fn text(&mut self, text: &str) {
        self.0
            .send(WsMessage::Text(text.to_string().into()))
            .await
            .expect("sent");
    }

    /// The next frame that is not an event; panics if the daemon closed
    /// the connection.
    async fn answer(&mut self) -> ServerFrame {
        loop {
            let next = tokio::time::timeout(DEADLINE, self.0.next())
                .await
                .expect("a frame in time");
            match next {
                Some(Ok(WsMessage::Text(text))) => {
                    match ServerFrame::decode(&text).expect("a readable frame") {
                        ServerFrame::Event(_) => continue,
                        frame => return frame,
                    }
                }
                Some(Ok(_)) => continue,
                other => panic!("the daemon closed the connection: {other:?}"),
            }
        }
    }

    async fn request(&mut self, frame: &ClientFrame) -> ServerFrame {
        self.text(&frame.encode()).await;
        self.answer().await
    }
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
    let mut raw = Raw::unix(&home.socket(), "terminal").await;
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

    let mut bridge = Raw::unix(&home.socket(), "telegram").await;
    assert!(matches!(
        bridge.request(&state_set("telegram.cursor", "41")).await,
        ServerFrame::State { .. }
    ));
    let mut other = Raw::unix(&home.socket(), "terminal").await;
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
    let mut remote = Raw::tcp(&address, "telegram").await;
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
    let mut raw = Raw::unix(&home.socket(), "terminal").await;
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
