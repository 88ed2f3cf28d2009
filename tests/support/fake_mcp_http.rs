//! A small MCP server at a streamable HTTP address on `127.0.0.1:0`, for
//! the tests of `[[mcp]]` tables with a `url` and `headers`.
//!
//! It speaks the transport as the MCP specification (2025-06-18) writes
//! it: one endpoint (`/mcp`); a client POSTs each JSON-RPC message with
//! `Content-Type: application/json` and an `Accept` naming both
//! `application/json` and `text/event-stream` (else 415 or 406); the
//! answer to `initialize` carries an `Mcp-Session-Id`, which every later
//! request must send (400 without it, 404 with another); a notification
//! or a response is answered 202 with no body; a request is answered with
//! JSON, except `tools/call`, answered as an SSE stream of one `message`
//! event, so both of the client's ways of reading an answer are used. A
//! GET (the server's own stream) is answered 405, which the specification
//! allows; a DELETE ends the session.
//!
//! Its one tool, `echo`, says its `text` back (its description can be
//! chosen, [`FakeMcpHttp::start_describing`]). Every request's method,
//! headers (names in lower case) and JSON-RPC method are recorded, so a
//! test can check what hearthd sent.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The session id the server hands out.
pub const SESSION: &str = "fake-session-7c1d";

/// One HTTP request the server received.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `POST`, `GET` or `DELETE`.
    pub method: String,
    /// Header names in lower case.
    pub headers: BTreeMap<String, String>,
    /// The JSON-RPC method of a POST (`initialize`, `tools/list`, …);
    /// none for a response or another verb.
    pub rpc: Option<String>,
}

/// The running server; it stops when dropped.
///
/// It runs on a thread and runtime of its own: hearthd lists its tools
/// before it starts listening, while the test's thread waits for that.
pub struct FakeMcpHttp {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: watch::Sender<bool>,
}

impl FakeMcpHttp {
    pub fn start() -> FakeMcpHttp {
        FakeMcpHttp::start_describing("Says the text back.")
    }

    /// A server whose `echo` tool has this description (words a server
    /// could use to steer the agent).
    pub fn start_describing(description: &str) -> FakeMcpHttp {
        let description = Arc::new(description.to_string());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        let addr = listener.local_addr().expect("its address");
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let (stop, mut stopped) = watch::channel(false);
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the fake MCP server");
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener).expect("a tokio listener");
                loop {
                    tokio::select! {
                        accepted = listener.accept() => match accepted {
                            Ok((stream, _)) => drop(tokio::spawn(serve(stream, record.clone(), description.clone()))),
                            Err(_) => return,
                        },
                        _ = stopped.changed() => return,
                    }
                }
            });
        });
        FakeMcpHttp { addr, seen, stop }
    }

    /// The endpoint, as a `[[mcp]]` table's `url`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for FakeMcpHttp {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// An answer: status, extra headers, body.
struct Answer {
    status: &'static str,
    headers: Vec<(&'static str, String)>,
    body: Vec<u8>,
    /// An SSE stream: no length, the connection closes after it.
    stream: bool,
}

impl Answer {
    fn empty(status: &'static str) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            stream: false,
        }
    }

    fn json(value: &Value) -> Answer {
        Answer {
            status: "200 OK",
            headers: vec![("Content-Type", "application/json".into())],
            body: value.to_string().into_bytes(),
            stream: false,
        }
    }

    fn event(value: &Value) -> Answer {
        Answer {
            status: "200 OK",
            headers: vec![("Content-Type", "text/event-stream".into())],
            body: format!("event: message\ndata: {value}\n\n").into_bytes(),
            stream: true,
        }
    }
}

