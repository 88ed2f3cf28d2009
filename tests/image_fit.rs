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
use hearth_tests::fake_graph::{whatsapp_secrets, FakeGraph, ACCESS_TOKEN};
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::fake_telegram::{FakeTelegram, OWNER};
use hearth_tests::harness::{notes_by, TestHome};
use hearth_tests::meta_webhook::{text, Webhook, WA_OWNER};
use image::{DynamicImage, ImageBuffer, ImageFormat, Rgb, Rgba};
use std::io::Cursor;

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
    let id = client
        .submit_acked("what is this?", vec![stored.sha256.clone()], Vec::new())
        .await;
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

#[tokio::test]
async fn telegram_gets_a_photo_within_its_limits_and_a_strip_as_a_document() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "{}\n{}",
        model_config("openai-chat", &model),
        telegram.telegram_table()
    ));
    home.write_secrets(&hearth_tests::fake_telegram::secrets());
    let _daemon = home.start();
    let work = home.work_dir();
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
        "{}\n{}",
        model_config("openai-chat", &model),
        graph.whatsapp_table("\"+15551234567\"")
    ));
    home.write_secrets(&whatsapp_secrets(ACCESS_TOKEN));
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;
    let work = home.work_dir();
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
    webhook
        .deliver_from(&WA_OWNER, vec![text(&WA_OWNER, "wamid.F1", "show me")])
        .await;
    let calls = graph
        .wait_until("the image and the reply", |calls| {
            !calls.images.is_empty() && !calls.sent.is_empty()
        })
        .await;
    assert_eq!(calls.uploads.len(), 1, "the broken one is not uploaded");
    assert_eq!(calls.uploads[0].0, "image/png", "transparency kept");
    assert_eq!(dimensions(&calls.uploads[0].1), Some((20, 10)));
    let log = home.history().await;
    let notes = notes_by(&log, "whatsapp");
    assert!(
        notes.iter().any(
            |note| note.starts_with("whatsapp: could not send image broken.gif")
                && note.contains("cannot be read")
        ),
        "{notes:?}"
    );
    let _ = EventKind::Reply;
}

/// A flat PNG of `width`x`height` in a colour of its own, so each has its
/// own sha256.
fn coloured_png(width: u32, height: u32, colour: u8) -> Vec<u8> {
    let image = ImageBuffer::from_pixel(width, height, Rgb([colour, 255 - colour, 90]));
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image)
        .write_to(&mut out, ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

async fn put(client: &mut hearth_tests::harness::Client, bytes: &[u8]) -> String {
    let ServerFrame::ImageStored(stored) = client
        .request(ClientFrame::ImagePut {
            media_type: "image/png".into(),
            data_base64: encode(bytes),
        })
        .await
    else {
        panic!("the image was not stored");
    };
    stored.sha256
}

/// The size of every image block of an Anthropic Messages body, in order.
fn image_sizes(body: &serde_json::Value) -> Vec<(u32, u32)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "image")
        .map(|block| {
            let source = &block["source"];
            let media_type = source["media_type"].as_str().unwrap();
            let data = source["data"].as_str().unwrap();
            let bytes = hearth_protocol::image::decode(media_type, data).unwrap();
            dimensions(&bytes).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn a_request_of_more_than_twenty_images_sends_each_within_2000_pixels() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&model_config("anthropic", &model));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    // 3000 px a side: within Anthropic's 8000 for a request of up to 20
    // images, over its 2000 for one of more.
    let mut first = Vec::new();
    for colour in 0..16 {
        first.push(put(&mut client, &coloured_png(3000, 40, colour * 10)).await);
    }
    let mut second = Vec::new();
    for colour in 16..21 {
        second.push(put(&mut client, &coloured_png(40, 3000, colour * 10)).await);
    }
    // The first request carries 16 images; while its answer (a tool call)
    // is held, 5 more arrive, and the turn's next request carries all 21.
    let gate = hearth_tests::fake_model::Gate::new();
    model.push(Reply::gated(Reply::tool_call("date", "{}"), &gate));
    model.push(Reply::text("Twenty-one pictures."));
    let id = client
        .submit_acked("look at these", first, Vec::new())
        .await;
    model.wait_for_requests(1).await;
    client.submit_acked("and these", second, Vec::new()).await;
    gate.open();
    client.reply_to(id).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let sixteen = image_sizes(&requests[0].body);
    assert_eq!(
        sixteen,
        vec![(3000, 40); 16],
        "up to 20 images keep 3000 px"
    );
    let all = image_sizes(&requests[1].body);
    assert_eq!(all.len(), 21);
    assert!(
        all.iter().all(|&(w, h)| w.max(h) <= 2000),
        "every side within 2000 px: {all:?}"
    );
    assert_eq!(all[0], (2000, 26), "scaled only as far as needed");
    assert_eq!(all[20], (26, 2000));
}

