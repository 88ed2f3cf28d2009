//! End-to-end: the memory — summaries written by the compactor, the view in
//! requests, batches within budget, and a view that survives a restart byte
//! for byte. A real `hearthd`, a fake model, a layout file with small budgets.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{Doing, EventKind};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Gate, Recorded, Reply};
use hearth_tests::harness::{small_layout, TestHome};
use serde_json::Value;

fn home_with(model: &FakeModel, layout_text: &str) -> TestHome {
    home_with_model(model, layout_text, "")
}

/// A home whose `[model]` section also has `model_lines`.
fn home_with_model(model: &FakeModel, layout_text: &str, model_lines: &str) -> TestHome {
    let home = TestHome::new(bins!());
    let layout_file = home.path().join("test-layout.toml");
    std::fs::write(&layout_file, layout_text).unwrap();
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake\"\nbase_url = \"{}\"\n{model_lines}\n[agent]\nlayout = \"{}\"\n",
        model.base_url(),
        layout_file.display()
    ));
    home
}

/// The view part of a turn request: the user messages from `<chat>` up to the state.
fn view_text(request: &Recorded) -> String {
    let all = request.contents();
    let start = all.iter().position(|c| c.starts_with("<chat>")).unwrap();
    let end = all.iter().position(|c| c.starts_with("</chat>")).unwrap();
    all[start..end].join("\n")
}

/// Whether two adjacent view lines are siblings (`a+n` then `a+n|…` at the same n, a a multiple of 2n).
fn has_adjacent_siblings(view: &str) -> bool {
    let names: Vec<(u64, u64)> = view
        .lines()
        .filter_map(|line| {
            let (name, _) = line.trim_start_matches("<chat>").split_once('|')?;
            let (id, n) = name.split_once('+')?;
            Some((id.parse().ok()?, n.parse().ok()?))
        })
        .collect();
    names
        .windows(2)
        .any(|w| w[0].1 == w[1].1 && w[0].0 % (2 * w[0].1) == 0 && w[1].0 == w[0].0 + w[0].1)
}

/// A compaction request: one line asked for alone, or several after the
/// compaction view (a turn's chain is told apart by [`batch_task`]).
fn is_compaction(request: &Recorded) -> bool {
    request.contents().last().is_some_and(|last| {
        last.starts_with("</chat>\nWrite the one line")
            || last.starts_with("</chat>\nWrite the lines")
    })
}

/// A compaction request that asks for one line alone, with its tries.
fn is_alone(request: &Recorded) -> bool {
    request
        .contents()
        .last()
        .is_some_and(|last| last.starts_with("</chat>\nWrite the one line"))
}

#[tokio::test]
async fn a_long_message_is_summarized_and_the_view_shows_its_line() {
    let model = FakeModel::start().await;
    let home = home_with(&model, &small_layout(80, 4000, 2000));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    let long = "please remember this long story about the garden ".repeat(4);
    model.push(Reply::Text("garden story noted".into()));
    model.push(Reply::Text("Noted.".into()));
    let (id, _) = client.submit(&long, "terminal", None).await;
    client.reply_to(id).await;

    model.push(Reply::Text("Yes.".into()));
    let (next, _) = client.submit("still there?", "terminal", None).await;
    client.reply_to(next).await;

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert!(is_compaction(&requests[0]), "the summary is written first");
    let task = requests[0].contents().last().unwrap().clone();
    assert!(task.contains(&"-".repeat(80)), "a ruler of the line budget");
    assert!(task.contains("garden"));
    // The summary is routed to the cache the agent's turns use.
    let key = &requests[1].body["prompt_cache_key"];
    assert!(key.is_string(), "the turn has a cache key");
    assert_eq!(&requests[0].body["prompt_cache_key"], key);
    // The turn that took the long message has it whole, not in its view.
    assert!(requests[1].contents().iter().any(|c| c.contains(&long)));
    // The next turn sees its summary line, and the long text nowhere.
    let view = view_text(&requests[2]);
    assert!(
        view.contains(&format!("{id}+1|garden story noted")),
        "{view}"
    );
    assert!(!requests[2].body.to_string().contains(&long[..60]));
}

