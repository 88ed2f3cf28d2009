//! Tests of `chat.rs`: the exact request bytes, and canned whole and streamed answers.

use super::*;
use crate::model::config::test_file::Config;
use crate::model::{Carry, ToolSpec};

fn source() -> Source<'static> {
    Source {
        provider: "openai-chat",
        model: "gpt-test",
        window: None,
        key_hint: "check the key".into(),
    }
}
use serde_json::json;
use std::path::Path;

fn config(extra: &str) -> ModelConfig {
    let text = format!("[model]\nprovider = \"openai-chat\"\nmodel = \"gpt-test\"\n{extra}");
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
                text: None,
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

/// Feeds canned event data and returns the reply and the streamed text.
fn assemble(events: &[&str]) -> (Result<Response, ModelError>, Vec<String>) {
    let mut assembly = StreamAssembly::default();
    let mut pieces = Vec::new();
    let mut on_text = |text: &str| pieces.push(text.to_string());
    for data in events {
        match assembly.take(&source(), data, &mut on_text) {
            Ok(Flow::More) => {}
            Ok(Flow::Stop) => break,
            Err(err) => return (Err(err), pieces),
        }
    }
    (assembly.finish(), pieces)
}

#[test]
fn streaming_request_serializes_exactly() {
    let config = config("effort = \"low\"\n");
    let request = request();
    let body = serde_json::to_string(&request_body(&config, &request, true)).unwrap();
    let expected = concat!(
        r#"{"model":"gpt-test","messages":["#,
        r#"{"role":"system","content":"Be brief."},"#,
        r#"{"role":"user","content":"list files"},"#,
        r#"{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"shell","arguments":"{\"command\":\"ls\"}"}}]},"#,
        r#"{"role":"tool","tool_call_id":"call_1","content":"a.txt"}],"#,
        r#""tools":[{"type":"function","function":{"name":"shell","description":"Run a command.","#,
        r#""parameters":{"properties":{"command":{"type":"string"}},"required":["command"],"type":"object"}}}],"#,
        r#""reasoning_effort":"low","prompt_cache_key":"agent-hearth","#,
        r#""stream":true,"stream_options":{"include_usage":true}}"#
    );
    assert_eq!(body, expected);
}

/// A user item with one image, as every provider's image test sends it.
fn with_image() -> Request {
    Request {
        instructions: String::new(),
        tools: vec![],
        items: vec![Item::User {
            text: "what is this?".into(),
            images: vec![crate::model::Image {
                media_type: "image/png".into(),
                data_base64: "iVBORw0K".into(),
            }],
        }],
        cache_key: None,
        cache_marks: vec![0],
    }
}

#[test]
fn images_go_as_image_url_parts_after_the_text() {
    let body = serde_json::to_string(&request_body(&config(""), &with_image(), false)).unwrap();
    assert_eq!(
        body,
        concat!(
            r#"{"model":"gpt-test","messages":[{"role":"user","content":["#,
            r#"{"type":"text","text":"what is this?"},"#,
            r#"{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K"}}]}],"#,
            r#""stream":false}"#
        )
    );
}

#[test]
fn plain_request_omits_what_is_unset() {
    let config = config("");
    let request = Request {
        instructions: String::new(),
        tools: vec![],
        items: vec![
            Item::user("hi"),
            Item::Assistant {
                carry: Carry::default(),
                text: Some("hello".into()),
                tool_calls: vec![],
            },
        ],
        cache_key: None,
        cache_marks: vec![],
    };
    let body = serde_json::to_string(&request_body(&config, &request, false)).unwrap();
    assert_eq!(
        body,
        r#"{"model":"gpt-test","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}],"stream":false}"#
    );
}

#[test]
fn streamed_text_and_fragmented_tool_calls_assemble() {
    let (reply, pieces) = assemble(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Let me "},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"look."},"finish_reason":null}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"shell","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"comm"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"date","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"cache_write_tokens":64}}}"#,
        "[DONE]",
    ]);
    let reply = reply.unwrap();
    assert_eq!(pieces, vec!["Let me ", "look."]);
    assert_eq!(reply.text, "Let me look.");
    assert_eq!(
        reply.tool_calls,
        vec![
            ToolCall {
                id: "call_a".into(),
                name: "shell".into(),
                arguments: r#"{"command":"ls"}"#.into()
            },
            ToolCall {
                id: "call_b".into(),
                name: "date".into(),
                arguments: "{}".into()
            },
        ]
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
fn calls_without_ids_get_synthesized_ids() {
    let (reply, _) = assemble(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"shell","arguments":{"command":"ls"}}},{"index":1,"function":{"name":"date","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
        "[DONE]",
    ]);
    let calls = reply.unwrap().tool_calls;
    assert_eq!(calls[0].id, "call_0");
    assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
    assert_eq!(calls[1].id, "call_1");
}

#[test]
fn calls_reusing_index_zero_with_new_ids_stay_apart() {
    let (reply, _) = assemble(&[
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_x","function":{"name":"a","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_y","function":{"name":"b","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
    ]);
    let names: Vec<String> = reply
        .unwrap()
        .tool_calls
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, vec!["a", "b"]);
}

