//! End-to-end: images in a real `hearthd`. A client stores an image with
//! `image_put` and names it in `submit`; the fake model (Chat Completions)
//! shows what the turn sent; `zoom(id, 1)` brings an image back; a tool
//! shows an image from the working folder to the clients; the Telegram
//! bridge relays an owner's photo and sends a shown image as a photo, and
//! the WhatsApp bridge an image both ways.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::image::{encode, MAX_IMAGE_BYTES};
use hearth_protocol::{ClientFrame, ErrorCode, EventKind, ImageRef, Message, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_graph::{FakeGraph, ACCESS_TOKEN, PHONE_NUMBER_ID};
use hearth_tests::fake_model::{FakeModel, Recorded, Reply};
use hearth_tests::fake_telegram::{FakeTelegram, Person, TOKEN};
use hearth_tests::harness::{Client, Daemon, TestHome};
use hearth_tests::meta_webhook::{
    delivery, image, text, Sender, Webhook, APP_SECRET, VERIFY_TOKEN,
};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;

/// A layout whose lines never need a summary: every request the fake model
/// sees is a turn's, and every view line is the message's own.
const NO_SUMMARIES: &str = "block_lines = 4\nline_budget = 10000000\nline_guard = 20000000\n\
    high_budget = 100000000\nlow_budget = 50000000\ncompaction_high_budget = 100000000\n\
    compaction_low_budget = 50000000\ncompactor_concurrency = 1\ncompactor_ahead = 8\n\
    compactor_tries = 1\ncompactor_failures = 1\ncompactor_backoff_ms = 1\n";

const OWNER: Person = Person {
    id: 4242,
    first_name: "Ada",
    username: Some("ada"),
};

/// A PNG's signature and header: all that hearth reads of an image.
fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend(width.to_be_bytes());
    bytes.extend(height.to_be_bytes());
    bytes.extend([8, 2, 0, 0, 0]);
    bytes
}

/// A home for the fake model, with `extra` config appended.
fn home(model: &FakeModel, extra: &str) -> TestHome {
    let home = TestHome::new(bins!());
    let layout = home.path().join("images-layout.toml");
    std::fs::write(&layout, NO_SUMMARIES).unwrap();
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n[agent]\nlayout = \"{}\"\n{extra}",
        model.base_url(),
        layout.display()
    ));
    home
}

async fn put(client: &mut Client, media_type: &str, bytes: &[u8]) -> ServerFrame {
    client
        .request(ClientFrame::ImagePut {
            media_type: media_type.into(),
            data_base64: encode(bytes),
        })
        .await
}

async fn stored(client: &mut Client, bytes: &[u8]) -> ImageRef {
    match put(client, "image/png", bytes).await {
        ServerFrame::ImageStored(image) => image,
        other => panic!("expected image_stored, got {other:?}"),
    }
}

async fn submit(client: &mut Client, text: &str, images: Vec<String>) -> ServerFrame {
    client
        .request(ClientFrame::Submit {
            text: text.into(),
            source: "terminal".into(),
            key: None,
            images,
            person: None,
            media: Vec::new(),
        })
        .await
}

async fn submitted(client: &mut Client, text: &str, images: Vec<String>) -> u64 {
    match submit(client, text, images).await {
        ServerFrame::Ack { id, .. } => id,
        other => panic!("expected an ack, got {other:?}"),
    }
}

/// The messages of a Chat Completions request.
fn messages(request: &Recorded) -> Vec<Value> {
    request.body["messages"]
        .as_array()
        .expect("chat messages")
        .clone()
}

/// Every `image_url` of a message, and its text parts joined.
fn parts(message: &Value) -> (String, Vec<String>) {
    match &message["content"] {
        Value::String(text) => (text.clone(), Vec::new()),
        Value::Array(parts) => (
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
            parts
                .iter()
                .filter_map(|part| part["image_url"]["url"].as_str())
                .map(str::to_string)
                .collect(),
        ),
        _ => (String::new(), Vec::new()),
    }
}

fn data_url(bytes: &[u8]) -> String {
    format!("data:image/png;base64,{}", encode(bytes))
}

async fn history(client: &mut Client) -> Vec<Message> {
    match client
        .request(ClientFrame::History {
            before: None,
            limit: Some(1000),
        })
        .await
    {
        ServerFrame::History { messages } => messages,
        other => panic!("expected history, got {other:?}"),
    }
}

