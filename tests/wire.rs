//! End-to-end: what the providers' own documentation says they refuse or
//! answer, and that the user is told the truth about it — an effort a
//! provider does not take stops the start, an older Anthropic model is asked
//! to think in the form it takes.

use hearth_protocol::EventKind;
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::TestHome;
use serde_json::json;

fn home() -> TestHome {
    TestHome::new(bins!())
}

fn model_section(provider: &str, model: &str, base_url: &str, extra: &str) -> String {
    format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"{model}\"\nbase_url = \"{base_url}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\nretry_delay_ms = 1\n{extra}"
    )
}

#[test]
fn an_effort_the_provider_does_not_take_stops_the_start() {
    let home = home();
    home.write_config(&model_section(
        "anthropic",
        "claude-sonnet-4-5",
        "http://127.0.0.1:9/v1",
        "effort = \"minimal\"\n",
    ));
    let output = home.run_daemon_to_end();
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("config.toml"), "{said}");
    assert!(said.contains("`model.effort`"), "{said}");
    assert!(said.contains("low, medium, high, xhigh, max"), "{said}");
}

/// The README's Anthropic example (Sonnet 4.5 at medium effort) as the
/// Messages API documents it for that model: extended thinking with a
/// budget below `max_tokens`, no adaptive thinking, no effort parameter.
#[tokio::test]
async fn an_older_claude_is_asked_for_budgeted_thinking() {
    let model = FakeModel::start().await;
    let home = home();
    home.write_config(&model_section(
        "anthropic",
        "claude-sonnet-4-5",
        &model.base_url(),
        "max_tokens = 8192\neffort = \"medium\"\n",
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::text("Thought about it."));
    let (id, _) = client.submit("think", "terminal", None).await;
    let reply = client.reply_to(id).await;
    assert_eq!(reply.kind, EventKind::Reply);
    assert_eq!(reply.text.as_deref(), Some("Thought about it."));
    let body = &model.requests()[0].body;
    assert_eq!(
        body["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    assert!(body.get("output_config").is_none(), "{body}");
}
