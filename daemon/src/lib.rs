//! hearth-daemon: the daemon `hearthd`.
//!
//! - `config.rs`: `config.toml`, read once at start.
//! - `log.rs`: the append-only SQLite log and its one writer thread.
//! - `model/`: the providers, one file per wire protocol.
pub mod config;
pub mod log;
pub mod model;
