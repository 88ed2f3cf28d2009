//! A fake OpenAI `/v1/audio/transcriptions` endpoint on `127.0.0.1:0`.
//!
//! It reads each request's `multipart/form-data` body and checks it
//! against OpenAI's documented fields: `file` (with a file name and a
//! content type) and `model` are required; `language`, `prompt`,
//! `response_format` (`json`, `text`, `srt`, `verbose_json`, `vtt`) and
//! `temperature` are the optional ones kept here; any other field is
//! refused with 400 as OpenAI refuses an unrecognized argument. It answers
//! in OpenAI's JSON shape, `{"text": …, "usage": {"type": "duration",
//! "seconds": …}}`, or as scripted: a failure with a status, or a stall
//! (the connection held open without an answer until the server is
//! dropped or [`FakeTranscription::release`] is called).

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The fields OpenAI documents for a transcription request (of those a
/// client of whisper-1 or gpt-4o-transcribe sends).
pub const FIELDS: [&str; 6] = [
    "file",
    "model",
    "language",
    "prompt",
    "response_format",
    "temperature",
];

/// What the next request gets.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `{"text": …}` with `usage.seconds`.
    Text { text: String, seconds: f64 },
    /// An OpenAI error body with this status.
    Fail(u16),
    /// No answer: the connection is held until released.
    Stall,
}

impl Answer {
    /// A transcript of `text` for a note `seconds` long.
    pub fn text(text: &str, seconds: f64) -> Answer {
        Answer::Text {
            text: text.into(),
            seconds,
        }
    }
}

/// One request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub path: String,
    pub authorization: Option<String>,
    /// Text fields by name.
    pub fields: BTreeMap<String, String>,
    pub file_name: String,
    pub file_type: String,
    pub file: Vec<u8>,
    /// Why the request was refused with 400, if it was.
    pub refused: Option<String>,
}

#[derive(Default)]
struct State {
    script: VecDeque<Answer>,
    /// When the script is empty.
    default: Option<Answer>,
    received: Vec<Received>,
}

struct Shared {
    state: Mutex<State>,
    arrived: watch::Sender<usize>,
    /// Once true, stalled requests are answered 503.
    released: watch::Sender<bool>,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The server; it stops when dropped.
pub struct FakeTranscription {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
}

impl Drop for FakeTranscription {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl FakeTranscription {
    pub async fn start() -> FakeTranscription {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            arrived: watch::Sender::new(0),
            released: watch::Sender::new(false),
        });
        let serving = shared.clone();
        let accept = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                connections.spawn(serve(stream, serving.clone()));
            }
        });
        FakeTranscription {
            addr,
            shared,
            accept,
        }
    }

    /// The `base_url` for `[transcription]`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn push(&self, answer: Answer) {
        self.shared.state().script.push_back(answer);
    }

    pub fn set_default(&self, answer: Answer) {
        self.shared.state().default = Some(answer);
    }

    /// Lets every stalled request go, those waiting and any to come
    /// (answered 503).
    pub fn release(&self) {
        self.shared.released.send_replace(true);
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.state().received.clone()
    }

    /// Waits until `n` requests have come.
    pub async fn wait_for(&self, n: usize) -> Vec<Received> {
        let mut arrived = self.shared.arrived.subscribe();
        let waited = tokio::time::timeout(
            crate::harness::DEADLINE,
            arrived.wait_for(|count| *count >= n),
        )
        .await;
        assert!(waited.is_ok(), "{n} transcription requests did not come");
        self.received()
    }
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    let Some((head, body)) = read_request(&mut stream).await else {
        return;
    };
    let mut lines = head.lines();
    let path = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .unwrap_or_default()
        .to_string();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let mut received = parse(&path, &headers, &body);
    let answer = {
        let mut state = shared.state();
        let answer = match &received.refused {
            Some(_) => Answer::Fail(400),
            None => state
                .script
                .pop_front()
                .or_else(|| state.default.clone())
                .unwrap_or(Answer::Text {
                    text: "hello".into(),
                    seconds: 1.0,
                }),
        };
        if answer == Answer::Fail(400) && received.refused.is_none() {
            received.refused = Some("scripted".into());
        }
        state.received.push(received.clone());
        answer
    };
    shared.arrived.send_modify(|count| *count += 1);
    let (status, body) = match answer {
        Answer::Text { text, seconds } => (
            200,
            serde_json::json!({
                "text": text,
                "usage": {"type": "duration", "seconds": seconds}
            })
            .to_string(),
        ),
        Answer::Fail(status) => (
            status,
            serde_json::json!({"error": {
                "message": received.refused.unwrap_or_else(|| "the server had an error".into()),
                "type": "server_error", "param": null, "code": null
            }})
            .to_string(),
        ),
        Answer::Stall => {
            let mut released = shared.released.subscribe();
            let _ = released.wait_for(|released| *released).await;
            (503, r#"{"error":{"message":"released"}}"#.to_string())
        }
    };
    let response = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The request's head and its body (by `Content-Length`).
async fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
    let length: usize = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.trim().parse().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    while body.len() < length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Some((head, body))
}

