//! The memory's tables in the log's database: nodes, written once and kept
//! forever, and the saved views, loaded at start and never rebuilt.

use super::tree::Node;
use super::view::View;
use crate::log::{Log, LogError};
use rusqlite::{params, OptionalExtension};

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

impl Log {
    /// Stores built nodes; a node already stored keeps its first line.
    pub async fn insert_nodes(&self, agent: &str, built: Vec<Built>) -> Result<(), LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "INSERT OR IGNORE INTO nodes (agent, level, idx, text, mechanical) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for node in built {
                statement.execute(params![
                    agent,
                    node.node.level,
                    node.node.index as i64,
                    node.text,
                    node.mechanical
                ])?;
            }
            Ok(())
        })
        .await
    }

    /// Every built node of `agent`.
    pub async fn load_nodes(&self, agent: &str) -> Result<Vec<Built>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT level, idx, text, mechanical FROM nodes WHERE agent = ?1",
            )?;
            let rows = statement.query_map(params![agent], |row| {
                Ok(Built {
                    node: Node::new(row.get(0)?, row.get::<_, i64>(1)? as u64),
                    text: row.get(2)?,
                    mechanical: row.get(3)?,
                })
            })?;
            rows.collect()
        })
        .await
    }

    /// One node's line, if built.
    pub async fn node_text(&self, agent: &str, node: Node) -> Result<Option<String>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            tx.query_row(
                "SELECT text FROM nodes WHERE agent = ?1 AND level = ?2 AND idx = ?3",
                params![agent, node.level, node.index as i64],
                |row| row.get(0),
            )
            .optional()
        })
        .await
    }

    pub async fn save_view(
        &self,
        agent: &str,
        name: ViewName,
        view: &View,
    ) -> Result<(), LogError> {
        let agent = agent.to_string();
        let nodes = encode(&view.nodes);
        let (applied, batching) = (view.applied as i64, view.batching);
        self.run(move |tx, _| {
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

    /// The saved view; none for a home that never saved one. A saved view
    /// that cannot be read is an error, never silently rebuilt.
    pub async fn load_view(&self, agent: &str, name: ViewName) -> Result<Option<View>, LogError> {
        let agent = agent.to_string();
        let row = self
            .run(move |tx, _| {
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
