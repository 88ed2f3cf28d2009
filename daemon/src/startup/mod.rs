//! The daemon's start-up steps, one file per job; `daemon.rs` runs them in
//! order.
//!
//! - `error.rs`: [`StartError`], why the daemon did not start; private folders.
//! - `lock.rs`: the home's lock, one daemon per home.
//! - `checks.rs`: agent names and the WhatsApp contacts, beyond the config's syntax.
//! - `secrets.rs`: where keys and tokens are found; which variables hold them.
//! - `models.rs`: `[model]`, a local Ollama server's, the agents' model names.
//! - `mcp.rs`: the `[[mcp]]` servers, started before the agents.
//! - `prompts.rs`: each agent's default prompt, written at first start.
//! - `agents.rs`: the top agent and its subagents: tools, memory, loop.
//! - `window.rs`: whether a layout fits its models' context windows.
//! - `owner_key.rs`: the owner key a Unix-socket client's hello must carry.
//! - `listen.rs`: the Unix socket and the TCP listener.

pub mod agents;
pub mod checks;
mod error;
pub mod listen;
pub mod lock;
pub mod mcp;
pub mod models;
pub mod owner_key;
pub mod prompts;
pub mod secrets;
mod window;

pub use error::{private_dir, StartError};
pub use window::Fit;
