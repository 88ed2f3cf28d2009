//! Tests of `anthropic.rs`: the exact request bytes with their cache marks,
//! role merging, and canned whole and streamed answers.

use super::stream::StreamAssembly;
use super::*;
use crate::model::config::test_file::Config;
use crate::model::http::Flow;
use crate::model::sse::SseEvent;
use crate::model::ToolSpec;
use std::path::Path;

const LABEL: &str = "anthropic/claude-test";

fn config(extra: &str) -> ModelConfig {
    let text = format!("[model]\nprovider = \"anthropic\"\nmodel = \"claude-test\"\n{extra}");
    Config::parse(Path::new("config.toml"), &text)
        .ok()
        .and_then(|config| config.model)
        .expect("test config parses")
}

fn source() -> Source<'static> {
    Source {
        provider: "anthropic",
        model: "claude-test",
        window: None,
        key_hint: "check the key in $ANTHROPIC_API_KEY".into(),
    }
}

fn user(text: &str) -> Item {
    Item::user(text)
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type":"object","properties":{}}),
    }
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

/// A chain's request: the view in two blocks, the state, the new message,
/// one step of calls and results, and a message that came meanwhile.
fn request() -> Request {
    Request {
        instructions: "Be brief.".into(),
        tools: vec![tool("date"), tool("shell")],
        items: vec![
            user("<chat>\n0+1|user: hi"),
            user("1+1|reply: hello"),
            user("</chat>\nLocal time: noon"),
            user("2+0|user from terminal: list files"),
            Item::Assistant {
                text: Some("Looking.".into()),
                tool_calls: vec![call("toolu_1", "shell", r#"{"command":"ls"}"#)],
                carry: Carry::default(),
            },
            Item::ToolResult {
                call_id: "toolu_1".into(),
                output: "a.txt".into(),
            },
            user("4+0|user from telegram: and the date?"),
        ],
        cache_key: Some("hearth-hearth".into()),
        cache_marks: vec![1, 6],
    }
}

fn body(config: &ModelConfig, request: &Request) -> String {
    serde_json::to_string(&request_body(config, request, LABEL, true)).unwrap()
}

/// How many `cache_control` marks a body carries.
fn marks(body: &str) -> usize {
    body.matches(r#""cache_control":{"type":"ephemeral""#)
        .count()
}

#[test]
fn streaming_request_serializes_exactly() {
    let config = config("");
    let expected = concat!(
        r#"{"model":"claude-test","max_tokens":8192,"#,
        r#""system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral","ttl":"1h"}}],"#,
        r#""messages":["#,
        r#"{"role":"user","content":["#,
        r#"{"type":"text","text":"<chat>\n0+1|user: hi"},"#,
        r#"{"type":"text","text":"1+1|reply: hello","cache_control":{"type":"ephemeral","ttl":"1h"}},"#,
        r#"{"type":"text","text":"</chat>\nLocal time: noon"},"#,
        r#"{"type":"text","text":"2+0|user from terminal: list files"}]},"#,
        r#"{"role":"assistant","content":["#,
        r#"{"type":"text","text":"Looking."},"#,
        r#"{"type":"tool_use","id":"toolu_1","name":"shell","input":{"command":"ls"}}]},"#,
        r#"{"role":"user","content":["#,
        r#"{"type":"tool_result","tool_use_id":"toolu_1","content":"a.txt"},"#,
        r#"{"type":"text","text":"4+0|user from telegram: and the date?","cache_control":{"type":"ephemeral"}}]}],"#,
        r#""tools":["#,
        r#"{"name":"date","description":"The date tool.","input_schema":{"properties":{},"type":"object"}},"#,
        r#"{"name":"shell","description":"The shell tool.","input_schema":{"properties":{},"type":"object"},"cache_control":{"type":"ephemeral","ttl":"1h"}}],"#,
        r#""stream":true}"#
    );
    assert_eq!(body(&config, &request()), expected);
    // The lasting prefixes live an hour; the request's end five minutes.
    // With `cache_retention = "5m"` every mark is a five-minute one.
    let short = body(&self::config("cache_retention = \"5m\"\n"), &request());
    assert_eq!(short, expected.replace(r#","ttl":"1h""#, ""));
}

#[test]
fn a_mark_before_the_request_end_lives_an_hour() {
    // A compaction call marks its context, not the task after it, which no
    // call repeats: that mark's prefix outlives five minutes.
    let mut request = request();
    request.cache_marks = vec![1];
    let sent = body(&config(""), &request);
    assert!(
        sent.contains(
            r#""text":"1+1|reply: hello","cache_control":{"type":"ephemeral","ttl":"1h"}"#
        ),
        "{sent}"
    );
    assert_eq!(
        sent.matches(r#""cache_control":{"type":"ephemeral"}"#)
            .count(),
        0,
        "{sent}"
    );
}

#[test]
fn one_hour_writes_are_read_from_the_usage_and_priced_at_twice_the_input() {
    let wire: WireUsage = serde_json::from_value(serde_json::json!({
        "input_tokens": 10,
        "cache_creation_input_tokens": 1000,
        "cache_read_input_tokens": 500,
        "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 800},
        "output_tokens": 5
    }))
    .unwrap();
    let usage = wire.usage();
    assert_eq!(usage.cache_write, 1000);
    assert_eq!(usage.cache_write_long, 800);
    let price = crate::usage::Prices::default()
        .lookup("claude-sonnet-4-5")
        .unwrap();
    let cost = price.cost(&usage) * 1e6;
    let expected = 10.0 * 3.0 + 500.0 * 0.3 + 200.0 * 3.75 + 800.0 * 6.0 + 5.0 * 15.0;
    assert!((cost - expected).abs() < 1e-6, "{cost} {expected}");
}

#[test]
fn effort_and_max_tokens_come_from_the_config() {
    let config = config("effort = \"low\"\nmax_tokens = 1000\n");
    let request = Request {
        instructions: String::new(),
        tools: vec![],
        items: vec![user("hi")],
        cache_key: None,
        cache_marks: vec![],
    };
    assert_eq!(
        serde_json::to_string(&request_body(&config, &request, LABEL, false)).unwrap(),
        concat!(
            r#"{"model":"claude-test","max_tokens":1000,"#,
            r#""messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"#,
            r#""thinking":{"type":"adaptive"},"output_config":{"effort":"low"},"stream":false}"#
        )
    );
}

/// The README's own example: Sonnet 4.5 refuses adaptive thinking and the
/// effort parameter, and takes a budget below `max_tokens` instead.
#[test]
fn older_models_get_a_thinking_budget_instead_of_adaptive_thinking() {
    let text = "[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
                effort = \"medium\"\nmax_tokens = 8192\n";
    let config = Config::parse(Path::new("config.toml"), text)
        .unwrap()
        .model
        .unwrap();
    let request = Request {
        instructions: String::new(),
        tools: vec![],
        items: vec![user("hi")],
        cache_key: None,
        cache_marks: vec![],
    };
    let value = serde_json::to_value(request_body(&config, &request, LABEL, false)).unwrap();
    assert_eq!(
        value["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    assert!(value.get("output_config").is_none(), "{value}");
    let adaptive = config_with_thinking(&config, Some(ThinkingForm::Adaptive));
    let value = serde_json::to_value(request_body(&adaptive, &request, LABEL, false)).unwrap();
    assert_eq!(value["thinking"], json!({"type": "adaptive"}));
    assert_eq!(value["output_config"], json!({"effort": "medium"}));
}

fn config_with_thinking(config: &ModelConfig, thinking: Option<ThinkingForm>) -> ModelConfig {
    ModelConfig {
        thinking,
        ..config.clone()
    }
}

#[test]
fn at_most_four_marks_and_the_earliest_view_marks_go_first() {
    let config = config("");
    let mut request = request();
    request.cache_marks = vec![0, 1, 3, 6];
    let body = body(&config, &request);
    assert_eq!(marks(&body), MAX_MARKS, "{body}");
    let value: Value = serde_json::from_str(&body).unwrap();
    let first = &value["messages"][0]["content"];
    // Tools and system take two; of the four item marks, 3 and 6 are kept.
    assert!(first[0].get("cache_control").is_none());
    assert!(first[1].get("cache_control").is_none());
    assert_eq!(first[3]["cache_control"]["type"], "ephemeral");
    assert_eq!(
        value["messages"][2]["content"][1]["cache_control"]["type"],
        "ephemeral"
    );

    // Without tools and instructions, four item marks fit.
    request.tools.clear();
    request.instructions.clear();
    assert_eq!(marks(&self::body(&config, &request)), 4);
}

#[test]
fn marks_that_point_nowhere_are_dropped() {
    let config = config("");
    let mut request = request();
    request.cache_marks = vec![6, 6, 99];
    request.items.push(user("   "));
    request.cache_marks.push(7);
    assert_eq!(marks(&body(&config, &request)), 3);
}

#[test]
fn images_go_as_base64_blocks_and_the_mark_goes_on_the_last() {
    let request = Request {
        instructions: String::new(),
        tools: vec![],
        items: vec![Item::User {
            text: "what is this?".into(),
            images: vec![crate::model::Image {
                media_type: "image/webp".into(),
                data_base64: "UklGRg==".into(),
            }],
        }],
        cache_key: None,
        cache_marks: vec![0],
    };
    let body = serde_json::to_string(&request_body(&config(""), &request, LABEL, false)).unwrap();
    assert!(
        body.contains(concat!(
            r#""messages":[{"role":"user","content":["#,
            r#"{"type":"text","text":"what is this?"},"#,
            r#"{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"UklGRg=="},"#,
            r#""cache_control":{"type":"ephemeral"}}]}]"#
        )),
        "{body}"
    );
}

#[test]
fn roles_alternate_and_blank_text_makes_no_block() {
    let config = config("");
    let request = Request {
        instructions: "x".into(),
        tools: vec![],
        items: vec![
            user("a"),
            user(" "),
            user("b"),
            Item::Assistant {
                text: Some(String::new()),
                tool_calls: vec![],
                carry: Carry::default(),
            },
            user("c"),
            Item::Assistant {
                text: Some("one".into()),
                tool_calls: vec![
                    call("toolu_1", "date", "{}"),
                    call("toolu_2", "date", "not json"),
                ],
                carry: Carry::default(),
            },
            Item::ToolResult {
                call_id: "toolu_1".into(),
                output: String::new(),
            },
            Item::ToolResult {
                call_id: "toolu_2".into(),
                output: "invalid arguments".into(),
            },
        ],
        cache_key: None,
        cache_marks: vec![],
    };
    let value = serde_json::to_value(request_body(&config, &request, LABEL, true)).unwrap();
    assert_eq!(
        value["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "a"}, {"type": "text", "text": "b"}, {"type": "text", "text": "c"}
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "one"},
                {"type": "tool_use", "id": "toolu_1", "name": "date", "input": {}},
                {"type": "tool_use", "id": "toolu_2", "name": "date", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "invalid arguments"}
            ]}
        ])
    );
}

#[test]
fn thinking_blocks_go_back_first_and_only_to_their_model() {
    let config = config("effort = \"high\"\n");
    let thinking = json!({"type":"thinking","thinking":"Check the clock.","signature":"sig=="});
    let mut request = request();
    request.items[4] = Item::Assistant {
        text: None,
        tool_calls: vec![call("toolu_1", "date", "{}")],
        carry: Carry {
            origin: LABEL.into(),
            items: vec![thinking.clone()],
        },
    };
    let value = serde_json::to_value(request_body(&config, &request, LABEL, true)).unwrap();
    assert_eq!(value["messages"][1]["content"][0], thinking);
    assert_eq!(value["messages"][1]["content"][1]["type"], "tool_use");
    let other =
        serde_json::to_value(request_body(&config, &request, "anthropic/other", true)).unwrap();
    assert_eq!(other["messages"][1]["content"][0]["type"], "tool_use");
    // Adaptive thinking may skip a step's thinking: the request keeps it.
    assert_eq!(other["thinking"], json!({"type": "adaptive"}));
}

#[test]
fn a_tool_step_whose_thinking_was_lost_goes_on_without_thinking() {
    // A turn continued after a restart: its tool-use step has no carry, and
    // manual thinking would be refused without it.
    let manual = config_with_thinking(
        &config("effort = \"high\"\nmax_tokens = 8192\n"),
        Some(ThinkingForm::Enabled),
    );
    let value = serde_json::to_value(request_body(&manual, &request(), LABEL, false)).unwrap();
    assert!(value.get("thinking").is_none(), "{value}");
    // Without a tool-use step there is nothing to lose: thinking stays.
    let mut plain = request();
    plain.items.truncate(4);
    let value = serde_json::to_value(request_body(&manual, &plain, LABEL, false)).unwrap();
    assert_eq!(value["thinking"]["type"], "enabled", "{value}");
}

// ---- answers ----

fn event(data: Value) -> SseEvent {
    SseEvent {
        event: data["type"].as_str().map(str::to_string),
        data: data.to_string(),
    }
}

/// Feeds canned events and returns the reply and the streamed text.
fn assemble(events: &[SseEvent]) -> (Result<Response, ModelError>, Vec<String>) {
    let mut assembly = StreamAssembly::new(LABEL.into());
    let mut pieces = Vec::new();
    let mut on_text = |text: &str| pieces.push(text.to_string());
    for event in events {
        match assembly.take(&source(), event, &mut on_text) {
            Ok(Flow::More) => {}
            Ok(Flow::Stop) => break,
            Err(err) => return (Err(err), pieces),
        }
    }
    (assembly.finish(), pieces)
}

fn message_start() -> SseEvent {
    event(
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":1}}}),
    )
}

fn delta(index: u64, delta: Value) -> SseEvent {
    event(json!({"type":"content_block_delta","index":index,"delta":delta}))
}

#[test]
fn streamed_text_thinking_and_tool_input_assemble() {
    let (reply, pieces) = assemble(&[
        message_start(),
        event(
            json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
        ),
        delta(
            0,
            json!({"type":"thinking_delta","thinking":"The user wants "}),
        ),
        delta(0, json!({"type":"thinking_delta","thinking":"the time."})),
        delta(
            0,
            json!({"type":"signature_delta","signature":"EqQBCgIYAh=="}),
        ),
        event(json!({"type":"content_block_stop","index":0})),
        event(json!({"type":"ping"})),
        event(
            json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
        ),
        delta(1, json!({"type":"text_delta","text":"Let me "})),
        delta(1, json!({"type":"text_delta","text":"check."})),
        event(json!({"type":"content_block_stop","index":1})),
        event(
            json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_9","name":"shell","input":{}}}),
        ),
        delta(2, json!({"type":"input_json_delta","partial_json":""})),
        delta(
            2,
            json!({"type":"input_json_delta","partial_json":"{\"comm"}),
        ),
        event(json!({"type":"ping"})),
        delta(
            2,
            json!({"type":"input_json_delta","partial_json":"and\": \"ls\"}"}),
        ),
        event(json!({"type":"content_block_stop","index":2})),
        event(
            json!({"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_10","name":"date","input":{}}}),
        ),
        event(json!({"type":"content_block_stop","index":3})),
        event(
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":87}}),
        ),
        event(json!({"type":"message_stop"})),
    ]);
    let reply = reply.unwrap();
    assert_eq!(pieces, ["Let me ", "check."]);
    assert_eq!(reply.text, "Let me check.");
    assert_eq!(
        reply.tool_calls,
        [
            call("toolu_9", "shell", r#"{"command": "ls"}"#),
            call("toolu_10", "date", "{}")
        ]
    );
    assert_eq!(
        reply.usage,
        Usage {
            input: 2112,
            cached_input: 2000,
            cache_write: 100,
            cache_write_long: 0,
            output: 87
        }
    );
    assert_eq!(
        reply.carry,
        Carry {
            origin: LABEL.into(),
            items: vec![
                json!({"type":"thinking","thinking":"The user wants the time.","signature":"EqQBCgIYAh=="})
            ],
        }
    );
}

#[test]
fn a_stream_that_ends_before_message_stop_is_cut() {
    let (reply, pieces) = assemble(&[
        message_start(),
        event(
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
        ),
        delta(0, json!({"type":"text_delta","text":"half"})),
    ]);
    assert_eq!(pieces, ["half"]);
    assert!(matches!(reply, Err(ModelError::Cut)), "{reply:?}");
}

#[test]
fn an_error_event_mid_stream_is_sorted_by_its_type() {
    let overloaded =
        event(json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}));
    let (reply, _) = assemble(&[message_start(), overloaded]);
    assert!(
        matches!(reply, Err(ModelError::Unavailable { ref message, .. }) if message == "Overloaded"),
        "{reply:?}"
    );
    assert!(reply.unwrap_err().is_transient());
    let invalid =
        event(json!({"type":"error","error":{"type":"invalid_request_error","message":"bad"}}));
    let (reply, _) = assemble(&[invalid]);
    assert!(
        matches!(reply, Err(ModelError::Failed(ref m)) if m == "bad"),
        "{reply:?}"
    );
}

#[test]
fn unreadable_events_are_garbage() {
    let (reply, _) = assemble(&[SseEvent {
        event: Some("message_start".into()),
        data: "{not json".into(),
    }]);
    assert!(matches!(reply, Err(ModelError::Garbage(_))), "{reply:?}");
    let (reply, _) = assemble(&[delta(5, json!({"type":"text_delta","text":"x"}))]);
    assert!(matches!(reply, Err(ModelError::Garbage(_))), "{reply:?}");
}

#[test]
fn whole_message_parses() {
    let value = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [
            {"type": "redacted_thinking", "data": "EmwKAhgB"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}}
        ],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 90, "output_tokens": 5}
    });
    let reply = parse_message(&source(), &value, LABEL).unwrap();
    assert_eq!(reply.text, "Looking.");
    assert_eq!(
        reply.tool_calls,
        [call("toolu_1", "shell", r#"{"command":"ls"}"#)]
    );
    assert_eq!(
        reply.usage,
        Usage {
            input: 100,
            cached_input: 90,
            cache_write: 0,
            cache_write_long: 0,
            output: 5
        }
    );
    assert_eq!(
        reply.carry.items,
        [json!({"type": "redacted_thinking", "data": "EmwKAhgB"})]
    );
}

#[test]
fn whole_message_errors_and_garbage() {
    let error = json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}});
    assert!(matches!(
        parse_message(&source(), &error, LABEL),
        Err(ModelError::Unavailable { .. })
    ));
    let wrong = parse_message(&source(), &json!({"content": "text"}), LABEL);
    assert!(matches!(wrong, Err(ModelError::Garbage(_))), "{wrong:?}");
    let nameless = json!({"content":[{"type":"tool_use","input":{}}]});
    assert!(matches!(
        parse_message(&source(), &nameless, LABEL),
        Err(ModelError::Garbage(_))
    ));
}

#[test]
fn stop_reasons_say_whether_an_answer_was_cut_or_refused() {
    let message = |stop: &str, text: &str| {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
               "content": [{"type": "text", "text": text}], "stop_reason": stop,
               "usage": {"input_tokens": 10, "output_tokens": 5}})
    };
    let cut = parse_message(&source(), &message("max_tokens", "The first"), LABEL).unwrap();
    assert_eq!(cut.ending, Ending::Cut(Cut::MaxTokens));
    assert_eq!(cut.text, "The first");
    let full = parse_message(
        &source(),
        &message("model_context_window_exceeded", "x"),
        LABEL,
    );
    assert_eq!(full.unwrap().ending, Ending::Cut(Cut::ContextWindow));
    let refused = parse_message(&source(), &message("refusal", ""), LABEL).unwrap();
    assert_eq!(refused.ending, Ending::Refused);
    assert_eq!(refused.text, REFUSAL_TEXT);
    let whole = parse_message(&source(), &message("end_turn", "Done."), LABEL).unwrap();
    assert_eq!(whole.ending, Ending::Whole);
}
