//! End-to-end: how the agent and a person find what the memory holds — the
//! `search` tool and frame, pinned facts (`remember` / `forget`, `hearth
//! memory facts`), huge messages sent as head and tail and paged by `zoom`,
//! and `hearth search` / `hearth memory`. A real `hearthd`, a fake model.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{ClientFrame, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Recorded, Reply};
use hearth_tests::harness::{TestHome, NO_SUMMARIES};

fn home(model: &FakeModel) -> TestHome {
    let home = TestHome::new(bins!());
    let layout = home.path().join("recall-layout.toml");
    std::fs::write(&layout, format!("{NO_SUMMARIES}huge_message = 4000\n")).unwrap();
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake\"\nbase_url = \"{}\"\n\n[agent]\nlayout = \"{}\"\n",
        model.base_url(),
        layout.display()
    ));
    home
}

/// The state message of a turn request (it begins `</chat>`).
fn state(request: &Recorded) -> String {
    request.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("</chat>"))
        .unwrap_or_default()
        .to_string()
}

fn stdout(output: &std::process::Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn the_agent_searches_its_memory_and_an_acknowledged_message_is_found_at_once() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::text("Noted."));
    let (planted, _) = client
        .submit(
            "The plumber is Bo Lindqvist, 0176 5550192.",
            "terminal",
            None,
        )
        .await;
    client.reply_to(planted).await;
    // The next turn searches, then answers.
    model.push(Reply::tool_call("search", r#"{"query": "plumber phone"}"#));
    model.push(Reply::text("Bo Lindqvist."));
    // Found by a person the moment it is acknowledged.
    let (fresh, _) = client
        .submit("the quince jam recipe uses cardamom", "terminal", None)
        .await;
    let answer = client
        .request(ClientFrame::Search {
            query: "cardamom".into(),
            before: None,
            after: None,
            kind: None,
            source: None,
            limit: None,
        })
        .await;
    let ServerFrame::SearchResults { hits } = answer else {
        panic!("{answer:?}");
    };
    assert_eq!(hits.first().map(|hit| hit.id), Some(fresh));

    client.reply_to(fresh).await;
    let requests = model.requests();
    let results = requests.last().unwrap().tool_results();
    assert_eq!(results.len(), 1);
    assert!(
        results[0].starts_with(&format!("{planted}+1 user from terminal")),
        "{}",
        results[0]
    );
    assert!(results[0].contains("[plumber]"), "{}", results[0]);
    // A search's own result is not indexed: it is not found again.
    let out = stdout(&home.hearth_async(&["search", "plumber"]).await);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.starts_with(&format!("{planted}+1  user from terminal  ")),
        "{out}"
    );
    let json = stdout(&home.hearth_async(&["search", "--json", "plumber"]).await);
    let hit: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(hit["id"], planted);
    assert_eq!(hit["kind"], "user");
    let none = stdout(
        &home
            .hearth_async(&["search", "--kind", "reply", "plumber"])
            .await,
    );
    assert_eq!(none.trim(), "nothing matches");
}

#[tokio::test]
async fn pinned_facts_are_in_every_turns_state_and_survive_a_restart() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::tool_call(
        "remember",
        r#"{"fact": "Her name is Ada; she takes tea without sugar"}"#,
    ));
    model.push(Reply::text("I will remember."));
    let (first, _) = client
        .submit("I'm Ada. Tea, no sugar.", "terminal", None)
        .await;
    client.reply_to(first).await;
    let results = model.requests().last().unwrap().tool_results();
    assert!(
        results[0].starts_with("pinned: Her name is Ada"),
        "{results:?}"
    );

    // A person adds one; a full block or an unknown fact is refused.
    let added = stdout(
        &home
            .hearth_async(&[
                "memory", "facts", "add", "Owns", "a", "cat", "named", "Miso",
            ])
            .await,
    );
    assert_eq!(
        added.lines().take(2).collect::<Vec<_>>(),
        [
            "1. Her name is Ada; she takes tea without sugar",
            "2. Owns a cat named Miso"
        ]
    );
    let refused = home.hearth_async(&["memory", "facts", "rm", "dog"]).await;
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("no pinned fact matches `dog`"));

    daemon.stop();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::tool_call("forget", r#"{"fact": "cat"}"#));
    model.push(Reply::text("Done."));
    let (second, _) = client.submit("Miso moved out.", "terminal", None).await;
    client.reply_to(second).await;
    let requests = model.requests();
    // The turn after the restart showed both facts in its state, in order.
    let shown = state(&requests[requests.len() - 2]);
    assert!(
        shown.contains("Pinned facts")
            && shown.contains(
                "- Her name is Ada; she takes tea without sugar\n- Owns a cat named Miso"
            ),
        "{shown}"
    );
    let listed = stdout(&home.hearth_async(&["memory", "facts"]).await);
    assert!(listed.starts_with("1. Her name is Ada"), "{listed}");
    assert!(!listed.contains("Miso"), "{listed}");
    // Every change is in the log: the tools' messages and the person's note.
    let log = home.history().await;
    assert!(log
        .iter()
        .any(|m| m.text.contains("pinned the fact: Owns a cat named Miso")));
    assert!(log.iter().any(|m| m.text.starts_with("forget(")));
}

#[tokio::test]
async fn a_huge_message_is_sent_as_head_and_tail_and_zoom_pages_through_it() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    let paste: String = (0..20_000).map(|n| format!("{:05} ", n)).collect();
    assert_eq!(paste.len(), 120_000);
    model.push(Reply::tool_call(
        "zoom",
        r#"{"id": 0, "n": 1, "offset": 60000, "length": 30}"#,
    ));
    model.push(Reply::text("Read it."));
    let (id, _) = client.submit(&paste, "terminal", None).await;
    assert_eq!(id, 0);
    client.reply_to(id).await;
    let requests = model.requests();
    let first = requests[0].body.to_string();
    assert!(
        first.len() < 20_000,
        "the turn request is {} bytes",
        first.len()
    );
    assert!(first.contains("message 0 is 120000 bytes"), "{first:.400}");
    assert!(first.contains("00000 00001"), "the head is sent");
    assert!(first.contains("19999"), "the tail is sent");
    let results = requests[1].tool_results();
    assert_eq!(
        results[0],
        "0+0|user: 10000 10001 10002 10003 10004 \n[bytes 60000 to 60030 of 120000; zoom(id=0, n=1, offset=60030) reads on]"
    );

    // `hearth memory` shows the view; `memory show` the message whole.
    model.push(Reply::text("ok"));
    let (next, _) = client.submit("thanks", "terminal", None).await;
    client.reply_to(next).await;
    let view = stdout(&home.hearth_async(&["memory"]).await);
    assert!(
        view.lines().next().unwrap().starts_with("0+1  "),
        "{view:.300}"
    );
    assert!(
        view.lines().last().unwrap().contains("bytes"),
        "{view:.300}"
    );
    let shown = stdout(&home.hearth_async(&["memory", "show", "0+1"]).await);
    assert!(
        shown.contains("message 0 (user from terminal"),
        "{shown:.300}"
    );
    assert!(shown.contains(&paste), "the message whole");
    let bad = home.hearth_async(&["memory", "show", "3+3"]).await;
    assert!(!bad.status.success());
}