#[test]
fn stream_that_finished_without_done_is_whole() {
    let (reply, _) =
        assemble(&[r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}"#]);
    assert_eq!(reply.unwrap().text, "hi");
}

#[test]
fn stream_cut_before_finishing_fails() {
    let (reply, pieces) = assemble(&[r#"{"choices":[{"delta":{"content":"hi"}}]}"#]);
    assert_eq!(pieces, vec!["hi"]);
    assert!(matches!(reply, Err(ModelError::Cut)), "{reply:?}");
}

#[test]
fn error_object_in_stream_fails_with_its_message() {
    let (reply, _) = assemble(&[
        r#"{"choices":[{"delta":{"content":"hi"}}]}"#,
        r#"{"error":{"message":"Provider returned error","code":502}}"#,
    ]);
    // OpenRouter's numeric code 502 says the failure may pass.
    match reply {
        Err(ModelError::Unavailable { message, .. }) => {
            assert_eq!(message, "Provider returned error")
        }
        other => panic!("expected a passing failure, got {other:?}"),
    }
}

#[test]
fn garbage_chunk_is_garbage() {
    let (reply, _) = assemble(&["{not json"]);
    assert!(matches!(reply, Err(ModelError::Garbage(_))), "{reply:?}");
    let (reply, _) = assemble(&[r#"{"choices":"nope"}"#]);
    assert!(matches!(reply, Err(ModelError::Garbage(_))), "{reply:?}");
}

#[test]
fn whole_completion_parses() {
    let value = json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":\"ls\"}"}}]
            },
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    });
    let reply = parse_completion(&source(), &value).unwrap();
    assert_eq!(reply.text, "");
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall {
            id: "call_9".into(),
            name: "shell".into(),
            arguments: r#"{"command":"ls"}"#.into()
        }]
    );
    assert_eq!(
        reply.usage,
        Usage {
            input: 10,
            cached_input: 0,
            cache_write: 0,
            cache_write_long: 0,
            output: 5
        }
    );
}

#[test]
fn whole_completion_text_and_missing_ids() {
    let value = json!({
        "choices": [{"message": {"content": "done", "tool_calls": [{"function": {"name": "date", "arguments": "{}"}}]}}]
    });
    let reply = parse_completion(&source(), &value).unwrap();
    assert_eq!(reply.text, "done");
    assert_eq!(reply.tool_calls[0].id, "call_0");
    assert_eq!(reply.usage, Usage::default());
}

#[test]
fn whole_completion_error_and_garbage() {
    let failed = parse_completion(&source(), &json!({"error": {"message": "overloaded"}}));
    assert!(
        matches!(failed, Err(ModelError::Failed(ref m)) if m == "overloaded"),
        "{failed:?}"
    );
    let empty = parse_completion(&source(), &json!({"choices": []}));
    assert!(matches!(empty, Err(ModelError::Garbage(_))), "{empty:?}");
    let wrong = parse_completion(&source(), &json!({"hello": 1}));
    assert!(matches!(wrong, Err(ModelError::Garbage(_))), "{wrong:?}");
}

