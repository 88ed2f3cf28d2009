//! Conformance: every request the Telegram and WhatsApp bridges send,
//! checked against the platform's documented parameters, written down here
//! as a [`schema`](hearth_tests::schema) from the documentation named above
//! each (read 2026-12-01). A real `hearthd` runs each bridge against its
//! fake, which keeps every call's parameters.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::EventKind;
use hearth_tests::bins;
use hearth_tests::fake_graph::{whatsapp_secrets, FakeGraph, ACCESS_TOKEN};
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::fake_telegram::{FakeTelegram, OWNER};
use hearth_tests::harness::{model_table, png_head, TestHome};
use hearth_tests::meta_webhook::{text, Webhook, WA_OWNER};
use hearth_tests::schema::*;
use serde_json::Value;

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
        "sendDocument" => {
            let mut fields = vec![
                req("chat_id", nonempty()),
                req(
                    "document",
                    any_of(vec![
                        nonempty(),
                        object(vec![req("content_type", nonempty()), req("bytes", int(1))]),
                    ]),
                ),
                opt("thumbnail", Schema::Any),
                opt("caption", Schema::Str { min: 0, max: 1024 }),
                opt("parse_mode", parse_mode()),
                opt("caption_entities", string()),
                opt("disable_content_type_detection", string()),
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

#[tokio::test]
async fn telegram_requests_are_as_documented() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "{}\n{}",
        model_table("openai-chat", &model.base_url()),
        telegram.telegram_table()
    ));
    home.write_secrets(&hearth_tests::fake_telegram::secrets());
    let _daemon = home.start();
    let mut watcher = home.connect("watcher", None).await;

    // A photo in, a reply out, an image shown out as a photo.
    model.push(Reply::text("A fine *cat*."));
    telegram.send_photo(&OWNER, Some("my cat"));
    watcher.wait_for(|e| e.kind == EventKind::Reply).await;
    std::fs::write(
        home.path().join("agents/hearth/work/plot.png"),
        png_head(8, 8),
    )
    .unwrap();
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
        "{}\n{}",
        model_table("openai-chat", &model.base_url()),
        graph.whatsapp_table("\"+15551234567\"")
    ));
    home.write_secrets(&whatsapp_secrets(ACCESS_TOKEN));
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;

    std::fs::write(
        home.path().join("agents/hearth/work/map.png"),
        png_head(5, 5),
    )
    .unwrap();
    model.push(Reply::tool_call("show_image", r#"{"path": "map.png"}"#));
    model.push(Reply::text("The map."));
    webhook
        .deliver_from(
            &WA_OWNER,
            vec![text(&WA_OWNER, "wamid.C1", "show me the map")],
        )
        .await;
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
