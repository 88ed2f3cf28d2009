//! Just enough HTTP/1.1 for the fake model: one request per connection,
//! read whole (`Content-Length` bodies only); every response says
//! `Connection: close`, and streamed bodies end when the connection does.

use std::collections::BTreeMap;
use std::io;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Larger request heads are refused: a client gone wrong, not a model call.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Larger request bodies are refused.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// Accepts connections on `listener` until the task is aborted, serving
/// each on a task of its own with `serve`.
pub(crate) async fn accept_each<F, Served>(listener: TcpListener, serve: F)
where
    F: Fn(TcpStream) -> Served,
    Served: std::future::Future<Output = ()> + Send + 'static,
{
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                // An accept error concerns that one connection attempt only.
                if let Ok((stream, _)) = accepted {
                    connections.spawn(serve(stream));
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// One request as read off the connection.
pub(crate) struct Request {
    pub method: String,
    /// The request target without its query string.
    pub path: String,
    /// Header names lowercased; repeated headers joined with `", "`.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

/// Why no request could be read.
pub(crate) enum RequestError {
    /// The client went away, or the connection failed, before a whole
    /// request arrived: there is no one to answer.
    Disconnected,
    /// The bytes are not a request the fake model understands; answer 400
    /// with this message.
    Malformed(String),
}

impl From<io::Error> for RequestError {
    fn from(_: io::Error) -> RequestError {
        RequestError::Disconnected
    }
}

/// Reads one request: the head up to the blank line, then `Content-Length`
/// bytes of body.
pub(crate) async fn read_request(stream: &mut TcpStream) -> Result<Request, RequestError> {
    let mut buffer = Vec::new();
    let head_end = loop {
        if let Some(at) = find(&buffer, b"\r\n\r\n") {
            break at;
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err(RequestError::Malformed(format!(
                "request head over {MAX_HEAD_BYTES} bytes"
            )));
        }
        let mut chunk = [0u8; 8192];
        let read = stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(RequestError::Disconnected);
        }
        buffer.extend_from_slice(&chunk[..read]);
    };

    let mut body = buffer.split_off(head_end + 4);
    let head = std::str::from_utf8(&buffer[..head_end])
        .map_err(|_| RequestError::Malformed("request head is not UTF-8".to_string()))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(_version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(RequestError::Malformed(format!(
            "bad request line {request_line:?}"
        )));
    };
    let mut headers = BTreeMap::<String, String>::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err(RequestError::Malformed(format!("bad header line {line:?}")));
        };
        let value = value.trim();
        headers
            .entry(name.trim().to_ascii_lowercase())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(value);
            })
            .or_insert_with(|| value.to_string());
    }

    if headers
        .get("transfer-encoding")
        .is_some_and(|coding| coding.to_ascii_lowercase().contains("chunked"))
    {
        return Err(RequestError::Malformed(
            "chunked request bodies are not supported; send Content-Length".to_string(),
        ));
    }
    let length = match headers.get("content-length") {
        None => 0,
        Some(length) => length
            .parse::<usize>()
            .map_err(|_| RequestError::Malformed(format!("bad Content-Length {length:?}")))?,
    };
    if length > MAX_BODY_BYTES {
        return Err(RequestError::Malformed(format!(
            "request body of {length} bytes is over {MAX_BODY_BYTES}"
        )));
    }
    if body.len() < length {
        let already = body.len();
        body.resize(length, 0);
        stream.read_exact(&mut body[already..]).await?;
    }
    body.truncate(length);

    Ok(Request {
        method: method.to_string(),
        path: target.split('?').next().unwrap_or_default().to_string(),
        headers,
        body,
    })
}

/// Writes a whole response with this status and body, then closes the
/// sending side.
pub(crate) async fn write_response(
    stream: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n",
        reason = reason(status),
        length = body.len(),
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body).await?;
    stream.shutdown().await
}

/// Writes a whole JSON response.
pub(crate) async fn write_json(
    stream: &mut TcpStream,
    status: u16,
    body: &Value,
) -> io::Result<()> {
    write_response(
        stream,
        status,
        "application/json",
        body.to_string().as_bytes(),
    )
    .await
}

/// Writes the head of a 200 response whose body runs until the connection
/// closes; the caller then writes the body.
pub(crate) async fn write_stream_head(
    stream: &mut TcpStream,
    content_type: &str,
) -> io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await
}

/// Resolves when the client closes the connection (or it fails). Anything
/// the client sends meanwhile is discarded.
pub(crate) async fn client_gone(stream: &mut TcpStream) {
    let mut discard = [0u8; 1024];
    while let Ok(read) = stream.read(&mut discard).await {
        if read == 0 {
            return;
        }
    }
}

/// The parts of a `multipart/form-data` request, in order: each part's
/// head (its header lines) and its bytes. None when the request is not one.
pub(crate) fn form_parts(request: &Request) -> Option<Vec<(String, Vec<u8>)>> {
    let content_type = request.headers.get("content-type")?;
    let boundary = content_type.split("boundary=").nth(1)?.trim_matches('"');
    let delimiter = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut rest = request.body.as_slice();
    while let Some(start) = find(rest, delimiter.as_bytes()) {
        rest = &rest[start + delimiter.len()..];
        if rest.starts_with(b"--") {
            break;
        }
        let part = rest.strip_prefix(b"\r\n").unwrap_or(rest);
        let head_end = find(part, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&part[..head_end]).to_string();
        let content = &part[head_end + 4..];
        let end = find(content, format!("\r\n{delimiter}").as_bytes()).unwrap_or(content.len());
        parts.push((head, content[..end].to_vec()));
        rest = &content[end..];
    }
    Some(parts)
}

/// The value of a part's header line `name: value`.
pub(crate) fn part_header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The reason phrase for a status; empty (which HTTP/1.1 allows) for codes
/// without a common one.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}