#[tokio::test]
async fn an_image_that_cannot_be_fitted_is_left_out_and_the_user_is_told() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&model_config("anthropic", &model));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    // A PNG whose header says 9000x40 (too wide: it must be scaled) over
    // bytes that are no image.
    let mut broken = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    broken.extend(9000u32.to_be_bytes());
    broken.extend(40u32.to_be_bytes());
    broken.extend([8, 2, 0, 0, 0]);
    broken.extend(b"not an image at all");
    let good = put(&mut client, &coloured_png(30, 20, 7)).await;
    let bad = put(&mut client, &broken).await;
    model.push(Reply::text("I see one picture."));
    let id = client
        .submit_acked("what are these?", vec![good, bad.clone()], Vec::new())
        .await;
    client.reply_to(id).await;

    // The request went, with the image it could carry and a line where
    // the other was.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(image_sizes(&requests[0].body), vec![(30, 20)]);
    let body = requests[0].body.to_string();
    assert!(
        body.contains("[image 2 of 2 (")
            && body.contains("9000x40) was left out of this request: the image cannot be read"),
        "{body}"
    );
    // The user is told, in the conversation.
    let note = client
        .wait_for_text(EventKind::Note, "without its pixels")
        .await;
    let text = note.text.unwrap();
    assert!(
        text.starts_with(&format!("message {id}: image {}, 9000x40 went", &bad[..12]))
            && text.contains("the image cannot be read"),
        "{text}"
    );
    let notes = home
        .history()
        .await
        .into_iter()
        .filter(|m| m.kind == Kind::Note && m.text.contains("without its pixels"))
        .count();
    assert_eq!(notes, 1, "told once");
}

/// A PNG of noise, so it does not compress: about 3 bytes a pixel.
fn noisy_png(width: u32, height: u32, seed: u32) -> Vec<u8> {
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    let image = ImageBuffer::from_fn(width, height, |_, _| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let [a, b, c, _] = state.to_le_bytes();
        Rgb([a, b, c])
    });
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(image)
        .write_to(&mut out, ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

#[tokio::test]
async fn the_images_of_one_request_share_its_size_limit() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&model_config("anthropic", &model));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    // Eight images each within Anthropic's 5 MB of base64, together over
    // its 32 MB request: the fake refuses such a request with a 413.
    let mut images = Vec::new();
    for seed in 1..=8 {
        let png = noisy_png(1050, 1050, seed);
        // 8 x 3.2 MB is over 34 MB of base64 as it is.
        assert!(
            png.len() > 3_200_000 && png.len() <= 3_750_000,
            "{}",
            png.len()
        );
        images.push(put(&mut client, &png).await);
    }
    model.push(Reply::text("Eight pictures of noise."));
    let id = client
        .submit_acked("what are these?", images, Vec::new())
        .await;
    let reply = client.reply_to(id).await;
    assert_eq!(reply.text.as_deref(), Some("Eight pictures of noise."));
    let requests = model.requests();
    let body = &requests[0].body;
    assert_eq!(image_sizes(body).len(), 8, "every image went");
    let sent = body.to_string().len();
    assert!(sent < 32_000_000, "{sent} bytes");
}
