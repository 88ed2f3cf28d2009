//! The fake model server: its scripted state, the accept loop, and how one
//! connection's request is recorded and answered.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::answer::{Answer, Call, Exchange, StreamEnd};
use super::http::{self, RequestError};
use super::script::Reply;
use super::{anthropic, chat_completions, responses};

/// A scripted OpenAI-style model API on `127.0.0.1`, serving until dropped.
///
/// Dropping it closes every connection at once, including streams left
/// hanging by [`Reply::Hang`] and requests held by [`Reply::Gate`].
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    /// Owns every connection task, so aborting it (on drop) ends them all.
    accept_loop: JoinHandle<()>,
}

/// One request the server received, whatever its path.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    pub method: String,
    /// The path without any query string, e.g. `/v1/responses`.
    pub path: String,
    /// Header names lowercased; repeated headers joined with `", "`.
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON; `Value::String` of the raw text when it is
    /// not JSON, `Value::Null` when empty.
    pub body: Value,
}

impl Recorded {
    /// The text of every message of a Chat Completions request, in order.
    pub fn contents(&self) -> Vec<String> {
        self.body["messages"]
            .as_array()
            .map(|messages| {
                messages
                    .iter()
                    .map(|m| m["content"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The tool results a Chat Completions request sent back (its `tool`
    /// messages' text), in order.
    pub fn tool_results(&self) -> Vec<String> {
        self.body["messages"]
            .as_array()
            .expect("chat messages")
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    }
}

/// The tool results sent back to `model` in its request `index`, in order.
pub fn results_sent(model: &FakeModel, index: usize) -> Vec<String> {
    model.requests()[index].tool_results()
}

/// State shared by the handle and the connection tasks.
struct Shared {
    script: Mutex<Script>,
    /// How many requests have been recorded, for
    /// [`FakeModel::wait_for_requests`] to wait on without polling.
    arrived: watch::Sender<usize>,
    /// The `n` of the next `call_<n>`, counting from 1 across the server's
    /// life so ids never repeat within a test.
    next_call: AtomicU64,
}

/// What the test scripted and what the clients sent, kept together so a
/// request is recorded and takes its reply in one step, in arrival order.
#[derive(Default)]
struct Script {
    replies: VecDeque<Reply>,
    /// Replies for requests naming a model (`"model"` in the body), taken
    /// before the shared queue: for tests where several agents call at once.
    for_model: std::collections::BTreeMap<String, VecDeque<Reply>>,
    requests: Vec<Recorded>,
    /// What `GET /api/tags` lists, as a local Ollama server would.
    local_models: Vec<String>,
    /// The context length `POST /api/show` gives for each local model.
    context_lengths: std::collections::BTreeMap<String, u64>,
    /// The `num_ctx` line `POST /api/show` gives in a model's `parameters`.
    num_ctx: std::collections::BTreeMap<String, u64>,
    /// The models `GET /api/ps` lists as running, with their context.
    running: std::collections::BTreeMap<String, u64>,
    /// llama.cpp's `GET /props`: one slot's context and the slots; none:
    /// 404, as a server that is not llama.cpp answers.
    props: Option<(u64, u64)>,
    /// Requests to the servers' own APIs (`/api/…`, `/props`), kept apart
    /// from the model requests tests count.
    probes: Vec<Recorded>,
    /// Chat Completions requests with tools are refused as llama.cpp's
    /// server without `--jinja` refuses them.
    refuse_tools: bool,
    /// The answer to every request that finds no reply queued; none: HTTP 500.
    default: Option<Reply>,
    /// Models every request for which is refused as a provider refuses a
    /// model the key may not use ([`FakeModel::refuse_model`]).
    refused: std::collections::BTreeSet<String>,
}

/// The model endpoints the server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    ChatCompletions,
    Responses,
    /// Anthropic's Messages API.
    Messages,
}

impl FakeModel {
    /// Binds `127.0.0.1:0` and starts serving in the background of the
    /// current tokio runtime.
    ///
    /// # Panics
    /// If the loopback address cannot be bound: the test cannot run.
    pub async fn start() -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("fake model: cannot bind 127.0.0.1:0");
        let addr = listener
            .local_addr()
            .expect("fake model: bound listener has no local address");
        let shared = Arc::new(Shared {
            script: Mutex::new(Script::default()),
            arrived: watch::channel(0).0,
            next_call: AtomicU64::new(1),
        });
        let accept_loop = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        FakeModel {
            addr,
            shared,
            accept_loop,
        }
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL an OpenAI client is configured with:
    /// `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues `reply` as the answer to the next model request that finds no
    /// earlier reply queued (FIFO, across both endpoints). A request that
    /// finds the queue empty is answered with the default reply
    /// ([`FakeModel::set_default`]), or else HTTP 500 with an error saying
    /// "fake model: no scripted reply".
    pub fn push(&self, reply: Reply) {
        self.shared.lock().replies.push_back(reply);
    }

    /// Queues `reply` for the next request whose body names `model`; such a
    /// request takes it before anything in the shared queue.
    pub fn push_for(&self, model: &str, reply: Reply) {
        self.shared
            .lock()
            .for_model
            .entry(model.to_string())
            .or_default()
            .push_back(reply);
    }

    /// Makes `reply` the answer to every model request that finds no reply
    /// queued, instead of HTTP 500: for long or randomized workloads that
    /// cannot script every request. Queued replies still go first.
    pub fn set_default(&self, reply: Reply) {
        self.shared.lock().default = Some(reply);
    }

    /// Answers every request naming `model` as the provider answers a
    /// model that does not exist or that the key may not use, before any
    /// queued reply: OpenAI's 404 `model_not_found` (`{"error":{"message":
    /// "The model `..` does not exist or you do not have access to it.",
    /// "type":"invalid_request_error","param":null,"code":"model_not_found"}}`),
    /// or on the Messages API Anthropic's 404 `not_found_error`.
    pub fn refuse_model(&self, model: &str) {
        self.shared.lock().refused.insert(model.to_string());
    }

    /// Makes the server answer `GET /api/tags` like an Ollama server with
    /// these models (none until called: an empty list), so the daemon can
    /// find it as a local model server.
    pub fn serve_local_models(&self, names: &[&str]) {
        self.shared.lock().local_models = names.iter().map(|name| name.to_string()).collect();
    }

    /// Makes `POST /api/show` for `name` answer as Ollama does, with
    /// `model_info` giving this context length (a model not named here is
    /// answered 404, "model not found").
    pub fn serve_context_length(&self, name: &str, context_length: u64) {
        self.shared
            .lock()
            .context_lengths
            .insert(name.to_string(), context_length);
    }

    /// Makes `POST /api/show` for `name` give `PARAMETER num_ctx` in its
    /// `parameters`, as a Modelfile that sets it does.
    pub fn serve_num_ctx(&self, name: &str, num_ctx: u64) {
        self.shared.lock().num_ctx.insert(name.to_string(), num_ctx);
    }

    /// Makes `GET /api/ps` list `name` as running with `context_length`,
    /// as Ollama lists a loaded model.
    pub fn serve_running(&self, name: &str, context_length: u64) {
        self.shared
            .lock()
            .running
            .insert(name.to_string(), context_length);
    }

    /// Makes the server answer `GET /props` as llama.cpp's `llama-server
    /// -c <slots × n_ctx> -np <slots>` does: `n_ctx` is one slot's context.
    pub fn serve_props(&self, n_ctx: u64, slots: u64) {
        self.shared.lock().props = Some((n_ctx, slots));
    }

    /// Makes every Chat Completions request that carries tools fail as
    /// llama.cpp's server started without `--jinja` fails it.
    pub fn refuse_tools(&self) {
        self.shared.lock().refuse_tools = true;
    }

    /// The requests to the server's own API (`/api/…`, `/props`), in order.
    pub fn probes(&self) -> Vec<Recorded> {
        self.shared.lock().probes.clone()
    }

    /// How many replies pushed for `model` no request has taken yet.
    pub fn pending_replies_for(&self, model: &str) -> usize {
        self.shared
            .lock()
            .for_model
            .get(model)
            .map_or(0, VecDeque::len)
    }

    /// How many pushed replies no request has taken yet.
    pub fn pending_replies(&self) -> usize {
        self.shared.lock().replies.len()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.lock().requests.clone()
    }

    /// How many requests have arrived so far.
    pub fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// The requests received after the first `first`, in arrival order:
    /// cheaper than [`FakeModel::requests`] in a long run.
    pub fn requests_from(&self, first: usize) -> Vec<Recorded> {
        let script = self.shared.lock();
        script.requests.get(first..).unwrap_or_default().to_vec()
    }

    /// Resolves once at least `n` requests have arrived, with every request
    /// received so far. Waits forever if they never come; a test that may
    /// fail that way wraps the call in a timeout.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Recorded> {
        let mut arrived = self.shared.arrived.subscribe();
        // Errs only if the sender is dropped, which `self.shared` prevents.
        let _ = arrived.wait_for(|count| *count >= n).await;
        self.requests()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

impl fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeModel")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Script> {
        // A panicking test thread cannot leave the script half-changed:
        // every change under the lock is a single push or pop.
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records `request` and, for a model endpoint, takes the next reply.
    /// Returns the request's 1-based number and the reply, if any.
    fn arrive(&self, request: Recorded, takes_reply: bool) -> (u64, Option<Reply>) {
        let (number, reply) = {
            let mut script = self.lock();
            let model = request.body["model"].as_str().unwrap_or("").to_string();
            let messages_api = request.path == "/v1/messages";
            if request.path.starts_with("/api/") || request.path == "/props" {
                script.probes.push(request);
                return (script.probes.len() as u64, None);
            }
            script.requests.push(request);
            let reply = if takes_reply && script.refused.contains(&model) {
                Some(refusal(&model, messages_api))
            } else if takes_reply {
                let own = script
                    .for_model
                    .get_mut(&model)
                    .and_then(VecDeque::pop_front);
                let queued = own.or_else(|| script.replies.pop_front());
                queued.or_else(|| script.default.clone())
            } else {
                None
            };
            (script.requests.len(), reply)
        };
        self.arrived.send_modify(|count| *count += 1);
        (number as u64, reply)
    }

    /// The answer a reply makes, its calls given fresh ids.
    fn answer(&self, text: String, calls: Vec<(String, String)>) -> Answer {
        let calls = calls
            .into_iter()
            .map(|(name, arguments)| {
                Call::new(
                    self.next_call.fetch_add(1, Ordering::Relaxed),
                    name,
                    arguments,
                )
            })
            .collect();
        Answer {
            text,
            calls,
            usage: None,
            finish: None,
            thoughts: Vec::new(),
        }
    }
}

/// A provider's answer to a request for a model it refuses to the key.
fn refusal(model: &str, messages_api: bool) -> Reply {
    if messages_api {
        return anthropic::error(404, "not_found_error", &format!("model: {model}"));
    }
    let message = format!("The model `{model}` does not exist or you do not have access to it.");
    Reply::Error {
        status: 404,
        body: json!({"error": {"message": message, "type": "invalid_request_error",
                               "param": null, "code": "model_not_found"}}),
    }
}

impl Endpoint {
    fn of(method: &str, path: &str) -> Option<Endpoint> {
        match (method, path) {
            ("POST", "/v1/chat/completions") => Some(Endpoint::ChatCompletions),
            ("POST", "/v1/responses") => Some(Endpoint::Responses),
            ("POST", "/v1/messages") => Some(Endpoint::Messages),
            _ => None,
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    http::accept_each(listener, |stream| serve(stream, Arc::clone(&shared))).await;
}

async fn serve(mut stream: TcpStream, shared: Arc<Shared>) {
    // Small SSE frames should leave one by one, as from a real server.
    let _ = stream.set_nodelay(true);
    // A failed write means the client went away: nothing left to do.
    let _ = serve_request(&mut stream, &shared).await;
}

async fn serve_request(stream: &mut TcpStream, shared: &Shared) -> io::Result<()> {
    let request = match http::read_request(stream).await {
        Ok(request) => request,
        Err(RequestError::Disconnected) => return Ok(()),
        Err(RequestError::Malformed(message)) => {
            let body = error_body(&format!("fake model: {message}"), "invalid_request_error");
            return http::write_json(stream, 400, &body).await;
        }
    };
    let body = parse_body(&request.body);
    let endpoint = Endpoint::of(&request.method, &request.path);
    let what = format!("{} {}", request.method, request.path);
    let (number, reply) = shared.arrive(
        Recorded {
            method: request.method,
            path: request.path,
            headers: request.headers,
            body: body.clone(),
        },
        endpoint.is_some(),
    );

    if what == "GET /api/tags" {
        let models: Vec<Value> = shared
            .lock()
            .local_models
            .iter()
            .map(|name| json!({"name": name, "model": name, "size": 1}))
            .collect();
        return http::write_json(stream, 200, &json!({ "models": models })).await;
    }
    if what == "GET /props" {
        let props = shared.lock().props;
        return match props {
            // The fields read, as llama.cpp's server README documents them.
            Some((n_ctx, slots)) => {
                let props = json!({
                    "default_generation_settings": {"n_ctx": n_ctx, "params": {"n_predict": -1}},
                    "total_slots": slots,
                    "model_path": "/models/fake.gguf",
                    "build_info": "fake",
                });
                http::write_json(stream, 200, &props).await
            }
            None => http::write_json(stream, 404, &json!({"error": "404 page not found"})).await,
        };
    }
    let posing_as_ollama = {
        let script = shared.lock();
        !script.local_models.is_empty() || !script.running.is_empty()
    };
    if what == "GET /api/ps" && posing_as_ollama {
        let running: Vec<Value> = shared
            .lock()
            .running
            .iter()
            .map(|(name, length)| {
                json!({"name": name, "model": name, "size": 1, "size_vram": 1,
                       "expires_at": "2026-12-02T12:00:00Z", "context_length": length})
            })
            .collect();
        return http::write_json(stream, 200, &json!({ "models": running })).await;
    }
    if what == "POST /api/show" {
        let name = body["model"]
            .as_str()
            .or(body["name"].as_str())
            .unwrap_or_default();
        let length = shared.lock().context_lengths.get(name).copied();
        let num_ctx = shared.lock().num_ctx.get(name).copied();
        let parameters = num_ctx
            .map(|num_ctx| format!("num_ctx                        {num_ctx}\nstop \"<|im_end|>\""))
            .unwrap_or_default();
        return match length {
            Some(length) => {
                let show = json!({
                    "parameters": parameters,
                    "modelfile": "",
                    "details": {"family": "qwen3", "format": "gguf"},
                    "model_info": {
                        "general.architecture": "qwen3",
                        "qwen3.context_length": length,
                        "qwen3.embedding_length": 4096,
                    },
                });
                http::write_json(stream, 200, &show).await
            }
            None => {
                let missing = json!({"error": format!("model '{name}' not found")});
                http::write_json(stream, 404, &missing).await
            }
        };
    }
    let Some(endpoint) = endpoint else {
        let message = format!(
            "fake model: no endpoint {what}; expected POST /v1/chat/completions, /v1/responses or /v1/messages"
        );
        return http::write_json(stream, 404, &error_body(&message, "invalid_request_error")).await;
    };
    // Images the real API refuses are refused here too, before any answer
    // (the reply it took is spent, as the turn fails).
    if endpoint == Endpoint::Messages {
        if request.body.len() > anthropic::MAX_REQUEST_BYTES {
            return http::write_json(stream, 413, &anthropic::too_large()).await;
        }
        if let Some(refusal) = anthropic::image_refusal(&body) {
            return http::write_json(stream, 400, &refusal).await;
        }
        if let Some(refusal) = anthropic::thinking_refusal(&body) {
            return http::write_json(stream, 400, &refusal).await;
        }
    }
    let has_tools = body["tools"]
        .as_array()
        .is_some_and(|tools| !tools.is_empty());
    let refuse_tools = shared.lock().refuse_tools;
    if endpoint == Endpoint::ChatCompletions && has_tools && refuse_tools {
        // llama.cpp's server without `--jinja`: a 500, `server_error`.
        let refusal = json!({"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}});
        return http::write_json(stream, 500, &refusal).await;
    }
    let Some(reply) = reply else {
        let message = format!("fake model: no scripted reply for {what} (request {number})");
        return http::write_json(stream, 500, &error_body(&message, "server_error")).await;
    };
    let exchange = Exchange::new(number, &body, request.body.len());
    answer(stream, shared, endpoint, &body, &exchange, reply).await
}

/// Sends `reply` in the format `endpoint` and the request `body` call for.
async fn answer(
    stream: &mut TcpStream,
    shared: &Shared,
    endpoint: Endpoint,
    body: &Value,
    exchange: &Exchange,
    mut reply: Reply,
) -> io::Result<()> {
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let mut usage = None;
    let mut thoughts = Vec::new();
    let (mut answer, end) = loop {
        match reply {
            Reply::Thinking {
                thoughts: scripted,
                reply: inner,
            } => {
                thoughts = scripted;
                reply = *inner;
            }
            Reply::WithUsage {
                reply: inner,
                usage: scripted,
            } => {
                usage = Some(scripted);
                reply = *inner;
            }
            Reply::Gate { reply: held, gate } => {
                tokio::select! {
                    () = gate.opened() => reply = *held,
                    () = http::client_gone(stream) => return Ok(()),
                }
            }
            Reply::Error { status, body } => return http::write_json(stream, status, &body).await,
            Reply::Reset => {
                // Zero linger: closing sends a reset, not an orderly end.
                let _ = stream.set_zero_linger();
                return Ok(());
            }
            Reply::Garbage(raw) => {
                let content_type = if streaming {
                    "text/event-stream"
                } else {
                    "application/json"
                };
                return http::write_response(stream, 200, content_type, raw.as_bytes()).await;
            }
            Reply::Text(text) => break (shared.answer(text, Vec::new()), StreamEnd::Complete),
            Reply::Ended { text, finish } => {
                let mut answer = shared.answer(text, Vec::new());
                answer.finish = Some(finish);
                break (answer, StreamEnd::Complete);
            }
            Reply::Dropped { text_before } => {
                if !streaming {
                    return Ok(());
                }
                break (shared.answer(text_before, Vec::new()), StreamEnd::Drop);
            }
            Reply::Broken { text_before } => {
                if !streaming {
                    let _ = stream.set_zero_linger();
                    return Ok(());
                }
                break (shared.answer(text_before, Vec::new()), StreamEnd::Reset);
            }
            Reply::ToolCalls { text, calls } => {
                break (
                    shared.answer(text.unwrap_or_default(), calls),
                    StreamEnd::Complete,
                )
            }
            Reply::Paused { text, first, gate } => {
                if !streaming {
                    reply = Reply::Gate {
                        reply: Box::new(Reply::Text(text)),
                        gate,
                    };
                    continue;
                }
                let mut answer = shared.answer(text, Vec::new());
                answer.usage = usage;
                return paused(stream, endpoint, exchange, &answer, first, &gate).await;
            }
            Reply::Hang { text_before } => {
                if !streaming {
                    http::client_gone(stream).await;
                    return Ok(());
                }
                break (shared.answer(text_before, Vec::new()), StreamEnd::Hold);
            }
        }
    };

    if usage.is_some() {
        answer.usage = usage;
    }
    answer.thoughts = thoughts;
    if !streaming {
        let object = match endpoint {
            Endpoint::ChatCompletions => chat_completions::completion(&answer, exchange),
            Endpoint::Responses => responses::response(&answer, exchange),
            Endpoint::Messages => anthropic::message(&answer, exchange),
        };
        return http::write_json(stream, 200, &object).await;
    }
    let frames = frames(endpoint, &answer, exchange, end);
    http::write_stream_head(stream, "text/event-stream").await?;
    for frame in frames {
        stream.write_all(frame.as_bytes()).await?;
    }
    match end {
        StreamEnd::Complete | StreamEnd::Drop => stream.shutdown().await,
        StreamEnd::Reset => {
            // Zero linger: closing sends a reset, not an orderly end.
            let _ = stream.set_zero_linger();
            Ok(())
        }
        StreamEnd::Hold => {
            http::client_gone(stream).await;
            Ok(())
        }
    }
}

/// The SSE frames of `answer` in `endpoint`'s format.
fn frames(endpoint: Endpoint, answer: &Answer, exchange: &Exchange, end: StreamEnd) -> Vec<String> {
    match endpoint {
        Endpoint::ChatCompletions => chat_completions::stream(answer, exchange, end),
        Endpoint::Responses => responses::stream(answer, exchange, end),
        Endpoint::Messages => anthropic::stream(answer, exchange, end),
    }
}

/// Streams `answer` as far as the deltas that cover its first `first`
/// bytes, waits for `gate`, then streams the rest (see [`Reply::Paused`]).
/// The first part is the held stream of the text so far, which the whole
/// stream begins with, since deltas are cut from the start.
async fn paused(
    stream: &mut TcpStream,
    endpoint: Endpoint,
    exchange: &Exchange,
    answer: &Answer,
    first: usize,
    gate: &super::Gate,
) -> io::Result<()> {
    let mut covered = 0;
    for piece in super::answer::pieces(&answer.text) {
        if covered >= first {
            break;
        }
        covered += piece.len();
    }
    let head = Answer {
        text: answer.text[..covered].to_string(),
        ..answer.clone()
    };
    let before = frames(endpoint, &head, exchange, StreamEnd::Hold);
    let whole = frames(endpoint, answer, exchange, StreamEnd::Complete);
    http::write_stream_head(stream, "text/event-stream").await?;
    for frame in &before {
        stream.write_all(frame.as_bytes()).await?;
    }
    tokio::select! {
        () = gate.opened() => {}
        () = http::client_gone(stream) => return Ok(()),
    }
    for frame in whole.get(before.len()..).unwrap_or_default() {
        stream.write_all(frame.as_bytes()).await?;
    }
    stream.shutdown().await
}

/// The request body as JSON: `Null` when empty, the raw text as a string
/// when it does not parse.
fn parse_body(raw: &[u8]) -> Value {
    if raw.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(raw)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw).into_owned()))
}

/// OpenAI's error envelope.
fn error_body(message: &str, error_type: &str) -> Value {
    json!({"error": {"message": message, "type": error_type, "param": null, "code": null}})
}
