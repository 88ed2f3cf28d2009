//! `hearth search` and `hearth memory`: what the agent remembers, as a
//! person can look at it — hits of a full-text search, the view the last
//! turn saw, one node and what it was made from, and the pinned facts
//! (which a person may also add and remove).

use hearth_client::running::{ask_once, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, Facts, MemoryLine, MemoryNode, SearchHit, ServerFrame};
use std::io::Write;
use std::process::ExitCode;

/// What `hearth search` asks for.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    pub query: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub kind: Option<String>,
    pub source: Option<String>,
    pub limit: Option<u32>,
    pub json: bool,
}

/// What `hearth memory` does.
#[derive(Debug, Clone)]
pub enum MemoryCommand {
    /// The view, line by line.
    View { json: bool },
    /// One node, `ID+N` (or `ID`, a message).
    Show { node: String, json: bool },
    /// The pinned facts, changed first when asked.
    Facts {
        add: Option<String>,
        remove: Option<String>,
        json: bool,
    },
}

#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not a node: write ID+N as the view shows it (`128+64`), or a message id")]
pub struct BadNode(String);

/// `ID+N`, or `ID` alone for the message itself.
pub fn parse_node(text: &str) -> Result<(u64, u64), BadNode> {
    let bad = || BadNode(text.to_string());
    let text = text.trim();
    let (id, n) = text.split_once('+').unwrap_or((text, "1"));
    Ok((
        id.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    ))
}

fn unexpected(frame: ServerFrame) -> CommandError {
    CommandError::Unexpected(frame.encode())
}

