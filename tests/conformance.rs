//! Conformance: every request body hearth sends to a model provider,
//! checked against the provider's documented request shape
//! (`tests/conformance_bridges.rs` does the same for Telegram and WhatsApp). Each API's shape is written down
//! here once, from its documentation (named above it, read 2026-12-01), as a
//! [`schema`](hearth_tests::schema): required fields, types, allowed values,
//! and no field the documentation does not name. Real conversations through
//! a real `hearthd` (an image, a tool call and its result, a second turn
//! that re-sends the first, thinking or reasoning effort) produce the
//! bodies, which the fakes capture.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

/// Reasoning carried within a chain (`conformance/reasoning.rs`).
#[path = "conformance/reasoning.rs"]
mod reasoning;

use hearth_protocol::image::encode;
use hearth_protocol::{ClientFrame, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Recorded, Reply};
use hearth_tests::harness::{png_head, TestHome};
use hearth_tests::schema::*;
use serde_json::Value;

fn cache_control() -> Schema {
    object(vec![
        req("type", exactly("ephemeral")),
        opt("ttl", one_of(&["5m", "1h"])),
    ])
}

/// OpenAI Chat Completions, `POST /v1/chat/completions`: the API reference
/// "Create chat completion" and the official Python SDK's
/// `types/chat/completion_create_params.py` and message param types.
fn chat_completions() -> Schema {
    let text_part = || ("text", vec![req("text", string())]);
    let text_content = || any_of(vec![string(), array1(tagged("type", vec![text_part()]))]);
    let image_part = (
        "image_url",
        vec![req(
            "image_url",
            object(vec![
                req("url", nonempty()),
                opt("detail", one_of(&["auto", "low", "high"])),
            ]),
        )],
    );
    let tool_call = object(vec![
        req("id", nonempty()),
        req("type", exactly("function")),
        req(
            "function",
            object(vec![req("name", nonempty()), req("arguments", string())]),
        ),
    ]);
    let message = tagged(
        "role",
        vec![
            (
                "system",
                vec![req("content", text_content()), opt("name", string())],
            ),
            (
                "developer",
                vec![req("content", text_content()), opt("name", string())],
            ),
            (
                "user",
                vec![
                    req(
                        "content",
                        any_of(vec![
                            string(),
                            array1(tagged("type", vec![text_part(), image_part])),
                        ]),
                    ),
                    opt("name", string()),
                ],
            ),
            (
                "assistant",
                vec![
                    opt("content", any_of(vec![null(), text_content()])),
                    opt("refusal", any_of(vec![null(), string()])),
                    opt("tool_calls", array1(tool_call)),
                    opt("name", string()),
                ],
            ),
            (
                "tool",
                vec![
                    req("content", text_content()),
                    req("tool_call_id", nonempty()),
                ],
            ),
        ],
    );
    let tool = object(vec![
        req("type", exactly("function")),
        req(
            "function",
            object(vec![
                req("name", Schema::Str { min: 1, max: 64 }),
                opt("description", string()),
                opt("parameters", Schema::Any),
                opt("strict", boolean()),
            ]),
        ),
    ]);
    object(vec![
        req("model", nonempty()),
        req("messages", array1(message)),
        opt("stream", boolean()),
        opt(
            "stream_options",
            object(vec![
                opt("include_usage", boolean()),
                opt("include_obfuscation", boolean()),
            ]),
        ),
        opt("tools", array(tool)),
        opt("tool_choice", Schema::Any),
        opt("parallel_tool_calls", boolean()),
        opt("max_completion_tokens", int(1)),
        opt("max_tokens", int(1)),
        opt(
            "reasoning_effort",
            one_of(&["none", "minimal", "low", "medium", "high", "xhigh"]),
        ),
        opt("prompt_cache_key", string()),
        opt("prompt_cache_retention", one_of(&["in_memory", "24h"])),
        opt("store", boolean()),
        opt("user", string()),
        opt("temperature", Schema::Any),
        opt("service_tier", string()),
    ])
}

