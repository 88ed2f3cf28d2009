//! Support for hearth's end-to-end tests: the root package's library, named
//! `hearth_tests`, shared by every test file in `tests/`.
//!
//! - [`fake_model`]: a scripted OpenAI-style model server on `127.0.0.1:0`
//!   that speaks the Chat Completions and Responses wire formats, streaming
//!   or not.
//! - [`fake_telegram`]: a fake Telegram Bot API on `127.0.0.1:0` (long
//!   polling, sending, scripted failures) for the bridge's tests.
//! - [`fake_graph`]: a fake WhatsApp Cloud API on `127.0.0.1:0` (sending,
//!   read marks, media, scripted failures), and [`meta_webhook`], which
//!   plays Meta towards the WhatsApp bridge's webhook.
//! - [`schema`]: written-down descriptions of the providers' request
//!   bodies and the check of a captured body against one.
//! - [`fake_signal`]: a fake signal-cli JSON-RPC daemon on a Unix socket
//!   and `127.0.0.1:0` (subscriptions, `receive` notifications, sending,
//!   attachments, held sends) for the Signal bridge's tests.
//! - [`mail_servers`]: real Dovecot (IMAP) and an `aiosmtpd` SMTP server
//!   in temporary folders, for the email bridge's tests.
//! - [`fake_discord`]: a fake Discord on `127.0.0.1:0`: the REST API
//!   (rate limits, refusals, held sends) and the Gateway WebSocket (Hello,
//!   Identify, Ready, heartbeats, dispatches) for the Discord bridge.
//! - [`fake_transcription`]: a fake OpenAI `/v1/audio/transcriptions` that
//!   checks the multipart request's fields and fails or stalls on demand.
//! - [`fake_chatgpt`]: a fake of OpenAI's authorization server and Codex
//!   backend on `127.0.0.1:0`, for signing in with a ChatGPT plan (PKCE,
//!   device codes, refreshes, revocation) and the plan's requests and
//!   limits.
//! - [`fake_mcp_http`]: an MCP server at a streamable HTTP address on
//!   `127.0.0.1:0` that records the headers of every request.
//! - [`fake_search`]: a search provider on `127.0.0.1:0` speaking
//!   SearXNG's and Brave Search's JSON APIs, for `web_search`.
//! - [`synapse`]: a real Matrix homeserver (Synapse) shared by a test
//!   binary, its users, and a person the test drives through hearth-matrix.
//! - [`release_server`]: a release folder served as a release page serves
//!   it, for `hearth update` and `install.sh`, and test releases signed
//!   with a key of the test's own.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod fake_chatgpt;
pub mod fake_discord;
pub mod fake_graph;
pub mod fake_mcp_http;
pub mod fake_model;
pub mod fake_search;
pub mod fake_signal;
pub mod fake_telegram;
pub mod fake_transcription;
pub mod mail_servers;
pub mod meta_webhook;
pub mod release_server;
pub mod schema;
pub mod synapse;
pub mod watched;

/// A small DevTools Protocol client driving a real headless Chromium, for
/// the browser client's tests.
pub mod cdp;

/// The web client's tests: a home with `[web]`, its login link, raw HTTP.
pub mod web;

/// Real `hearthd` processes on temporary homes, clients on their sockets.
pub mod harness;

/// What the MCP tests share: the reference servers, a daemon with
/// `[[mcp]]` tables, a turn, `hearth mcp`.
pub mod mcp;

/// A bare WebSocket client, for what the real client never does.
pub mod raw;

/// The crash suite's workload, its clients and the ledger of what the
/// daemon acknowledged before it was killed.
pub mod crash;

/// The memory benchmark's replay: a long synthetic history through hearth's
/// layout and three baselines, with a simulated prompt cache.
pub mod replay;