/// A refusal comes in `message.refusal` (or `delta.refusal`) with no
/// content: it is the reply, marked as one, never an empty answer.
#[test]
fn a_refusal_is_the_reply_whole_or_streamed() {
    let value = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": null, "refusal": "I can't help with that."}}]
    });
    let reply = parse_completion(&source(), &value).unwrap();
    assert_eq!(reply.text, "I can't help with that.");
    assert_eq!(reply.ending, Ending::Refused);
    let (reply, pieces) = assemble(&[
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":"I can't "}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"refusal":"help with that."}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        "[DONE]",
    ]);
    let reply = reply.unwrap();
    assert_eq!(reply.text, "I can't help with that.");
    assert_eq!(reply.ending, Ending::Refused);
    assert_eq!(pieces.concat(), "I can't help with that.");
}

#[test]
fn length_and_content_filter_finishes_are_cut_answers() {
    let (reply, _) = assemble(&[
        r#"{"choices":[{"index":0,"delta":{"content":"Half an ans"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
        "[DONE]",
    ]);
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Half an ans");
    assert_eq!(reply.ending, Ending::Cut(Cut::MaxTokens));
    let value = json!({"choices": [{"index": 0, "finish_reason": "content_filter",
                                    "message": {"role": "assistant", "content": "Some"}}]});
    let reply = parse_completion(&source(), &value).unwrap();
    assert_eq!(reply.ending, Ending::Cut(Cut::ContentFilter));
}

/// The `prompt_cache_retention` a request names, for a `[model]` of `lines`.
fn retention(lines: &str) -> Option<String> {
    let text = format!("[model]\nprovider = \"openai-chat\"\n{lines}");
    let config = Config::parse(Path::new("config.toml"), &text)
        .ok()
        .and_then(|config| config.model)
        .expect("test config parses");
    let body = serde_json::to_value(request_body(&config, &request(), true)).unwrap();
    body.get("prompt_cache_retention")
        .and_then(serde_json::Value::as_str)
        .map(str::to_string)
}

#[test]
fn another_server_gets_an_output_limit_openai_only_the_configured_one() {
    let limits = |lines: &str| {
        let body = serde_json::to_value(request_body(&config(lines), &request(), true)).unwrap();
        (
            body.get("max_completion_tokens")
                .and_then(serde_json::Value::as_u64),
            body.get("max_tokens").and_then(serde_json::Value::as_u64),
        )
    };
    // OpenAI's own API: only what the config sets, under OpenAI's name.
    assert_eq!(limits(""), (None, None));
    assert_eq!(limits("max_tokens = 2000\n"), (Some(2000), None));
    // A local server: `max_tokens`, 8,192 when the config sets none.
    let local = "base_url = \"http://127.0.0.1:8080/v1\"\n";
    assert_eq!(limits(local), (None, Some(8192)));
    assert_eq!(
        limits(&format!("{local}max_tokens = 512\n")),
        (None, Some(512))
    );
    // A small window keeps three quarters of itself for the input.
    assert_eq!(
        limits(&format!("{local}context_window = 8192\n")),
        (None, Some(2048))
    );
}

#[test]
fn extended_cache_retention_is_asked_where_openai_offers_it() {
    // OpenAI's own API, a model with extended retention: a day.
    assert_eq!(retention("model = \"gpt-5.1\"\n").as_deref(), Some("24h"));
    assert_eq!(retention("model = \"gpt-4.1\"\n").as_deref(), Some("24h"));
    // A model without it, or another server: nothing is named.
    assert_eq!(retention("model = \"gpt-5-mini\"\n"), None);
    assert_eq!(
        retention("model = \"gpt-5.1\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n"),
        None
    );
    // The config decides when it says.
    assert_eq!(
        retention("model = \"gpt-5.1\"\ncache_retention = \"in_memory\"\n").as_deref(),
        Some("in_memory")
    );
    assert_eq!(
        retention("model = \"gpt-5.1\"\ncache_retention = \"off\"\n"),
        None
    );
    assert_eq!(
        retention("model = \"llama\"\nbase_url = \"http://127.0.0.1:8080/v1\"\ncache_retention = \"24h\"\n")
            .as_deref(),
        Some("24h")
    );
}