/// OpenAI Responses, `POST /v1/responses`: the API reference "Create a
/// model response" and the Python SDK's `types/responses/
/// response_create_params.py`, `easy_input_message_param.py`,
/// `response_input_item_param.py`, `function_tool_param.py` (`name`,
/// `parameters`, `strict`, `type` required; `input_image.detail` required).
fn responses() -> Schema {
    let part = tagged(
        "type",
        vec![
            ("input_text", vec![req("text", string())]),
            (
                "input_image",
                vec![
                    req("detail", one_of(&["auto", "low", "high", "original"])),
                    opt("image_url", nonempty()),
                    opt("file_id", nonempty()),
                ],
            ),
            (
                "output_text",
                vec![
                    req("text", string()),
                    req("annotations", array(Schema::Any)),
                    opt("logprobs", Schema::Any),
                ],
            ),
            ("refusal", vec![req("refusal", string())]),
        ],
    );
    let item = tagged(
        "type",
        vec![
            (
                "message",
                vec![
                    req(
                        "role",
                        one_of(&["user", "assistant", "system", "developer"]),
                    ),
                    req("content", any_of(vec![string(), array1(part)])),
                    opt("phase", one_of(&["commentary", "final_answer"])),
                    opt("id", nonempty()),
                    opt(
                        "status",
                        one_of(&["in_progress", "completed", "incomplete"]),
                    ),
                ],
            ),
            (
                "function_call",
                vec![
                    req("call_id", nonempty()),
                    req("name", nonempty()),
                    req("arguments", string()),
                    opt("id", nonempty()),
                    opt(
                        "status",
                        one_of(&["in_progress", "completed", "incomplete"]),
                    ),
                ],
            ),
            (
                "function_call_output",
                vec![
                    req("call_id", nonempty()),
                    req("output", any_of(vec![string(), array(Schema::Any)])),
                    opt("id", nonempty()),
                    opt(
                        "status",
                        one_of(&["in_progress", "completed", "incomplete"]),
                    ),
                ],
            ),
            (
                "reasoning",
                vec![
                    req("summary", array(Schema::Any)),
                    opt("id", nonempty()),
                    opt("encrypted_content", string()),
                    opt("content", array(Schema::Any)),
                    opt("status", string()),
                ],
            ),
        ],
    );
    let tool = tagged(
        "type",
        vec![(
            "function",
            vec![
                req("name", Schema::Str { min: 1, max: 64 }),
                req("parameters", Schema::Any),
                req("strict", boolean()),
                opt("description", string()),
            ],
        )],
    );
    object(vec![
        req("model", nonempty()),
        req("input", any_of(vec![string(), array(item)])),
        opt("instructions", string()),
        opt("tools", array(tool)),
        opt("tool_choice", Schema::Any),
        opt("parallel_tool_calls", boolean()),
        opt(
            "reasoning",
            object(vec![
                opt(
                    "effort",
                    one_of(&["none", "minimal", "low", "medium", "high", "xhigh", "max"]),
                ),
                opt("summary", one_of(&["auto", "concise", "detailed"])),
            ]),
        ),
        opt("store", boolean()),
        opt(
            "include",
            array(one_of(&[
                "reasoning.encrypted_content",
                "message.input_image.image_url",
                "message.output_text.logprobs",
                "file_search_call.results",
                "web_search_call.action.sources",
                "code_interpreter_call.outputs",
                "computer_call_output.output.image_url",
            ])),
        ),
        opt("prompt_cache_key", string()),
        opt("prompt_cache_retention", one_of(&["in_memory", "24h"])),
        opt("max_output_tokens", int(1)),
        opt("stream", boolean()),
        opt(
            "stream_options",
            object(vec![opt("include_obfuscation", boolean())]),
        ),
        opt("truncation", one_of(&["auto", "disabled"])),
        opt("previous_response_id", nonempty()),
        opt("temperature", Schema::Any),
        opt("service_tier", string()),
        opt("user", string()),
        opt("safety_identifier", string()),
    ])
}

/// Anthropic Messages, `POST /v1/messages`: the API reference "Messages"
/// and the Python SDK's `types/message_create_params.py`,
/// `text_block_param.py`, `image_block_param.py`, `tool_use_block_param.py`,
/// `tool_result_block_param.py`, `tool_param.py`, `thinking_config_*`,
/// `cache_control_ephemeral_param.py` (text blocks may not be empty).
fn anthropic_messages() -> Schema {
    let text_block = || {
        (
            "text",
            vec![
                req("text", nonempty()),
                opt("cache_control", cache_control()),
                opt("citations", Schema::Any),
            ],
        )
    };
    let image_block = || {
        (
            "image",
            vec![
                req(
                    "source",
                    tagged(
                        "type",
                        vec![
                            (
                                "base64",
                                vec![
                                    req(
                                        "media_type",
                                        one_of(&[
                                            "image/jpeg",
                                            "image/png",
                                            "image/gif",
                                            "image/webp",
                                        ]),
                                    ),
                                    req("data", nonempty()),
                                ],
                            ),
                            ("url", vec![req("url", nonempty())]),
                        ],
                    ),
                ),
                opt("cache_control", cache_control()),
            ],
        )
    };
    let block = tagged(
        "type",
        vec![
            text_block(),
            image_block(),
            (
                "tool_use",
                vec![
                    req("id", nonempty()),
                    req("name", nonempty()),
                    req("input", object_any()),
                    opt("cache_control", cache_control()),
                ],
            ),
            (
                "tool_result",
                vec![
                    req("tool_use_id", nonempty()),
                    opt(
                        "content",
                        any_of(vec![
                            string(),
                            array(tagged("type", vec![text_block(), image_block()])),
                        ]),
                    ),
                    opt("is_error", boolean()),
                    opt("cache_control", cache_control()),
                ],
            ),
            (
                "thinking",
                vec![req("thinking", string()), req("signature", nonempty())],
            ),
            ("redacted_thinking", vec![req("data", nonempty())]),
        ],
    );
    let message = object(vec![
        req("role", one_of(&["user", "assistant"])),
        req("content", any_of(vec![nonempty(), array1(block)])),
    ]);
    let tool = object(vec![
        req("name", Schema::Str { min: 1, max: 128 }),
        opt("description", string()),
        req("input_schema", object_any()),
        opt("cache_control", cache_control()),
        opt("type", exactly("custom")),
        opt("strict", boolean()),
    ]);
    object(vec![
        req("model", nonempty()),
        req("max_tokens", int(1)),
        req("messages", array1(message)),
        opt(
            "system",
            any_of(vec![string(), array(tagged("type", vec![text_block()]))]),
        ),
        opt("tools", array(tool)),
        opt("tool_choice", Schema::Any),
        opt("stream", boolean()),
        opt(
            "thinking",
            tagged(
                "type",
                vec![
                    ("enabled", vec![req("budget_tokens", int(1024))]),
                    ("disabled", vec![]),
                    ("adaptive", vec![]),
                ],
            ),
        ),
        opt(
            "output_config",
            object(vec![opt(
                "effort",
                one_of(&["low", "medium", "high", "xhigh", "max"]),
            )]),
        ),
        opt("metadata", object(vec![opt("user_id", string())])),
        opt("temperature", Schema::Any),
        opt("top_p", Schema::Any),
        opt("top_k", Schema::Any),
        opt("stop_sequences", array(string())),
        opt("service_tier", one_of(&["auto", "standard_only"])),
        opt("cache_control", cache_control()),
    ])
}

