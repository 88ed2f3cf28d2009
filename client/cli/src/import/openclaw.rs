//! OpenClaw's session transcripts.
//!
//! The format read, as OpenClaw documents it (openclaw/openclaw,
//! `docs/reference/session-management-compaction/schema.md`, "Transcript
//! event structure", read in December 2026) and as its file-backed
//! installs write it (session header `version: 3`): one JSONL file per
//! session, `<sessionId>.jsonl`, in the agent's sessions folder
//! (`~/.openclaw/agents/<agentId>/sessions/`). The first line is the
//! session header, `{"type":"session","version":3,"id":…,"timestamp":…,
//! "cwd":…}`; each later line is an entry with `type`, `id`, `parentId` and
//! `timestamp` (ISO 8601). A `message` entry carries `message.role` (`user`,
//! `assistant`, `toolResult`), `message.content` (a string, or parts:
//! `{"type":"text","text":…}`, `{"type":"thinking",…}`, `{"type":"toolCall",
//! …}`, `{"type":"image",…}`) and `message.timestamp` (epoch milliseconds).
//! Every other entry (`model_change`, `thinking_level_change`, `custom`,
//! `custom_message`, `compaction`, `branch_summary`, `reset`) is the
//! store's own bookkeeping. Newer OpenClaw releases keep transcripts in a
//! per-agent SQLite store instead; this reads the JSONL files, which those
//! releases migrate from (`openclaw doctor --session-sqlite import`).
//!
//! Imported: the text parts of `user` and `assistant` messages (an image
//! is said as `[image]`), in file order. A transcript is a tree (entries
//! name their parent); branches the person left are imported too, in the
//! order they were written. Not imported: tool calls, tool results,
//! reasoning, bookkeeping.

use super::{message, History, ImportError};
use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use hearth_protocol::Kind;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Reads every transcript at `path`: one `.jsonl` file, a sessions
/// folder, an agent's folder (holding `sessions/`), or the state folder
/// (holding `agents/`).
pub fn read(path: &Path) -> Result<History, ImportError> {
    let mut history = History::default();
    for transcript in transcripts(path)? {
        let text = std::fs::read_to_string(&transcript)
            .map_err(|err| ImportError::read(&transcript, err))?;
        let name = transcript
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        read_transcript(&text, &name, &mut history);
    }
    Ok(history)
}

/// The transcripts a path names, sorted.
fn transcripts(path: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let metadata = std::fs::metadata(path).map_err(|err| ImportError::read(path, err))?;
    if metadata.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut folders = Vec::new();
    if path.join("agents").is_dir() {
        let agents = std::fs::read_dir(path.join("agents"))
            .map_err(|err| ImportError::read(&path.join("agents"), err))?;
        for agent in agents.flatten() {
            folders.push(agent.path().join("sessions"));
        }
    } else if path.join("sessions").is_dir() {
        folders.push(path.join("sessions"));
    } else {
        folders.push(path.to_path_buf());
    }
    let mut found = Vec::new();
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        found.extend(
            entries.flatten().map(|entry| entry.path()).filter(|file| {
                file.extension().is_some_and(|ext| ext == "jsonl") && file.is_file()
            }),
        );
    }
    found.sort();
    if found.is_empty() {
        return Err(ImportError::NotFound(format!(
            "no OpenClaw session transcripts (*.jsonl) at {}: give the agent's sessions folder, e.g. ~/.openclaw/agents/main/sessions",
            path.display()
        )));
    }
    Ok(found)
}

/// Reads one transcript's lines into `history`; `name` (the file's) names
/// the session until its header does.
pub fn read_transcript(text: &str, name: &str, history: &mut History) {
    let mut session = name.to_string();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            history.skipped.unreadable += 1;
            continue;
        };
        match entry["type"].as_str() {
            Some("session") => {
                if let Some(id) = entry["id"].as_str().filter(|id| !id.is_empty()) {
                    session = id.to_string();
                }
            }
            Some("message") => read_message(&entry, &session, number, history),
            _ => history.skipped.other += 1,
        }
    }
}

