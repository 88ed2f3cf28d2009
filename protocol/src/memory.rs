//! What the memory frames carry: search hits, the view's lines, a node
//! opened, the pinned facts. The frames themselves are in `frames.rs`.

use crate::Message;
use serde::{Deserialize, Serialize};

/// The most hits one search returns.
pub const MAX_SEARCH_HITS: u32 = 50;

/// One hit of `search`: a message or a summary line, by the node that
/// `zoom` opens (`zoom(id, n)`; for a message, `zoom(id, 1)`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// The first message it covers.
    pub id: u64,
    /// How many messages it covers: 1 for a message, 2^l for a line.
    pub n: u64,
    /// The message's kind (`user`, `reply`, `tool`, …), or `line` for a
    /// summary line.
    pub kind: String,
    /// Where the message came from; empty for a line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// When its first message was logged, RFC 3339 with the local offset.
    pub at: String,
    /// A few words around the match, the matched words in `[` `]`.
    pub snippet: String,
}

/// One line of the view, or one node of the tree.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct MemoryLine {
    /// The first message it covers.
    pub id: u64,
    /// How many messages it covers.
    pub n: u64,
    /// When its first and its last message were logged.
    pub from: String,
    pub to: String,
    /// Its line; empty when it is not written yet.
    pub text: String,
    /// The compactor gave up and its text was cut.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mechanical: bool,
}

/// A node of the memory and what it was made from: its two halves, or
/// (for a message's node) the message whole.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct MemoryNode {
    pub line: MemoryLine,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<MemoryLine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
}

/// The view as the agent's last turn saw it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct MemoryView {
    /// Its lines, oldest first; together they cover messages `0..applied`.
    pub lines: Vec<MemoryLine>,
    pub applied: u64,
    /// Messages logged after those: the next turn's view takes them in.
    pub newer: u64,
    /// The rendered size of the view, in bytes.
    pub bytes: u64,
}

/// The facts the agent keeps in view for good, oldest first.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub facts: Vec<String>,
    /// Their size as the request shows them, and the most they may take.
    pub bytes: u64,
    pub limit: u64,
}
