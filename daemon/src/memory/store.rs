//! The memory's tables in the log's database: nodes, written once and kept
//! forever, and the saved views, loaded at start and never rebuilt; the
//! queue of merges waiting for a call, kept beside the nodes so that a
//! start reads the queue rather than the whole tree; and the reads the
//! keeper makes of lines it does not hold.

use super::tree::Node;
use super::view::View;
use crate::log::{Log, LogError};
use rusqlite::{params, OptionalExtension};

mod lines;

pub(crate) use lines::line as stored_line;

/// A built node's line and whether it is a mechanical cut (the compactor gave up).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    pub node: Node,
    pub text: String,
    pub mechanical: bool,
}

/// Which saved view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewName {
    /// What turns see.
    Turn,
    /// The compactor's smaller context.
    Compaction,
}

impl ViewName {
    fn as_str(self) -> &'static str {
        match self {
            ViewName::Turn => "turn",
            ViewName::Compaction => "compaction",
        }
    }
}

/// `l:i` pairs joined by commas.
fn encode(nodes: &[Node]) -> String {
    let mut text = String::with_capacity(nodes.len() * 8);
    for (at, node) in nodes.iter().enumerate() {
        if at > 0 {
            text.push(',');
        }
        text.push_str(&format!("{}:{}", node.level, node.index));
    }
    text
}

fn decode(text: &str) -> Option<Vec<Node>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    text.split(',')
        .map(|pair| {
            let (level, index) = pair.split_once(':')?;
            Some(Node::new(level.parse().ok()?, index.parse().ok()?))
        })
        .collect()
}

/// The memory's own tables, created at the keeper's start when missing.
///
/// - `merges_due`: the parents whose halves are built and that wait for a
///   compaction call, written in the transaction that stores the nodes.
/// - `memory_migrations`: each one-time step that ran, by agent and name,
///   so that it never runs twice.
const TABLES: &str = "CREATE TABLE IF NOT EXISTS merges_due (
        agent TEXT NOT NULL,
        level INTEGER NOT NULL,
        idx   INTEGER NOT NULL,
        PRIMARY KEY (agent, level, idx)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS memory_migrations (
        agent TEXT NOT NULL,
        name  TEXT NOT NULL,
        PRIMARY KEY (agent, name)
    ) WITHOUT ROWID;";

/// The migration that fills `merges_due` from a tree stored before it
/// existed: every parent of two built halves that is not built itself.
const MERGE_QUEUE: &str = "merge-queue";

/// The memory tree's lines and saved views, kept in the log's database.
#[allow(async_fn_in_trait)] // called on `Log` itself, whose futures are `Send`
pub trait MemoryLog {
    /// Creates the memory's tables and runs, once per agent, the migration
    /// that fills the merge queue from the stored tree (the one read of the
    /// whole tree, recorded so that later starts skip it).
    async fn prepare_memory(&self, agent: &str) -> Result<(), LogError>;

    /// The merges waiting for a call, oldest first; a queued node that is
    /// built already (by a binary that did not keep the queue) is left out.
    async fn merges_due(&self, agent: &str) -> Result<Vec<Node>, LogError>;

    /// Stores built nodes and the merges they made due, and takes the built
    /// ones off the queue, in one transaction: the queue never disagrees
    /// with the tree.
    async fn store_built(
        &self,
        agent: &str,
        built: Vec<Built>,
        due: Vec<Node>,
    ) -> Result<(), LogError>;

    /// The lines of those of `nodes` that are built.
    async fn lines_of(
        &self,
        agent: &str,
        nodes: Vec<Node>,
    ) -> Result<Vec<(Node, String)>, LogError>;

