//! End-to-end: images fitted to where they go. A real `hearthd` sends an
//! image too large for a model provider scaled to its limits (the original
//! kept in the store, the copy made once); the Telegram bridge sends a
//! shown image within `sendPhoto`'s limits, and one that cannot be a photo
//! as a document; the WhatsApp bridge converts what it does not take and
//! says so in a note when an image cannot be sent at all. The images are
//! generated here.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::image::{dimensions, encode};
use hearth_protocol::{ClientFrame, EventKind, Kind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_graph::{FakeGraph, ACCESS_TOKEN, PHONE_NUMBER_ID};
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::fake_telegram::{FakeTelegram, Person, TOKEN};
use hearth_tests::harness::TestHome;
use hearth_tests::meta_webhook::{delivery, text, Sender, Webhook, APP_SECRET, VERIFY_TOKEN};
use image::{DynamicImage, ImageBuffer, ImageFormat, Rgb, Rgba};
use std::io::Cursor;
use std::os::unix::fs::PermissionsExt;

/// A flat-coloured PNG of `width`x`height` (small on disk, large in pixels).
fn flat_png(width: u32, height: u32) -> Vec<u8> {
    let image = ImageBuffer::from_pixel(width, height, Rgb([30u8, 120, 200]));
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image)
        .write_to(&mut out, ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

fn model_config(provider: &str, model: &FakeModel) -> String {
    format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 60\n",
        model.base_url()
    )
}

fn private_secrets(home: &TestHome, text: &str) {
    let secrets = home.path().join("secrets.env");
    std::fs::write(&secrets, text).unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[tokio::test]
async fn an_image_too_large_for_the_model_goes_scaled_and_the_original_is_kept() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&model_config("anthropic", &model));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let original = flat_png(9000, 60);
    let ServerFrame::ImageStored(stored) = client
        .request(ClientFrame::ImagePut {
            media_type: "image/png".into(),
            data_base64: encode(&original),
        })
        .await
    else {
        panic!("the image was not stored");
    };
    // A tool round: the image goes in both requests of the turn.
    model.push(Reply::tool_call("date", "{}"));
    model.push(Reply::text("A long strip."));
    let ack = client
        .request(ClientFrame::Submit {
            text: "what is this?".into(),
            source: "terminal".into(),
            key: None,
            images: vec![stored.sha256.clone()],
            person: None,
            media: Vec::new(),
        })
        .await;
    let ServerFrame::Ack { id, .. } = ack else {
        panic!("expected an ack, got {ack:?}");
    };
    client.reply_to(id).await;
    let requests = model.requests();
    let sent: Vec<String> = requests
        .iter()
        .map(|request| {
            let body = request.body.to_string();
            let start = body.find("\"data\":\"").expect("an image in every request") + 8;
            body[start..].split('"').next().unwrap().to_string()
        })
        .collect();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0], sent[1],
        "the same bytes in every turn, for the cache"
    );
    let bytes = hearth_protocol::image::decode("image/jpeg", &sent[0])
        .or_else(|_| hearth_protocol::image::decode("image/png", &sent[0]))
        .unwrap();
    let (width, height) = dimensions(&bytes).unwrap();
    assert!(width <= 8000 && height <= 60, "{width}x{height}");
    assert!(width > 7000, "scaled only as far as needed: {width}");
    assert!(bytes.len() <= 3_750_000);

    // The store keeps the original; the copy sits beside it.
    let ServerFrame::Image { data_base64, .. } = client
        .request(ClientFrame::ImageGet {
            sha256: stored.sha256.clone(),
        })
        .await
    else {
        panic!("no image");
    };
    assert_eq!(data_base64, encode(&original));
    let fitted = home.path().join("images/fitted");
    let copies: Vec<_> = std::fs::read_dir(&fitted)
        .unwrap_or_else(|err| panic!("{}: {err}", fitted.display()))
        .collect();
    assert_eq!(copies.len(), 1);
}

const OWNER: Person = Person {
    id: 4242,
    first_name: "Ada",
    username: Some("ada"),
};

