//! The browser client: one page that hearthd serves itself, and a WebSocket
//! endpoint that speaks the socket's protocol (`server.rs`), behind a login.
//!
//! - `auth.rs`: codes, session tokens and keys, cookies, the Origin rule
//!   and the login rate limit per address (pure).
//! - `store.rs`: one-time codes and sessions in the log's database, hashed.
//! - `http.rs`: the HTTP routes, the security headers and the upgrade.
//! - `door.rs`: the port's accept loop, with the socket's bounds on
//!   connections that have not proved a session.
//! - `page.rs`: the page's files, embedded in the binary.
//!
//! Every request but `/login` and the icon needs a session, on loopback too
//! (and the WebSocket, the only way to the conversation, its key as well);
//! SECURITY.md lists what this promises and the test of each promise.
mod auth;
mod door;
mod http;
mod page;
mod store;

pub use crate::config::WebConfig;
pub use auth::{same_origin, LoginLimiter};
pub use http::{serve, Web, WebError};
pub use store::{Codes, CODE_LIFETIME, SESSION_IDLE_LIFETIME};
