//! hearth-cli: the `hearth` program's own parts, built on the connection
//! library (`hearth-client`).
//!
//! - `terminal.rs`: the interactive terminal client (`hearth` with no
//!   subcommand): its loop over keyboard, daemon, reconnect and clock.
//! - `welcome.rs`: what the terminal prints on attach: a banner, recent messages.
//! - `keyboard.rs`: the terminal's line editor on its own thread: history,
//!   multi-line input, paste, PageUp.
//! - `display.rs`: what the terminal shows above the prompt: lines for good,
//!   and the live region (the streaming reply, the status line).
//! - `status_line.rs`: what the status line says: the daemon's activity,
//!   an approval that waits here, the seconds, how to interrupt.
//! - `screen.rs`: the printer thread, and the terminal's saved settings.
//! - `look.rs`: how each message and event looks, with its time and source.
//! - `markdown.rs`: the agent's Markdown rendered for a colour terminal.
//! - `sanitize.rs`: text from elsewhere made safe to print on a terminal.
//! - `slash.rs`: the terminal's own commands (`/help`, `/history`, …).
//! - `approvals.rs`: the terminal's side of approvals: requests shown, `y`/`n` answers.
//! - `session.rs`: what the terminal remembers, and so what each event
//!   comes to on screen (each once).
//! - `launch.rs`: attaching, with `hearthd` started in the background.
//! - `commands.rs`: the scripted subcommands (`send`, `status`, `interrupt`).
//! - `log.rs`: `hearth log` and its filters.
//! - `inbox.rs`: `hearth notify` and `hearth schedule`.
//! - `mcp.rs`: `hearth mcp`, the MCP servers and their tools.
//! - `skills.rs`: `hearth skills`, the skills each agent finds; `hearth skills install`.
//! - `service.rs`: `hearth backup` and `hearth service install|uninstall|status`.
//! - `setup/`: `hearth setup`, the wizard that writes a working configuration.
//! - `life.rs`: `hearth stop`, `hearth restart`, `hearth reload`.
//! - `stats.rs`: `hearth stats`, model usage and cost per day and agent.
//! - `memory.rs`: `hearth search` and `hearth memory`: what the agent remembers.
//! - `web.rs`: `hearth web`: the browser client's login links and sessions.
//! - `import.rs`: `hearth import`: another agent's history (OpenClaw's
//!   transcripts, Hermes Agent's database) brought into the log.
//! - `update.rs`: `hearth update`: the newest release, its signature checked,
//!   put in place of these programs; `update/release.rs`: what a release holds.
//! - `login.rs`: `hearth login chatgpt` / `hearth logout chatgpt`: a
//!   ChatGPT plan's sign-in.
//!
//! The binary's thin `main.rs` is built by the root package; it also runs
//! the bridges (`hearth telegram`, `hearth whatsapp`) from `hearth-bridges`.

pub mod approvals;
pub mod commands;
pub mod display;
pub mod import;
pub mod inbox;
pub mod keyboard;
pub mod launch;
pub mod life;
pub mod log;
pub mod login;
pub mod look;
pub mod markdown;
pub mod mcp;
pub mod memory;
pub mod sanitize;
pub mod screen;
pub mod service;
pub mod session;
pub mod setup;
pub mod skills;
pub mod slash;
pub mod stats;
pub mod status_line;
pub mod terminal;
pub mod update;
pub mod web;
pub mod welcome;
