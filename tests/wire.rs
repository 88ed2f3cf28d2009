//! End-to-end: what the providers' own documentation says they refuse or
//! answer, and that the user is told the truth about it — an effort a
//! provider does not take stops the start, an older Anthropic model is asked
//! to think in the form it takes, a refusal is the reply, a cut answer says
//! it was cut, and every request a provider billed is in `hearth stats`.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{ending, EventKind};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Finish, Reply, Usage};
use hearth_tests::harness::TestHome;
use serde_json::{json, Value};

/// Each wire protocol, streamed and not: (provider, stream).
const PROTOCOLS: [(&str, bool); 6] = [
    ("openai", true),
    ("openai", false),
    ("openai-chat", true),
    ("openai-chat", false),
    ("anthropic", true),
    ("anthropic", false),
];

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

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `hearth stats --json`, one value per line.
async fn stats(home: &TestHome) -> Vec<Value> {
    let output = home.hearth_async(&["stats", "--json"]).await;
    assert!(output.status.success(), "{output:?}");
    stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A refusal, as each API documents it (`message.refusal`, a `refusal`
/// part, `stop_reason: "refusal"`), is the reply the user reads: the
/// terminal, `hearth send --wait` and the log show it, marked as one.
#[tokio::test]
async fn a_refusal_is_the_reply_the_user_reads() {
    let model = FakeModel::start().await;
    for (provider, stream) in PROTOCOLS {
        let home = home();
        home.write_config(&model_section(
            provider,
            "fake-model",
            &model.base_url(),
            &format!("stream = {stream}\n"),
        ));
        let _daemon = home.start();
        let words = "I can't help with that.";
        model.push(Reply::ended(words, Finish::Refusal));
        let output = home
            .hearth_async(&["send", "--wait", "do the bad thing"])
            .await;
        let said = stdout(&output);
        assert!(output.status.success(), "{provider} {stream}: {output:?}");
        assert!(said.contains(words), "{provider} {stream}: {said}");
        assert!(said.contains("[the model refused to answer]"), "{said}");
        let log = home.history().await;
        let reply = log.last().unwrap();
        assert_eq!(reply.text, words, "{provider} {stream}");
        assert_eq!(reply.status.as_deref(), Some(ending::REFUSED));
    }
}

/// An answer cut at the output limit or by the content filter is logged
/// with a status that says so; every client shows the line that says why
/// and which setting to raise.
#[tokio::test]
async fn a_cut_answer_says_it_was_cut_and_why() {
    let model = FakeModel::start().await;
    for (provider, stream) in PROTOCOLS {
        let home = home();
        home.write_config(&model_section(
            provider,
            "fake-model",
            &model.base_url(),
            &format!("stream = {stream}\nmax_tokens = 2000\n"),
        ));
        let _daemon = home.start();
        let mut client = home.connect("terminal", None).await;
        model.push(Reply::ended("The first half of", Finish::Length));
        let (id, _) = client.submit("write a lot", "terminal", None).await;
        let reply = client.reply_to(id).await;
        assert_eq!(reply.text.as_deref(), Some("The first half of"));
        assert_eq!(
            reply.status.as_deref(),
            Some(ending::CUT_MAX_TOKENS),
            "{provider} {stream}"
        );
        let log = home.hearth_async(&["log"]).await;
        let log = stdout(&log);
        assert!(log.contains("reply/cut_max_tokens"), "{log}");
        assert!(log.contains("raise max_tokens in [model]"), "{log}");
        if provider != "anthropic" {
            model.push(Reply::ended("Some", Finish::ContentFilter));
            let output = home.hearth_async(&["send", "--wait", "again"]).await;
            let said = stdout(&output);
            assert!(
                said.contains("Some\n[cut off by the provider's content filter]"),
                "{said}"
            );
        }
    }
}

/// A stream cut off mid-answer reports no usage, but the provider billed
/// it: it is in `hearth stats`, counted at an estimate that says so; a cut
/// answer's reported usage is counted as reported.
#[tokio::test]
async fn every_billed_request_is_in_stats() {
    let model = FakeModel::start().await;
    for provider in ["openai", "openai-chat", "anthropic"] {
        let home = home();
        home.write_config(&model_section(
            provider,
            "fake-model",
            &model.base_url(),
            "",
        ));
        let _daemon = home.start();
        let mut client = home.connect("terminal", None).await;
        model.push(Reply::dropped("Half an answer"));
        let (id, _) = client.submit("tell me", "terminal", None).await;
        let error = client
            .wait_for(|e| e.kind == EventKind::Error && e.answers.contains(&id))
            .await;
        assert!(error.text.unwrap().contains("ended before it was complete"));
        let rows = stats(&home).await;
        assert_eq!(rows.len(), 1, "{provider}: {rows:?}");
        assert_eq!(rows[0]["requests"], 1, "{provider}");
        assert_eq!(rows[0]["estimated_requests"], 1, "{provider}");
        assert!(rows[0]["input_tokens"].as_u64().unwrap() > 100, "{rows:?}");
        assert!(rows[0]["output_tokens"].as_u64().unwrap() >= 4, "{rows:?}");
        let table = stdout(&home.hearth_async(&["stats"]).await);
        assert!(table.contains("(1 estimated)"), "{table}");

        let usage = Usage {
            input: 1000,
            cached_input: 0,
            cache_write: 0,
            output: 77,
        };
        model.push(Reply::with_usage(
            Reply::ended("Cut", Finish::Length),
            usage,
        ));
        let (id, _) = client.submit("more", "terminal", None).await;
        client.reply_to(id).await;
        let rows = stats(&home).await;
        assert_eq!(rows[0]["requests"], 2, "{provider}");
        assert_eq!(rows[0]["estimated_requests"], 1, "{provider}");
        let output = rows[0]["output_tokens"].as_u64().unwrap();
        assert!(output >= 77 + 4, "{provider}: {rows:?}");
    }
}

/// Issue 18: an image whose header claims 30000×30000 pixels is refused
/// when it is stored, before anything decodes it.
#[tokio::test]
async fn an_image_claiming_too_many_pixels_is_refused() {
    use hearth_protocol::{image, ClientFrame, ErrorCode, ServerFrame};
    let home = home();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend(30_000u32.to_be_bytes());
    png.extend(30_000u32.to_be_bytes());
    png.extend([8, 6, 0, 0, 0]);
    let answer = client
        .request(ClientFrame::ImagePut {
            media_type: "image/png".into(),
            data_base64: image::encode(&png),
        })
        .await;
    match answer {
        ServerFrame::Error { code, message, .. } => {
            assert_eq!(code, ErrorCode::TooLarge);
            assert!(message.contains("30000x30000"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