/// Any JSON object (a tool's input, a JSON Schema): its fields are free.
fn object_any() -> Schema {
    Schema::AnyObject
}

/// A conversation that covers what a request can hold: an image with
/// words, a tool call and its result, and a second turn re-sending the
/// first; every request the fake model took.
async fn conversation(provider: &str, model_name: &str, extra: &str) -> Vec<Recorded> {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"{model_name}\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n{extra}",
        model.base_url()
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let image = match client
        .request(ClientFrame::ImagePut {
            media_type: "image/png".into(),
            data_base64: encode(&png_head(64, 48)),
        })
        .await
    {
        ServerFrame::ImageStored(image) => image,
        other => panic!("expected image_stored, got {other:?}"),
    };
    model.push(Reply::ToolCalls {
        text: Some("Let me look.".into()),
        calls: vec![("date".into(), "{}".into())],
    });
    model.push(Reply::text("It is a picture."));
    let id = client
        .submit_acked("what is this?", vec![image.sha256.clone()], Vec::new())
        .await;
    client.reply_to(id).await;
    model.push(Reply::text("Still a picture."));
    let (id, _) = client.submit("and now?", "terminal", None).await;
    client.reply_to(id).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "{provider}: a tool round and two turns");
    requests
}

#[tokio::test]
async fn openai_chat_completions_bodies_are_as_documented() {
    for extra in ["stream = true\neffort = \"low\"\n", "stream = false\n"] {
        let requests = conversation("openai-chat", "gpt-5-mini", extra).await;
        for request in &requests {
            assert_eq!(request.path, "/v1/chat/completions");
            assert!(request.headers["authorization"].starts_with("Bearer "));
        }
        let bodies: Vec<&Value> = requests.iter().map(|r| &r.body).collect();
        assert_conform("chat completions", &chat_completions(), &bodies);
    }
}

#[tokio::test]
async fn openai_responses_bodies_are_as_documented() {
    for extra in ["stream = true\neffort = \"low\"\n", "stream = false\n"] {
        let requests = conversation("openai", "gpt-5-mini", extra).await;
        for request in &requests {
            assert_eq!(request.path, "/v1/responses");
            assert!(request.headers["authorization"].starts_with("Bearer "));
        }
        let bodies: Vec<&Value> = requests.iter().map(|r| &r.body).collect();
        assert_conform("responses", &responses(), &bodies);
    }
}

#[tokio::test]
async fn anthropic_messages_bodies_are_as_documented() {
    for (model, extra) in [
        (
            "claude-sonnet-4-5",
            "stream = true\neffort = \"medium\"\nmax_tokens = 8192\n",
        ),
        ("claude-opus-4-6", "stream = false\neffort = \"high\"\n"),
        ("claude-haiku-4-5", "stream = true\n"),
    ] {
        let requests = conversation("anthropic", model, extra).await;
        for request in &requests {
            assert_eq!(request.path, "/v1/messages");
            assert_eq!(request.headers["anthropic-version"], "2023-06-01");
            assert!(request.headers.contains_key("x-api-key"));
            // Extended thinking's budget must stay below max_tokens.
            if let Some(budget) = request.body["thinking"]["budget_tokens"].as_i64() {
                let max = request.body["max_tokens"].as_i64().unwrap();
                assert!(budget < max, "{model}: budget {budget} >= max_tokens {max}");
            }
            // At most four cache breakpoints in a request.
            let marks = request
                .body
                .to_string()
                .matches("\"cache_control\"")
                .count();
            assert!(marks <= 4, "{model}: {marks} cache_control marks");
        }
        let bodies: Vec<&Value> = requests.iter().map(|r| &r.body).collect();
        assert_conform(
            &format!("messages ({model})"),
            &anthropic_messages(),
            &bodies,
        );
    }
}
