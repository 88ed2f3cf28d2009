//! `hearth import openclaw|hermes PATH`: moving in with a history from
//! another agent.
//!
//! The store is read here, in the client (`import/openclaw.rs`,
//! `import/hermes.rs`): the person's words become `user` messages and the
//! agent's answers `reply` messages, oldest first, each with its original
//! time and a key made of its session, its id there and a digest of its
//! words. Tool calls and their results are not imported (they are the
//! other agent's machinery, and their outputs were often pages from
//! outside); neither are system prompts, reasoning, or the other agent's
//! own summaries. What was left out is counted and said.
//!
//! The messages go to the running daemon in `import` frames, each under
//! the frame limit, and the daemon logs those whose key is new (see
//! `daemon/log/src/log/import.rs`): a second run logs nothing twice, and an
//! import into a log that already has newer messages is refused unless
//! `--force`. `--dry-run` sends the same frames with nothing written, so it
//! says what would be imported, and whether it would be refused.

mod hermes;
mod openclaw;

use chrono::{DateTime, FixedOffset, Local};
use hearth_client::{ask, connect_running, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::import::ImportMessage;
use hearth_protocol::{ClientFrame, Kind, ServerFrame, MAX_FRAME_BYTES};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The agents whose stores are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    OpenClaw,
    Hermes,
}

impl Peer {
    /// The name the daemon knows it by, and the imported messages' source.
    pub fn name(self) -> &'static str {
        match self {
            Peer::OpenClaw => "openclaw",
            Peer::Hermes => "hermes",
        }
    }
}

/// What `hearth import` was asked to do.
#[derive(Debug, Clone)]
pub struct ImportRequest {
    pub peer: Peer,
    pub path: PathBuf,
    pub dry_run: bool,
    pub force: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot read the Hermes database {path}: {message}")]
    Database { path: String, message: String },
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Command(#[from] CommandError),
}

impl ImportError {
    fn read(path: &Path, source: std::io::Error) -> ImportError {
        ImportError::Read {
            path: path.display().to_string(),
            source,
        }
    }
}

/// What was read from a store: the messages to import, oldest first, and
/// what was left out.
#[derive(Debug, Default)]
pub struct History {
    pub messages: Vec<ImportMessage>,
    pub skipped: Skipped,
}

/// What was read but is not imported, by why.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    /// Calls the other agent made to its tools.
    pub tool_calls: u64,
    /// Their results.
    pub tool_results: u64,
    /// System prompts, summaries, reasoning alone, empty messages, and
    /// the store's bookkeeping entries.
    pub other: u64,
    /// Lines or rows that could not be read.
    pub unreadable: u64,
}

/// Reads the store at the request's path and imports it through the
/// running daemon (or, with `--dry-run`, asks it what would be imported).
pub async fn import(
    home: &Home,
    agent: Option<&str>,
    request: ImportRequest,
    out: &mut dyn Write,
) -> Result<ExitCode, ImportError> {
    let history = match request.peer {
        Peer::OpenClaw => openclaw::read(&request.path)?,
        Peer::Hermes => hermes::read(&request.path)?,
    };
    let history = in_order(history);
    for line in summary(request.peer, &history) {
        say(out, &line)?;
    }
    if history.messages.is_empty() {
        say(out, "nothing to import")?;
        return Ok(ExitCode::SUCCESS);
    }
    let (mut connection, _) = connect_running(home, agent, "hearth-import", None).await?;
    let mut total = (0, 0, None, None);
    for batch in batches(history.messages) {
        let frame = ClientFrame::Import {
            from: request.peer.name().to_string(),
            messages: batch,
            force: request.force,
            dry_run: request.dry_run,
        };
        let answer = ask(&mut connection, &frame, |answer| match answer {
            ServerFrame::Imported {
                imported,
                known,
                first_id,
                last_id,
            } => Some((imported, known, first_id, last_id)),
            _ => None,
        })
        .await;
        let (imported, known, first, last) = match answer {
            Ok(answer) => answer,
            Err(err) => {
                connection.close().await;
                if total.0 > 0 && !request.dry_run {
                    say(out, &format!("imported {} messages before this:", total.0))?;
                }
                return Err(err.into());
            }
        };
        total.0 += imported;
        total.1 += known;
        total.2 = total.2.or(first);
        total.3 = last.or(total.3);
    }
    connection.close().await;
    let (imported, known, first, last) = total;
    let before = format!("{known} imported before");
    let line = match (request.dry_run, first, last) {
        (true, _, _) => {
            format!("dry run: {imported} would be imported, {before}; nothing was written")
        }
        (false, Some(first), Some(last)) => {
            format!("imported {imported} messages (ids {first} to {last}), {before}")
        }
        (false, _, _) => format!("imported {imported} messages, {before}"),
    };
    say(out, &line)?;
    Ok(ExitCode::SUCCESS)
}

fn say(out: &mut dyn Write, line: &str) -> Result<(), ImportError> {
    writeln!(out, "{line}").map_err(|err| CommandError::Output(err).into())
}

/// The messages oldest first; equal times keep the store's order.
fn in_order(mut history: History) -> History {
    history
        .messages
        .sort_by_key(|message| time(&message.at).map(|at| at.timestamp_micros()));
    history
}

fn time(at: &str) -> Option<DateTime<FixedOffset>> {
    DateTime::parse_from_rfc3339(at).ok()
}

