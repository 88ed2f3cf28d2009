//! Tests of `responses.rs`: the exact request bytes, and canned whole and streamed answers.

use super::*;
use crate::model::config::test_file::Config;
use crate::model::ToolSpec;

const LABEL: &str = "openai/gpt-test";

fn source() -> Source<'static> {
    Source {
        provider: "openai",
        model: "gpt-test",
        window: None,
        key_hint: "check the key".into(),
    }
}
use serde_json::json;
use std::path::Path;

fn config(extra: &str) -> ModelConfig {
    let text = format!("[model]\nprovider = \"openai\"\nmodel = \"gpt-test\"\n{extra}");
    Config::parse(Path::new("config.toml"), &text)
        .ok()
        .and_then(|config| config.model)
        .expect("test config parses")
}

fn request() -> Request {
    Request {
        instructions: "Be brief.".into(),
        tools: vec![ToolSpec {
            name: "shell".into(),
            description: "Run a command.".into(),
            parameters: json!({"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}),
        }],
        items: vec![
            Item::user("list files"),
            Item::Assistant {
                carry: Carry::default(),
                text: Some("Looking.".into()),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "shell".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }],
            },
            Item::ToolResult {
                call_id: "call_1".into(),
                output: "a.txt".into(),
            },
        ],
        cache_key: Some("agent-hearth".into()),
        cache_marks: vec![],
    }
}

fn event(name: &str, data: Value) -> SseEvent {
    SseEvent {
        event: Some(name.to_string()),
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

fn completed(usage: Value) -> SseEvent {
    event(
        "response.completed",
        json!({"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","object":"response","status":"completed","error":null,"output":[],"usage":usage}}),
    )
}

#[test]
fn streaming_request_serializes_exactly() {
    let config = config("effort = \"low\"\n");
    let request = request();
    let body = serde_json::to_string(&request_body(&config, &request, LABEL, true)).unwrap();
    let expected = concat!(
        r#"{"model":"gpt-test","instructions":"Be brief.","input":["#,
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"list files"}]},"#,
        r#"{"type":"message","role":"assistant","content":"Looking."},"#,
        r#"{"type":"function_call","call_id":"call_1","name":"shell","arguments":"{\"command\":\"ls\"}"},"#,
        r#"{"type":"function_call_output","call_id":"call_1","output":"a.txt"}],"#,
        r#""tools":[{"type":"function","name":"shell","description":"Run a command.","#,
        r#""parameters":{"properties":{"command":{"type":"string"}},"required":["command"],"type":"object"},"strict":false}],"#,
        r#""reasoning":{"effort":"low"},"store":false,"include":["reasoning.encrypted_content"],"#,
        r#""prompt_cache_key":"agent-hearth","stream":true}"#
    );
    assert_eq!(body, expected);
}

#[test]
fn images_go_as_input_image_parts_after_the_text() {
    let request = Request {
        instructions: String::new(),
        tools: vec![],
        items: vec![Item::User {
            text: "what is this?".into(),
            images: vec![crate::model::Image {
                media_type: "image/jpeg".into(),
                data_base64: "/9j/4AAQ".into(),
            }],
        }],
        cache_key: None,
        cache_marks: vec![],
    };
    let body = serde_json::to_string(&request_body(&config(""), &request, LABEL, false)).unwrap();
    assert!(
        body.contains(concat!(
            r#""input":[{"type":"message","role":"user","content":["#,
            r#"{"type":"input_text","text":"what is this?"},"#,
            r#"{"type":"input_image","image_url":"data:image/jpeg;base64,/9j/4AAQ","detail":"auto"}]}]"#
        )),
        "{body}"
    );
}

#[test]
fn plain_request_omits_what_is_unset() {
    let config = config("");
    let request = Request {
        instructions: "x".into(),
        tools: vec![],
        items: vec![Item::Assistant {
            carry: Carry::default(),
            text: None,
            tool_calls: vec![ToolCall {
                id: "call_2".into(),
                name: "date".into(),
                arguments: "{}".into(),
            }],
        }],
        cache_key: None,
        cache_marks: vec![],
    };
    let body = serde_json::to_string(&request_body(&config, &request, LABEL, false)).unwrap();
    assert_eq!(
        body,
        r#"{"model":"gpt-test","instructions":"x","input":[{"type":"function_call","call_id":"call_2","name":"date","arguments":"{}"}],"store":false,"stream":false}"#
    );
}

