//! The end-to-end tests, one binary: each file of `tests/` is a module of
//! this one (a directory's is its `mod.rs`), so the suite links once, not
//! once per file. The shared scaffolding is the root package's library
//! (`tests/support/`, `hearth_tests`). Run one file's tests with
//! `cargo test --test all daemon::` (its module name, then `::`).
//!
//! `.ci/test-modules` fails when a file of `tests/` is not declared here,
//! so a new test file cannot be left out of the suite.

mod adversarial;
mod approvals;
mod browser;
mod browser_markdown;
mod browser_pages;
mod browser_tool;
mod browser_voice;
mod chatgpt;
mod cli;
mod conformance;
mod conformance_bridges;
mod crash;
mod daemon;
mod discord;
mod documents;
mod email;
mod fake_model;
mod faults;
mod heartbeat;
mod image_fit;
mod images;
mod import;
mod inbox;
mod life;
mod local_servers;
mod matrix;
mod mcp;
mod mcp_bounds;
mod mcp_http;
mod memory;
mod memory_held;
mod memory_model;
mod models;
mod owner_session;
mod page_stop;
mod phone_media;
mod private;
mod provenance;
mod recall;
mod replay;
mod scripts;
mod search;
mod security;
mod service;
mod setup;
mod signal;
mod skills;
mod subagents;
mod tamper;
mod telegram;
mod terminal;
mod tools;
mod untrusted;
mod update;
mod usage;
mod voice;
mod web;
mod whatsapp;
mod whatsapp_user_ids;
mod whatsapp_web;
mod wire;
