//! The agent's tools, one file per family, behind one registry.
//!
//! - `tool.rs`: `Tool` — what each tool gives: its spec, whether it acts
//!   (acting unless it says it only reads), its call; `ToolSet`, tools by name.
//! - `registry.rs`: [`Tools`] — an agent's tools made from its parts, checking
//!   and running calls, one at a time or a response's calls at once;
//!   [`Workspace`], where they act.
//! - `mcp_tool.rs`: an MCP server's tool as a `Tool`.
//! - `args.rs`: strict JSON arguments checked against a tool's schema (pure).
//! - `config.rs`: `[tools]`, what the tools may do.
//! - `date.rs`: `date` — now, or when a message was written.
//! - `zoom.rs`: `zoom` — open a line of the memory into what it summarizes.
//! - `search.rs`: `search` — find messages and lines of the memory by their words.
//! - `facts.rs`: `remember`, `forget` — the pinned facts.
//! - `shell.rs`: `shell` — bash in the working folder, bounded in time and output.
//! - `process.rs`: child processes in their own groups, killed as groups.
//! - `keeper.rs`: the subreaper between hearthd and a command, so nothing it started outlives it.
//! - `confine`: the shell's Landlock rules, `crate::confine` (a leaf, which
//!   the document reader uses too), named here for the tools that apply them.
//! - `files.rs`: `read_file`, `write_file`, `edit_file`, `list_dir`.
//! - `exposure.rs`: the windows in which calls that may bring outside words
//!   into files ran; `read_file` of a file changed in one is outside text.
//! - `folder.rs`: where a path leads, confined to the working folder.
//! - `reach.rs`: where the agents' tools can read (a backup never goes there).
//! - `beneath.rs`: opening a plain file beneath the folder in one step (`openat2`).
//! - `web.rs`: `web_fetch`, public addresses only unless allowed.
//! - `browser.rs`: `browser_open`, `browser_read`, `browser_click`,
//!   `browser_type`, `browser_scroll`, `browser_screenshot` — a headless
//!   Chromium the agent drives (`[tools.browser]`), under `web_fetch`'s
//!   address rules.
//! - `web_search.rs`: `web_search` through `[search]`'s provider (SearXNG, Brave).
//! - `show_image.rs`: `show_image`, an image of the working folder shown to people.
//! - `attachment.rs`: `read_attachment`, a page of a document a message carries.
//! - `skill.rs`: `read_skill`, a skill's `SKILL.md` or files (`crate::skills`).
//! - `taint.rs`: a turn that read from outside makes acting tools ask first.
//! - `html.rs`: HTML reduced to readable text (pure).
//! - `schedule.rs`: `schedule_add`, `schedule_list`, `schedule_cancel`.
//! - `subagents.rs`: `subagent_start`, `subagent_stop`, `subagent_list` (top agent only).
//! - `whatsapp.rs`: `whatsapp_send`, a message the WhatsApp bridge sends (top agent only).

mod args;
mod attachment;
mod beneath;
mod browser;
pub use crate::confine;
mod date;
mod exposure;
mod facts;
mod files;
mod folder;
mod html;
pub mod keeper;
pub mod mcp;
mod mcp_tool;
mod process;
pub mod reach;
mod registry;
mod schedule;
mod search;
mod shell;
mod show_image;
mod skill;
mod subagents;
mod taint;
mod tool;
mod web;
mod web_search;
mod whatsapp;
mod zoom;

pub use crate::config::tools::ToolsConfig;
pub use args::unsupported as unsupported_schema;
pub use browser::Browser;
pub use date::now as date_now;
pub use process::{keeper_in_use, use_keeper, Exit, KillOnDrop, Processes, Running};
pub use registry::{Outcome, Provenance, Tools, Workspace, MAX_INVALID_IN_A_ROW};
pub use web_search::{SearchConfig, SearchProvider, WebSearch, BRAVE_KEY_ENV};
pub use whatsapp::{Contacts as WhatsAppContacts, ContactsError as WhatsAppContactsError};
