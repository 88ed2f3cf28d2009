//! End-to-end: a real `hearthd` speaking the Anthropic Messages API to a fake
//! server, retrying what may pass, failing at once on what the user must
//! fix (a refused key, a model the key cannot use), keeping the log whole when an answer is unreadable, and handing over
//! to a fallback model that says so in a note.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{EventKind, Kind};
use hearth_tests::bins;
use hearth_tests::fake_model::{anthropic, FakeModel, Recorded, Reply};
use hearth_tests::harness::{clock_turn, Client, TestHome};
use serde_json::{json, Value};

fn home() -> TestHome {
    TestHome::new(bins!())
}

/// A `[model]` section for the fake Anthropic API at `base_url`; retries
/// wait a millisecond, so no test sleeps.
fn anthropic_model(base_url: &str) -> String {
    format!(
        "[model]\nprovider = \"anthropic\"\nmodel = \"claude-fake\"\nbase_url = \"{base_url}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\nretry_delay_ms = 1\n"
    )
}

/// Waits for the error event that ends the turn which took `id`.
async fn error_for(client: &mut Client, id: u64) -> String {
    let error = client
        .wait_for(|e| e.kind == EventKind::Error && e.answers.contains(&id))
        .await;
    error.text.unwrap_or_default()
}

/// The request's `messages` with every `cache_control` taken out.
fn unmarked(request: &Recorded) -> Vec<Value> {
    let mut body = request.body.clone();
    strip_marks(&mut body);
    body["messages"].as_array().cloned().unwrap_or_default()
}

fn strip_marks(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            fields.remove("cache_control");
            fields.values_mut().for_each(strip_marks);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_marks),
        _ => {}
    }
}

/// Every place in a request body that carries a cache mark, as a JSON pointer.
fn marks(body: &Value) -> Vec<String> {
    fn walk(value: &Value, at: String, found: &mut Vec<String>) {
        match value {
            Value::Object(fields) => {
                if fields.get("cache_control").and_then(|c| c.get("type"))
                    == Some(&json!("ephemeral"))
                {
                    found.push(at.clone());
                }
                for (key, inner) in fields {
                    walk(inner, format!("{at}/{key}"), found);
                }
            }
            Value::Array(items) => {
                for (index, inner) in items.iter().enumerate() {
                    walk(inner, format!("{at}/{index}"), found);
                }
            }
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(body, String::new(), &mut found);
    found
}

#[tokio::test]
async fn an_anthropic_tool_loop_streams_and_sends_the_results_back() {
    let model = FakeModel::start().await;
    let home = home();
    home.write_config(&anthropic_model(&model.base_url()));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    clock_turn(&model, &mut client).await;
    let streamed: String = client
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Delta)
        .filter_map(|e| e.text.clone())
        .collect();
    assert!(streamed.contains("It is now."), "{streamed:?}");

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.path, "/v1/messages");
        assert_eq!(
            request.headers.get("x-api-key").map(String::as_str),
            Some("sk-test-secret")
        );
        assert_eq!(
            request.headers.get("anthropic-version").map(String::as_str),
            Some("2023-06-01")
        );
        assert!(!request.headers.contains_key("authorization"));
        assert_eq!(request.body["stream"], true);
        assert_eq!(request.body["max_tokens"], 8192);
        assert_eq!(request.body["model"], "claude-fake");
        let tools = request.body["tools"].as_array().unwrap();
        assert!(tools.iter().any(|tool| tool["name"] == "date"));
        assert!(tools.iter().all(|tool| tool["input_schema"].is_object()));
    }

    let messages = unmarked(&requests[1]);
    for pair in messages.windows(2) {
        assert_ne!(pair[0]["role"], pair[1]["role"], "roles alternate");
    }
    let at = messages
        .iter()
        .position(|m| m["role"] == "assistant")
        .expect("the answer goes back");
    let assistant = &messages[at]["content"];
    assert_eq!(
        assistant[0],
        json!({"type": "text", "text": "Let me look at the clock."})
    );
    assert_eq!(assistant[1]["type"], "tool_use");
    assert_eq!(assistant[1]["name"], "date");
    assert_eq!(assistant[1]["input"], json!({}));
    let result = &messages[at + 1]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], assistant[1]["id"]);
    assert!(result["content"].as_str().unwrap().contains(':'));
    // The chain extends the first request: its messages come first, unchanged.
    let first = unmarked(&requests[0]);
    assert_eq!(&messages[..first.len()], &first[..]);
}