/// Serves one connection's requests (kept alive) until it closes.
async fn serve(stream: TcpStream, seen: Arc<Mutex<Vec<Seen>>>, description: Arc<String>) {
    let mut stream = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if stream.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let path = parts.next().unwrap_or_default().to_string();
        let mut headers = BTreeMap::new();
        loop {
            let mut header = String::new();
            if stream.read_line(&mut header).await.unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
            }
        }
        let length = headers
            .get("content-length")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if stream.read_exact(&mut body).await.is_err() {
            return;
        }
        let message: Option<Value> = serde_json::from_slice(&body).ok();
        let rpc = message
            .as_ref()
            .and_then(|m| m["method"].as_str())
            .map(str::to_string);
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Seen {
                method: method.clone(),
                headers: headers.clone(),
                rpc,
            });
        let answer = if path != "/mcp" {
            Answer::empty("404 Not Found")
        } else {
            answer(&method, &headers, message, &description)
        };
        let mut head = format!("HTTP/1.1 {}\r\n", answer.status);
        for (name, value) in &answer.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if answer.stream {
            head.push_str("Cache-Control: no-cache\r\nConnection: close\r\n\r\n");
        } else {
            head.push_str(&format!("Content-Length: {}\r\n\r\n", answer.body.len()));
        }
        let writer = stream.get_mut();
        if writer.write_all(head.as_bytes()).await.is_err()
            || writer.write_all(&answer.body).await.is_err()
            || writer.flush().await.is_err()
        {
            return;
        }
        if answer.stream {
            let _ = writer.shutdown().await;
            return;
        }
    }
}

/// The answer to one request at `/mcp`.
fn answer(
    method: &str,
    headers: &BTreeMap<String, String>,
    message: Option<Value>,
    description: &str,
) -> Answer {
    let session = headers.get("mcp-session-id").map(String::as_str);
    match method {
        "GET" => return Answer::empty("405 Method Not Allowed"),
        "DELETE" if session == Some(SESSION) => return Answer::empty("200 OK"),
        "DELETE" => return Answer::empty("404 Not Found"),
        "POST" => {}
        _ => return Answer::empty("405 Method Not Allowed"),
    }
    let header = |name: &str| headers.get(name).map(String::as_str).unwrap_or_default();
    if !header("content-type").starts_with("application/json") {
        return Answer::empty("415 Unsupported Media Type");
    }
    let accept = header("accept");
    if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
        return Answer::empty("406 Not Acceptable");
    }
    let Some(message) = message.filter(Value::is_object) else {
        return Answer::json(&json!({
            "jsonrpc": "2.0", "id": null,
            "error": { "code": -32700, "message": "not one JSON-RPC message" }
        }));
    };
    let id = message.get("id").cloned();
    let method = message["method"].as_str().unwrap_or_default();
    if method == "initialize" {
        let mut answer = Answer::json(&json!({
            "jsonrpc": "2.0", "id": id,
            "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "fake-http", "version": "1.0.0" }
            }
        }));
        answer.headers.push(("Mcp-Session-Id", SESSION.to_string()));
        return answer;
    }
    match session {
        None => return Answer::empty("400 Bad Request"),
        Some(other) if other != SESSION => return Answer::empty("404 Not Found"),
        Some(_) => {}
    }
    // A notification, or a response to the server.
    let Some(id) = id.filter(|_| !method.is_empty()) else {
        return Answer::empty("202 Accepted");
    };
    match method {
        "tools/list" => Answer::json(&json!({
            "jsonrpc": "2.0", "id": id,
            "result": { "tools": [{
                "name": "echo",
                "description": description,
                "inputSchema": {
                    "type": "object",
                    "properties": { "text": { "type": "string" } },
                    "required": ["text"]
                },
                "annotations": { "readOnlyHint": true }
            }]}
        })),
        "tools/call" if message["params"]["name"] == "echo" => Answer::event(&json!({
            "jsonrpc": "2.0", "id": id,
            "result": { "content": [{
                "type": "text",
                "text": format!("echo: {}", message["params"]["arguments"]["text"].as_str().unwrap_or_default())
            }]}
        })),
        "ping" => Answer::json(&json!({ "jsonrpc": "2.0", "id": id, "result": {} })),
        _ => Answer::json(&json!({
            "jsonrpc": "2.0", "id": id,
            "error": { "code": -32601, "message": format!("no method {method}") }
        })),
    }
}