#[tokio::test]
async fn the_view_stays_within_budget_and_merges_old_lines() {
    let model = FakeModel::start().await;
    // Lines fit together, so merges cost no model call.
    let home = home_with(&model, &small_layout(400, 300, 150));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    for n in 0..12 {
        model.push(Reply::Text(format!("answer {n}")));
        let (id, _) = client
            .submit(&format!("question {n}"), "terminal", None)
            .await;
        client.reply_to(id).await;
    }
    let requests = model.requests();
    assert!(requests.iter().all(|r| !is_compaction(r)));
    for request in &requests {
        let view = view_text(request);
        let size = view.len() + "</chat>".len();
        assert!(
            size <= 300 || !has_adjacent_siblings(&view),
            "{size} bytes with a pair left to merge: {view}"
        );
    }
    let last = view_text(requests.last().unwrap());
    assert!(
        last.lines()
            .any(|l| l.starts_with("0+4|") || l.starts_with("0+8|") || l.starts_with("0+16|")),
        "old lines were merged: {last}"
    );
    // Between batches the view only grows at its end.
    let grew_only = requests
        .windows(2)
        .filter(|pair| view_text(&pair[1]).starts_with(&view_text(&pair[0])))
        .count();
    assert!(grew_only >= requests.len() / 2, "batches are rare");
}

#[tokio::test]
async fn the_view_renders_byte_identically_after_a_restart() {
    let model = FakeModel::start().await;
    let home = home_with(&model, &small_layout(400, 2000, 1000));
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    for n in 0..5 {
        model.push(Reply::Text(format!("answer {n}")));
        let (id, _) = client
            .submit(&format!("question {n}"), "terminal", None)
            .await;
        client.reply_to(id).await;
    }
    daemon.kill9();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::Text("after restart".into()));
    let (id, _) = client.submit("and now?", "terminal", None).await;
    client.reply_to(id).await;
    let requests = model.requests();
    let before = view_text(&requests[requests.len() - 2]);
    let after = view_text(&requests[requests.len() - 1]);
    assert!(
        after.starts_with(&before),
        "before:\n{before}\nafter:\n{after}"
    );
    // Instructions and tools are the same bytes too.
    let prefix = |r: &Recorded| (r.body["messages"][0].clone(), r.body["tools"].clone());
    assert_eq!(prefix(&requests[0]), prefix(requests.last().unwrap()));
}

#[tokio::test]
async fn a_summary_that_keeps_failing_gets_a_mechanical_line_and_an_error() {
    let model = FakeModel::start().await;
    let home = home_with(&model, &small_layout(64, 4000, 2000));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    for _ in 0..3 {
        model.push(Reply::Error {
            status: 400,
            body: serde_json::json!({"error": {"message": "the fake refuses"}}),
        });
    }
    model.push(Reply::Text("Got it anyway.".into()));
    let long = "a very long message that cannot fit in one short line ".repeat(3);
    let (id, _) = client.submit(&long, "terminal", None).await;
    let error = client
        .wait_for(|e| e.kind == EventKind::Error)
        .await
        .text
        .unwrap();
    assert!(error.contains("could not summarize"), "{error}");
    assert_eq!(
        client.reply_to(id).await.text.as_deref(),
        Some("Got it anyway.")
    );
    assert_eq!(model.requests().len(), 4);
    let last: Value = model.requests()[3].body.clone();
    assert!(!is_compaction(&model.requests()[3]), "{last}");
}

