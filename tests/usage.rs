//! End-to-end: usage and cost. Every model request — a turn's, a
//! compaction's — is stored with the tokens the provider reported; `hearth
//! stats` shows them priced; a spent budget stops the next turn before any
//! request is sent; with no model configured a local Ollama server is used.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, EventKind, Kind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply, Usage};
use hearth_tests::harness::{small_layout, Daemon, TestHome, OLLAMA_URL_ENV};
use serde_json::Value;

fn usage(input: u64, cached_input: u64, cache_write: u64, output: u64) -> Usage {
    Usage {
        input,
        cached_input,
        cache_write,
        output,
    }
}

/// A `[model]` named `fake` at the fake server, speaking `provider`'s format.
fn fake_model(provider: &str, model: &FakeModel) -> String {
    format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"fake\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\nretry_delay_ms = 1\n",
        model.base_url()
    )
}

/// One stored usage row, as the database holds it.
#[derive(Debug, PartialEq)]
struct Row {
    agent: String,
    purpose: String,
    model: String,
    input: i64,
    cached_input: i64,
    cache_write: i64,
    output: i64,
    cost_usd: f64,
    priced: bool,
}

/// Every usage row, oldest first, read from the running daemon's database.
fn rows(home: &TestHome) -> Vec<Row> {
    let connection = rusqlite::Connection::open(Home::at(home.path()).database()).unwrap();
    let mut statement = connection
        .prepare(
            "SELECT agent, purpose, model, input, cached_input, cache_write, output, cost_usd,
                    priced, latency_ms FROM usage ORDER BY seq",
        )
        .unwrap();
    let rows = statement
        .query_map([], |row| {
            assert!(row.get::<_, i64>(9)? >= 0, "a latency is stored");
            Ok(Row {
                agent: row.get(0)?,
                purpose: row.get(1)?,
                model: row.get(2)?,
                input: row.get(3)?,
                cached_input: row.get(4)?,
                cache_write: row.get(5)?,
                output: row.get(6)?,
                cost_usd: row.get(7)?,
                priced: row.get(8)?,
            })
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// `hearth stats --json` (plus `extra` arguments), one value per line.
async fn stats_json(home: &TestHome, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["stats", "--json"];
    args.extend_from_slice(extra);
    let output = home.hearth_async(&args).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A layout file whose 80-byte line budget sends any long message to the
/// compactor.
fn small_layout_file(home: &TestHome) -> std::path::PathBuf {
    let layout_file = home.path().join("test-layout.toml");
    std::fs::write(&layout_file, small_layout(80, 4000, 2000)).unwrap();
    layout_file
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test]
async fn a_turn_with_a_tool_call_stores_both_requests_and_stats_price_them() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "{}\n[prices.fake]\ninput = 2.0\ncached_input = 0.5\ncache_write = 2.5\noutput = 10.0\n",
        fake_model("openai-chat", &model)
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::with_usage(
        Reply::tool_call("date", "{}"),
        usage(1000, 600, 100, 50),
    ));
    model.push(Reply::with_usage(
        Reply::text("It is now."),
        usage(2000, 1500, 0, 20),
    ));
    let (id, _) = client.submit("what time is it?", "terminal", None).await;
    client.reply_to(id).await;

    let stored = rows(&home);
    let expected = |input, cached_input, cache_write, output, cost_usd| Row {
        agent: "hearth".into(),
        purpose: "turn".into(),
        model: "openai-chat/fake".into(),
        input,
        cached_input,
        cache_write,
        output,
        cost_usd,
        priced: true,
    };
    // (1000 − 600 − 100)·2 + 600·0.5 + 100·2.5 + 50·10 = 1650 micro-dollars;
    // (2000 − 1500)·2 + 1500·0.5 + 20·10 = 1950.
    assert_eq!(stored.len(), 2, "{stored:?}");
    assert!(close(stored[0].cost_usd, 0.001650), "{stored:?}");
    assert!(close(stored[1].cost_usd, 0.001950), "{stored:?}");
    assert_eq!(
        stored[0],
        expected(1000, 600, 100, 50, stored[0].cost_usd),
        "{stored:?}"
    );
    assert_eq!(stored[1], expected(2000, 1500, 0, 20, stored[1].cost_usd));

    let stats = stats_json(&home, &[]).await;
    assert_eq!(stats.len(), 1, "{stats:?}");
    let today = &stats[0];
    assert_eq!(today["agent"], "hearth");
    assert_eq!(
        today["day"],
        chrono::Local::now().format("%Y-%m-%d").to_string()
    );
    assert_eq!(today["requests"], 2);
    assert_eq!(today["input_tokens"], 3000);
    assert_eq!(today["cached_input_tokens"], 2100);
    assert_eq!(today["cache_write_tokens"], 100);
    assert_eq!(today["output_tokens"], 70);
    assert_eq!(today["unpriced_requests"], 0);
    assert!(close(today["cached_share"].as_f64().unwrap(), 0.7));
    assert!(close(today["cost_usd"].as_f64().unwrap(), 0.0036));
    assert_eq!(stats_json(&home, &["--days", "1"]).await, stats);

    let table = home.hearth_async(&["stats"]).await;
    let table = String::from_utf8_lossy(&table.stdout).to_string();
    assert!(table.contains("hearth"), "{table}");
    assert!(
        table.contains("70%") && table.contains("$0.0036"),
        "{table}"
    );
}

#[tokio::test]
async fn a_compaction_stores_its_request_as_anthropic_reported_it() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let layout_file = small_layout_file(&home);
    home.write_config(&format!(
        "[model]\nprovider = \"anthropic\"\nmodel = \"claude-fake\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\nretry_delay_ms = 1\n\n\
         [agent]\nlayout = \"{}\"\n",
        model.base_url(),
        layout_file.display()
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::with_usage(
        Reply::text("garden story noted"),
        usage(5000, 4000, 500, 30),
    ));
    model.push(Reply::with_usage(
        Reply::text("Noted."),
        usage(6000, 4500, 1000, 40),
    ));
    let long = "please remember this long story about the garden ".repeat(4);
    let (id, _) = client.submit(&long, "terminal", None).await;
    client.reply_to(id).await;

    let stored = rows(&home);
    let summary: Vec<(&str, &str, i64, i64, i64, i64)> = stored
        .iter()
        .map(|r| {
            (
                r.purpose.as_str(),
                r.model.as_str(),
                r.input,
                r.cached_input,
                r.cache_write,
                r.output,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("compaction", "anthropic/claude-fake", 5000, 4000, 500, 30),
            ("turn", "anthropic/claude-fake", 6000, 4500, 1000, 40),
        ]
    );
    // A model with no price is stored at 0 and shown as unpriced.
    assert!(stored.iter().all(|r| !r.priced && r.cost_usd == 0.0));
    let stats = stats_json(&home, &[]).await;
    assert_eq!(stats[0]["requests"], 2);
    assert_eq!(stats[0]["unpriced_requests"], 2);
    let table = home.hearth_async(&["stats"]).await;
    assert!(String::from_utf8_lossy(&table.stdout).contains("unpriced"));
}

#[tokio::test]
async fn a_spent_budget_stops_the_next_turn_before_any_request() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    // 1000 input tokens at $10 per million: $0.01, twice the day's budget.
    // (The Responses API this time: its usage is read as well.)
    home.write_config(&format!(
        "{}\n[prices.fake]\ninput = 10.0\noutput = 10.0\n\n[budget]\ndaily_usd = 0.005\n",
        fake_model("openai", &model)
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::with_usage(
        Reply::text("First answer."),
        usage(1000, 0, 0, 0),
    ));
    let (first, _) = client.submit("hello", "terminal", None).await;
    client.reply_to(first).await;
    let warning = client.wait_for_text(EventKind::Note, "daily budget").await;
    assert!(
        warning.text.unwrap().contains("200% of the daily budget"),
        "the 80% warning"
    );

    for text in ["and again", "once more"] {
        let (id, _) = client.submit(text, "terminal", None).await;
        let error = client
            .wait_for(|e| e.kind == EventKind::Error && e.answers.contains(&id))
            .await
            .text
            .unwrap();
        assert!(
            error.contains("the daily budget of $0.0050 is spent"),
            "{error}"
        );
        assert!(error.contains("[budget] daily_usd"), "{error}");
    }
    assert_eq!(model.requests().len(), 1, "no request after the budget");
    let log = home.history().await;
    let warnings = log
        .iter()
        .filter(|m| m.kind == Kind::Note && m.text.starts_with("spending today"))
        .count();
    assert_eq!(warnings, 1, "the warning is logged once");
    assert_eq!(rows(&home).len(), 1);
}

// The daemon probes the fake while `start_with_env` blocks this thread:
// the fake answers from another worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_model_configured_a_local_ollama_model_is_used() {
    let ollama = FakeModel::start().await;
    ollama.serve_local_models(&["nomic-embed-text:latest", "llama-test:1b"]);
    let home = TestHome::new(bins!());
    let url = format!("http://{}", ollama.addr());
    let daemon = Daemon::start_with_env(&home, &[(OLLAMA_URL_ENV, &url)]);
    let mut client = home.connect("terminal", None).await;

    let log = home.history().await;
    let note = log
        .iter()
        .find(|m| m.kind == Kind::Note && m.text.contains("Ollama"))
        .unwrap_or_else(|| panic!("no note of a local model: {}", daemon.log_text()));
    assert!(note.text.contains("`llama-test:1b`"), "{}", note.text);
    assert!(note.text.contains(&format!("{url}/v1")), "{}", note.text);

    ollama.push(Reply::text("Hello from the local model."));
    let (id, _) = client.submit("hi", "terminal", None).await;
    assert_eq!(
        client.reply_to(id).await.text.as_deref(),
        Some("Hello from the local model.")
    );
    let requests = ollama.requests();
    let paths: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(paths, [("POST", "/v1/chat/completions")]);
    let asked: Vec<String> = ollama.probes().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        asked.first().map(String::as_str),
        Some("/api/tags"),
        "{asked:?}"
    );
    assert_eq!(requests[0].body["model"], "llama-test:1b");
    assert!(
        !requests[0].headers.contains_key("authorization"),
        "no cloud key goes to a local server"
    );
    match client.request(ClientFrame::Status).await {
        ServerFrame::Status(status) => {
            assert_eq!(status.model.as_deref(), Some("openai-chat/llama-test:1b"))
        }
        other => panic!("expected status, got {other:?}"),
    }
    let stored = rows(&home);
    assert_eq!(stored.len(), 1);
    assert!(!stored[0].priced, "a local model is unpriced");
}

// The daemon probes the fake while `start_with_env` blocks this thread:
// the fake answers from another worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ollama_without_models_leaves_the_daemon_saying_how_to_configure_one() {
    let ollama = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let url = format!("http://{}", ollama.addr());
    let _daemon = Daemon::start_with_env(&home, &[(OLLAMA_URL_ENV, &url)]);
    let mut client = home.connect("terminal", None).await;
    let (id, _) = client.submit("hello?", "terminal", None).await;
    let error = client
        .wait_for(|e| e.kind == EventKind::Error && e.answers.contains(&id))
        .await
        .text
        .unwrap();
    assert!(error.contains("no model is configured"), "{error}");
    assert!(ollama.requests().is_empty(), "no model request");
    assert_eq!(ollama.probes().len(), 1, "only the probe");
}

