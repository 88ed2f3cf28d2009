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
use hearth_tests::fake_graph::{whatsapp_secrets, FakeGraph, ACCESS_TOKEN};
use hearth_tests::fake_model::{FakeModel, Recorded, Reply};
use hearth_tests::fake_telegram::{FakeTelegram, OWNER};
use hearth_tests::harness::{png_head, Client, Daemon, TestHome};
use hearth_tests::meta_webhook::{image, text, Webhook, WA_OWNER};
use serde_json::Value;

/// A home for the fake model, with `extra` config appended.
fn home(model: &FakeModel, extra: &str) -> TestHome {
    let home = TestHome::new(bins!());
    home.use_model_without_summaries(&model.base_url(), extra);
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

    let bytes = png_head(640, 480);
    let image = stored(&mut client, &bytes).await;
    assert_eq!((image.width, image.height), (Some(640), Some(480)));
    let file = home.path().join(format!("images/{}.png", image.sha256));
    assert_eq!(
        std::fs::read(&file).unwrap(),
        bytes,
        "stored under its sha256"
    );

    model.push(Reply::text("A picture."));
    let first = client
        .submit_acked("what is this?", vec![image.sha256.clone()], Vec::new())
        .await;
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
    let second = client.submit_acked("and now?", vec![], Vec::new()).await;
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
    std::fs::write(&path, png_head(2, 2)).unwrap();
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
    assert_eq!(parts(&last).1, vec![data_url(&png_head(2, 2))]);
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

    let bytes = png_head(3, 3);
    let image = stored(&mut client, &bytes).await;
    model.push(Reply::text("Noted."));
    let first = client
        .submit_acked("my cat", vec![image.sha256], Vec::new())
        .await;
    client.reply_to(first).await;

    model.push(Reply::tool_call(
        "zoom",
        format!(r#"{{"id": {first}, "n": 1}}"#),
    ));
    model.push(Reply::text("Orange."));
    let second = client
        .submit_acked("what colour was my cat?", vec![], Vec::new())
        .await;
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
    let bytes = png_head(32, 16);
    std::fs::write(home.path().join("agents/hearth/work/cat.png"), &bytes).unwrap();

    model.push(Reply::tool_call("show_image", r#"{"path": "cat.png"}"#));
    model.push(Reply::text("There it is."));
    let id = client
        .submit_acked("show me the cat", vec![], Vec::new())
        .await;
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
    let id = client
        .submit_acked("show the config", vec![], Vec::new())
        .await;
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
    let (code, message) = refused(put(&mut client, "image/jpeg", &png_head(1, 1)).await);
    assert_eq!(code, ErrorCode::BadFrame);
    assert!(message.contains("image/png, not image/jpeg"), "{message}");
    let mut big = png_head(1, 1);
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
    let (code, message) = refused(client.submit_with("look", vec![unknown], Vec::new()).await);
    assert_eq!(code, ErrorCode::Refused);
    assert!(message.contains("no stored image"), "{message}");
    let (code, _) = refused(
        client
            .submit_with("look", vec!["../../hearth.db".into()], Vec::new())
            .await,
    );
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
    let home = home(model, &format!("\n{}", telegram.telegram_table()));
    home.write_secrets(&hearth_tests::fake_telegram::secrets());
    home
}

#[tokio::test]
async fn a_telegram_photo_reaches_the_model_and_a_shown_image_goes_back_as_a_photo() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = telegram_home(&model, &telegram);
    let _daemon: Daemon = home.start();
    let mut watcher = home.connect("watcher", None).await;

    let photo = png_head(1280, 960);
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
    let shown = png_head(8, 8);
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
            "\n{}",
            graph.whatsapp_table(&format!("\"+{}\"", WA_OWNER.wa_id))
        ),
    );
    home.write_secrets(&whatsapp_secrets(ACCESS_TOKEN));
    home
}

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
    webhook
        .deliver_from(
            &WA_OWNER,
            vec![image(&WA_OWNER, "wamid.P1", "MEDIA7", None)],
        )
        .await;
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

    let shown = png_head(5, 5);
    std::fs::write(home.path().join("agents/hearth/work/map.png"), &shown).unwrap();
    model.push(Reply::tool_call("show_image", r#"{"path": "map.png"}"#));
    model.push(Reply::text("The map."));
    webhook
        .deliver_from(
            &WA_OWNER,
            vec![text(&WA_OWNER, "wamid.P2", "show me the map")],
        )
        .await;
    let calls = graph
        .wait_until("the image and the reply", |calls| {
            !calls.images.is_empty() && calls.sent.len() == 2
        })
        .await;
    assert_eq!(calls.uploads, vec![("image/png".to_string(), shown)]);
    assert_eq!(calls.images[0].0, WA_OWNER.wa_id);
    assert_eq!(calls.sent[1].text, "The map.");
}
