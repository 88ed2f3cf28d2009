//! The agent's Markdown for every bridge: read once into blocks
//! (`tree.rs`), laid out as one message of a platform's marks (`text.rs`:
//! Telegram's HTML in `telegram/format.rs`, WhatsApp's formatting in
//! `whatsapp/format.rs`; a mail's plain text and HTML in `mail.rs`), and cut between blocks at a platform's limit so
//! every part renders whole (`split.rs`).

pub mod mail;
pub mod split;
pub mod text;
pub mod tree;
