//! hearth-models: the model providers and what requests cost, above the
//! log (`hearth-log`) and below memory, tools and the server, which do not
//! rebuild it. `hearth-daemon` re-exports each module under its own name.
//!
//! - `images.rs`: images stored once by their SHA-256, named from the log.
//! - `media.rs`: audio and documents stored the same way (`store.rs` the
//!   durable write both share); `documents.rs` a document's text by page.
//! - `usage.rs`: every request's tokens and cost; prices and budgets.
//! - `model/`: the providers, one file per wire protocol.
//! - `local.rs`: a local Ollama server, used when no model is configured.

pub mod images;
pub mod local;
pub mod media;
pub mod model;
pub mod usage;

// The lower layer's modules under their own names, so `crate::log` reads
// the same in every layer of the daemon.
pub(crate) use hearth_log::{documents, log, redact, store};