#[test]
fn streamed_text_tool_calls_and_usage_assemble() {
    let (reply, pieces) = assemble(&[
        event(
            "response.created",
            json!({"type":"response.created","response":{"status":"in_progress","output":[]}}),
        ),
        event(
            "response.output_item.added",
            json!({"type":"response.output_item.added","item":{"type":"message","id":"msg_1","content":[]}}),
        ),
        event(
            "response.output_text.delta",
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Let me "}),
        ),
        event(
            "response.output_text.delta",
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"look."}),
        ),
        event(
            "response.output_item.done",
            json!({"type":"response.output_item.done","item":{"type":"message","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Let me look.","annotations":[]}]}}),
        ),
        event(
            "response.output_item.added",
            json!({"type":"response.output_item.added","item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"shell","arguments":""}}),
        ),
        event(
            "response.function_call_arguments.delta",
            json!({"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"comm"}),
        ),
        event(
            "response.output_item.done",
            json!({"type":"response.output_item.done","item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"shell","arguments":"{\"command\":\"ls\"}","status":"completed"}}),
        ),
        event(
            "response.output_item.done",
            json!({"type":"response.output_item.done","item":{"type":"reasoning","id":"rs_1","summary":[]}}),
        ),
        completed(
            json!({"input_tokens":2006,"input_tokens_details":{"cached_tokens":1920,"cache_write_tokens":64},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":2306}),
        ),
    ]);
    let reply = reply.unwrap();
    assert_eq!(pieces, vec!["Let me ", "look."]);
    assert_eq!(reply.text, "Let me look.");
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall {
            id: "call_a".into(),
            name: "shell".into(),
            arguments: r#"{"command":"ls"}"#.into()
        }]
    );
    assert_eq!(
        reply.usage,
        Usage {
            input: 2006,
            cached_input: 1920,
            cache_write: 64,
            cache_write_long: 0,
            output: 300
        }
    );
}

#[test]
fn done_sentinel_after_completed_is_accepted() {
    let done = SseEvent {
        event: None,
        data: "[DONE]".into(),
    };
    let usage = json!({"input_tokens":5,"output_tokens":1});
    let (reply, _) = assemble(&[completed(usage), done.clone()]);
    assert_eq!(reply.unwrap().usage.input, 5);
    let (reply, _) = assemble(&[done]);
    assert!(matches!(reply, Err(ModelError::Cut)));
}

#[test]
fn event_name_is_used_when_data_has_no_type() {
    let (reply, pieces) = assemble(&[
        event("response.output_text.delta", json!({"delta":"hi"})),
        event(
            "response.completed",
            json!({"response":{"output":[],"usage":null}}),
        ),
    ]);
    assert_eq!(pieces, vec!["hi"]);
    assert_eq!(reply.unwrap().text, "hi");
}

#[test]
fn completed_output_is_used_when_no_deltas_came() {
    let (reply, pieces) = assemble(&[event(
        "response.completed",
        json!({"type":"response.completed","response":{"status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"whole"}]}]}}),
    )]);
    assert_eq!(pieces, vec!["whole"]);
    assert_eq!(reply.unwrap().text, "whole");
}

#[test]
fn stream_cut_before_completed_fails() {
    let (reply, _) = assemble(&[event(
        "response.output_text.delta",
        json!({"type":"response.output_text.delta","item_id":"m","delta":"hi"}),
    )]);
    assert!(matches!(reply, Err(ModelError::Cut)), "{reply:?}");
}

#[test]
fn failure_events_fail_with_their_message() {
    let (reply, _) = assemble(&[event(
        "error",
        json!({"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached","param":null,"sequence_number":1}),
    )]);
    assert!(
        matches!(reply, Err(ModelError::Unavailable { ref message, .. }) if message == "Rate limit reached"),
        "{reply:?}"
    );
    let (reply, _) = assemble(&[event(
        "response.failed",
        json!({"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The server had an error"},"output":[]}}),
    )]);
    assert!(
        matches!(reply, Err(ModelError::Unavailable { ref message, .. }) if message == "The server had an error"),
        "{reply:?}"
    );
}

/// An incomplete response is an answer that was cut, not a failure: its
/// text so far is the reply, and its ending says why it stopped.
#[test]
fn an_incomplete_response_is_a_cut_answer() {
    let (reply, _) = assemble(&[
        event(
            "response.output_text.delta",
            json!({"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"The first half"}),
        ),
        event(
            "response.incomplete",
            json!({"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[],
                   "usage":{"input_tokens":10,"output_tokens":20}}}),
        ),
    ]);
    let reply = reply.unwrap();
    assert_eq!(reply.text, "The first half");
    assert_eq!(reply.ending, Ending::Cut(Cut::MaxTokens));
    assert_eq!(reply.usage.output, 20);
    let whole = json!({"status":"incomplete","incomplete_details":{"reason":"content_filter"},
        "output":[{"type":"message","content":[{"type":"output_text","text":"Par","annotations":[]}]}]});
    let reply = parse_response(&source(), &whole, LABEL).unwrap();
    assert_eq!(reply.ending, Ending::Cut(Cut::ContentFilter));
    assert_eq!(reply.text, "Par");
}

#[test]
fn a_refusal_part_is_the_reply_and_says_it_is_one() {
    let whole = json!({"status":"completed",
        "output":[{"type":"message","content":[{"type":"refusal","refusal":"I can't help with that."}]}]});
    let reply = parse_response(&source(), &whole, LABEL).unwrap();
    assert_eq!(reply.text, "I can't help with that.");
    assert_eq!(reply.ending, Ending::Refused);
}

#[test]
fn garbage_events_are_garbage() {
    let (reply, _) = assemble(&[SseEvent {
        event: Some("response.output_text.delta".into()),
        data: "{oops".into(),
    }]);
    assert!(matches!(reply, Err(ModelError::Garbage(_))), "{reply:?}");
    let (reply, _) = assemble(&[event(
        "response.output_item.done",
        json!({"type":"response.output_item.done","item":{"type":"function_call","name":"x"}}),
    )]);
    assert!(matches!(reply, Err(ModelError::Garbage(_))), "{reply:?}");
}

#[test]
fn whole_response_parses() {
    let value = json!({
        "id": "resp_1", "object": "response", "status": "completed", "error": null,
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell",
             "arguments": "{\"command\":\"ls\"}", "status": "completed"}
        ],
        "usage": {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 64},
                  "output_tokens": 7, "total_tokens": 107}
    });
    let reply = parse_response(&source(), &value, LABEL).unwrap();
    assert_eq!(reply.text, "Looking.");
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall {
            id: "call_1".into(),
            name: "shell".into(),
            arguments: r#"{"command":"ls"}"#.into()
        }]
    );
    assert_eq!(
        reply.usage,
        Usage {
            input: 100,
            cached_input: 64,
            cache_write: 0,
            cache_write_long: 0,
            output: 7
        }
    );
}

