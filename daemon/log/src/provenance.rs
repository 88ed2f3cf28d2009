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
//! - `{"document": NAME, "untrusted": true}`: a document's text;
//! - `{"web": URL, "untrusted": true}`: a page `web_fetch` read;
//! - `{"shell": COMMAND, "untrusted": true}`: the output of a shell command
//!   that could reach the network;
//! - `{"file": PATH, "after": WHY, "untrusted": true}`: a file of the
//!   working folder (`read_file`) changed while a call that could bring
//!   outside words into it ran, `WHY` being that call (`tools/exposure.rs`);
//! - `{"skill": NAME, "untrusted": true}`: a skill the owner did not
//!   install (`read_skill`, see `skills.rs`);
//! - `{"agent": NAME, "after": WHY, "untrusted": true}`: words an agent
//!   wrote in a tainted turn and carried forward (a subagent's task or
//!   report), `WHY` being what tainted that turn;
//! - `{"schedule": ID, "agent": NAME, "after": WHY, "untrusted": true}`: a
//!   schedule's text, made in a tainted turn.
//!
//! A message without it is the owner's, or hearth's own. A turn that takes
//! an untrusted message is tainted (see `tools/taint.rs`), and the message's
//! summary line starts with [`MARKER`], so its words never pass for the
//! owner's in the agent's memory. Words a tainted turn stores for later (a
//! schedule, a subagent's task and report, a pinned fact) keep the turn's
//! taint, so they cannot launder it into a clean turn.

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

/// A page `web_fetch` read, by its URL.
pub fn web(url: &str) -> Provenance {
    Provenance {
        web: Some(bounded(url)),
        untrusted: true,
        ..Provenance::default()
    }
}

/// The output of a shell command that could reach the network.
pub fn shell(command: &str) -> Provenance {
    Provenance {
        shell: Some(bounded(command)),
        untrusted: true,
        ..Provenance::default()
    }
}

/// The text of the file `path`, changed while `why` (`` `shell` ran with
/// the network: `curl …` ``).
pub fn file(path: &str, why: &str) -> Provenance {
    Provenance {
        file: Some(bounded(path)),
        after: Some(bounded(why)),
        untrusted: true,
        ..Provenance::default()
    }
}

/// The text of a skill the owner did not install (`read_skill`), by its name.
pub fn skill(name: &str) -> Provenance {
    Provenance {
        skill: Some(bounded(name)),
        untrusted: true,
        ..Provenance::default()
    }
}

/// Words `agent` wrote in a turn tainted `after` (`after reading …`): a
/// subagent's task or report.
pub fn carried(agent: &str, after: &str) -> Provenance {
    Provenance {
        agent: Some(agent.to_string()),
        after: Some(bounded(after)),
        untrusted: true,
        ..Provenance::default()
    }
}

/// The text of schedule `id`, which `agent` made in a turn tainted `after`.
pub fn scheduled(id: i64, agent: &str, after: &str) -> Provenance {
    Provenance {
        schedule: Some(id),
        ..carried(agent, after)
    }
}

/// The most characters of a URL, a command or a reason a provenance
/// keeps: it is named in every request that asks because of it.
pub const NAMED_LIMIT: usize = 300;

/// `text` cut to [`NAMED_LIMIT`] characters, on one line.
pub fn bounded(text: &str) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= NAMED_LIMIT {
        return one_line;
    }
    let mut cut: String = one_line.chars().take(NAMED_LIMIT - 1).collect();
    cut.push('…');
    cut
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
    } else if let Some(url) = &provenance.web {
        format!("reading {url}")
    } else if provenance.shell.is_some() {
        "a shell command that could reach the network".to_string()
    } else if let Some(path) = &provenance.file {
        let why = provenance
            .after
            .as_deref()
            .unwrap_or("outside words came in");
        format!("reading `{path}`, changed while {why}")
    } else if let Some(name) = &provenance.skill {
        skill_origin(name)
    } else if let (Some(id), Some(agent)) = (provenance.schedule, &provenance.agent) {
        let after = provenance
            .after
            .as_deref()
            .unwrap_or("after reading untrusted input");
        format!("schedule #{id}, which `{agent}` made {after}")
    } else if let Some(agent) = &provenance.agent {
        let after = provenance
            .after
            .as_deref()
            .unwrap_or("after reading untrusted input");
        format!("words `{agent}` wrote {after}")
    } else {
        "reading untrusted input".to_string()
    })
}

/// A skill the owner did not install, in words that follow "after".
pub fn skill_origin(name: &str) -> String {
    format!("reading the skill `{name}`, which the owner did not install")
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
        assert_eq!(
            untrusted_origin(&with(web("https://evil.example/p"))).as_deref(),
            Some("reading https://evil.example/p")
        );
        assert_eq!(
            untrusted_origin(&with(file(
                "page.html",
                "`shell` ran with the network: `curl x`"
            )))
            .as_deref(),
            Some("reading `page.html`, changed while `shell` ran with the network: `curl x`")
        );
        assert_eq!(
            untrusted_origin(&with(carried("scout", "after reading https://e.example"))).as_deref(),
            Some("words `scout` wrote after reading https://e.example")
        );
        assert_eq!(
            untrusted_origin(&with(scheduled(
                3,
                "hearth",
                "after reading https://e.example"
            )))
            .as_deref(),
            Some("schedule #3, which `hearth` made after reading https://e.example")
        );
        assert_eq!(bounded(&"x".repeat(400)).chars().count(), NAMED_LIMIT);
        assert_eq!(bounded("a\nb"), "a b");
        assert!(untrusted_origin(&MessageData::default()).is_none());
        assert!(untrusted_origin(&with(Provenance::default())).is_none());
        let stored = with(notify("ci")).stored().unwrap();
        assert_eq!(stored, r#"{"provenance":{"notify":"ci","untrusted":true}}"#);
        assert_eq!(marked("user: hi".into(), true), "[untrusted] user: hi");
        assert_eq!(marked("[untrusted] x".into(), true), "[untrusted] x");
        assert_eq!(marked("user: hi".into(), false), "user: hi");
    }
}
