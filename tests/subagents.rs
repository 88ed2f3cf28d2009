//! End-to-end: subagents run tasks with their own log and loop, and report
//! to the parent exactly once — also across a crash.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::EventKind;
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::TestHome;

/// The parent speaks to `fake-model`, its subagent `scout` to `scout-model`,
/// so each agent's replies can be scripted apart.
fn home(model: &FakeModel) -> TestHome {
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\n\
         [[agents]]\nname = \"scout\"\nresponsibility = \"looks things up\"\nmodel = \"scout-model\"\n",
        model.base_url()
    ));
    home
}

fn start_scout(task: &str) -> Reply {
    Reply::ToolCalls {
        text: None,
        calls: vec![(
            "subagent_start".into(),
            serde_json::json!({"name": "scout", "task": task}).to_string(),
        )],
    }
}

#[tokio::test]
async fn a_finished_run_reports_to_the_parent_and_wakes_it() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push_for("fake-model", start_scout("find the train times"));
    model.push_for("fake-model", Reply::Text("I asked scout.".into()));
    model.push_for("scout-model", Reply::Text("the 9:14 from Oxford".into()));
    model.push_for("fake-model", Reply::Text("Scout says the 9:14.".into()));

    let (id, _) = client.submit("when is my train?", "terminal", None).await;
    assert_eq!(
        client.reply_to(id).await.text.as_deref(),
        Some("I asked scout.")
    );
    let started = client.wait_for(|e| e.kind == EventKind::Subagent).await;
    assert_eq!(started.source.as_deref(), Some("scout"));
    let report = client.wait_for(|e| e.kind == EventKind::Work).await;
    assert_eq!(report.text.as_deref(), Some("scout: the 9:14 from Oxford"));
    assert_eq!(report.status.as_deref(), Some("finished"));
    let answer = client.reply_to(report.id.unwrap()).await;
    assert_eq!(answer.text.as_deref(), Some("Scout says the 9:14."));

    // The parent's state names its subagent; the child never gets the subagent tools.
    let requests = model.requests();
    let parent_first = requests
        .iter()
        .find(|r| r.body["model"] == "fake-model")
        .unwrap();
    assert!(parent_first
        .body
        .to_string()
        .contains("- scout (idle): looks things up"));
    let child = requests
        .iter()
        .find(|r| r.body["model"] == "scout-model")
        .unwrap();
    assert!(!child.body["tools"].to_string().contains("subagent_start"));
    assert!(child.body.to_string().contains("find the train times"));

    // The child's own log, through the CLI.
    let log = home.hearth_async(&["log", "--agent", "scout"]).await;
    let text = String::from_utf8_lossy(&log.stdout);
    assert!(
        text.contains("find the train times") && text.contains("the 9:14 from Oxford"),
        "{text}"
    );
}

#[tokio::test]
async fn a_stopped_run_reports_stopped_and_does_not_wake_the_parent() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push_for(
        "scout-model",
        Reply::Hang {
            text_before: String::new(),
        },
    );
    model.push_for("fake-model", start_scout("watch the kettle"));
    model.push_for("fake-model", Reply::Text("Scout is on it.".into()));
    let (first, _) = client.submit("watch the kettle", "terminal", None).await;
    client.reply_to(first).await;
    // Scout is working (its request hangs) when the user changes their mind.
    model.wait_for_requests(3).await;
    model.push_for(
        "fake-model",
        Reply::ToolCalls {
            text: None,
            calls: vec![("subagent_stop".into(), r#"{"name":"scout"}"#.into())],
        },
    );
    model.push_for("fake-model", Reply::Text("Stopped.".into()));
    let (second, _) = client.submit("never mind, stop it", "terminal", None).await;
    client.reply_to(second).await;
    let report = client.wait_for(|e| e.kind == EventKind::Work).await;
    assert_eq!(report.status.as_deref(), Some("stopped"));

    // Nothing else wakes the parent: the next request is the next message's.
    model.push_for("fake-model", Reply::Text("Hello.".into()));
    let (third, _) = client.submit("hello", "terminal", None).await;
    let answer = client.reply_to(third).await;
    assert!(!answer.answers.contains(&report.id.unwrap()));
    let parent_requests = model
        .requests()
        .iter()
        .filter(|r| r.body["model"] == "fake-model")
        .count();
    assert_eq!(parent_requests, 5);
}

#[tokio::test]
async fn a_run_cut_by_a_crash_resumes_and_reports_once() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push_for(
        "scout-model",
        Reply::Hang {
            text_before: String::new(),
        },
    );
    model.push_for("fake-model", start_scout("count the stars"));
    model.push_for("fake-model", Reply::Text("Scout is counting.".into()));
    let (id, _) = client.submit("how many stars?", "terminal", None).await;
    client.reply_to(id).await;
    model.wait_for_requests(3).await;
    daemon.kill9();

    model.push_for("scout-model", Reply::Text("about 9,000 visible".into()));
    model.push_for("fake-model", Reply::Text("About 9,000.".into()));
    let _daemon = home.start();
    let mut client = home.connect("terminal", Some(id)).await;
    let report = client.wait_for(|e| e.kind == EventKind::Work).await;
    assert_eq!(report.text.as_deref(), Some("scout: about 9,000 visible"));
    client.reply_to(report.id.unwrap()).await;

    let log = home.hearth_async(&["log", "--json"]).await;
    let reports = String::from_utf8_lossy(&log.stdout)
        .lines()
        .filter(|line| line.contains("\"kind\":\"work\""))
        .count();
    assert_eq!(reports, 1, "exactly one report");
}

#[tokio::test]
async fn only_the_top_agent_may_write_on_whatsapp() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    // The bridge itself cannot run here (no secrets); the tool is the daemon's.
    home.write_config(&format!(
        "{config}\n[whatsapp]\nphone_number_id = \"1\"\nallow = [\"+15551234567\"]\n"
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push_for("fake-model", start_scout("look it up"));
    model.push_for("fake-model", Reply::Text("asked".into()));
    model.push_for("scout-model", Reply::Text("found".into()));
    model.push_for("fake-model", Reply::Text("done".into()));
    let (id, _) = client.submit("go", "terminal", None).await;
    client.reply_to(id).await;
    let report = client.wait_for(|e| e.kind == EventKind::Work).await;
    client.reply_to(report.id.unwrap()).await;

    let requests = model.requests();
    let tools_of = |model: &str| {
        let request = requests.iter().find(|r| r.body["model"] == model).unwrap();
        request.body["tools"].to_string()
    };
    assert!(tools_of("fake-model").contains("whatsapp_send"));
    assert!(!tools_of("scout-model").contains("whatsapp_send"));
}