#[tokio::test]
async fn a_submitted_image_reaches_the_model_and_the_next_view_says_so() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    let bytes = png(640, 480);
    let image = stored(&mut client, &bytes).await;
    assert_eq!((image.width, image.height), (Some(640), Some(480)));
    let file = home.path().join(format!("images/{}.png", image.sha256));
    assert_eq!(
        std::fs::read(&file).unwrap(),
        bytes,
        "stored under its sha256"
    );

    model.push(Reply::text("A picture."));
    let first = submitted(&mut client, "what is this?", vec![image.sha256.clone()]).await;
    let event = client
        .wait_for(|e| e.kind == EventKind::User && e.id == Some(first))
        .await;
    assert_eq!(event.images.len(), 1, "the event names the image");
    assert_eq!(event.images[0].sha256, image.sha256);
    client.reply_to(first).await;

    let requests = model.requests();
    let last = messages(&requests[0]).pop().unwrap();
    assert_eq!(last["role"], "user");
    assert_eq!(
        parts(&last),
        (
            format!("{first}+0|user from terminal: [1 image] what is this?"),
            vec![data_url(&bytes)]
        )
    );

    // The next turn's view names the image; its bytes stay out of the view.
    model.push(Reply::text("Still a picture."));
    let second = submitted(&mut client, "and now?", vec![]).await;
    client.reply_to(second).await;
    let requests = model.requests();
    let view: Vec<String> = messages(&requests[1])
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| parts(m).0)
        .collect();
    let line = format!("{first}+1|user: [1 image] what is this?");
    assert!(view.iter().any(|text| text.contains(&line)), "{view:#?}");
    assert!(
        messages(&requests[1]).iter().all(|m| parts(m).1.is_empty()),
        "an image goes only with the turn that takes its message"
    );
    let logged = history(&mut client).await;
    assert_eq!(logged[first as usize].images, vec![image]);

    // `hearth send --image` stores the file and submits it.
    let path = home.path().join("chart.png");
    std::fs::write(&path, png(2, 2)).unwrap();
    model.push(Reply::text("A chart."));
    let output = home
        .hearth_async(&[
            "send",
            "--image",
            path.to_str().unwrap(),
            "--wait",
            "explain",
        ])
        .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).lines().last(),
        Some("A chart.")
    );
    let requests = model.requests();
    let last = messages(requests.last().unwrap()).pop().unwrap();
    assert_eq!(parts(&last).1, vec![data_url(&png(2, 2))]);
    assert!(parts(&last)
        .0
        .ends_with("user from script: [1 image] explain"));
}

#[tokio::test]
async fn zoom_of_a_message_with_an_image_brings_the_image_back_to_the_model() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    let bytes = png(3, 3);
    let image = stored(&mut client, &bytes).await;
    model.push(Reply::text("Noted."));
    let first = submitted(&mut client, "my cat", vec![image.sha256]).await;
    client.reply_to(first).await;

    model.push(Reply::tool_call(
        "zoom",
        format!(r#"{{"id": {first}, "n": 1}}"#),
    ));
    model.push(Reply::text("Orange."));
    let second = submitted(&mut client, "what colour was my cat?", vec![]).await;
    client.reply_to(second).await;

    let requests = model.requests();
    let after_zoom = messages(&requests[2]);
    let result = after_zoom
        .iter()
        .position(|m| m["role"] == "tool")
        .expect("the zoom result");
    let output = after_zoom[result]["content"].as_str().unwrap();
    assert_eq!(
        output,
        format!("{first}+0|user: [1 image] my cat\n(the message's 1 image follows)")
    );
    let next = &after_zoom[result + 1];
    assert_eq!(next["role"], "user", "the image follows the results");
    let (text, urls) = parts(next);
    assert!(text.starts_with("[1 image] returned by zoom("), "{text}");
    assert_eq!(urls, vec![data_url(&bytes)]);
}

