//! A streamable HTTP MCP server (`url`): the SDK's transport over the
//! workspace's reqwest client (the SDK's own reqwest support is another
//! major version of reqwest, with another TLS stack).
//!
//! [`Client`] carries the three requests the SDK's transport makes: a POST
//! per message (answered with JSON, an SSE stream, or nothing), a GET for
//! the server's own stream, and a DELETE that ends the session. The table's
//! `headers` go with every request, their `${NAME}` secrets read when the
//! server starts, and marked sensitive, so no debug output shows them. A
//! JSON answer is read up to [`MAX_BODY`] bytes.

use super::server::Context;
use crate::config::mcp::{expand, ExpandError, McpServerConfig};
use futures_util::stream::{BoxStream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::StatusCode;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use rmcp::transport::StreamableHttpClientTransport;
use sse_stream::{Sse, SseStream};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// The largest JSON answer read from a server.
pub const MAX_BODY: usize = 32 * 1024 * 1024;

const SESSION: &str = "Mcp-Session-Id";
const LAST_EVENT: &str = "Last-Event-Id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";

/// Why an HTTP server cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("its headers: {0}")]
    Expand(#[from] ExpandError),
    #[error("its header `{0}` is not a valid HTTP header")]
    Header(String),
}

/// The workspace's HTTP client, as the SDK's transport needs it.
#[derive(Clone)]
pub struct Client(reqwest::Client);

type Failure = StreamableHttpError<reqwest::Error>;

/// The SDK transport for `url`, with the table's headers.
pub fn transport(
    config: &McpServerConfig,
    url: &str,
    context: &Context,
) -> Result<StreamableHttpClientTransport<Client>, HttpError> {
    let mut headers = HashMap::new();
    for (name, value) in &config.headers {
        let value = expand(value, &*context.lookup)?;
        let bad = || HttpError::Header(name.clone());
        let name = HeaderName::try_from(name.as_str()).map_err(|_| bad())?;
        let mut value = HeaderValue::try_from(value).map_err(|_| bad())?;
        // It may carry a secret: any debug output shows it as `Sensitive`.
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let transport_config =
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).custom_headers(headers);
    Ok(StreamableHttpClientTransport::with_client(
        Client(context.http.clone()),
        transport_config,
    ))
}

fn with_headers(
    mut request: reqwest::RequestBuilder,
    session: Option<&str>,
    auth: Option<String>,
    headers: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    let mut map = HeaderMap::new();
    map.extend(headers);
    request = request.headers(map);
    if let Some(session) = session {
        request = request.header(SESSION, session);
    }
    if let Some(auth) = auth {
        request = request.bearer_auth(auth);
    }
    request
}

fn unexpected(text: String) -> Failure {
    StreamableHttpError::UnexpectedServerResponse(Cow::Owned(text))
}

fn is(response: &reqwest::Response, media: &str) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(media))
        })
}

fn events(response: reqwest::Response) -> BoxStream<'static, Result<Sse, SseError>> {
    SseStream::from_bytes_stream(response.bytes_stream()).boxed()
}

/// The body, at most [`MAX_BODY`] bytes.
async fn body(response: reqwest::Response) -> Result<Vec<u8>, Failure> {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(StreamableHttpError::Client)?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: MAX_BODY });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

impl StreamableHttpClient for Client {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Failure> {
        let request = self
            .0
            .post(uri.as_ref())
            .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"));
        let request = with_headers(request, session_id.as_deref(), auth_header, custom_headers);
        let response = request
            .json(&message)
            .send()
            .await
            .map_err(StreamableHttpError::Client)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = response
            .headers()
            .get(SESSION)
            .and_then(|value| value.to_str().ok())
            .map(str::to_string);
        if is(&response, EVENT_STREAM) && status.is_success() {
            return Ok(StreamableHttpPostResponse::Sse(events(response), session));
        }
        let json = is(&response, JSON);
        let bytes = body(response).await?;
        if json {
            // A JSON-RPC error comes back as such, whatever the status.
            if let Ok(answer) = serde_json::from_slice(&bytes) {
                return Ok(StreamableHttpPostResponse::Json(answer, session));
            }
        }
        if status.is_success() && bytes.is_empty() {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let shown: String = String::from_utf8_lossy(&bytes).chars().take(200).collect();
        Err(unexpected(format!("HTTP {status}: {shown}")))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Failure> {
        let request = with_headers(
            self.0.delete(uri.as_ref()),
            Some(&session_id),
            auth_header,
            custom_headers,
        );
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response
            .error_for_status()
            .map(|_| ())
            .map_err(StreamableHttpError::Client)
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Failure> {
        let mut request = self
            .0
            .get(uri.as_ref())
            .header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"));
        if let Some(last) = last_event_id {
            request = request.header(LAST_EVENT, last);
        }
        let request = with_headers(request, session_id.as_deref(), auth_header, custom_headers);
        let response = request.send().await.map_err(StreamableHttpError::Client)?;
        if response.status() == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !response.status().is_success() {
            return Err(unexpected(format!("HTTP {}", response.status())));
        }
        if !is(&response, EVENT_STREAM) {
            return Err(StreamableHttpError::UnexpectedContentType(
                response
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_string),
            ));
        }
        Ok(events(response))
    }
}