#[tokio::test]
async fn a_whole_anthropic_answer_is_read_when_streaming_is_off() {
    let model = FakeModel::start().await;
    let home = home();
    home.write_config(&format!(
        "{}stream = false\n",
        anthropic_model(&model.base_url())
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::tool_call("date", "{}"));
    model.push(Reply::text("It is now."));
    let (id, _) = client.submit("what time is it?", "terminal", None).await;
    assert_eq!(
        client.reply_to(id).await.text.as_deref(),
        Some("It is now.")
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].body["stream"], false);
    let messages = unmarked(&requests[1]);
    let call = &messages[1]["content"][0];
    assert_eq!(call["type"], "tool_use");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], call["id"]);
    let log = home.history().await;
    assert_eq!(log.iter().filter(|m| m.kind == Kind::Tool).count(), 1);
}

#[tokio::test]
async fn cache_marks_sit_on_the_tools_the_instructions_the_view_and_the_end() {
    let model = FakeModel::start().await;
    let home = home();
    home.write_config(&anthropic_model(&model.base_url()));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    // Two exchanges make four view lines: one whole block of the default layout.
    for (question, answer) in [("one", "first"), ("two", "second"), ("three", "third")] {
        model.push(Reply::text(answer));
        let (id, _) = client.submit(question, "terminal", None).await;
        client.reply_to(id).await;
    }
    let requests = model.requests();
    let first = &requests[0].body;
    let last_tool = first["tools"].as_array().unwrap().len() - 1;
    assert_eq!(
        marks(first),
        [
            "/messages/0/content/2".to_string(),
            "/system/0".to_string(),
            format!("/tools/{last_tool}"),
        ],
        "no whole view block yet: tools, instructions and the end"
    );

    let third = &requests[2].body;
    let found = marks(third);
    assert_eq!(found.len(), 4, "{found:?}");
    let view = &third["messages"][0]["content"][0];
    assert!(view["text"].as_str().unwrap().starts_with("<chat>\n0+1|"));
    assert_eq!(view["text"].as_str().unwrap().lines().count(), 5);
    // The settled prefix lives an hour; the request's end five minutes.
    assert_eq!(
        view["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
    let content = third["messages"][0]["content"].as_array().unwrap();
    assert_eq!(
        content.last().unwrap()["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        third["system"][0]["cache_control"],
        json!({"type": "ephemeral", "ttl": "1h"})
    );
}

#[tokio::test]
async fn an_overloaded_model_is_retried_and_the_tool_call_is_logged_once() {
    let model = FakeModel::start().await;
    let home = home();
    home.write_config(&anthropic_model(&model.base_url()));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(anthropic::error(529, "overloaded_error", "Overloaded"));
    model.push(Reply::tool_call("date", "{}"));
    model.push(anthropic::error(529, "overloaded_error", "Overloaded"));
    model.push(anthropic::error(500, "api_error", "Internal server error"));
    model.push(Reply::text("It is now."));
    let (id, _) = client.submit("what time is it?", "terminal", None).await;
    assert_eq!(
        client.reply_to(id).await.text.as_deref(),
        Some("It is now.")
    );
    assert_eq!(model.requests().len(), 5);
    assert_eq!(model.pending_replies(), 0);
    let log = home.history().await;
    let tools: Vec<_> = log.iter().filter(|m| m.kind == Kind::Tool).collect();
    assert_eq!(tools.len(), 1, "{log:?}");
    assert!(!log.iter().any(|m| m.kind == Kind::Note), "{log:?}");
    assert!(!client.events.iter().any(|e| e.kind == EventKind::Error));
}

#[tokio::test]
async fn a_rejected_key_ends_the_turn_at_once_and_says_where_the_key_comes_from() {
    let model = FakeModel::start().await;
    let home = home();
    home.write_config(&anthropic_model(&model.base_url()));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(anthropic::error(
        401,
        "authentication_error",
        "invalid x-api-key",
    ));
    model.push(Reply::text("never sent"));
    let (id, _) = client.submit("hello", "terminal", None).await;
    let said = error_for(&mut client, id).await;
    assert!(said.contains("invalid x-api-key"), "{said}");
    assert!(said.contains("$HEARTH_TEST_KEY"), "{said}");
    assert!(!said.contains("sk-test-secret"), "{said}");
    client.wait_for(|e| e.kind == EventKind::Idle).await;
    assert_eq!(model.requests().len(), 1, "no retry");
    assert_eq!(model.pending_replies(), 1);
    let log = home.history().await;
    assert!(log.iter().any(|m| m.id == id && m.text == "hello"));
    assert!(!log.iter().any(|m| m.kind == Kind::Reply));
}

#[tokio::test]
async fn a_model_the_key_cannot_use_ends_the_turn_at_once_and_is_named() {
    let model = FakeModel::start().await;
    model.refuse_model("claude-fake");
    let home = home();
    home.write_config(&anthropic_model(&model.base_url()));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    let (id, _) = client.submit("hello", "terminal", None).await;
    let said = error_for(&mut client, id).await;
    assert!(
        said.contains("anthropic does not offer claude-fake to this key (404: model: claude-fake)"),
        "{said}"
    );
    assert!(said.contains("check the model's name"), "{said}");
    client.wait_for(|e| e.kind == EventKind::Idle).await;
    assert_eq!(model.requests().len(), 1, "no retry");
}

#[tokio::test]
async fn unreadable_and_cut_answers_end_the_turn_and_keep_the_log() {
    let model = FakeModel::start().await;
    let home = home();
    home.write_config(&anthropic_model(&model.base_url()));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    model.push(Reply::text("first answer"));
    let (one, _) = client.submit("one", "terminal", None).await;
    client.reply_to(one).await;

    model.push(Reply::Garbage(
        "event: message_start\ndata: {not json\n\n".into(),
    ));
    let (two, _) = client.submit("two", "terminal", None).await;
    let said = error_for(&mut client, two).await;
    assert!(said.contains("unreadable"), "{said}");

    let cut = [
        r#"{"type":"message_start","message":{"id":"msg_x","type":"message","role":"assistant","content":[],"model":"claude-fake","stop_reason":null,"usage":{"input_tokens":10,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a partial ans"}}"#,
    ]
    .iter()
    .map(|data| {
        let kind: Value = serde_json::from_str(data).unwrap();
        format!("event: {}\ndata: {data}\n\n", kind["type"].as_str().unwrap())
    })
    .collect::<String>();
    model.push(Reply::Garbage(cut));
    let (three, _) = client.submit("three", "terminal", None).await;
    let said = error_for(&mut client, three).await;
    assert!(said.contains("stream ended"), "{said}");
    client
        .wait_for(|e| e.kind == EventKind::Delta && e.text.as_deref() == Some("a partial ans"))
        .await;

    // Neither failure was retried, and the daemon still answers.
    assert_eq!(model.requests().len(), 3);
    model.push(Reply::text("back again"));
    let (four, _) = client.submit("four", "terminal", None).await;
    assert_eq!(
        client.reply_to(four).await.text.as_deref(),
        Some("back again")
    );

    let log = home.history().await;
    let texts: Vec<&str> = log.iter().map(|m| m.text.as_str()).collect();
    for earlier in ["one", "first answer", "two", "three", "four", "back again"] {
        assert!(texts.contains(&earlier), "{earlier} is kept: {texts:?}");
    }
    let replies: Vec<&str> = log
        .iter()
        .filter(|m| m.kind == Kind::Reply)
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(replies, ["first answer", "back again"]);
    assert!(
        !texts.iter().any(|t| t.contains("a partial ans")),
        "{texts:?}"
    );
}

#[tokio::test]
async fn a_model_that_keeps_failing_hands_over_to_its_fallback_with_a_note() {
    let primary = FakeModel::start().await;
    let fallback = FakeModel::start().await;
    let home = home();
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-primary\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\nmax_retries = 1\nretry_delay_ms = 1\n\n\
         [[model.fallback]]\nprovider = \"anthropic\"\nmodel = \"claude-fake\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\nretry_delay_ms = 1\n",
        primary.base_url(),
        fallback.base_url()
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    primary.push(Reply::error(503, "server_error", "down for maintenance"));
    primary.push(Reply::error(503, "server_error", "down for maintenance"));
    fallback.push(Reply::text("from the fallback"));
    let (id, _) = client.submit("hello", "terminal", None).await;
    assert_eq!(
        client.reply_to(id).await.text.as_deref(),
        Some("from the fallback")
    );
    let note = client.wait_for(|e| e.kind == EventKind::Note).await;
    let said = note.text.unwrap();
    assert!(
        said.contains("openai-chat/fake-primary keeps failing"),
        "{said}"
    );
    assert!(said.contains("down for maintenance"), "{said}");
    assert!(
        said.contains("switching to anthropic/claude-fake"),
        "{said}"
    );
    assert_eq!(primary.requests().len(), 2, "one try and one retry");
    assert_eq!(fallback.requests().len(), 1);

    // The failing model cools down: the next turn goes straight to the fallback.
    fallback.push(Reply::text("still the fallback"));
    let (next, _) = client.submit("again", "terminal", None).await;
    assert_eq!(
        client.reply_to(next).await.text.as_deref(),
        Some("still the fallback")
    );
    assert_eq!(primary.requests().len(), 2);
    let notes = home
        .history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::Note)
        .count();
    assert_eq!(notes, 1, "a switch is noted once");
}
