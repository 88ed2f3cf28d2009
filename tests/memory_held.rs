//! The memory keeper holds the views, not the history: the lines it holds
//! do not grow with the log, and after a restart (which reads the saved
//! views and the queues, never the whole tree) it shows the view the
//! stored tree gives. Through the library, with no memory model, so the
//! tree is a function of the log alone.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_daemon::memory::MemoryLog;
use hearth_tests::harness::small_layout;

/// A keeper on `log` with no memory model: every line is a message's own
/// or a mechanical cut, so the tree is a function of the log alone.
async fn keeper(
    log: &hearth_daemon::log::Log,
    events: &tokio::sync::broadcast::Sender<hearth_protocol::Event>,
    layout: &hearth_daemon::layout::Layout,
    dir: &std::path::Path,
) -> hearth_daemon::memory::Memory {
    use hearth_daemon::usage::{Budget, Meter, Prices};
    let meter = Meter::new(
        log.clone(),
        "hearth",
        Prices::default(),
        Budget::default(),
        dir.join("config.toml"),
    );
    let config = hearth_daemon::memory::MemoryConfig {
        agent: "hearth".into(),
        layout: layout.clone(),
        model: None,
        prompt_file: dir.join("prompt.md"),
        tools: std::sync::Arc::new(Vec::new),
        events: events.clone(),
        meter,
        activity: hearth_daemon::activity::ActivityBoard::new("hearth", events.clone()),
    };
    hearth_daemon::memory::Memory::start(log.clone(), config)
        .await
        .unwrap()
}

/// The turn view of every message before `through`, settled; asked twice,
/// so that the gauge read after it was published after the first answer.
async fn settled(memory: &hearth_daemon::memory::Memory, through: u64) -> Vec<String> {
    let settle = async {
        let view = memory.settle(through, Vec::new()).await.unwrap();
        memory.settle(through, Vec::new()).await.unwrap();
        view
    };
    tokio::time::timeout(std::time::Duration::from_secs(120), settle)
        .await
        .expect("the view settles")
}

/// Appends `count` chat messages of forty-odd bytes, in groups.
async fn chat(log: &hearth_daemon::log::Log, from: u64, count: u64) {
    use hearth_daemon::log::NewMessage;
    for group in (from..from + count).collect::<Vec<_>>().chunks(500) {
        let messages = group
            .iter()
            .map(|n| {
                let text = format!("message {n}: the kettle, the garden, the post");
                NewMessage::new(hearth_protocol::Kind::User, "terminal", text)
            })
            .collect();
        log.append_all("hearth", messages).await.unwrap();
    }
}

/// The turn view computed from the stored tree alone, as the pure rule
/// gives it: what the keeper must show, whatever it holds in memory. The
/// lines are read through the log, as some are stored as a length of
/// what they repeat (`memory/store/lines.rs`).
async fn view_from_the_tree(
    log: &hearth_daemon::log::Log,
    database: &std::path::Path,
    through: u64,
    layout_text: &str,
) -> Vec<String> {
    use hearth_daemon::memory::{Lines, Node, View};
    use std::collections::HashMap;
    struct Tree(HashMap<Node, String>);
    impl Lines for Tree {
        fn line(&self, node: Node) -> Option<&str> {
            self.0.get(&node).map(String::as_str)
        }
    }
    let nodes: Vec<Node> = {
        let connection = rusqlite::Connection::open(database).unwrap();
        let mut statement = connection
            .prepare("SELECT level, idx FROM nodes WHERE agent = 'hearth'")
            .unwrap();
        let nodes = statement
            .query_map([], |row| {
                Ok(Node::new(row.get(0)?, row.get::<_, i64>(1)? as u64))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        nodes
    };
    let tree = Tree(
        log.lines_of("hearth", nodes)
            .await
            .unwrap()
            .into_iter()
            .collect(),
    );
    let layout = hearth_daemon::layout::Layout::parse("test-layout.toml", layout_text).unwrap();
    let mut view = View::default();
    view.advance(through, layout.turn_budgets(), &tree);
    view.render(&tree, |_| false)
}

#[tokio::test]
async fn the_keeper_holds_the_view_not_the_history() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("hearth.db");
    let layout_text = small_layout(60, 2000, 1000);
    let layout = hearth_daemon::layout::Layout::parse("test-layout.toml", &layout_text).unwrap();
    let (events, _) = tokio::sync::broadcast::channel(1024);
    let log = hearth_daemon::log::Log::open(&database, events.clone()).unwrap();
    let memory = keeper(&log, &events, &layout, dir.path()).await;

    chat(&log, 0, 1_000).await;
    settled(&memory, 1_000).await;
    let short = memory.gauge();
    chat(&log, 1_000, 4_000).await;
    settled(&memory, 5_000).await;
    let long = memory.gauge();
    // Five times the messages, and as many lines held: the views' and a
    // few recent ones, not one per message or node ever built.
    assert!(short.lines > 10 && long.lines > 10);
    assert!(
        long.held <= short.held + short.lines.max(long.lines),
        "held {} lines at 1,000 messages, {} at 5,000",
        short.held,
        long.held
    );
    assert!(long.held < 1_000, "held {} lines", long.held);

    // A restart (a second log handle, a second keeper) reads the views and
    // the queues, not the tree, and shows what the tree gives. It opens a
    // backup of the database, as a restored home would: one database has
    // one writer, and the first keeper runs on.
    let database = dir.path().join("restarted.db");
    log.backup(&database).await.unwrap();
    let (events, _) = tokio::sync::broadcast::channel(1024);
    let log = hearth_daemon::log::Log::open(&database, events.clone()).unwrap();
    let memory = keeper(&log, &events, &layout, dir.path()).await;
    chat(&log, 5_000, 300).await;
    let view = settled(&memory, 5_300).await;
    let restarted = memory.gauge();
    assert!(restarted.held < 1_000, "held {} lines", restarted.held);
    assert_eq!(
        view,
        view_from_the_tree(&log, &database, 5_300, &layout_text).await
    );
}

#[tokio::test]
async fn a_dropped_memory_ends_its_keeper_and_lets_go_of_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let layout_text = small_layout(60, 2000, 1000);
    let layout = hearth_daemon::layout::Layout::parse("test-layout.toml", &layout_text).unwrap();
    let (events, _) = tokio::sync::broadcast::channel(1024);
    let log = hearth_daemon::log::Log::open(&dir.path().join("hearth.db"), events.clone()).unwrap();
    let memory = keeper(&log, &events, &layout, dir.path()).await;
    chat(&log, 0, 100).await;
    settled(&memory, 100).await;
    // The keeper takes the appended messages from the log's writer: one
    // reader of them.
    assert_eq!(log.readers_of_appended(), 1);
    drop(memory);
    // Once it ended, it no longer listens (nor holds its handle to the log).
    tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while log.readers_of_appended() > 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the keeper ends when its memory is dropped");
}