#[tokio::test]
async fn with_the_budget_spent_summaries_wait_without_a_request_and_no_line_is_cut() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let layout_file = small_layout_file(&home);
    home.write_config(&format!(
        "{}\n[agent]\nlayout = \"{}\"\n\n[prices.fake]\ninput = 10.0\noutput = 10.0\n\n\
         [budget]\nmonthly_usd = 0.005\n",
        fake_model("openai-chat", &model),
        layout_file.display()
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::with_usage(Reply::text("Hi."), usage(1000, 0, 0, 0)));
    let (first, _) = client.submit("hello", "terminal", None).await;
    client.reply_to(first).await;

    let long = "a long message about the plans for the kitchen and its budget ".repeat(3);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (id, _) = client.submit(&long, "terminal", None).await;
        let error = client
            .wait_for(|e| e.kind == EventKind::Error && e.answers.contains(&id))
            .await
            .text
            .unwrap();
        assert!(error.contains("the monthly budget"), "{error}");
        ids.push(id);
    }
    // Out of budget is an outage, not the messages' fault: their lines
    // wait for calls to be allowed again, and none is cut meanwhile.
    let notices = client
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Error && e.answers.is_empty())
        .filter_map(|e| e.text.as_deref())
        .collect::<Vec<_>>();
    assert!(notices.is_empty(), "{notices:?}");
    assert_eq!(model.requests().len(), 1, "no summary request was sent");
    let connection = rusqlite::Connection::open(Home::at(home.path()).database()).unwrap();
    for id in ids {
        let lines: i64 = connection
            .query_row(
                "SELECT COUNT(*) FROM nodes WHERE level = 0 AND idx = ?1",
                [id as i64],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(lines, 0, "message {id} waits for its summary");
    }
}