/// The frames' messages: as many as fit well under the frame limit.
fn batches(messages: Vec<ImportMessage>) -> Vec<Vec<ImportMessage>> {
    let room = MAX_FRAME_BYTES * 3 / 4;
    let mut batches = Vec::new();
    let mut batch = Vec::new();
    let mut bytes = 0;
    for message in messages {
        // JSON escapes can make a text longer: a message is weighed as sent.
        let size = serde_json::to_string(&message).map_or(room, |text| text.len());
        if !batch.is_empty() && (bytes + size > room || batch.len() >= 500) {
            batches.push(std::mem::take(&mut batch));
            bytes = 0;
        }
        bytes += size;
        batch.push(message);
    }
    if !batch.is_empty() {
        batches.push(batch);
    }
    batches
}

/// What was read, in words: per session, the person's and the agent's
/// messages and their times; then what was left out.
pub fn summary(peer: Peer, history: &History) -> Vec<String> {
    #[derive(Default)]
    struct Session {
        user: u64,
        reply: u64,
        first: String,
        last: String,
    }
    let mut sessions: BTreeMap<String, Session> = BTreeMap::new();
    for message in &history.messages {
        let name = message.session.clone().unwrap_or_default();
        let session = sessions.entry(name).or_default();
        match message.kind {
            Kind::User => session.user += 1,
            _ => session.reply += 1,
        }
        if session.first.is_empty() {
            session.first = message.at.clone();
        }
        session.last = message.at.clone();
    }
    let users: u64 = sessions.values().map(|s| s.user).sum();
    let replies: u64 = sessions.values().map(|s| s.reply).sum();
    let mut lines = vec![format!(
        "{}: {} sessions, {} messages ({users} user, {replies} reply)",
        peer.name(),
        sessions.len(),
        users + replies,
    )];
    if let (Some(first), Some(last)) = (history.messages.first(), history.messages.last()) {
        lines.push(format!(
            "  from {} to {}",
            shown(&first.at),
            shown(&last.at)
        ));
    }
    for (name, session) in &sessions {
        lines.push(format!(
            "  session {name}: {} user, {} reply, {} to {}",
            session.user,
            session.reply,
            shown(&session.first),
            shown(&session.last)
        ));
    }
    let skipped = history.skipped;
    lines.push(format!(
        "  not imported: {} tool calls and {} tool results (tool use is not imported), {} other entries (system prompts, summaries, reasoning, empty), {} unreadable",
        skipped.tool_calls, skipped.tool_results, skipped.other, skipped.unreadable
    ));
    lines
}

/// A time as the summary shows it: local, to the minute.
fn shown(at: &str) -> String {
    time(at).map_or_else(
        || at.to_string(),
        |at| {
            at.with_timezone(&Local)
                .format("%Y-%m-%d %H:%M")
                .to_string()
        },
    )
}

/// A message to import, with its key: the session, the id there, and a
/// digest of its kind and words (so a message changed there since is
/// imported again as what it is now).
fn message(kind: Kind, text: &str, at: String, session: &str, id: &str) -> ImportMessage {
    let mut digest = Sha256::new();
    digest.update(kind.as_str().as_bytes());
    digest.update([0]);
    digest.update(text.as_bytes());
    let hex: String = digest.finalize()[..8]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    let bounded = |part: &str| part.chars().take(80).collect::<String>();
    ImportMessage {
        kind,
        text: hearth_protocol::import::bounded_text(text),
        at,
        key: format!("{}:{}:{hex}", bounded(session), bounded(id)),
        session: Some(session.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str, at: &str) -> ImportMessage {
        message(Kind::User, text, at.to_string(), "s", "1")
    }

    #[test]
    fn a_key_names_the_session_the_id_and_the_words() {
        let one = sample("hello", "2025-01-01T00:00:00Z");
        assert!(one.key.starts_with("s:1:"), "{}", one.key);
        assert_eq!(one.key, sample("hello", "2025-02-01T00:00:00Z").key);
        assert_ne!(one.key, sample("hello!", "2025-01-01T00:00:00Z").key);
    }

    #[test]
    fn batches_stay_under_the_frame_limit_and_keep_the_order() {
        let big = "x".repeat(200_000);
        let messages: Vec<_> = (0..12)
            .map(|i| {
                message(
                    Kind::User,
                    &big,
                    format!("2025-01-01T00:00:{i:02}Z"),
                    "s",
                    &i.to_string(),
                )
            })
            .collect();
        let batches = batches(messages);
        assert!(batches.len() > 1);
        let mut seen = Vec::new();
        for batch in &batches {
            let frame = ClientFrame::Import {
                from: "openclaw".into(),
                messages: batch.clone(),
                force: false,
                dry_run: false,
            };
            assert!(frame.encode().len() < MAX_FRAME_BYTES);
            seen.extend(batch.iter().map(|m| m.at.clone()));
        }
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(seen, sorted);
    }

    #[test]
    fn the_summary_counts_each_session_and_says_what_was_left_out() {
        let history = in_order(History {
            messages: vec![
                sample("later", "2025-01-02T00:00:00Z"),
                message(Kind::Reply, "hi", "2025-01-01T00:00:00Z".into(), "t", "2"),
            ],
            skipped: Skipped {
                tool_calls: 3,
                ..Skipped::default()
            },
        });
        assert_eq!(history.messages[0].text, "hi");
        let lines = summary(Peer::Hermes, &history);
        assert!(
            lines[0].starts_with("hermes: 2 sessions, 2 messages (1 user, 1 reply)"),
            "{lines:?}"
        );
        assert!(
            lines.iter().any(|l| l.contains("3 tool calls")),
            "{lines:?}"
        );
    }
}
