//! A fake search provider on `127.0.0.1:0`, speaking the two JSON APIs
//! `web_search` uses:
//!
//! - SearXNG: `GET /search?q=…&format=json` answers `{"query", "results":
//!   [{"url", "title", "content", "engine"}], …}`; without `format=json`
//!   it answers 403, as an instance does for a format its settings do not
//!   allow.
//! - Brave Search: `GET /res/v1/web/search?q=…&count=N` with an
//!   `X-Subscription-Token` header answers `{"type": "search", "web":
//!   {"type": "search", "results": [{"title", "url", "description"}]}}`
//!   (descriptions with `<strong>` marks, as Brave sends them); a missing or
//!   wrong token gets 401.
//!
//! Each request is kept ([`FakeSearch::received`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub path: String,
    /// The query's parameters, decoded.
    pub query: BTreeMap<String, String>,
    /// Header names lowercased.
    pub headers: BTreeMap<String, String>,
}

/// A search provider serving `results` (title, URL, snippet) to every query.
pub struct FakeSearch {
    addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl Drop for FakeSearch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeSearch {
    /// Serves `results` to each query; Brave's endpoint wants `token`.
    pub async fn start(results: Vec<(String, String, String)>, token: &str) -> FakeSearch {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("address");
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        let token = token.to_string();
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let head = crate::harness::read_request_head(&mut stream).await;
                let request = parse(&String::from_utf8_lossy(&head));
                let (status, body) = answer(&request, &results, &token);
                kept.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(request);
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            }
        });
        FakeSearch {
            addr,
            received,
            task,
        }
    }

    /// `http://127.0.0.1:PORT`: SearXNG's instance address.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Brave's endpoint on this server.
    pub fn brave_url(&self) -> String {
        format!("{}/res/v1/web/search", self.base_url())
    }

    pub fn received(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn parse(head: &str) -> Received {
    let mut lines = head.split("\r\n");
    let target = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(key, value)| (decode(key), decode(value)))
        .collect();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    Received {
        path: path.to_string(),
        query,
        headers,
    }
}

/// `application/x-www-form-urlencoded` decoding: `+` and `%XX`.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn answer(
    request: &Received,
    results: &[(String, String, String)],
    token: &str,
) -> (String, String) {
    let query = request.query.get("q").cloned().unwrap_or_default();
    match request.path.as_str() {
        "/search" if request.query.get("format").map(String::as_str) == Some("json") => {
            let results: Vec<serde_json::Value> = results
                .iter()
                .map(|(title, url, snippet)| {
                    serde_json::json!({"url": url, "title": title, "content": snippet, "engine": "fake", "score": 1.0})
                })
                .collect();
            let body = serde_json::json!({"query": query, "number_of_results": results.len(), "results": results, "answers": [], "suggestions": []});
            ("200 OK".into(), body.to_string())
        }
        "/search" => ("403 Forbidden".into(), String::new()),
        "/res/v1/web/search" if request.headers.get("x-subscription-token").map(String::as_str) == Some(token) => {
            let count: usize = request
                .query
                .get("count")
                .and_then(|count| count.parse().ok())
                .unwrap_or(20);
            let results: Vec<serde_json::Value> = results
                .iter()
                .take(count)
                .map(|(title, url, snippet)| {
                    serde_json::json!({"title": title, "url": url, "description": format!("<strong>{snippet}</strong>"), "type": "search_result"})
                })
                .collect();
            let body = serde_json::json!({"type": "search", "query": {"original": query}, "web": {"type": "search", "results": results}});
            ("200 OK".into(), body.to_string())
        }
        "/res/v1/web/search" => (
            "401 Unauthorized".into(),
            serde_json::json!({"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID", "status": 401}}).to_string(),
        ),
        _ => ("404 Not Found".into(), String::new()),
    }
}
