//! End-to-end: local model servers. The window a llama.cpp or Ollama server
//! actually serves is asked of it at start, warned of when smaller than the
//! configured one (in the daemon's log and `hearth status`) and used to
//! size requests; the `small` layout starts with an 8k window; with no
//! configuration the daemon picks the layout `hearth setup` would.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{ClientFrame, ServerFrame, Status};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{model_table, Client, Daemon, TestHome, DEADLINE, OLLAMA_URL_ENV};

/// `[model]` for the fake local server named `model`, with this window,
/// and the `small` layout.
fn local_config(server: &FakeModel, model: &str, window: u32) -> String {
    model_table("openai-chat", &server.base_url())
        .replace("model = \"fake-model\"", &format!("model = \"{model}\""))
        .replace(
            "[model]\n",
            &format!("[model]\ncontext_window = {window}\n"),
        )
        + "\n[agent]\nlayout = \"small\"\n"
}

async fn status(client: &mut Client) -> Status {
    match client.request(ClientFrame::Status).await {
        ServerFrame::Status(status) => *status,
        other => panic!("expected status, got {other:?}"),
    }
}

/// The turn view's high budget, once the memory has published its gauge
/// (zero until its first step).
async fn view_budget(client: &mut Client) -> u64 {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let memory = status(client).await.memory.expect("memory status");
        if memory.high_budget > 0 {
            return memory.high_budget;
        }
        assert!(tokio::time::Instant::now() < deadline, "no memory gauge");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// One turn through the daemon; returns the model request's output limit.
async fn turn_output_limit(server: &FakeModel, client: &mut Client) -> u64 {
    server.push(Reply::text("hello"));
    let (id, _) = client.submit("hi", "terminal", None).await;
    client.reply_to(id).await;
    let sent = server.requests().pop().expect("a model request");
    sent.body["max_tokens"].as_u64().expect("an output limit")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_small_layout_starts_with_an_8k_window_and_keeps_room_to_answer() {
    let server = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&local_config(&server, "smol", 8192));
    let daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    // A quarter of the window for the answer; the view shrunk to the rest.
    assert_eq!(turn_output_limit(&server, &mut client).await, 2048);
    let budget = view_budget(&mut client).await;
    assert!(budget < 24_000, "{budget}");
    assert!(
        daemon.log_text().contains("layout `small` shrunk"),
        "{}",
        daemon.log_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_llama_cpp_slot_smaller_than_the_configured_window_is_warned_of_and_used() {
    let server = FakeModel::start().await;
    // `llama-server -c 32768 -np 4`: 8,192 tokens a slot.
    server.serve_props(8192, 4);
    let home = TestHome::new(bins!());
    home.write_config(&local_config(&server, "smol", 32_768));
    let daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    let log = daemon.log_text();
    for said in ["serves a 8192-token window", "32768-token", "-np 1"] {
        assert!(log.contains(said), "{said:?} in: {log}");
    }
    let window = status(&mut client).await.window.expect("the warning");
    assert!(
        window.contains("llama.cpp") && window.contains("8192"),
        "{window}"
    );
    let shown = String::from_utf8_lossy(&home.hearth_async(&["status"]).await.stdout).to_string();
    assert!(shown.contains("window   "), "{shown}");
    // Requests are sized to the slot, not to the configured window.
    assert_eq!(turn_output_limit(&server, &mut client).await, 2048);
    assert!(server.probes().iter().any(|probe| probe.path == "/props"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ollamas_running_context_is_read_and_said_how_to_raise() {
    let server = FakeModel::start().await;
    server.serve_running("qwen3:8b", 16_384);
    let home = TestHome::new(bins!());
    home.write_config(&local_config(&server, "qwen3:8b", 40_960));
    let daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let window = status(&mut client).await.window.expect("the warning");
    for said in ["Ollama", "16384-token", "OLLAMA_CONTEXT_LENGTH=40960"] {
        assert!(window.contains(said), "{said:?} in: {window}");
    }
    assert!(daemon.log_text().contains("OLLAMA_CONTEXT_LENGTH"));
    assert_eq!(turn_output_limit(&server, &mut client).await, 4096);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_serving_the_whole_window_is_not_warned_of() {
    let server = FakeModel::start().await;
    server.serve_props(32_768, 1);
    let home = TestHome::new(bins!());
    home.write_config(&local_config(&server, "smol", 32_768));
    let daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    assert_eq!(status(&mut client).await.window, None);
    assert!(!daemon.log_text().contains("smaller than the"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_configuration_a_local_model_gets_the_layout_setup_would_pick() {
    let server = FakeModel::start().await;
    server.serve_local_models(&["qwen3:8b"]);
    server.serve_context_length("qwen3:8b", 32_768);
    let home = TestHome::new(bins!());
    let url = format!("http://{}", server.addr());
    let _daemon = Daemon::start_with_env(&home, &[(OLLAMA_URL_ENV, &url)]);
    let mut client = home.connect("terminal", None).await;
    // `small`'s view (setup writes `layout = "small"` for this model:
    // tests/setup.rs), not the default's 128,000 bytes.
    assert_eq!(view_budget(&mut client).await, 24_000);
    let log = home.history().await;
    assert!(
        log.iter().any(|m| m.text.contains("`small` layout")),
        "{log:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_small_layouts_summaries_carry_no_tools() {
    let server = FakeModel::start().await;
    // A llama.cpp server with one slot of 8,192 tokens.
    server.serve_props(8192, 1);
    let home = TestHome::new(bins!());
    home.write_config(&local_config(&server, "smol", 8192));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    // Longer than a line of the small layout: it needs a summary first.
    server.push(Reply::text("the user asked to keep the details"));
    server.push(Reply::text("kept"));
    let long = format!("Please keep these details: {}", "detail ".repeat(60));
    let (id, _) = client.submit(&long, "terminal", None).await;
    client.reply_to(id).await;
    let requests = server.requests();
    let (summaries, turns): (Vec<_>, Vec<_>) = requests
        .iter()
        .partition(|r| r.contents()[0].starts_with("You write one-line summaries"));
    assert_eq!(summaries.len(), 1, "{requests:#?}");
    assert!(
        summaries[0].body.get("tools").is_none(),
        "{:?}",
        summaries[0].body
    );
    assert!(turns[0].body["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
}
