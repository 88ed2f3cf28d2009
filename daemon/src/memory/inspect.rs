//! What a person sees of the memory: the memory frames answered from the
//! log's database — `search`, `memory` (the view as the last turn saw it),
//! `memory_show` (a node and what it was made from) and `facts`.
//!
//! They read the stored tree and the saved turn view, never the keeper's
//! live state, so looking changes nothing the agent will see.

use super::facts::{Change, FactNote};
use super::search::{self, Query};
use super::store::ViewName;
use super::tree::{one_line, Node};
use super::view::line_size;
use crate::log::{Log, LogError, NewMessage};
use crate::memory::FactsLog;
use crate::memory::MemoryLog;
use crate::memory::SearchLog;
use hearth_protocol::{
    ClientFrame, ErrorCode, Kind, MemoryLine, MemoryNode, MemoryView, ServerFrame,
};
use rusqlite::{params, Connection, OptionalExtension};

/// The answer to one of the memory frames; none for any other frame. A
/// refusal is an `error` frame; only a failing log is an error.
pub async fn answer(
    log: &Log,
    agent: &str,
    client: &str,
    frame: &ClientFrame,
) -> Result<Option<ServerFrame>, LogError> {
    let refuse = |message: String| ServerFrame::Error {
        code: ErrorCode::Refused,
        message,
    };
    Ok(Some(match frame {
        ClientFrame::Search {
            query,
            before,
            after,
            kind,
            source,
            limit,
        } => {
            let read = Query::read(
                query,
                before.as_deref(),
                after.as_deref(),
                kind.as_deref(),
                source.as_deref(),
                *limit,
            );
            match read {
                Ok(query) => match log.search(agent, query).await {
                    Ok(hits) => ServerFrame::SearchResults { hits },
                    Err(search::SearchError::Log(err)) => return Err(err),
                    Err(err) => refuse(err.to_string()),
                },
                Err(err) => refuse(err.to_string()),
            }
        }
        ClientFrame::Memory => ServerFrame::Memory(view(log, agent).await?),
        ClientFrame::MemoryShow { id, n } => match Node::named(*id, *n) {
            Some(node) => match show(log, agent, node).await? {
                Some(frame) => frame,
                None => refuse(format!("there is no node {id}+{n} in the log yet")),
            },
            None => refuse(format!(
                "no node {id}+{n}: nodes are id+n with n a power of two and id a multiple of n"
            )),
        },
        ClientFrame::Facts { add, remove } => {
            let change = match (add, remove) {
                (Some(_), Some(_)) => {
                    return Ok(Some(refuse("add or remove one fact at a time".into())))
                }
                (Some(fact), None) => Some(Change::Remember(fact.clone(), None)),
                (None, Some(which)) => Some(Change::Forget(which.clone())),
                (None, None) => None,
            };
            match change {
                None => ServerFrame::Facts(log.facts(agent).await?.frame()),
                Some(change) => {
                    let note = user_note(client);
                    match log.change_facts(agent, change, Some(note)).await? {
                        Ok((pinned, _)) => ServerFrame::Facts(pinned.frame()),
                        Err(refused) => refuse(refused.to_string()),
                    }
                }
            }
        }
        _ => return Ok(None),
    }))
}

/// The note a person's change to the facts logs, naming the client.
fn user_note(client: &str) -> FactNote {
    let client = client.to_string();
    Box::new(move |change, fact| {
        let verb = match change {
            Change::Remember(..) => "pinned",
            Change::Forget(_) => "unpinned",
        };
        NewMessage::new(
            Kind::Note,
            "hearth",
            format!("{client} {verb} the fact: {fact}"),
        )
    })
}

/// The saved turn view with its lines and dates.
async fn view(log: &Log, agent: &str) -> Result<MemoryView, LogError> {
    let saved = log
        .load_view(agent, ViewName::Turn)
        .await?
        .unwrap_or_default();
    let agent = agent.to_string();
    log.run(move |tx, _| {
        let total = crate::log::next_id(tx, &agent)?;
        let mut lines = Vec::with_capacity(saved.nodes.len());
        let mut bytes = "<chat>\n".len() + "</chat>".len();
        for &node in &saved.nodes {
            let line = memory_line(tx, &agent, node)?;
            bytes += line_size(node, &line.text);
            lines.push(line);
        }
        Ok(MemoryView {
            lines,
            applied: saved.applied,
            newer: total.saturating_sub(saved.applied),
            bytes: bytes as u64,
        })
    })
    .await
}

/// Node `node`: its line, and its halves or its message. None when the
/// log does not reach its end yet.
async fn show(log: &Log, agent: &str, node: Node) -> Result<Option<ServerFrame>, LogError> {
    let total = log.next_id(agent).await?;
    if node.end() > total {
        return Ok(None);
    }
    let message = if node.level == 0 {
        log.range(agent, node.first(), node.end(), 1)
            .await?
            .into_iter()
            .next()
            .map(|entry| entry.message)
    } else {
        None
    };
    let agent = agent.to_string();
    let (line, parts) = log
        .run(move |tx, _| {
            let line = memory_line(tx, &agent, node)?;
            let parts = match node.children() {
                Some((left, right)) => {
                    vec![
                        memory_line(tx, &agent, left)?,
                        memory_line(tx, &agent, right)?,
                    ]
                }
                None => Vec::new(),
            };
            Ok((line, parts))
        })
        .await?;
    Ok(Some(ServerFrame::MemoryNode(Box::new(MemoryNode {
        line,
        parts,
        message,
    }))))
}

/// A node's line (empty while it is not written) and the dates of its
/// first and last message.
fn memory_line(tx: &Connection, agent: &str, node: Node) -> Result<MemoryLine, rusqlite::Error> {
    let mechanical: bool = tx
        .prepare_cached(
            "SELECT mechanical FROM nodes WHERE agent = ?1 AND level = ?2 AND idx = ?3",
        )?
        .query_row(params![agent, node.level, node.index as i64], |row| {
            row.get(0)
        })
        .optional()?
        .unwrap_or_default();
    let text = crate::memory::store::stored_line(tx, agent, node)?.unwrap_or_default();
    let at = |id: u64| -> Result<String, rusqlite::Error> {
        Ok(tx
            .prepare_cached("SELECT at FROM messages WHERE agent = ?1 AND id = ?2")?
            .query_row(params![agent, id as i64], |row| row.get(0))
            .optional()?
            .unwrap_or_default())
    };
    Ok(MemoryLine {
        id: node.first(),
        n: node.span(),
        from: at(node.first())?,
        to: at(node.last())?,
        text: one_line(&text),
        mechanical,
    })
}

/// The `search` tool's answer: the hits, one per line, or why none.
pub fn hits_text(hits: &[hearth_protocol::SearchHit]) -> String {
    if hits.is_empty() {
        return "no message or line matches; try other words, or fewer filters".into();
    }
    hits.iter()
        .map(search::render_hit)
        .collect::<Vec<_>>()
        .join("\n")
}