#[tokio::test]
async fn show_image_reaches_the_clients_and_image_get_returns_the_bytes() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let bytes = png(32, 16);
    std::fs::write(home.path().join("agents/hearth/work/cat.png"), &bytes).unwrap();

    model.push(Reply::tool_call("show_image", r#"{"path": "cat.png"}"#));
    model.push(Reply::text("There it is."));
    let id = submitted(&mut client, "show me the cat", vec![]).await;
    let tool = client
        .wait_for(|e| e.kind == EventKind::Tool && e.id > Some(id))
        .await;
    assert_eq!(tool.status.as_deref(), Some("ok"));
    assert!(
        tool.text
            .as_deref()
            .unwrap()
            .contains("shown cat.png (image/png, 32x16, 29 bytes)"),
        "{tool:?}"
    );
    let [image] = tool.images.as_slice() else {
        panic!("one image: {tool:?}");
    };
    assert_eq!(image.name.as_deref(), Some("cat.png"));
    match client
        .request(ClientFrame::ImageGet {
            sha256: image.sha256.clone(),
        })
        .await
    {
        ServerFrame::Image {
            media_type,
            data_base64,
            ..
        } => {
            assert_eq!(media_type, "image/png");
            assert_eq!(data_base64, encode(&bytes));
        }
        other => panic!("expected image, got {other:?}"),
    }
    client.reply_to(id).await;
    // The model chose the file: it is not sent the image.
    let requests = model.requests();
    assert!(messages(&requests[1]).iter().all(|m| parts(m).1.is_empty()));

    // A file outside the working folder is not shown.
    model.push(Reply::tool_call(
        "show_image",
        r#"{"path": "../../../config.toml"}"#,
    ));
    model.push(Reply::text("Cannot."));
    let id = submitted(&mut client, "show the config", vec![]).await;
    let tool = client
        .wait_for(|e| e.kind == EventKind::Tool && e.id > Some(id))
        .await;
    assert_eq!(tool.status.as_deref(), Some("error"));
    assert!(tool.images.is_empty());
}

#[tokio::test]
async fn an_oversized_or_non_image_payload_is_refused_and_nothing_is_logged() {
    let model = FakeModel::start().await;
    let home = home(&model, "");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    let refused = |frame: ServerFrame| match frame {
        ServerFrame::Error { code, message } => (code, message),
        other => panic!("expected an error, got {other:?}"),
    };
    let (code, message) = refused(put(&mut client, "image/png", b"just some text").await);
    assert_eq!(code, ErrorCode::BadFrame);
    assert!(message.contains("not an image"), "{message}");
    let (code, message) = refused(put(&mut client, "application/pdf", b"%PDF-1.7").await);
    assert_eq!(code, ErrorCode::Refused);
    assert!(
        message.contains("image/png, image/jpeg, image/gif, image/webp"),
        "{message}"
    );
    let (code, message) = refused(put(&mut client, "image/jpeg", &png(1, 1)).await);
    assert_eq!(code, ErrorCode::BadFrame);
    assert!(message.contains("image/png, not image/jpeg"), "{message}");
    let mut big = png(1, 1);
    big.resize(MAX_IMAGE_BYTES + 1, 0);
    let (code, message) = refused(put(&mut client, "image/png", &big).await);
    assert_eq!(code, ErrorCode::TooLarge);
    assert!(message.contains("over the limit"), "{message}");
    let (code, _) = refused(
        client
            .request(ClientFrame::ImagePut {
                media_type: "image/png".into(),
                data_base64: "@@not base64@@".into(),
            })
            .await,
    );
    assert_eq!(code, ErrorCode::BadFrame);

    let unknown = "0".repeat(64);
    let (code, message) = refused(submit(&mut client, "look", vec![unknown]).await);
    assert_eq!(code, ErrorCode::Refused);
    assert!(message.contains("no stored image"), "{message}");
    let (code, _) = refused(submit(&mut client, "look", vec!["../../hearth.db".into()]).await);
    assert_eq!(code, ErrorCode::BadFrame);

    assert!(history(&mut client).await.is_empty(), "nothing was logged");
    assert!(model.requests().is_empty());
    let stored = std::fs::read_dir(home.path().join("images"))
        .map(|entries| entries.count())
        .unwrap_or(0);
    assert_eq!(stored, 0, "nothing was stored");
}

/// The fake model and a `[telegram]` table for the fake Bot API that
/// allows the owner.
fn telegram_home(model: &FakeModel, telegram: &FakeTelegram) -> TestHome {
    let home = home(
        model,
        &format!(
            "\n[telegram]\ntoken_env = \"HEARTH_TEST_TELEGRAM_TOKEN\"\nallow = [{}]\napi_base = \"{}\"\n",
            OWNER.id,
            telegram.api_base()
        ),
    );
    let secrets = home.path().join("secrets.env");
    std::fs::write(&secrets, format!("HEARTH_TEST_TELEGRAM_TOKEN={TOKEN}\n")).unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    home
}

#[tokio::test]
async fn a_telegram_photo_reaches_the_model_and_a_shown_image_goes_back_as_a_photo() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = telegram_home(&model, &telegram);
    let _daemon: Daemon = home.start();
    let mut watcher = home.connect("watcher", None).await;

    let photo = png(1280, 960);
    model.push(Reply::text("A fine cat."));
    telegram.send_photo_bytes(&OWNER, &photo, Some("my cat"));
    let user = watcher.wait_for(|e| e.kind == EventKind::User).await;
    assert_eq!(user.text.as_deref(), Some("my cat"));
    assert_eq!(user.source.as_deref(), Some("telegram"));
    assert_eq!(user.images.len(), 1);
    telegram
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    let calls = telegram.calls();
    assert_eq!(calls.downloads, vec!["photos/large.png".to_string()]);
    let last = messages(&model.requests()[0]).pop().unwrap();
    assert_eq!(
        parts(&last),
        (
            format!(
                "{}+0|user from telegram: [1 image] my cat",
                user.id.unwrap()
            ),
            vec![data_url(&photo)]
        )
    );

    // An image the agent shows goes to the chat as a photo.
    let shown = png(8, 8);
    std::fs::write(home.path().join("agents/hearth/work/plot.png"), &shown).unwrap();
    model.push(Reply::tool_call("show_image", r#"{"path": "plot.png"}"#));
    model.push(Reply::text("Here is the plot."));
    telegram.write(&OWNER, "plot it");
    let calls = telegram
        .wait_until("the photo and the reply", |calls| {
            !calls.photos.is_empty() && calls.sent.len() == 2
        })
        .await;
    assert_eq!(
        calls.photos,
        vec![(OWNER.id, "image/png".to_string(), shown)]
    );
    assert_eq!(calls.sent[1].text, "Here is the plot.");
}

/// The fake model and a `[whatsapp]` table for the fake Graph API that
/// allows the owner.
fn whatsapp_home(model: &FakeModel, graph: &FakeGraph) -> TestHome {
    let home = home(
        model,
        &format!(
            "\n[whatsapp]\nlisten = \"127.0.0.1:0\"\nverify_token_env = \"HEARTH_TEST_WA_VERIFY\"\n\
             app_secret_env = \"HEARTH_TEST_WA_SECRET\"\naccess_token_env = \"HEARTH_TEST_WA_TOKEN\"\n\
             phone_number_id = \"{PHONE_NUMBER_ID}\"\ngraph_base = \"{}\"\nallow = [\"+{}\"]\n",
            graph.graph_base(),
            WA_OWNER.wa_id
        ),
    );
    let secrets = home.path().join("secrets.env");
    std::fs::write(
        &secrets,
        format!(
            "HEARTH_TEST_WA_VERIFY={VERIFY_TOKEN}\nHEARTH_TEST_WA_SECRET={APP_SECRET}\n\
             HEARTH_TEST_WA_TOKEN={ACCESS_TOKEN}\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    home
}

const WA_OWNER: Sender = Sender {
    wa_id: "15551234567",
    name: "Ada",
};

#[tokio::test]
async fn a_whatsapp_image_reaches_the_model_and_a_shown_image_is_uploaded_and_sent() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = whatsapp_home(&model, &graph);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;
    let mut watcher = home.connect("watcher", None).await;

    // A JPEG's start of image, an APP0 segment, and a frame of 20x10.
    let jpeg: Vec<u8> = vec![
        0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0, 0xFF, 0xC0, 0, 11, 8, 0, 10, 0, 20, 1, 1, 0x11, 0,
    ];
    graph.add_media("MEDIA7", "image/jpeg", &jpeg);
    model.push(Reply::text("A small picture."));
    let sent = delivery(
        PHONE_NUMBER_ID,
        &WA_OWNER,
        vec![image(&WA_OWNER, "wamid.P1", "MEDIA7", None)],
    );
    assert_eq!(webhook.deliver(&sent).await.status, 200);
    let user = watcher.wait_for(|e| e.kind == EventKind::User).await;
    assert_eq!(user.text.as_deref(), Some(""), "no caption, no placeholder");
    assert_eq!(user.images.len(), 1);
    assert_eq!(
        (user.images[0].width, user.images[0].height),
        (Some(20), Some(10))
    );
    graph
        .wait_until("the reply", |calls| !calls.sent.is_empty())
        .await;
    let last = messages(&model.requests()[0]).pop().unwrap();
    assert_eq!(
        parts(&last).1,
        vec![format!("data:image/jpeg;base64,{}", encode(&jpeg))]
    );

    let shown = png(5, 5);
    std::fs::write(home.path().join("agents/hearth/work/map.png"), &shown).unwrap();
    model.push(Reply::tool_call("show_image", r#"{"path": "map.png"}"#));
    model.push(Reply::text("The map."));
    let sent = delivery(
        PHONE_NUMBER_ID,
        &WA_OWNER,
        vec![text(&WA_OWNER, "wamid.P2", "show me the map")],
    );
    assert_eq!(webhook.deliver(&sent).await.status, 200);
    let calls = graph
        .wait_until("the image and the reply", |calls| {
            !calls.images.is_empty() && calls.sent.len() == 2
        })
        .await;
    assert_eq!(calls.uploads, vec![("image/png".to_string(), shown)]);
    assert_eq!(calls.images[0].0, WA_OWNER.wa_id);
    assert_eq!(calls.sent[1].text, "The map.");
}