#[tokio::test]
async fn telegram_gets_a_photo_within_its_limits_and_a_strip_as_a_document() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "{}\n[telegram]\ntoken_env = \"HEARTH_TEST_TELEGRAM_TOKEN\"\nallow = [{}]\napi_base = \"{}\"\n",
        model_config("openai-chat", &model),
        OWNER.id,
        telegram.api_base()
    ));
    private_secrets(&home, &format!("HEARTH_TEST_TELEGRAM_TOKEN={TOKEN}\n"));
    let _daemon = home.start();
    let work = home.path().join("agents/hearth/work");
    std::fs::write(work.join("big.png"), flat_png(9000, 1200)).unwrap();
    let strip = flat_png(4200, 100);
    std::fs::write(work.join("strip.png"), &strip).unwrap();

    model.push(Reply::tool_call("show_image", r#"{"path": "big.png"}"#));
    model.push(Reply::tool_call("show_image", r#"{"path": "strip.png"}"#));
    model.push(Reply::text("Two pictures."));
    telegram.write(&OWNER, "show me");
    let calls = telegram
        .wait_until("a photo, a document and the reply", |calls| {
            !calls.photos.is_empty() && !calls.documents.is_empty() && !calls.sent.is_empty()
        })
        .await;
    let (_, media_type, photo) = &calls.photos[0];
    let (width, height) = dimensions(photo).unwrap();
    assert!(width + height <= 10_000, "{width}x{height}");
    assert!(photo.len() <= 10_000_000);
    assert_eq!(*media_type, "image/jpeg");
    assert_eq!(
        calls.documents,
        vec![(OWNER.id, "image/png".to_string(), strip)],
        "the strip goes as the file it is"
    );
}

#[tokio::test]
async fn whatsapp_gets_what_it_takes_and_an_image_it_cannot_be_sent_is_said() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "{}\n[whatsapp]\nlisten = \"127.0.0.1:0\"\nverify_token_env = \"HEARTH_TEST_WA_VERIFY\"\n\
         app_secret_env = \"HEARTH_TEST_WA_SECRET\"\naccess_token_env = \"HEARTH_TEST_WA_TOKEN\"\n\
         phone_number_id = \"{PHONE_NUMBER_ID}\"\ngraph_base = \"{}\"\nallow = [\"+15551234567\"]\n",
        model_config("openai-chat", &model),
        graph.graph_base()
    ));
    private_secrets(
        &home,
        &format!("HEARTH_TEST_WA_VERIFY={VERIFY_TOKEN}\nHEARTH_TEST_WA_SECRET={APP_SECRET}\nHEARTH_TEST_WA_TOKEN={ACCESS_TOKEN}\n"),
    );
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;
    let owner = Sender {
        wa_id: "15551234567",
        name: "Ada",
    };
    let work = home.path().join("agents/hearth/work");
    // A GIF with transparency: WhatsApp takes only JPEG and PNG.
    let mut gif = Cursor::new(Vec::new());
    DynamicImage::ImageRgba8(ImageBuffer::from_pixel(20, 10, Rgba([0u8, 0, 0, 0])))
        .write_to(&mut gif, ImageFormat::Gif)
        .unwrap();
    std::fs::write(work.join("clear.gif"), gif.into_inner()).unwrap();
    // A GIF's header over bytes that are no image.
    std::fs::write(
        work.join("broken.gif"),
        b"GIF89a\x10\x00\x10\x00\x00\x00\x00broken",
    )
    .unwrap();

    model.push(Reply::tool_call("show_image", r#"{"path": "clear.gif"}"#));
    model.push(Reply::tool_call("show_image", r#"{"path": "broken.gif"}"#));
    model.push(Reply::text("Two pictures."));
    let sent = delivery(
        PHONE_NUMBER_ID,
        &owner,
        vec![text(&owner, "wamid.F1", "show me")],
    );
    assert_eq!(webhook.deliver(&sent).await.status, 200);
    let calls = graph
        .wait_until("the image and the reply", |calls| {
            !calls.images.is_empty() && !calls.sent.is_empty()
        })
        .await;
    assert_eq!(calls.uploads.len(), 1, "the broken one is not uploaded");
    assert_eq!(calls.uploads[0].0, "image/png", "transparency kept");
    assert_eq!(dimensions(&calls.uploads[0].1), Some((20, 10)));
    let log = home.history().await;
    let notes: Vec<&str> = log
        .iter()
        .filter(|m| m.kind == Kind::Note && m.source == "whatsapp")
        .map(|m| m.text.as_str())
        .collect();
    assert!(
        notes.iter().any(
            |note| note.starts_with("whatsapp: could not send image broken.gif")
                && note.contains("cannot be read")
        ),
        "{notes:?}"
    );
    let _ = EventKind::Reply;
}
