//! The fake model server speaks both OpenAI wire formats and follows its
//! script. Exercised with a raw HTTP/1.1 client, so these tests depend on
//! nothing but the bytes on the wire.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response as read off the wire, up to the server closing.
#[derive(Debug)]
struct RawResponse {
    status: u16,
    /// The head's header lines, names lowercased.
    headers: Vec<(String, String)>,
    body: String,
}

impl RawResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("response body is JSON")
    }
}

/// One SSE event: its `event:` name, if any, and its `data:`.
#[derive(Debug)]
struct SseEvent {
    event: Option<String>,
    data: String,
}

/// Connects to `addr` and writes a POST of `body` to `path`, with
/// `Connection: close` so the response ends with the connection.
async fn send_post(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> TcpStream {
    let body = body.to_string();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("write");
    stream
}

/// POSTs `body` to `path` and reads the whole response, until close.
async fn post(
    model: &FakeModel,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> RawResponse {
    let mut stream = send_post(model.addr(), path, headers, body).await;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> RawResponse {
    let raw = String::from_utf8(raw.to_vec()).expect("response is UTF-8");
    let (head, body) = raw.split_once("\r\n\r\n").expect("response has a head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let headers = lines
        .map(|line| {
            let (name, value) = line.split_once(':').expect("header line");
            (name.trim().to_ascii_lowercase(), value.trim().to_string())
        })
        .collect();
    RawResponse {
        status,
        headers,
        body: body.to_string(),
    }
}

/// Splits an SSE body into events on blank lines.
fn sse_events(body: &str) -> Vec<SseEvent> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut event = SseEvent {
                event: None,
                data: String::new(),
            };
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event.event = Some(name.to_string());
                } else if let Some(data) = line.strip_prefix("data: ") {
                    event.data.push_str(data);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            event
        })
        .collect()
}

/// The text of the complete chat chunks in a raw, possibly unfinished,
/// streamed response.
fn streamed_chat_text(raw: &[u8]) -> String {
    let raw = String::from_utf8_lossy(raw);
    let Some((_head, body)) = raw.split_once("\r\n\r\n") else {
        return String::new();
    };
    let complete = &body[..body.rfind("\n\n").map_or(0, |end| end + 2)];
    sse_events(complete)
        .iter()
        .filter_map(|event| serde_json::from_str::<Value>(&event.data).ok())
        .filter_map(|chunk| {
            chunk["choices"][0]["delta"]["content"]
                .as_str()
                .map(String::from)
        })
        .collect()
}

fn chat_request(stream: bool) -> Value {
    json!({
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hello"}],
        "stream": stream,
        "stream_options": {"include_usage": true},
    })
}

fn responses_request(stream: bool) -> Value {
    json!({
        "model": "gpt-test",
        "input": [{"type": "message", "role": "user", "content": "hello"}],
        "stream": stream,
    })
}

#[tokio::test]
async fn chat_completion_answers_text_in_one_json_body() {
    let model = FakeModel::start().await;
    model.push(Reply::text("Hello there"));

    let response = post(&model, "/v1/chat/completions", &[], &chat_request(false)).await;

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let body = response.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-test");
    let choice = &body["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "Hello there");
    assert_eq!(choice["finish_reason"], "stop");
    let usage = &body["usage"];
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );
}

#[tokio::test]
async fn chat_completion_streams_text_and_tool_call_fragments_then_done() {
    let model = FakeModel::start().await;
    let arguments = r#"{"path":"notes/today.md"}"#;
    model.push(Reply::ToolCalls {
        text: Some("Let me look.".to_string()),
        calls: vec![("read_file".to_string(), arguments.to_string())],
    });

    let response = post(&model, "/v1/chat/completions", &[], &chat_request(true)).await;

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let events = sse_events(&response.body);
    let (done, chunks) = events.split_last().expect("some events");
    assert_eq!(done.data, "[DONE]");
    let chunks: Vec<Value> = chunks
        .iter()
        .map(|event| serde_json::from_str(&event.data).expect("chunk is JSON"))
        .collect();
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));

    let (usage_chunk, chunks) = chunks.split_last().expect("a usage chunk");
    assert_eq!(usage_chunk["choices"], json!([]));
    assert!(usage_chunk["usage"]["total_tokens"].as_u64().unwrap() > 0);

    let deltas: Vec<&Value> = chunks.iter().map(|c| &c["choices"][0]["delta"]).collect();
    let content_deltas: Vec<&str> = deltas
        .iter()
        .filter_map(|d| d["content"].as_str())
        .collect();
    assert!(content_deltas.iter().filter(|c| !c.is_empty()).count() > 1);
    assert_eq!(content_deltas.concat(), "Let me look.");

    let fragments: Vec<&Value> = deltas
        .iter()
        .filter_map(|d| d["tool_calls"].as_array())
        .flatten()
        .collect();
    assert!(fragments.len() > 2, "arguments arrive in several fragments");
    assert!(fragments.iter().all(|f| f["index"] == 0));
    let first = fragments[0];
    assert!(first["id"].as_str().unwrap().starts_with("call_"));
    assert_eq!(first["type"], "function");
    assert_eq!(first["function"]["name"], "read_file");
    assert!(fragments[1..]
        .iter()
        .all(|f| f.get("id").is_none() && f["function"].get("name").is_none()));
    let joined: String = fragments
        .iter()
        .map(|f| f["function"]["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(joined, arguments);

    let last = chunks.last().unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn responses_stream_names_each_event_and_ends_with_completed() {
    let model = FakeModel::start().await;
    model.push(Reply::ToolCalls {
        text: Some("Checking the weather.".to_string()),
        calls: vec![("weather".to_string(), r#"{"city":"Paris"}"#.to_string())],
    });

    let response = post(&model, "/v1/responses", &[], &responses_request(true)).await;

    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    let events = sse_events(&response.body);
    let data: Vec<Value> = events
        .iter()
        .map(|event| serde_json::from_str(&event.data).expect("event data is JSON"))
        .collect();
    for (event, data) in events.iter().zip(&data) {
        assert_eq!(event.event.as_deref(), data["type"].as_str());
    }
    let sequence: Vec<u64> = data
        .iter()
        .map(|d| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(sequence.windows(2).all(|pair| pair[0] < pair[1]));

    let mut kinds: Vec<&str> = data.iter().map(|d| d["type"].as_str().unwrap()).collect();
    kinds.dedup();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let text: String = data
        .iter()
        .filter(|d| d["type"] == "response.output_text.delta")
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Checking the weather.");
    let arguments: String = data
        .iter()
        .filter(|d| d["type"] == "response.function_call_arguments.delta")
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(arguments, r#"{"city":"Paris"}"#);

    let completed = &data.last().unwrap()["response"];
    assert_eq!(completed["object"], "response");
    assert_eq!(completed["status"], "completed");
    assert_eq!(
        completed["output"][0]["content"][0]["text"],
        "Checking the weather."
    );
    let call = &completed["output"][1];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["name"], "weather");
    assert_eq!(call["arguments"], r#"{"city":"Paris"}"#);
    assert!(call["call_id"].as_str().unwrap().starts_with("call_"));
    assert!(completed["usage"]["total_tokens"].as_u64().unwrap() > 0);
    assert!(!response.body.contains("[DONE]"));
}

#[tokio::test]
async fn responses_answers_a_whole_response_object_without_streaming() {
    let model = FakeModel::start().await;
    model.push(Reply::text("Plain answer"));

    let response = post(&model, "/v1/responses", &[], &responses_request(false)).await;

    assert_eq!(response.status, 200);
    let body = response.json();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["model"], "gpt-test");
    let message = &body["output"][0];
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"][0]["type"], "output_text");
    assert_eq!(message["content"][0]["text"], "Plain answer");
    assert_eq!(body["usage"]["input_tokens_details"]["cached_tokens"], 0);
    assert_eq!(
        body["usage"]["output_tokens_details"]["reasoning_tokens"],
        0
    );
}

#[tokio::test]
async fn error_reply_sends_its_status_and_json_body() {
    let model = FakeModel::start().await;
    let error = json!({"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}});
    model.push(Reply::Error {
        status: 429,
        body: error.clone(),
    });

    let response = post(&model, "/v1/responses", &[], &responses_request(true)).await;

    assert_eq!(response.status, 429);
    assert_eq!(response.json(), error);
}

#[tokio::test]
async fn unscripted_request_gets_a_500_naming_the_mistake() {
    let model = FakeModel::start().await;

    let response = post(&model, "/v1/chat/completions", &[], &chat_request(false)).await;

    assert_eq!(response.status, 500);
    let message = response.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.starts_with("fake model: no scripted reply"),
        "{message}"
    );
}

#[tokio::test]
async fn requests_records_path_headers_and_body_in_order() {
    let model = FakeModel::start().await;
    model.push(Reply::text("one"));
    model.push(Reply::text("two"));

    let first = chat_request(false);
    let second = responses_request(true);
    post(
        &model,
        "/v1/chat/completions",
        &[("Authorization", "Bearer sk-test")],
        &first,
    )
    .await;
    post(&model, "/v1/responses", &[], &second).await;

    let requests = model.wait_for_requests(2).await;
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].headers.get("authorization").map(String::as_str),
        Some("Bearer sk-test")
    );
    assert_eq!(requests[0].body, first);
    assert_eq!(requests[1].path, "/v1/responses");
    assert_eq!(requests[1].body, second);
    assert_eq!(model.pending_replies(), 0);
}

#[tokio::test]
async fn gated_reply_waits_until_the_gate_opens() {
    let model = FakeModel::start().await;
    let gate = Gate::new();
    model.push(Reply::gated(Reply::text("after the gate"), &gate));

    let addr = model.addr();
    let client = tokio::spawn(async move {
        let mut stream = send_post(addr, "/v1/chat/completions", &[], &chat_request(false)).await;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("read");
        parse_response(&raw)
    });
    model.wait_for_requests(1).await;
    // The request is in, and its reply is behind the closed gate.
    assert!(!client.is_finished());

    gate.open();
    let response = client.await.unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(
        response.json()["choices"][0]["message"]["content"],
        "after the gate"
    );
}

#[tokio::test]
async fn hanging_stream_sends_its_text_and_never_finishes() {
    let model = FakeModel::start().await;
    model.push(Reply::hang("thinking hard"));

    let mut stream = send_post(
        model.addr(),
        "/v1/chat/completions",
        &[],
        &chat_request(true),
    )
    .await;
    let mut raw = Vec::new();
    let mut chunk = [0u8; 1024];
    while streamed_chat_text(&raw) != "thinking hard" {
        let read = stream.read(&mut chunk).await.expect("read");
        assert!(read > 0, "stream ended before its text");
        raw.extend_from_slice(&chunk[..read]);
    }

    drop(model);
    stream.read_to_end(&mut raw).await.expect("read");
    let response = parse_response(&raw);
    assert_eq!(streamed_chat_text(&raw), "thinking hard");
    assert!(!response.body.contains("finish_reason\":\"stop"));
    assert!(!response.body.contains("[DONE]"));
}

#[tokio::test]
async fn garbage_reply_is_sent_raw_with_status_200() {
    let model = FakeModel::start().await;
    model.push(Reply::Garbage("<html>not json".to_string()));

    let response = post(&model, "/v1/responses", &[], &responses_request(false)).await;

    assert_eq!(response.status, 200);
    assert_eq!(response.body, "<html>not json");
}

/// The base64 of a PNG header of `width`x`height`: enough to be measured.
fn png_header(width: u32, height: u32) -> String {
    use base64::Engine;
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 2, 0, 0, 0]);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[tokio::test]
async fn messages_refuses_images_over_anthropics_limits_as_the_api_does() {
    let model = FakeModel::start().await;
    let image = |side: u32| {
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png",
               "data": png_header(side, 10)}})
    };
    let body = |images: Vec<Value>| {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 100,
               "messages": [{"role": "user", "content": images}]})
    };
    let headers = [("anthropic-version", "2023-06-01")];
    let refused = |response: &RawResponse| {
        assert_eq!(response.status, 400, "{}", response.body);
        let json = response.json();
        assert_eq!(json["error"]["type"], "invalid_request_error");
        json["error"]["message"].as_str().unwrap().to_string()
    };

    let wide = post(&model, "/v1/messages", &headers, &body(vec![image(8001)])).await;
    assert_eq!(
        refused(&wide),
        "messages.0.content.0.image.source.base64.data: At least one of the image \
         dimensions exceed max allowed size: 8000 pixels"
    );
    let mut many: Vec<Value> = (0..20).map(|_| image(100)).collect();
    many.push(image(2001));
    let many = post(&model, "/v1/messages", &headers, &body(many)).await;
    assert_eq!(
        refused(&many),
        "messages.0.content.20.image.source.base64.data: At least one of the image \
         dimensions exceed max allowed size for many-image requests: 2000 pixels"
    );
    // Twenty images of 8000 px are within the limits.
    model.push(Reply::text("fine"));
    let twenty: Vec<Value> = (0..20).map(|_| image(8000)).collect();
    let fine = post(&model, "/v1/messages", &headers, &body(twenty)).await;
    assert_eq!(fine.status, 200, "{}", fine.body);
}
