//! How a line is stored: its text, or — when the line only repeats what
//! the database holds already — the number of bytes it takes from that.
//!
//! Three kinds of line repeat other text, and most lines are one of them:
//!
//! - a message's line that is the message itself (`kind: text`, one line),
//!   or its first bytes (cut mechanically);
//! - a parent joined for free: its halves' lines with a line break between;
//! - a mechanical merge: the first bytes of its halves' lines with a space
//!   between, as one line.
//!
//! Such a line is stored as an empty `text` with `prefix` set to its length
//! in bytes, and read back by taking that many bytes of its source: the
//! message, or the halves' lines (read the same way, only as many bytes as
//! are needed, so a line high in the tree costs one row per level, not its
//! whole span; a mechanical merge that lies within its left half's line
//! names, in `source`, the level of the node on its left edge it takes its
//! bytes from, and is read in one step). A line is stored so only when
//! reading it back gives the very same bytes ([`insert`] checks that
//! before it writes): the view shows the same lines, whatever was stored.
//!
//! Every other line (a summary, a line with a redacted key or the untrusted
//! marker, a message's line with images) is stored as its text, as are the
//! lines written before the column existed.

use super::Built;
use crate::memory::tree::{message_line, Node};
use rusqlite::{params, Connection, OptionalExtension};

/// A stored line that cannot be read back: the database was changed by
/// something other than hearthd.
fn damaged(node: Node) -> rusqlite::Error {
    rusqlite::Error::ToSqlConversionFailure(
        format!(
            "the memory's line of node {node} refers to text that is missing or not UTF-8; \
             the database was changed outside hearthd"
        )
        .into(),
    )
}

/// Stores `built` unless its node is stored already (the first line stays):
/// as a prefix of what it repeats when it repeats it exactly, else as text.
pub(super) fn insert(tx: &Connection, agent: &str, built: &Built) -> Result<(), rusqlite::Error> {
    let node = built.node;
    // A mechanical line may be the first bytes of its source; any other
    // must be all of it (one byte more is read to tell).
    let length = built.text.len();
    let limit = if built.mechanical { length } else { length + 1 };
    let repeats = length > 0
        && source(tx, agent, node, built.mechanical, limit)?.as_deref()
            == Some(built.text.as_bytes());
    let prefix = repeats.then_some(length as i64);
    let shortcut = match repeats && built.mechanical {
        true => shortcut(tx, agent, built)?,
        false => None,
    };
    let text = if prefix.is_some() { "" } else { &built.text };
    tx.prepare_cached(
        "INSERT OR IGNORE INTO nodes (agent, level, idx, text, mechanical, prefix, source)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        agent,
        node.level,
        node.index as i64,
        text,
        built.mechanical,
        prefix,
        shortcut
    ])?;
    Ok(())
}

