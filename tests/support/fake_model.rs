//! A scripted stand-in for an OpenAI-style model API, for end-to-end tests.
//!
//! [`FakeModel::start`] binds `127.0.0.1:0` and answers
//! `POST /v1/chat/completions` (Chat Completions), `POST /v1/responses`
//! (Responses API) and `POST /v1/messages` (Anthropic's Messages API) in the
//! real wire formats: a JSON body, or server-sent events when the request
//! asks for `"stream": true`. A test queues one
//! [`Reply`] per expected request with [`FakeModel::push`] and afterwards
//! reads what the client sent with [`FakeModel::requests`]. A reply can
//! report scripted token counts ([`Reply::with_usage`]) and reasoning
//! ([`Reply::thinking`]). Like the real Messages API, the server refuses
//! images over Anthropic's documented limits with its 400. The server can
//! pose as a local Ollama server listing models at `GET /api/tags`
//! ([`FakeModel::serve_local_models`]) and giving a model's context length
//! at `POST /api/show` ([`FakeModel::serve_context_length`], and its
//! `num_ctx` with [`FakeModel::serve_num_ctx`]) and its running models at
//! `GET /api/ps` ([`FakeModel::serve_running`]; answered only by a server
//! that poses as Ollama), or as llama.cpp's server
//! giving a slot's context at `GET /props` ([`FakeModel::serve_props`]) and
//! refusing tools as it does without `--jinja` ([`FakeModel::refuse_tools`]).
//! Those questions to the server's own API are kept apart from the model
//! requests ([`FakeModel::probes`]).
//!
//! Where each part lives:
//! - `server.rs`: [`FakeModel`], the accept loop, and [`Recorded`] requests.
//! - `script.rs`: [`Reply`], [`Thought`], [`Gate`] and [`Usage`], what a
//!   test can script.
//! - `http.rs`: the minimal HTTP/1.1 reading and writing (one request per
//!   connection, `Connection: close`).
//! - `answer.rs`: one reply turned into wire-neutral values (ids, usage,
//!   how text is split into deltas).
//! - `chat_completions.rs`, `responses.rs` and `anthropic.rs`: pure
//!   functions rendering an answer in each API's format, whole or as SSE
//!   frames; `anthropic::error` makes an error in Anthropic's envelope.

mod answer;
pub mod anthropic;
mod chat_completions;
/// Shared with the fake Telegram API.
pub(crate) mod http;
mod responses;
mod script;
mod server;

pub use script::{Finish, Gate, Reply, Thought, Usage};
pub use server::{results_sent, FakeModel, Recorded};