/// `hearth search`: the hits, best first, one per line (or JSON lines).
pub async fn search(
    home: &Home,
    agent: Option<&str>,
    request: SearchRequest,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let frame = ClientFrame::Search {
        query: request.query,
        before: request.before,
        after: request.after,
        kind: request.kind,
        source: request.source,
        limit: request.limit,
    };
    let hits = match ask_once(home, agent, "hearth-search", &frame, Some).await? {
        ServerFrame::SearchResults { hits } => hits,
        other => return Err(unexpected(other)),
    };
    if request.json {
        for hit in &hits {
            writeln!(out, "{}", json_line(hit))?;
        }
    } else if hits.is_empty() {
        writeln!(out, "nothing matches")?;
    } else {
        for hit in &hits {
            writeln!(out, "{}", hit_line(hit))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `12+1  user from terminal  2026-11-30 10:00  the [plumber] is …`
pub fn hit_line(hit: &SearchHit) -> String {
    let what = if hit.source.is_empty() {
        hit.kind.clone()
    } else {
        format!("{} from {}", hit.kind, hit.source)
    };
    format!(
        "{}+{}  {what}  {}  {}",
        hit.id,
        hit.n,
        minute(&hit.at),
        hit.snippet
    )
}

/// `2026-11-30T10:00:00.000+01:00` as `2026-11-30 10:00`.
fn minute(at: &str) -> String {
    at.get(..16).unwrap_or(at).replace('T', " ")
}

/// A line of the view or of a node: `ID+N  FROM … TO  TEXT`.
pub fn memory_line(line: &MemoryLine) -> String {
    let dates = if line.n == 1 || line.from.get(..16) == line.to.get(..16) {
        minute(&line.from)
    } else {
        format!("{} … {}", minute(&line.from), minute(&line.to))
    };
    let text = if line.text.is_empty() {
        "(not summarized yet)"
    } else {
        &line.text
    };
    let cut = if line.mechanical { " [cut]" } else { "" };
    format!("{}+{}  {dates}  {text}{cut}", line.id, line.n)
}

/// The facts numbered, and how much of the block they take.
pub fn facts_lines(facts: &Facts) -> Vec<String> {
    let mut lines: Vec<String> = facts
        .facts
        .iter()
        .enumerate()
        .map(|(at, fact)| format!("{}. {fact}", at + 1))
        .collect();
    if lines.is_empty() {
        lines.push("no pinned facts".to_string());
    }
    lines.push(format!("({} of {} bytes)", facts.bytes, facts.limit));
    lines
}

/// `hearth memory`, `hearth memory show`, `hearth memory facts`.
pub async fn memory(
    home: &Home,
    agent: Option<&str>,
    command: MemoryCommand,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    match command {
        MemoryCommand::View { json: as_json } => {
            let view =
                match ask_once(home, agent, "hearth-memory", &ClientFrame::Memory, Some).await? {
                    ServerFrame::Memory(view) => view,
                    other => return Err(unexpected(other)),
                };
            if as_json {
                writeln!(out, "{}", json_line(&view))?;
                return Ok(ExitCode::SUCCESS);
            }
            for line in &view.lines {
                writeln!(out, "{}", memory_line(line))?;
            }
            let newer = match view.newer {
                0 => String::new(),
                1 => "; 1 newer message joins it at the next turn".to_string(),
                n => format!("; {n} newer messages join it at the next turn"),
            };
            writeln!(
                out,
                "({} lines over messages 0 to {}, {} bytes{newer})",
                view.lines.len(),
                view.applied.saturating_sub(1),
                view.bytes
            )?;
        }
        MemoryCommand::Show {
            node,
            json: as_json,
        } => {
            let (id, n) =
                parse_node(&node).map_err(|err| CommandError::Refused(err.to_string()))?;
            let frame = ClientFrame::MemoryShow { id, n };
            let answer = ask_once(home, agent, "hearth-memory", &frame, Some).await?;
            let ServerFrame::MemoryNode(node) = answer else {
                return Err(unexpected(answer));
            };
            if as_json {
                writeln!(out, "{}", json_line(&node))?;
                return Ok(ExitCode::SUCCESS);
            }
            let MemoryNode {
                line,
                parts,
                message,
            } = *node;
            writeln!(out, "{}", memory_line(&line))?;
            for part in &parts {
                writeln!(out, "  {}", memory_line(part))?;
            }
            if let Some(message) = message {
                writeln!(
                    out,
                    "message {} ({} from {}, {}):\n{}",
                    message.id,
                    message.kind,
                    message.source,
                    minute(&message.at),
                    message.text
                )?;
            }
        }
        MemoryCommand::Facts {
            add,
            remove,
            json: as_json,
        } => {
            let frame = ClientFrame::Facts { add, remove };
            let facts = match ask_once(home, agent, "hearth-memory", &frame, Some).await? {
                ServerFrame::Facts(facts) => facts,
                other => return Err(unexpected(other)),
            };
            if as_json {
                writeln!(out, "{}", json_line(&facts))?;
            } else {
                for line in facts_lines(&facts) {
                    writeln!(out, "{line}")?;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An answer as one JSON line.
fn json_line(value: &impl serde::Serialize) -> String {
    // Plain protocol data: serializing cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_are_read_as_the_view_writes_them() {
        assert_eq!(parse_node("128+64").unwrap(), (128, 64));
        assert_eq!(parse_node(" 7 ").unwrap(), (7, 1));
        assert!(parse_node("a+b").is_err());
        assert!(parse_node("3+").is_err());
    }

    #[test]
    fn lines_show_their_dates_and_text() {
        let line = MemoryLine {
            id: 0,
            n: 4,
            from: "2026-11-30T10:00:00.000+00:00".into(),
            to: "2026-12-01T09:30:00.000+00:00".into(),
            text: "they planned the trip".into(),
            mechanical: false,
        };
        assert_eq!(
            memory_line(&line),
            "0+4  2026-11-30 10:00 … 2026-12-01 09:30  they planned the trip"
        );
        let hit = SearchHit {
            id: 3,
            n: 1,
            kind: "user".into(),
            source: "terminal".into(),
            at: "2026-11-30T10:00:00.000+00:00".into(),
            snippet: "the [plumber] is Bo".into(),
        };
        assert_eq!(
            hit_line(&hit),
            "3+1  user from terminal  2026-11-30 10:00  the [plumber] is Bo"
        );
        let facts = Facts {
            facts: vec!["likes tea".into()],
            bytes: 60,
            limit: 4096,
        };
        assert_eq!(facts_lines(&facts), ["1. likes tea", "(60 of 4096 bytes)"]);
    }
}