/// For a mechanical merge whose line lies within its left half's: the
/// level of the node on its left edge whose line it takes the first bytes
/// of, read in one step rather than one per level (a mechanical line high
/// in the tree is mostly the start of its oldest message's). None when
/// the line needs its right half, or reading it so would differ.
fn shortcut(tx: &Connection, agent: &str, built: &Built) -> Result<Option<u8>, rusqlite::Error> {
    let Some((left, _)) = built.node.children() else {
        return Ok(None);
    };
    let row: Option<(i64, Option<i64>, Option<u8>)> = tx
        .prepare_cached(
            "SELECT length(CAST(text AS BLOB)), prefix, source FROM nodes
             WHERE agent = ?1 AND level = ?2 AND idx = ?3",
        )?
        .query_row(params![agent, left.level, left.index as i64], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    let Some((text_length, prefix, source)) = row else {
        return Ok(None);
    };
    let covered = usize::try_from(prefix.unwrap_or(text_length)).unwrap_or(0);
    let length = built.text.len();
    if covered < length {
        return Ok(None);
    }
    let level = source.unwrap_or(left.level);
    let read = from_edge(tx, agent, built.node, level, length)?;
    Ok((read.as_deref() == Some(built.text.as_bytes())).then_some(level))
}

/// The first `limit` bytes of the line of the node at `level` on the left
/// edge of `node`, as one line.
fn from_edge(
    tx: &Connection,
    agent: &str,
    node: Node,
    level: u8,
    limit: usize,
) -> Result<Option<Vec<u8>>, rusqlite::Error> {
    if level >= node.level {
        return Ok(None);
    }
    let edge = Node::new(level, node.first() >> level);
    Ok(line_bytes(tx, agent, edge, limit)?.map(as_one_line))
}

/// Line breaks as spaces, in place: a mechanical line is one line.
fn as_one_line(mut bytes: Vec<u8>) -> Vec<u8> {
    for byte in &mut bytes {
        if matches!(byte, b'\n' | b'\r') {
            *byte = b' ';
        }
    }
    bytes
}

/// The line of `node` as stored, whole; none when it is not built.
pub(crate) fn line(
    tx: &Connection,
    agent: &str,
    node: Node,
) -> Result<Option<String>, rusqlite::Error> {
    match line_bytes(tx, agent, node, usize::MAX)? {
        Some(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| damaged(node)),
        None => Ok(None),
    }
}

/// The built lines of the messages with ids in `[from, to)`: one read,
/// the messages beside the lines that repeat them.
pub(super) fn message_lines(
    tx: &Connection,
    agent: &str,
    from: u64,
    to: u64,
) -> Result<Vec<(Node, String)>, rusqlite::Error> {
    let mut statement = tx.prepare_cached(
        "SELECT n.idx, n.text, n.prefix, m.kind, m.text FROM nodes n
         LEFT JOIN messages m ON n.prefix IS NOT NULL AND m.agent = n.agent AND m.id = n.idx
         WHERE n.agent = ?1 AND n.level = 0 AND n.idx >= ?2 AND n.idx < ?3",
    )?;
    let rows = statement.query_map(params![agent, from as i64, to as i64], |row| {
        let node = Node::message(row.get::<_, i64>(0)? as u64);
        let text: String = row.get(1)?;
        let Some(length) = row.get::<_, Option<i64>>(2)? else {
            return Ok((node, text));
        };
        let message: (Option<String>, Option<String>) = (row.get(3)?, row.get(4)?);
        let (Some(kind), Some(text)) = message else {
            return Err(damaged(node));
        };
        let mut bytes = message_line(&kind, &text).into_bytes();
        let length = usize::try_from(length).map_err(|_| damaged(node))?;
        if bytes.len() < length {
            return Err(damaged(node));
        }
        bytes.truncate(length);
        Ok((node, String::from_utf8(bytes).map_err(|_| damaged(node))?))
    })?;
    rows.collect()
}

/// The first `limit` bytes of the stored line of `node`; none when it is
/// not built.
fn line_bytes(
    tx: &Connection,
    agent: &str,
    node: Node,
    limit: usize,
) -> Result<Option<Vec<u8>>, rusqlite::Error> {
    let row: Option<(String, bool, Option<i64>, Option<u8>)> = tx
        .prepare_cached(
            "SELECT text, mechanical, prefix, source FROM nodes
             WHERE agent = ?1 AND level = ?2 AND idx = ?3",
        )?
        .query_row(params![agent, node.level, node.index as i64], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .optional()?;
    let Some((text, mechanical, prefix, edge)) = row else {
        return Ok(None);
    };
    let Some(length) = prefix else {
        let mut bytes = text.into_bytes();
        bytes.truncate(limit);
        return Ok(Some(bytes));
    };
    let length = usize::try_from(length)
        .map_err(|_| damaged(node))?
        .min(limit);
    let bytes = match edge {
        Some(level) => from_edge(tx, agent, node, level, length)?,
        None => source(tx, agent, node, mechanical, length)?,
    };
    bytes.map(Some).ok_or_else(|| damaged(node))
}

/// The first `limit` bytes of what the line of `node` would repeat: its
/// message's line at level 0; above, its halves' lines joined with a line
/// break (a free join) or, for a mechanical line, with a space, as one
/// line. None when the message or a half is missing.
fn source(
    tx: &Connection,
    agent: &str,
    node: Node,
    mechanical: bool,
    limit: usize,
) -> Result<Option<Vec<u8>>, rusqlite::Error> {
    let Some((left, right)) = node.children() else {
        let message: Option<(String, String)> = tx
            .prepare_cached("SELECT kind, text FROM messages WHERE agent = ?1 AND id = ?2")?
            .query_row(params![agent, node.first() as i64], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?;
        return Ok(message.map(|(kind, text)| {
            let mut bytes = message_line(&kind, &text).into_bytes();
            bytes.truncate(limit);
            bytes
        }));
    };
    let Some(mut bytes) = line_bytes(tx, agent, left, limit)? else {
        return Ok(None);
    };
    if bytes.len() < limit {
        let rest = limit - bytes.len() - 1;
        let Some(right) = line_bytes(tx, agent, right, rest)? else {
            return Ok(None);
        };
        bytes.push(if mechanical { b' ' } else { b'\n' });
        bytes.extend(right);
    }
    Ok(Some(if mechanical {
        as_one_line(bytes)
    } else {
        bytes
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Log, NewMessage};
    use crate::memory::tree::{cut, free_join};
    use crate::memory::MemoryLog;
    use hearth_protocol::Kind;
    use tokio::sync::broadcast;

    fn built(node: Node, text: &str, mechanical: bool) -> Built {
        Built {
            node,
            text: text.to_string(),
            mechanical,
        }
    }

    /// The stored `text` and `prefix` of a node's row.
    async fn row(log: &Log, node: Node) -> (String, Option<i64>) {
        log.run(move |tx, _| {
            tx.query_row(
                "SELECT text, prefix FROM nodes WHERE agent = 'a' AND level = ?1 AND idx = ?2",
                params![node.level, node.index as i64],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn lines_that_repeat_are_stored_as_lengths_and_read_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        let long = format!(
            "the plumber comes on tuesday\n{}",
            "with the ledger ".repeat(60)
        );
        for text in [
            "the kettle is in the cellar",
            long.as_str(),
            "ok",
            "é then more",
        ] {
            log.append("a", NewMessage::new(Kind::User, "terminal", text))
                .await
                .unwrap();
        }
        let whole = message_line("user", "the kettle is in the cellar");
        let cut_long = cut(&message_line("user", &long), 64);
        let join = free_join(&whole, &cut_long, 4096).unwrap();
        let lines = vec![
            built(Node::message(0), &whole, false),
            built(Node::message(1), &cut_long, true),
            built(Node::new(1, 0), &join, false),
            // A summary, and a line with a mark the message lacks: their text.
            built(Node::message(2), "user said ok", false),
            built(
                Node::message(3),
                &format!("{} [untrusted]", message_line("user", "é then more")),
                false,
            ),
        ];
        log.insert_nodes("a", lines.clone()).await.unwrap();
        // The merge of 0+2 with 2+2 (`user said ok`, then the marked line).
        let right = format!(
            "user said ok\n{} [untrusted]",
            message_line("user", "é then more")
        );
        log.insert_nodes("a", vec![built(Node::new(1, 1), &right, false)])
            .await
            .unwrap();
        let merge_line = cut(
            &crate::memory::tree::one_line(&format!("{join} {right}")),
            200,
        );
        log.insert_nodes("a", vec![built(Node::new(2, 0), &merge_line, true)])
            .await
            .unwrap();

        for line in &lines {
            assert_eq!(
                log.node_text("a", line.node).await.unwrap().as_deref(),
                Some(line.text.as_str())
            );
        }
        assert_eq!(
            log.node_text("a", Node::new(2, 0)).await.unwrap(),
            Some(merge_line.clone())
        );
        let read = log
            .lines_of("a", vec![Node::new(1, 0), Node::new(2, 0)])
            .await
            .unwrap();
        assert_eq!(
            read,
            vec![
                (Node::new(1, 0), join.clone()),
                (Node::new(2, 0), merge_line.clone())
            ]
        );
        let messages = log.message_lines("a", 0, 4).await.unwrap();
        let expected: Vec<(Node, String)> = lines
            .iter()
            .filter(|line| line.node.level == 0)
            .map(|line| (line.node, line.text.clone()))
            .collect();
        assert_eq!(messages, expected);

        // Stored as lengths: the message, its cut, the free joins (one of
        // them over lines stored as text), the mechanical merge.
        for (node, text) in [
            (Node::message(0), &whole),
            (Node::message(1), &cut_long),
            (Node::new(1, 0), &join),
            (Node::new(1, 1), &right),
            (Node::new(2, 0), &merge_line),
        ] {
            assert_eq!(
                row(&log, node).await,
                (String::new(), Some(text.len() as i64)),
                "{node}"
            );
        }
        // Stored as text: a summary, a line with a mark its message lacks.
        assert_eq!(row(&log, Node::message(2)).await.1, None);
        assert_eq!(row(&log, Node::message(3)).await.1, None);
    }

    #[tokio::test]
    async fn a_mechanical_merge_within_its_left_half_is_read_from_the_left_edge() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        for text in ["the kettle\nis in the cellar", "b", "c", "d"] {
            log.append("a", NewMessage::new(Kind::User, "t", text))
                .await
                .unwrap();
        }
        let lines: Vec<String> = ["the kettle\nis in the cellar", "b", "c", "d"]
            .iter()
            .map(|text| message_line("user", text))
            .collect();
        let mut built_lines: Vec<Built> = (0..4)
            .map(|id| built(Node::message(id), &lines[id as usize], false))
            .collect();
        let low = cut(
            &crate::memory::tree::one_line(&format!("{} {}", lines[0], lines[1])),
            20,
        );
        let right = free_join(&lines[2], &lines[3], 512).unwrap();
        let high = cut(
            &crate::memory::tree::one_line(&format!("{low} {right}")),
            14,
        );
        built_lines.push(built(Node::new(1, 0), &low, true));
        built_lines.push(built(Node::new(1, 1), &right, false));
        built_lines.push(built(Node::new(2, 0), &high, true));
        log.insert_nodes("a", built_lines.clone()).await.unwrap();
        for line in &built_lines {
            assert_eq!(
                log.node_text("a", line.node).await.unwrap().as_deref(),
                Some(line.text.as_str()),
                "{}",
                line.node
            );
        }
        let source = |node: Node| {
            log.run(move |tx, _| {
                tx.query_row(
                    "SELECT source FROM nodes WHERE agent = 'a' AND level = ?1 AND idx = ?2",
                    params![node.level, node.index as i64],
                    |row| row.get::<_, Option<u8>>(0),
                )
            })
        };
        // Both merges start the first message's line: read from it at once.
        assert_eq!(source(Node::new(1, 0)).await.unwrap(), Some(0));
        assert_eq!(source(Node::new(2, 0)).await.unwrap(), Some(0));
        assert_eq!(source(Node::new(1, 1)).await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_line_that_is_only_the_start_of_its_message_keeps_its_text_unless_cut() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        log.append("a", NewMessage::new(Kind::User, "t", "kettle and garden"))
            .await
            .unwrap();
        // The compactor's own line that happens to be the message's start.
        log.insert_nodes("a", vec![built(Node::message(0), "user: kettle", false)])
            .await
            .unwrap();
        assert_eq!(
            row(&log, Node::message(0)).await,
            ("user: kettle".into(), None)
        );
    }

    #[tokio::test]
    async fn an_older_tree_is_read_as_it_was_and_grows_the_new_way() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hearth.db");
        {
            // The tree as hearthd stored it before lines were lengths.
            let old = Connection::open(&path).unwrap();
            old.execute_batch(
                "CREATE TABLE nodes (agent TEXT NOT NULL, level INTEGER NOT NULL,
                     idx INTEGER NOT NULL, text TEXT NOT NULL, mechanical INTEGER NOT NULL,
                     PRIMARY KEY (agent, level, idx));
                 INSERT INTO nodes VALUES ('a', 0, 0, 'user: first', 0);
                 INSERT INTO nodes VALUES ('a', 1, 0, 'an old summary', 0);
                 PRAGMA user_version = 2;",
            )
            .unwrap();
        }
        let (events, _) = broadcast::channel(16);
        let log = Log::open(&path, events).unwrap();
        log.append("a", NewMessage::new(Kind::User, "t", "first"))
            .await
            .unwrap();
        log.append("a", NewMessage::new(Kind::User, "t", "second"))
            .await
            .unwrap();
        assert_eq!(
            log.node_text("a", Node::message(0))
                .await
                .unwrap()
                .as_deref(),
            Some("user: first")
        );
        assert_eq!(
            log.node_text("a", Node::new(1, 0))
                .await
                .unwrap()
                .as_deref(),
            Some("an old summary")
        );
        log.insert_nodes("a", vec![built(Node::message(1), "user: second", false)])
            .await
            .unwrap();
        assert_eq!(
            row(&log, Node::message(0)).await,
            ("user: first".into(), None)
        );
        assert_eq!(row(&log, Node::message(1)).await, (String::new(), Some(12)));
        assert_eq!(
            log.node_text("a", Node::message(1))
                .await
                .unwrap()
                .as_deref(),
            Some("user: second")
        );
        let (version, old_trigger): (i64, bool) = log
            .run(|tx, _| {
                Ok((
                    tx.query_row("PRAGMA user_version", [], |row| row.get(0))?,
                    tx.query_row(
                        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE name = 'lines_are_indexed_by_words'",
                        [],
                        |row| row.get(0),
                    )?,
                ))
            })
            .await
            .unwrap();
        assert_eq!(version, crate::log::SCHEMA_VERSION);
        assert!(
            !old_trigger,
            "the trigger that indexed every line is replaced"
        );
    }
}
