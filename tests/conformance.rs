//! Conformance: every request body hearth sends, checked against the
//! providers' documented request shapes. Each API's shape is written down
//! here once, from its documentation (named above it, read 2026-12-01), as a
//! [`schema`](hearth_tests::schema): required fields, types, allowed values,
//! and no field the documentation does not name. Real conversations through
//! a real `hearthd` (an image, a tool call and its result, a second turn
//! that re-sends the first, thinking or reasoning effort) produce the
//! bodies, which the fakes capture.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::image::encode;
use hearth_protocol::{ClientFrame, EventKind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_graph::{FakeGraph, ACCESS_TOKEN, PHONE_NUMBER_ID};
use hearth_tests::fake_model::{FakeModel, Recorded, Reply};
use hearth_tests::fake_telegram::{FakeTelegram, Person, TOKEN};
use hearth_tests::harness::TestHome;
use hearth_tests::meta_webhook::{delivery, text, Sender, Webhook, APP_SECRET, VERIFY_TOKEN};
use hearth_tests::schema::*;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;

fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 2, 0, 0, 0]);
    bytes
}

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
                vec![req("thinking", string()), req("signature", string())],
            ),
            ("redacted_thinking", vec![req("data", string())]),
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

/// Fails naming every problem of every body.
fn assert_conform(what: &str, schema: &Schema, bodies: &[&Value]) {
    assert!(!bodies.is_empty(), "{what}: no bodies were captured");
    let problems: Vec<String> = bodies
        .iter()
        .enumerate()
        .flat_map(|(n, body)| {
            check(schema, body)
                .into_iter()
                .map(move |problem| format!("{what} request {n}: {problem}"))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The description bites: a field no documentation names is refused.
    let mut extra = bodies[0].clone();
    extra["not_a_documented_field"] = Value::Bool(true);
    assert!(
        !check(schema, &extra).is_empty(),
        "{what}: an unknown field passed"
    );
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
            data_base64: encode(&png(64, 48)),
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
    let ack = client
        .request(ClientFrame::Submit {
            text: "what is this?".into(),
            source: "terminal".into(),
            key: None,
            images: vec![image.sha256.clone()],
        })
        .await;
    let ServerFrame::Ack { id, .. } = ack else {
        panic!("expected an ack, got {ack:?}");
    };
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

/// The Telegram Bot API, core.telegram.org/bots/api (Bot API 10.1): each
/// method's parameters as its table lists them.
fn telegram_method(method: &str) -> Option<Schema> {
    let chat_id = || any_of(vec![int(i64::MIN), nonempty()]);
    let common = || {
        vec![
            opt("business_connection_id", string()),
            opt("message_thread_id", int(1)),
            opt("disable_notification", boolean()),
            opt("protect_content", boolean()),
            opt("allow_paid_broadcast", boolean()),
            opt("message_effect_id", string()),
            opt("reply_parameters", Schema::Any),
            opt("reply_markup", Schema::Any),
        ]
    };
    let parse_mode = || one_of(&["HTML", "MarkdownV2", "Markdown"]);
    let schema = match method {
        "getUpdates" => object(vec![
            opt("offset", int(i64::MIN)),
            opt("limit", Schema::Int { min: 1 }),
            opt("timeout", int(0)),
            opt("allowed_updates", array(string())),
        ]),
        "sendMessage" => {
            let mut fields = vec![
                req("chat_id", chat_id()),
                req("text", nonempty()),
                opt("parse_mode", parse_mode()),
                opt("entities", array(Schema::Any)),
                opt("link_preview_options", Schema::Any),
            ];
            fields.extend(common());
            object(fields)
        }
        // Multipart form fields arrive as text; the file as its part.
        "sendPhoto" => {
            let mut fields = vec![
                req("chat_id", nonempty()),
                req(
                    "photo",
                    any_of(vec![
                        nonempty(),
                        object(vec![req("content_type", nonempty()), req("bytes", int(1))]),
                    ]),
                ),
                opt("caption", Schema::Str { min: 0, max: 1024 }),
                opt("parse_mode", parse_mode()),
                opt("caption_entities", string()),
                opt("show_caption_above_media", string()),
                opt("has_spoiler", string()),
            ];
            fields.extend(common());
            object(fields)
        }
        "sendChatAction" => object(vec![
            req("chat_id", chat_id()),
            req(
                "action",
                one_of(&[
                    "typing",
                    "upload_photo",
                    "record_video",
                    "upload_video",
                    "record_voice",
                    "upload_voice",
                    "upload_document",
                    "choose_sticker",
                    "find_location",
                    "record_video_note",
                    "upload_video_note",
                ]),
            ),
            opt("message_thread_id", int(1)),
            opt("business_connection_id", string()),
        ]),
        "answerCallbackQuery" => object(vec![
            req("callback_query_id", nonempty()),
            opt("text", Schema::Str { min: 0, max: 200 }),
            opt("show_alert", boolean()),
            opt("url", string()),
            opt("cache_time", int(0)),
        ]),
        "getFile" => object(vec![req("file_id", nonempty())]),
        "deleteWebhook" => object(vec![opt("drop_pending_updates", boolean())]),
        _ => return None,
    };
    Some(schema)
}

const OWNER: Person = Person {
    id: 4242,
    first_name: "Ada",
    username: Some("ada"),
};

#[tokio::test]
async fn telegram_requests_are_as_documented() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n[telegram]\n\
         token_env = \"HEARTH_TEST_TELEGRAM_TOKEN\"\nallow = [{}]\napi_base = \"{}\"\n",
        model.base_url(),
        OWNER.id,
        telegram.api_base()
    ));
    let secrets = home.path().join("secrets.env");
    std::fs::write(&secrets, format!("HEARTH_TEST_TELEGRAM_TOKEN={TOKEN}\n")).unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let _daemon = home.start();
    let mut watcher = home.connect("watcher", None).await;

    // A photo in, a reply out, an image shown out as a photo.
    model.push(Reply::text("A fine *cat*."));
    telegram.send_photo(&OWNER, Some("my cat"));
    watcher.wait_for(|e| e.kind == EventKind::Reply).await;
    std::fs::write(home.path().join("agents/hearth/work/plot.png"), png(8, 8)).unwrap();
    model.push(Reply::tool_call("show_image", r#"{"path": "plot.png"}"#));
    model.push(Reply::text("Here is the plot."));
    telegram.write(&OWNER, "plot it");
    let calls = telegram
        .wait_until("the photo and the reply", |calls| {
            !calls.photos.is_empty() && calls.sent.len() == 2
        })
        .await;
    for needed in ["getUpdates", "sendMessage", "sendPhoto", "getFile"] {
        assert!(
            calls.requests.iter().any(|(method, _)| method == needed),
            "no {needed} in {:?}",
            calls.requests.iter().map(|(m, _)| m).collect::<Vec<_>>()
        );
    }
    for (method, body) in &calls.requests {
        let schema = telegram_method(method)
            .unwrap_or_else(|| panic!("{method}: not described here; add it from the Bot API"));
        // A method without parameters may be called with no body.
        let empty = serde_json::json!({});
        let body = if body.is_null() { &empty } else { body };
        assert_conform(method, &schema, &[body]);
    }
}

/// The WhatsApp Cloud API, `POST /{phone-number-id}/messages`: the
/// reference "Messages" (text, image, document objects; `to`, or
/// `recipient` for a business-scoped user id) and "Mark messages as read"
/// with typing indicators.
fn whatsapp_messages() -> Schema {
    let media = || {
        object(vec![
            opt("id", nonempty()),
            opt("link", nonempty()),
            opt("caption", Schema::Str { min: 0, max: 1024 }),
            opt("filename", nonempty()),
        ])
    };
    any_of(vec![
        object(vec![
            req("messaging_product", exactly("whatsapp")),
            opt("recipient_type", exactly("individual")),
            opt("to", nonempty()),
            opt("recipient", nonempty()),
            req("type", one_of(&["text", "image", "document"])),
            opt(
                "text",
                object(vec![
                    req("body", Schema::Str { min: 1, max: 4096 }),
                    opt("preview_url", boolean()),
                ]),
            ),
            opt("image", media()),
            opt("document", media()),
            opt("context", object(vec![req("message_id", nonempty())])),
        ]),
        object(vec![
            req("messaging_product", exactly("whatsapp")),
            req("status", exactly("read")),
            req("message_id", nonempty()),
            opt(
                "typing_indicator",
                object(vec![req("type", exactly("text"))]),
            ),
        ]),
    ])
}

#[tokio::test]
async fn whatsapp_requests_are_as_documented() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n[whatsapp]\nlisten = \"127.0.0.1:0\"\n\
         verify_token_env = \"HEARTH_TEST_WA_VERIFY\"\napp_secret_env = \"HEARTH_TEST_WA_SECRET\"\n\
         access_token_env = \"HEARTH_TEST_WA_TOKEN\"\nphone_number_id = \"{PHONE_NUMBER_ID}\"\n\
         graph_base = \"{}\"\nallow = [\"+15551234567\"]\n",
        model.base_url(),
        graph.graph_base()
    ));
    let secrets = home.path().join("secrets.env");
    std::fs::write(
        &secrets,
        format!("HEARTH_TEST_WA_VERIFY={VERIFY_TOKEN}\nHEARTH_TEST_WA_SECRET={APP_SECRET}\nHEARTH_TEST_WA_TOKEN={ACCESS_TOKEN}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;
    let owner = Sender {
        wa_id: "15551234567",
        name: "Ada",
    };

    std::fs::write(home.path().join("agents/hearth/work/map.png"), png(5, 5)).unwrap();
    model.push(Reply::tool_call("show_image", r#"{"path": "map.png"}"#));
    model.push(Reply::text("The map."));
    let sent = delivery(
        PHONE_NUMBER_ID,
        &owner,
        vec![text(&owner, "wamid.C1", "show me the map")],
    );
    assert_eq!(webhook.deliver(&sent).await.status, 200);
    let calls = graph
        .wait_until("the image and the reply", |calls| {
            !calls.images.is_empty() && !calls.sent.is_empty()
        })
        .await;
    let bodies: Vec<&Value> = calls.message_bodies.iter().collect();
    assert_conform("whatsapp messages", &whatsapp_messages(), &bodies);
    for body in bodies {
        if let Some(kind) = body["type"].as_str() {
            assert!(
                body.get(kind).is_some(),
                "the `{kind}` object is missing: {body}"
            );
            let addressed = [body.get("to"), body.get("recipient")];
            assert_eq!(
                addressed.iter().flatten().count(),
                1,
                "exactly one of to and recipient: {body}"
            );
        }
    }
    assert!(calls.reads.iter().any(|(id, _)| id == "wamid.C1"));
}
