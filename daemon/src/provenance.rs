//! Where a message's words came from: the `provenance` field of its data
//! ([`crate::log::Provenance`]).
//!
//! A message that carries words from outside the owner records it in
//! `data.provenance`, stored as an object with `"untrusted": true` and one
//! key that names the origin:
//!
//! - `{"mcp": SERVER, "untrusted": true}`: a tool result of an MCP server;
//! - `{"notify": SOURCE, "untrusted": true}`: an event another program sent
//!   (`hearth notify`, the `notify` frame);
//! - `{"person": WHO, "untrusted": true}`: a bridge's message from someone
//!   who is not the owner;
//! - `{"document": NAME, "untrusted": true}`: a document's text.
//!
//! A message without it is the owner's, or hearth's own. A turn that takes
//! an untrusted message is tainted (see `tools/taint.rs`), and the message's
//! summary line starts with [`MARKER`], so its words never pass for the
//! owner's in the agent's memory.

use crate::log::{MessageData, Provenance};

/// What starts the summary line of an untrusted message, and stays in the
/// lines merged from it.
pub const MARKER: &str = "[untrusted]";

/// A tool result of the MCP server of this name.
pub fn mcp(server: &str) -> Provenance {
    Provenance {
        mcp: Some(server.to_string()),
        untrusted: true,
        ..Provenance::default()
    }
}

/// An event from another program, by its source name.
pub fn notify(source: &str) -> Provenance {
    Provenance {
        notify: Some(source.to_string()),
        untrusted: true,
        ..Provenance::default()
    }
}

/// A message from someone who is not the owner, in words (`telegram user
/// 99 on telegram`).
pub fn person(who: &str) -> Provenance {
    Provenance {
        person: Some(who.to_string()),
        untrusted: true,
        ..Provenance::default()
    }
}

/// The text of a document (`read_attachment`), by its file name, or its
/// SHA-256 when it has none.
pub fn document(name: &str) -> Provenance {
    Provenance {
        document: Some(name.to_string()),
        untrusted: true,
        ..Provenance::default()
    }
}

/// Where an untrusted message's words came from, in words that follow
/// "after" (``a notify event from `ci` ``); `None` for a trusted one.
pub fn untrusted_origin(data: &MessageData) -> Option<String> {
    let provenance = data.provenance.as_ref().filter(|p| p.untrusted)?;
    Some(if let Some(source) = &provenance.notify {
        format!("a notify event from `{source}`")
    } else if let Some(who) = &provenance.person {
        format!("a message from {who}, not the owner")
    } else if let Some(name) = &provenance.document {
        format!("reading the document {name}")
    } else if let Some(server) = &provenance.mcp {
        format!("a result of the MCP server `{server}`")
    } else {
        "reading untrusted input".to_string()
    })
}

/// `line` starting with [`MARKER`] when `untrusted` (and not already).
pub fn marked(line: String, untrusted: bool) -> String {
    if untrusted && !line.starts_with(MARKER) {
        format!("{MARKER} {line}")
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_origin_is_named_and_the_owners_words_are_not() {
        let with = |provenance| MessageData {
            provenance: Some(provenance),
            ..MessageData::default()
        };
        assert_eq!(
            untrusted_origin(&with(notify("ci"))).as_deref(),
            Some("a notify event from `ci`")
        );
        assert_eq!(
            untrusted_origin(&with(person("Bob on telegram"))).as_deref(),
            Some("a message from Bob on telegram, not the owner")
        );
        assert_eq!(
            untrusted_origin(&with(document("lease.pdf"))).as_deref(),
            Some("reading the document lease.pdf")
        );
        assert_eq!(
            untrusted_origin(&with(mcp("files"))).as_deref(),
            Some("a result of the MCP server `files`")
        );
        assert!(untrusted_origin(&MessageData::default()).is_none());
        assert!(untrusted_origin(&with(Provenance::default())).is_none());
        let stored = with(notify("ci")).stored().unwrap();
        assert_eq!(stored, r#"{"provenance":{"notify":"ci","untrusted":true}}"#);
        assert_eq!(marked("user: hi".into(), true), "[untrusted] user: hi");
        assert_eq!(marked("[untrusted] x".into(), true), "[untrusted] x");
        assert_eq!(marked("user: hi".into(), false), "user: hi");
    }
}