#[test]
fn whole_response_failure_and_garbage() {
    let failed = parse_response(
        &source(),
        &json!({"status": "failed", "error": {"message": "boom"}, "output": []}),
        LABEL,
    );
    assert!(
        matches!(failed, Err(ModelError::Failed(ref m)) if m == "boom"),
        "{failed:?}"
    );
    let error = parse_response(&source(), &json!({"error": {"message": "bad key"}}), LABEL);
    assert!(
        matches!(error, Err(ModelError::Failed(ref m)) if m == "bad key"),
        "{error:?}"
    );
    let missing = parse_response(&source(), &json!({"status": "completed"}), LABEL);
    assert!(
        matches!(missing, Err(ModelError::Garbage(_))),
        "{missing:?}"
    );
    let wrong = parse_response(&source(), &json!({"output": "text"}), LABEL);
    assert!(matches!(wrong, Err(ModelError::Garbage(_))), "{wrong:?}");
}

#[test]
fn a_too_long_input_in_a_failed_response_is_a_context_length_error() {
    let (reply, _) = assemble(&[event(
        "response.failed",
        json!({"type":"response.failed","response":{"status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."},"output":[]}}),
    )]);
    assert!(
        matches!(reply, Err(ModelError::ContextLength { .. })),
        "{reply:?}"
    );
}

#[test]
fn encrypted_reasoning_is_carried_without_its_id() {
    let reasoning = json!({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA","status":"completed"});
    let (reply, _) = assemble(&[
        event(
            "response.output_item.done",
            json!({"type":"response.output_item.done","item": reasoning}),
        ),
        event(
            "response.output_item.done",
            json!({"type":"response.output_item.done","item":{"type":"reasoning","id":"rs_2","summary":[]}}),
        ),
        event(
            "response.output_item.done",
            json!({"type":"response.output_item.done","item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"date","arguments":"{}"}}),
        ),
        completed(json!({"input_tokens":5,"output_tokens":1})),
    ]);
    let reply = reply.unwrap();
    assert_eq!(
        reply.carry,
        Carry {
            origin: LABEL.into(),
            items: vec![json!({"type":"reasoning","summary":[],"encrypted_content":"gAAA"})],
        }
    );

    // The next request re-sends it before the calls it led to; another
    // model's carry is left out.
    let mut request = request();
    request.items[1] = Item::Assistant {
        text: None,
        tool_calls: reply.tool_calls.clone(),
        carry: reply.carry.clone(),
    };
    let config = config("effort = \"low\"\n");
    let body = serde_json::to_value(request_body(&config, &request, LABEL, true)).unwrap();
    assert_eq!(
        body["input"][1],
        json!({"type":"reasoning","summary":[],"encrypted_content":"gAAA"})
    );
    assert_eq!(body["input"][2]["type"], "function_call");
    let other =
        serde_json::to_value(request_body(&config, &request, "openai/other", true)).unwrap();
    assert_eq!(other["input"][1]["type"], "function_call");
}

#[test]
fn whole_response_carries_its_encrypted_reasoning() {
    let value = json!({"status":"completed","output":[
        {"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gBBB"},
        {"type":"message","content":[{"type":"output_text","text":"hi"}]}
    ]});
    let reply = parse_response(&source(), &value, LABEL).unwrap();
    assert_eq!(reply.text, "hi");
    assert_eq!(
        reply.carry.items,
        vec![json!({"type":"reasoning","summary":[],"encrypted_content":"gBBB"})]
    );
}