    /// The built lines of the messages with ids in `[from, to)`.
    async fn message_lines(
        &self,
        agent: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<(Node, String)>, LogError>;

    /// The ids of the messages in `[from, to)` whose line is built.
    async fn built_messages(&self, agent: &str, from: u64, to: u64) -> Result<Vec<u64>, LogError>;

    /// When each message with an id in `[from, to)` was logged, by id.
    async fn logged_times(
        &self,
        agent: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<(u64, String)>, LogError>;

    /// Stores built nodes; a node already stored keeps its first line.
    async fn insert_nodes(&self, agent: &str, built: Vec<Built>) -> Result<(), LogError>;

    /// One node's line, if built.
    async fn node_text(&self, agent: &str, node: Node) -> Result<Option<String>, LogError>;

    async fn save_view(&self, agent: &str, name: ViewName, view: &View) -> Result<(), LogError>;

    /// The saved view; none for a home that never saved one. A saved view
    /// that cannot be read is an error, never silently rebuilt.
    async fn load_view(&self, agent: &str, name: ViewName) -> Result<Option<View>, LogError>;
}

impl MemoryLog for Log {
    async fn prepare_memory(&self, agent: &str) -> Result<(), LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            tx.execute_batch(TABLES)?;
            let ran: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM memory_migrations WHERE agent = ?1 AND name = ?2)",
                params![agent, MERGE_QUEUE],
                |row| row.get(0),
            )?;
            if ran {
                return Ok(());
            }
            tx.execute(
                "INSERT OR IGNORE INTO merges_due (agent, level, idx)
                 SELECT l.agent, l.level + 1, l.idx / 2 FROM nodes l
                 JOIN nodes r ON r.agent = l.agent AND r.level = l.level AND r.idx = l.idx + 1
                 WHERE l.agent = ?1 AND l.idx % 2 = 0 AND NOT EXISTS (
                     SELECT 1 FROM nodes p WHERE p.agent = l.agent
                     AND p.level = l.level + 1 AND p.idx = l.idx / 2)",
                params![agent],
            )?;
            tx.execute(
                "INSERT INTO memory_migrations (agent, name) VALUES (?1, ?2)",
                params![agent, MERGE_QUEUE],
            )?;
            Ok(())
        })
        .await
    }

    async fn merges_due(&self, agent: &str) -> Result<Vec<Node>, LogError> {
        let agent = agent.to_string();
        self.run_derived(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT m.level, m.idx FROM merges_due m WHERE m.agent = ?1 AND NOT EXISTS (
                     SELECT 1 FROM nodes n WHERE n.agent = m.agent
                     AND n.level = m.level AND n.idx = m.idx)",
            )?;
            let rows = statement.query_map(params![agent], |row| {
                Ok(Node::new(row.get(0)?, row.get::<_, i64>(1)? as u64))
            })?;
            rows.collect()
        })
        .await
    }

    async fn store_built(
        &self,
        agent: &str,
        built: Vec<Built>,
        due: Vec<Node>,
    ) -> Result<(), LogError> {
        let agent = agent.to_string();
        self.run_derived(move |tx, _| {
            for node in built {
                lines::insert(tx, &agent, &node)?;
                tx.prepare_cached(
                    "DELETE FROM merges_due WHERE agent = ?1 AND level = ?2 AND idx = ?3",
                )?
                .execute(params![
                    agent,
                    node.node.level,
                    node.node.index as i64
                ])?;
            }
            let mut queue = tx.prepare_cached(
                "INSERT OR IGNORE INTO merges_due (agent, level, idx) VALUES (?1, ?2, ?3)",
            )?;
            for node in due {
                queue.execute(params![agent, node.level, node.index as i64])?;
            }
            Ok(())
        })
        .await
    }

    async fn lines_of(
        &self,
        agent: &str,
        nodes: Vec<Node>,
    ) -> Result<Vec<(Node, String)>, LogError> {
        let agent = agent.to_string();
        self.run_derived(move |tx, _| {
            let mut read = Vec::with_capacity(nodes.len());
            for node in nodes {
                if let Some(text) = lines::line(tx, &agent, node)? {
                    read.push((node, text));
                }
            }
            Ok(read)
        })
        .await
    }

    async fn message_lines(
        &self,
        agent: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<(Node, String)>, LogError> {
        let agent = agent.to_string();
        self.run_derived(move |tx, _| lines::message_lines(tx, &agent, from, to))
            .await
    }

    async fn built_messages(&self, agent: &str, from: u64, to: u64) -> Result<Vec<u64>, LogError> {
        let agent = agent.to_string();
        self.run_derived(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT idx FROM nodes WHERE agent = ?1 AND level = 0 AND idx >= ?2 AND idx < ?3",
            )?;
            let rows = statement.query_map(params![agent, from as i64, to as i64], |row| {
                Ok(row.get::<_, i64>(0)? as u64)
            })?;
            rows.collect()
        })
        .await
    }

    async fn logged_times(
        &self,
        agent: &str,
        from: u64,
        to: u64,
    ) -> Result<Vec<(u64, String)>, LogError> {
        let agent = agent.to_string();
        self.run_derived(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT id, at FROM messages WHERE agent = ?1 AND id >= ?2 AND id < ?3 ORDER BY id",
            )?;
            let rows = statement.query_map(params![agent, from as i64, to as i64], |row| {
                Ok((row.get::<_, i64>(0)? as u64, row.get(1)?))
            })?;
            rows.collect()
        })
        .await
    }

    async fn insert_nodes(&self, agent: &str, built: Vec<Built>) -> Result<(), LogError> {
        let agent = agent.to_string();
        self.run_derived(move |tx, _| {
            for node in built {
                lines::insert(tx, &agent, &node)?;
            }
            Ok(())
        })
        .await
    }

    async fn node_text(&self, agent: &str, node: Node) -> Result<Option<String>, LogError> {
        let agent = agent.to_string();
        self.run_derived(move |tx, _| lines::line(tx, &agent, node))
            .await
    }

    async fn save_view(&self, agent: &str, name: ViewName, view: &View) -> Result<(), LogError> {
        let agent = agent.to_string();
        let nodes = encode(&view.nodes);
        let (applied, batching) = (view.applied as i64, view.batching);
        self.run_derived(move |tx, _| {
            tx.execute(
                "INSERT INTO views (agent, name, applied, batching, nodes) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT(agent, name) DO UPDATE SET applied = excluded.applied,
                     batching = excluded.batching, nodes = excluded.nodes",
                params![agent, name.as_str(), applied, batching, nodes],
            )
            .map(|_| ())
        })
        .await
    }

    async fn load_view(&self, agent: &str, name: ViewName) -> Result<Option<View>, LogError> {
        let agent = agent.to_string();
        let row = self
            .run_derived(move |tx, _| {
                tx.query_row(
                    "SELECT applied, batching, nodes FROM views WHERE agent = ?1 AND name = ?2",
                    params![agent, name.as_str()],
                    |row| {
                        Ok((
                            row.get::<_, i64>(0)?,
                            row.get::<_, bool>(1)?,
                            row.get::<_, String>(2)?,
                        ))
                    },
                )
                .optional()
            })
            .await?;
        let Some((applied, batching, nodes)) = row else {
            return Ok(None);
        };
        let nodes = decode(&nodes).ok_or_else(|| {
            LogError::Commit(format!("the saved {} view cannot be read", name.as_str()))
        })?;
        Ok(Some(View {
            nodes,
            applied: applied as u64,
            batching,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::broadcast;

    #[test]
    fn views_encode_and_decode() {
        let nodes = vec![Node::new(3, 0), Node::new(1, 4), Node::message(10)];
        assert_eq!(encode(&nodes), "3:0,1:4,0:10");
        assert_eq!(decode(&encode(&nodes)), Some(nodes));
        assert_eq!(decode(""), Some(vec![]));
        assert_eq!(decode("1:x"), None);
    }

    #[tokio::test]
    async fn nodes_are_written_once_and_views_saved() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = broadcast::channel(4);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        let first = Built {
            node: Node::new(1, 0),
            text: "first".into(),
            mechanical: false,
        };
        let second = Built {
            text: "second".into(),
            ..first.clone()
        };
        log.insert_nodes("a", vec![first]).await.unwrap();
        log.insert_nodes("a", vec![second]).await.unwrap();
        assert_eq!(
            log.node_text("a", Node::new(1, 0))
                .await
                .unwrap()
                .as_deref(),
            Some("first")
        );
        let view = View {
            nodes: vec![Node::new(1, 0), Node::message(2)],
            applied: 3,
            batching: true,
        };
        log.save_view("a", ViewName::Turn, &view).await.unwrap();
        assert_eq!(
            log.load_view("a", ViewName::Turn).await.unwrap(),
            Some(view)
        );
        assert_eq!(
            log.load_view("a", ViewName::Compaction).await.unwrap(),
            None
        );
    }
}