#[tokio::test]
async fn an_outage_during_compaction_leaves_no_mechanical_line_once_the_model_is_back() {
    let model = FakeModel::start().await;
    // No retries inside a call: each failure reaches the compactor.
    let home = home_with_model(&model, &small_layout(64, 4000, 2000), "max_retries = 0\n");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let down = || Reply::Error {
        status: 503,
        body: serde_json::json!({"error": {"message": "the fake is down"}}),
    };
    // Down, rate-limited, down: more failures in a row than the layout's
    // `compactor_failures`, the last held until the turn is seen waiting.
    model.push(down());
    model.push(Reply::Error {
        status: 429,
        body: serde_json::json!({"error": {"message": "slow down"}}),
    });
    model.push(down());
    let gate = Gate::new();
    model.push(Reply::Gate {
        reply: Box::new(down()),
        gate: gate.clone(),
    });
    model.push(Reply::Text("kitchen plans, budget open".into()));
    model.push(Reply::Text("Noted.".into()));
    let long = "a long note about the plans for the new kitchen and the budget ".repeat(3);
    let (id, _) = client.submit(&long, "terminal", None).await;
    // The turn says what its summaries wait for.
    let waiting = client
        .wait_for(|e| {
            e.activity.as_ref().is_some_and(|a| {
                matches!(&a.doing, Doing::Summaries { waiting_for: Some(why), .. } if why.contains("503"))
            })
        })
        .await;
    assert_eq!(waiting.kind, EventKind::Activity);
    gate.open();
    assert_eq!(client.reply_to(id).await.text.as_deref(), Some("Noted."));

    let errors: Vec<&str> = client
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Error)
        .filter_map(|e| e.text.as_deref())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let connection =
        rusqlite::Connection::open(hearth_protocol::home::Home::at(home.path()).database())
            .unwrap();
    let (text, mechanical): (String, bool) = connection
        .query_row(
            "SELECT text, mechanical FROM nodes WHERE level = 0 AND idx = ?1",
            [id as i64],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(text, "kitchen plans, budget open");
    assert!(!mechanical, "the outage cut no line");
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    assert!(requests[..5].iter().all(is_compaction));
}

#[tokio::test]
async fn an_over_long_summary_is_asked_again_and_the_shortest_kept() {
    let model = FakeModel::start().await;
    let home = home_with(&model, &small_layout(80, 4000, 2000));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::Text("far too long a summary ".repeat(10)));
    model.push(Reply::Text("short summary".into()));
    model.push(Reply::Text("Done.".into()));
    let long = "tell me about everything that happened at the meeting ".repeat(3);
    let (id, _) = client.submit(&long, "terminal", None).await;
    client.reply_to(id).await;
    model.push(Reply::Text("Fine.".into()));
    let (next, _) = client.submit("ok", "terminal", None).await;
    client.reply_to(next).await;
    let requests = model.requests();
    // The batch's line is over budget: it is asked again alone.
    assert!(is_compaction(&requests[0]) && is_alone(&requests[1]));
    let view = view_text(requests.last().unwrap());
    assert!(view.contains(&format!("{id}+1|short summary")), "{view}");
}

#[tokio::test]
async fn a_crash_mid_compaction_loses_no_summary_and_builds_none_twice() {
    let model = FakeModel::start().await;
    let home = home_with(&model, &small_layout(80, 4000, 2000));
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::Hang {
        text_before: String::new(),
    });
    let long = "a long note about the plans for the new kitchen and the budget ".repeat(3);
    let (id, _) = client.submit(&long, "terminal", None).await;
    model.wait_for_requests(1).await;
    daemon.kill9();

    model.push(Reply::Text("kitchen plans".into()));
    model.push(Reply::Text("Noted.".into()));
    let _daemon = home.start();
    let mut client = home.connect("terminal", Some(id)).await;
    client.reply_to(id).await;
    model.push(Reply::Text("Sure.".into()));
    let (next, _) = client.submit("thanks", "terminal", None).await;
    client.reply_to(next).await;
    let requests = model.requests();
    let compactions = requests.iter().filter(|r| is_compaction(r)).count();
    assert_eq!(
        compactions, 2,
        "the cut call, and one more after the restart"
    );
    let view = view_text(requests.last().unwrap());
    assert_eq!(view.matches("kitchen plans").count(), 1, "{view}");
}

/// The last message of a batched compaction request (`memory/batch.rs`).
fn batch_task(request: &Recorded) -> Option<String> {
    let last = request.contents().pop()?;
    let task = last.strip_prefix("</chat>\n").unwrap_or(&last);
    task.starts_with("Write the lines")
        .then(|| task.to_string())
}

/// The ids of the tool messages the client saw, in order.
fn tool_ids(client: &hearth_tests::harness::Client) -> Vec<u64> {
    client
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Tool)
        .filter_map(|e| e.id)
        .collect()
}