/// The multipart body's parts, checked against OpenAI's fields.
fn parse(path: &str, headers: &BTreeMap<String, String>, body: &[u8]) -> Received {
    let mut received = Received {
        path: path.to_string(),
        authorization: headers.get("authorization").cloned(),
        fields: BTreeMap::new(),
        file_name: String::new(),
        file_type: String::new(),
        file: Vec::new(),
        refused: None,
    };
    let refuse = |received: &mut Received, why: String| {
        received.refused.get_or_insert(why);
    };
    if path != "/v1/audio/transcriptions" {
        refuse(&mut received, format!("unknown path {path}"));
    }
    let content_type = headers.get("content-type").cloned().unwrap_or_default();
    let Some(boundary) = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .map(str::to_string)
    else {
        refuse(
            &mut received,
            format!("not multipart/form-data: {content_type}"),
        );
        return received;
    };
    let delimiter = format!("--{boundary}").into_bytes();
    let mut parts = split(body, &delimiter);
    // The preamble before the first delimiter is empty; the epilogue starts `--`.
    if parts.first().is_some_and(|first| first.is_empty()) {
        parts.remove(0);
    }
    let mut file_seen = false;
    for part in parts {
        if part.starts_with(b"--") {
            break;
        }
        let part = part.strip_prefix(b"\r\n").unwrap_or(part);
        let part = part.strip_suffix(b"\r\n").unwrap_or(part);
        let Some(split_at) = part.windows(4).position(|w| w == b"\r\n\r\n") else {
            refuse(&mut received, "a part without headers".into());
            continue;
        };
        let part_head = String::from_utf8_lossy(&part[..split_at]).to_string();
        let content = &part[split_at + 4..];
        let name = attribute(&part_head, "name").unwrap_or_default();
        if !FIELDS.contains(&name.as_str()) {
            refuse(
                &mut received,
                format!("Unrecognized request argument supplied: {name}"),
            );
            continue;
        }
        if name == "file" {
            file_seen = true;
            received.file_name = attribute(&part_head, "filename").unwrap_or_default();
            received.file_type = part_head
                .lines()
                .filter_map(|line| line.split_once(':'))
                .find(|(header, _)| header.trim().eq_ignore_ascii_case("content-type"))
                .map(|(_, value)| value.trim().to_string())
                .unwrap_or_default();
            received.file = content.to_vec();
            if received.file_name.is_empty() {
                refuse(&mut received, "the file has no filename".into());
            }
        } else {
            received
                .fields
                .insert(name, String::from_utf8_lossy(content).to_string());
        }
    }
    if !file_seen {
        refuse(&mut received, "you must provide a file".into());
    }
    if !received.fields.contains_key("model") {
        refuse(&mut received, "you must provide a model parameter".into());
    }
    if let Some(format) = received.fields.get("response_format").cloned() {
        if !["json", "text", "srt", "verbose_json", "vtt"].contains(&format.as_str()) {
            refuse(&mut received, format!("unknown response_format {format}"));
        }
    }
    received
}

fn split<'a>(body: &'a [u8], delimiter: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    let mut rest = body;
    while let Some(at) = rest.windows(delimiter.len()).position(|w| w == delimiter) {
        parts.push(&rest[..at]);
        rest = &rest[at + delimiter.len()..];
    }
    parts.push(rest);
    parts
}

/// `name="value"` in a part's `Content-Disposition`.
fn attribute(head: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let start = head.find(&key)? + key.len();
    let end = head[start..].find('"')? + start;
    Some(head[start..end].to_string())
}

/// Stores a voice note of `duration_secs` and submits it from `source`, as
/// a bridge does; returns the message's id.
pub async fn send_voice_note(
    client: &mut crate::harness::Client,
    source: &str,
    voice: &[u8],
    duration_secs: u32,
) -> u64 {
    send_keyed_voice_note(client, source, None, voice, duration_secs)
        .await
        .0
}

/// As [`send_voice_note`], under the idempotency `key` when there is one;
/// returns the message's id and whether the daemon had it already. The
/// stored note must be audio.
pub async fn send_keyed_voice_note(
    client: &mut crate::harness::Client,
    source: &str,
    key: Option<&str>,
    voice: &[u8],
    duration_secs: u32,
) -> (u64, bool) {
    use hearth_protocol::{ClientFrame, MediaAttachment, MediaKind, ServerFrame};
    let stored = match client
        .request(ClientFrame::MediaPut {
            media_type: "audio/ogg".into(),
            data_base64: hearth_protocol::image::encode(voice),
            name: None,
            duration_secs: Some(duration_secs),
        })
        .await
    {
        ServerFrame::MediaStored(stored) => stored,
        other => panic!("expected media_stored, got {other:?}"),
    };
    assert_eq!(stored.kind, MediaKind::Audio);
    let media = vec![MediaAttachment {
        duration_secs: Some(duration_secs),
        ..stored.attachment()
    }];
    match client
        .request(ClientFrame::Submit {
            text: String::new(),
            source: source.into(),
            key: key.map(str::to_string),
            images: Vec::new(),
            person: None,
            media,
        })
        .await
    {
        ServerFrame::Ack { id, duplicate } => (id, duplicate),
        other => panic!("expected an ack, got {other:?}"),
    }
}