fn read_message(entry: &Value, session: &str, number: usize, history: &mut History) {
    let message_value = &entry["message"];
    let Some(at) = time(entry) else {
        history.skipped.unreadable += 1;
        return;
    };
    let id = entry["id"]
        .as_str()
        .map_or_else(|| format!("line{}", number + 1), str::to_string);
    let content = &message_value["content"];
    let (kind, calls) = match message_value["role"].as_str() {
        Some("user") => (Kind::User, 0),
        Some("assistant") => (Kind::Reply, tool_calls(content)),
        Some("toolResult") => {
            history.skipped.tool_results += 1;
            return;
        }
        _ => {
            history.skipped.other += 1;
            return;
        }
    };
    history.skipped.tool_calls += calls;
    let text = words(content);
    if text.trim().is_empty() {
        if calls == 0 {
            history.skipped.other += 1;
        }
        return;
    }
    history
        .messages
        .push(message(kind, &text, at, session, &id));
}

/// The words of a message's content: its text parts, an image as
/// `[image]`; reasoning and tool calls left out.
fn words(content: &Value) -> String {
    if let Some(text) = content.as_str() {
        return text.to_string();
    }
    let parts = content.as_array().map(Vec::as_slice).unwrap_or_default();
    let words: Vec<&str> = parts
        .iter()
        .filter_map(|part| match part["type"].as_str() {
            Some("text") => part["text"].as_str(),
            Some("image") => Some("[image]"),
            _ => None,
        })
        .collect();
    words.join("\n\n")
}

fn tool_calls(content: &Value) -> u64 {
    let parts = content.as_array().map(Vec::as_slice).unwrap_or_default();
    parts
        .iter()
        .filter(|part| matches!(part["type"].as_str(), Some("toolCall" | "tool_use")))
        .count() as u64
}

/// The entry's time (ISO 8601), else its message's (epoch milliseconds),
/// as RFC 3339 in UTC.
fn time(entry: &Value) -> Option<String> {
    let at = entry["timestamp"]
        .as_str()
        .and_then(|at| DateTime::parse_from_rfc3339(at).ok())
        .map(|at| at.with_timezone(&Utc))
        .or_else(|| {
            let millis = entry["message"]["timestamp"].as_i64()?;
            Utc.timestamp_millis_opt(millis).single()
        })?;
    Some(at.to_rfc3339_opts(SecondsFormat::Millis, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRANSCRIPT: &str = r#"{"type":"session","version":3,"id":"s-1","timestamp":"2025-03-01T09:00:00.000Z","cwd":"/w"}
{"type":"model_change","id":"a1","parentId":null,"timestamp":"2025-03-01T09:00:00.001Z","provider":"p","modelId":"m"}
{"type":"message","id":"b1","parentId":"a1","timestamp":"2025-03-01T09:00:05.000Z","message":{"role":"user","content":[{"type":"text","text":"Plan the trip to Lisbon"}],"timestamp":1740819605000}}
{"type":"message","id":"b2","parentId":"b1","timestamp":"2025-03-01T09:00:09.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hidden"},{"type":"toolCall","id":"c","name":"web_search","arguments":{}}],"timestamp":1740819609000}}
{"type":"message","id":"b3","parentId":"b2","timestamp":"2025-03-01T09:00:10.000Z","message":{"role":"toolResult","toolCallId":"c","toolName":"web_search","content":[{"type":"text","text":"page"}],"isError":false,"timestamp":1740819610000}}
{"type":"message","id":"b4","parentId":"b3","message":{"role":"assistant","content":[{"type":"text","text":"Here is a plan."}],"timestamp":1740819611000}}
not json
{"type":"message","id":"b5","parentId":"b4","timestamp":"2025-03-01T09:01:00.000Z","message":{"role":"user","content":"thanks"}}
"#;

    #[test]
    fn words_of_the_person_and_the_agent_are_read_and_tool_use_is_counted() {
        let mut history = History::default();
        read_transcript(TRANSCRIPT, "file-name", &mut history);
        let read: Vec<(Kind, &str, &str)> = history
            .messages
            .iter()
            .map(|m| (m.kind, m.text.as_str(), m.at.as_str()))
            .collect();
        assert_eq!(
            read,
            vec![
                (
                    Kind::User,
                    "Plan the trip to Lisbon",
                    "2025-03-01T09:00:05.000Z"
                ),
                (Kind::Reply, "Here is a plan.", "2025-03-01T09:00:11.000Z"),
                (Kind::User, "thanks", "2025-03-01T09:01:00.000Z"),
            ]
        );
        assert_eq!(history.messages[0].session.as_deref(), Some("s-1"));
        assert!(history.messages[0].key.starts_with("s-1:b1:"));
        let skipped = history.skipped;
        assert_eq!(
            (
                skipped.tool_calls,
                skipped.tool_results,
                skipped.other,
                skipped.unreadable
            ),
            (1, 1, 1, 1)
        );
    }
}