/// A node's stored line and whether it was cut mechanically, once stored.
async fn stored(home: &TestHome, level: u8, first: u64) -> (String, bool) {
    let database = hearth_protocol::home::Home::at(home.path()).database();
    hearth_tests::harness::eventually("the node's line", || {
        let database = database.clone();
        async move {
            let connection = rusqlite::Connection::open(database).ok()?;
            connection
                .query_row(
                    "SELECT text, mechanical FROM nodes WHERE level = ?1 AND idx = ?2",
                    [i64::from(level), (first >> level) as i64],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .ok()
        }
    })
    .await
}

#[tokio::test]
async fn a_turns_long_messages_and_ready_merges_are_asked_for_in_its_own_chain() {
    let model = FakeModel::start().await;
    let home = home_with(&model, &small_layout(80, 4000, 2000));
    let work = home.work_dir();
    std::fs::create_dir_all(&work).unwrap();
    let notes = "the plumber comes on tuesday at nine; call ahead on 555 0199. ".repeat(6);
    std::fs::write(work.join("notes.txt"), &notes).unwrap();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    // A first message whose line fits alone, but not beside the tool's.
    let ask = "please read my notes file and tell me when the plumber comes";
    model.push(Reply::ToolCalls {
        text: None,
        calls: vec![("read_file".into(), r#"{"path": "notes.txt"}"#.into())],
    });
    model.push(Reply::Text("Tuesday at nine.".into()));
    let line = "plumber due tuesday at nine, phone 555 0199 before; notes.txt read";
    model.push(Reply::Text(format!("1. {line}")));
    let (id, _) = client.submit(ask, "terminal", None).await;
    client.reply_to(id).await;
    let tool = tool_ids(&client)[0];
    // The turn's end asks in its own chain; no compaction call ran before.
    let requests = model.wait_for_requests(3).await;
    assert!(requests[..2].iter().all(|r| batch_task(r).is_none()));
    let chain = &requests[2];
    let turn = requests[1].contents();
    let all = chain.contents();
    assert_eq!(
        all[..turn.len()],
        turn[..],
        "it extends the turn's last request"
    );
    assert_eq!(all[turn.len()], "Tuesday at nine.", "then the reply");
    assert_eq!(chain.body["messages"][turn.len()]["role"], "assistant");
    let task = batch_task(chain).unwrap();
    assert!(
        task.contains(&format!("1. Message {tool}, above in full")),
        "{task}"
    );
    assert!(task.contains(&"-".repeat(80)), "a ruler of the line budget");
    let phone = |r: &Recorded| r.body.to_string().matches("call ahead on 555 0199").count();
    assert!(phone(&requests[1]) > 0);
    assert_eq!(
        phone(chain),
        phone(&requests[1]),
        "the file is sent once, in the tool's result"
    );
    assert_eq!(
        chain.body["prompt_cache_key"],
        requests[1].body["prompt_cache_key"]
    );

    // The merge of the first two lines waits for a call that goes anyway:
    // the next turn's end, in that turn's chain.
    model.push(Reply::Text("You're welcome.".into()));
    model.push(Reply::Text(
        "1. asked when the plumber comes: tuesday at nine".into(),
    ));
    let (next, _) = client.submit("thanks", "terminal", None).await;
    client.reply_to(next).await;
    let requests = model.wait_for_requests(5).await;
    let view = view_text(&requests[3]);
    assert!(view.contains(&format!("{tool}+1|")), "{view}");
    assert!(view.contains(line), "the line the chain wrote: {view}");
    let task = batch_task(&requests[4]).unwrap();
    assert!(
        task.contains(&format!(
            "1. Two lines that cover messages {id} to {tool}, to merge into one"
        )),
        "{task}"
    );
    assert!(!task.contains("2. "), "one task: {task}");
    assert_eq!(
        requests[4].contents()[..requests[3].contents().len()],
        requests[3].contents()[..]
    );
    let (merged, mechanical) = stored(&home, 1, id).await;
    assert_eq!(merged, "asked when the plumber comes: tuesday at nine");
    assert!(!mechanical);
    // Five calls in all: three turn requests and two compaction calls.
    assert_eq!(model.requests().len(), 5);
}

#[tokio::test]
async fn a_garbled_batch_answer_asks_again_alone_for_each_line_it_lacks() {
    let model = FakeModel::start().await;
    let home = home_with(&model, &small_layout(80, 4000, 2000));
    let work = home.work_dir();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("a.txt"),
        "the first file, about the garden. ".repeat(5),
    )
    .unwrap();
    std::fs::write(
        work.join("b.txt"),
        "the second file, about the roof. ".repeat(5),
    )
    .unwrap();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::ToolCalls {
        text: None,
        calls: vec![
            ("read_file".into(), r#"{"path": "a.txt"}"#.into()),
            ("read_file".into(), r#"{"path": "b.txt"}"#.into()),
        ],
    });
    model.push(Reply::Text("Both read.".into()));
    // Chatter, the second line twice and no first line at all.
    model.push(Reply::Text(
        "Here are your lines:\n2) roof file read\n2) roof again".into(),
    ));
    model.push(Reply::Text("garden file read".into()));
    let (id, _) = client.submit("read a and b", "terminal", None).await;
    client.reply_to(id).await;
    let tools = tool_ids(&client);
    model.push(Reply::Text("Sure.".into()));
    let (next, _) = client.submit("thanks", "terminal", None).await;
    client.reply_to(next).await;

    let requests = model.requests();
    assert_eq!(
        requests.len(),
        5,
        "two turn requests, a batch, one alone, a turn"
    );
    let task = batch_task(&requests[2]).unwrap();
    assert!(task.contains(&format!("1. Message {}", tools[0])), "{task}");
    assert!(task.contains(&format!("2. Message {}", tools[1])), "{task}");
    // The line the answer lacked is asked again alone, in the single form.
    assert!(is_alone(&requests[3]));
    assert!(requests[3]
        .contents()
        .last()
        .unwrap()
        .contains("about the garden"));
    assert_eq!(
        stored(&home, 0, tools[0]).await,
        ("garden file read".into(), false)
    );
    assert_eq!(
        stored(&home, 0, tools[1]).await,
        ("roof file read".into(), false)
    );
    let view = view_text(&requests[4]);
    assert!(
        view.contains("garden file read") && view.contains("roof file read"),
        "{view}"
    );
    let errors = client
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Error)
        .count();
    assert_eq!(errors, 0);
}

#[tokio::test]
async fn an_outage_of_a_turns_chain_call_leaves_its_lines_to_the_ordinary_calls() {
    let model = FakeModel::start().await;
    let home = home_with_model(&model, &small_layout(80, 4000, 2000), "max_retries = 0\n");
    let work = home.work_dir();
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("roof.txt"),
        "the roofer quoted 4200 for the tiles. ".repeat(5),
    )
    .unwrap();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::ToolCalls {
        text: None,
        calls: vec![("read_file".into(), r#"{"path": "roof.txt"}"#.into())],
    });
    model.push(Reply::Text("Read.".into()));
    model.push(Reply::Error {
        status: 503,
        body: serde_json::json!({"error": {"message": "the fake is down"}}),
    });
    model.push(Reply::Text("roofer quoted 4200 for tiles".into()));
    let (id, _) = client.submit("read roof.txt", "terminal", None).await;
    client.reply_to(id).await;
    let tool = tool_ids(&client)[0];
    model.push(Reply::Text("Fine.".into()));
    let (next, _) = client.submit("ok", "terminal", None).await;
    client.reply_to(next).await;

    let requests = model.requests();
    assert_eq!(
        requests.len(),
        5,
        "two turn requests, the chain, its retry, a turn"
    );
    assert!(batch_task(&requests[2]).is_some_and(|t| t.contains("above in full")));
    // Asked again after the compaction view, the message whole.
    let retry = requests[3].contents().pop().unwrap();
    assert!(
        retry.contains(&format!("1. Message {tool}, whole")),
        "{retry}"
    );
    assert!(retry.contains("the roofer quoted 4200"), "{retry}");
    assert_eq!(
        stored(&home, 0, tool).await,
        ("roofer quoted 4200 for tiles".into(), false),
        "the outage cut no line"
    );
    assert!(view_text(&requests[4]).contains("roofer quoted 4200 for tiles"));
    let errors = client
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Error)
        .count();
    assert_eq!(errors, 0);
}

#[tokio::test]
async fn the_merges_ready_at_a_turns_end_are_asked_for_together_in_one_call() {
    let model = FakeModel::start().await;
    let home = home_with(&model, &small_layout(120, 4000, 2000));
    let work = home.work_dir();
    std::fs::create_dir_all(&work).unwrap();
    for name in ["a", "b", "c", "d"] {
        std::fs::write(
            work.join(format!("{name}.txt")),
            format!("the {name} file, short"),
        )
        .unwrap();
    }
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    // Every line fits alone, no two neighbours fit together: three pairs
    // (the ask and a, b and c, d and the reply) need a merge each.
    model.push(Reply::ToolCalls {
        text: None,
        calls: ["a", "b", "c", "d"]
            .iter()
            .map(|name| ("read_file".into(), format!(r#"{{"path": "{name}.txt"}}"#)))
            .collect(),
    });
    model.push(Reply::Text(
        "All four files are read, and noted for you in order.".into(),
    ));
    model.push(Reply::Text(
        "1. asked for four files; a is short\n2. b and c, short\n3. d, short; all read".into(),
    ));
    let (id, _) = client
        .submit(
            "please read the files a, b, c and d for me, in that order",
            "terminal",
            None,
        )
        .await;
    client.reply_to(id).await;
    let requests = model.wait_for_requests(3).await;
    let task = batch_task(&requests[2]).unwrap();
    let pairs: Vec<&str> = task
        .lines()
        .filter(|line| line.contains(". Two lines that cover messages"))
        .collect();
    assert_eq!(pairs.len(), 3, "three merges in one call: {task}");
    assert!(pairs[0].starts_with(&format!(
        "1. Two lines that cover messages {id} to {}",
        id + 1
    )));
    assert!(pairs[2].starts_with(&format!(
        "3. Two lines that cover messages {} to {}",
        id + 4,
        id + 5
    )));
    assert_eq!(
        stored(&home, 1, id + 2).await,
        ("b and c, short".into(), false)
    );

    model.push(Reply::Text("ok".into()));
    let (next, _) = client.submit("thanks", "terminal", None).await;
    client.reply_to(next).await;
    // Three turn requests and one compaction call in all.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    assert!(requests.iter().filter(|r| batch_task(r).is_some()).count() == 1);
}

/// Stores `count` replies of the agent at time `at`, as an earlier run
/// would have logged them (the next start links them into the log's chain).
fn seed_replies(home: &TestHome, count: u64, at: &str) {
    let database = hearth_protocol::home::Home::at(home.path()).database();
    let connection = rusqlite::Connection::open(database).unwrap();
    for id in 0..count {
        connection
            .execute(
                "INSERT INTO messages (agent, id, kind, source, text, at) \
                 VALUES ('hearth', ?1, 'reply', 'hearth', ?2, ?3)",
                rusqlite::params![id as i64, format!("an earlier answer, number {id}"), at],
            )
            .unwrap();
    }
}

/// Whether a view line covers more than one message.
fn has_merged_line(view: &str) -> bool {
    view.lines()
        .filter_map(|line| line.trim_start_matches("<chat>").split_once('|'))
        .any(|(name, _)| name.split_once('+').is_some_and(|(_, n)| n != "1"))
}

#[tokio::test]
async fn a_message_after_an_idle_hour_starts_the_batch_the_view_would_soon_need() {
    // 30 replies of about 45 bytes: past the idle budget (1,000 bytes),
    // well within the high one (4,000). Any lines fit together: no call.
    let text = small_layout(4000, 4000, 500) + "idle_secs = 3600\nidle_budget = 1000\n";
    let mut views = Vec::new();
    for gap in [false, true] {
        let model = FakeModel::start().await;
        let home = home_with(&model, &text);
        home.start().stop();
        let at = if gap {
            "2026-01-01T08:00:00.000+00:00".to_string()
        } else {
            chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
        };
        seed_replies(&home, 30, &at);
        let _daemon = home.start();
        let mut client = home.connect("terminal", None).await;
        model.push(Reply::Text("hello again".into()));
        let (id, _) = client.submit("are you there?", "terminal", None).await;
        client.reply_to(id).await;
        let requests = model.requests();
        assert!(requests.iter().all(|r| !is_compaction(r)));
        views.push(view_text(&requests[0]));
    }
    // Logged a minute after the replies, the message changes nothing but
    // the view's end; logged long after them, it starts the batch.
    assert!(!has_merged_line(&views[0]), "{}", views[0]);
    assert!(views[0].len() > 1000, "{} bytes", views[0].len());
    assert!(has_merged_line(&views[1]), "{}", views[1]);
    assert!(views[1].len() < views[0].len());
}
