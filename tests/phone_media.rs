//! End-to-end: voice notes and documents from the phone, through the real
//! bridges. A Telegram voice note (with its `duration`) and document come
//! by `getFile` and the download; a WhatsApp Cloud API voice note and
//! document come by their media URL. Each is stored in the daemon, the
//! voice note transcribed by the fake transcription endpoint and answered,
//! the document said with its pages. A PDF bomb from the phone is refused
//! with the limit it passed, and the daemon answers the next message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_daemon::documents::{bomb_pdf, tiny_pdf};
use hearth_tests::bins;
use hearth_tests::fake_graph::{whatsapp_secrets, FakeGraph, ACCESS_TOKEN};
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::fake_telegram::{FakeTelegram, OWNER};
use hearth_tests::fake_transcription::{Answer, FakeTranscription};
use hearth_tests::harness::{eventually, logged_user_message, TestHome};
use hearth_tests::meta_webhook::{Webhook, WA_OWNER};
use serde_json::json;

const VOICE: &[u8] = b"OggS\0\x02\0\0\0\0\0\0\0\0 a voice note from the phone";

/// A home for the fake model and transcription endpoint, with `bridge`'s
/// table and secrets.
fn home(
    model: &FakeModel,
    transcription: &FakeTranscription,
    bridge: &str,
    secrets: &str,
) -> TestHome {
    let home = TestHome::new(bins!());
    home.use_model_and_transcription(
        &model.base_url(),
        &transcription.base_url(),
        &format!("\n{bridge}"),
    );
    home.write_secrets(secrets);
    home
}

#[tokio::test]
async fn a_telegram_voice_note_is_answered_as_if_typed_and_a_document_is_read() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("on it"));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::text("remind me to water the plants", 42.0));
    let telegram = FakeTelegram::start().await;
    let table = telegram.telegram_table();
    let secrets = hearth_tests::fake_telegram::secrets();
    let home = home(&model, &transcription, &table, &secrets);
    let _daemon = home.start();

    telegram.send_file(
        &OWNER,
        "voice",
        json!({"file_id": "voice-1", "file_unique_id": "u1", "duration": 42,
               "mime_type": "audio/ogg", "file_size": VOICE.len()}),
        VOICE,
        None,
    );
    let voice = logged_user_message(&home, "[voice 0:42, transcribing]").await;
    assert_eq!(voice.source, "telegram");
    let heard = logged_user_message(&home, "[voice 0:42] ").await;
    assert_eq!(heard.text, "[voice 0:42] remind me to water the plants");
    let received = transcription.wait_for(1).await;
    assert_eq!(received[0].file, VOICE);
    telegram
        .wait_until("the reply", |calls| {
            calls.sent.iter().any(|sent| sent.text == "on it")
        })
        .await;

    let pdf = tiny_pdf(&["Deposit: two months' rent."]);
    telegram.send_file(
        &OWNER,
        "document",
        json!({"file_id": "doc-1", "file_unique_id": "u2", "file_name": "lease.pdf",
               "mime_type": "application/pdf", "file_size": pdf.len()}),
        &pdf,
        Some("what is the deposit?"),
    );
    let document = logged_user_message(&home, "[file: \"lease.pdf\"").await;
    assert_eq!(
        document.text,
        "[file: \"lease.pdf\", 1 page] what is the deposit?"
    );
    assert_eq!(telegram.calls().downloads.len(), 2);
}

/// The peak resident memory of process `pid` (`VmHWM`), in bytes.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test]
async fn a_pdf_bomb_from_telegram_is_refused_and_the_daemon_answers_on() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("on it"));
    let transcription = FakeTranscription::start().await;
    let telegram = FakeTelegram::start().await;
    let table = telegram.telegram_table();
    let secrets = hearth_tests::fake_telegram::secrets();
    let home = home(&model, &transcription, &table, &secrets);
    let daemon = home.start();

    let bomb = bomb_pdf(4);
    telegram.send_file(
        &OWNER,
        "document",
        json!({"file_id": "bomb-1", "file_unique_id": "u9", "file_name": "invoice.pdf",
               "mime_type": "application/pdf", "file_size": bomb.len()}),
        &bomb,
        Some("please pay this"),
    );
    let refused = "the PDF needed more than 512 MB to read; it was not read";
    eventually("the note that the file was refused", || async {
        home.history()
            .await
            .into_iter()
            .find(|message| message.text.contains(refused))
    })
    .await;
    let peak = peak_memory(daemon.pid());
    assert!(peak < 200 * 1024 * 1024, "hearthd peaked at {peak} bytes");

    // The message the file came with is answered without it, then the next.
    telegram
        .wait_until("a reply to the file's message", |calls| {
            calls.sent.iter().any(|sent| sent.text == "on it")
        })
        .await;
    telegram.write(&OWNER, "are you still there?");
    logged_user_message(&home, "are you still there?").await;
    telegram
        .wait_until("a reply to the next message", |calls| {
            calls
                .sent
                .iter()
                .filter(|sent| sent.text == "on it")
                .count()
                >= 2
        })
        .await;
}

#[tokio::test]
async fn a_whatsapp_voice_note_and_document_come_by_their_media_url() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("noted"));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::text("the meeting moved to friday", 9.0));
    let graph = FakeGraph::start().await;
    let table = graph.whatsapp_table(&format!("\"+{}\"", WA_OWNER.wa_id));
    let secrets = whatsapp_secrets(ACCESS_TOKEN);
    let home = home(&model, &transcription, &table, &secrets);
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;

    graph.add_media("AUDIO1", "audio/ogg; codecs=opus", VOICE);
    let voice = json!({"from": WA_OWNER.wa_id, "id": "wamid.V1", "timestamp": "1767225600",
        "type": "audio", "audio": {"id": "AUDIO1", "mime_type": "audio/ogg; codecs=opus",
        "sha256": "x", "voice": true}});
    webhook.deliver_from(&WA_OWNER, vec![voice]).await;
    // WhatsApp says no length: the voice note is said without one.
    logged_user_message(&home, "[voice, transcribing]").await;
    let heard = logged_user_message(&home, "[voice] ").await;
    assert_eq!(heard.text, "[voice] the meeting moved to friday");
    assert_eq!(heard.source, "whatsapp");
    assert_eq!(transcription.wait_for(1).await[0].file, VOICE);

    graph.add_media("DOC1", "text/plain", b"Milk\nEggs\n");
    let document = json!({"from": WA_OWNER.wa_id, "id": "wamid.D1", "timestamp": "1767225601",
        "type": "document", "document": {"id": "DOC1", "mime_type": "text/plain",
        "sha256": "y", "filename": "list.txt", "caption": "buy these"}});
    webhook.deliver_from(&WA_OWNER, vec![document]).await;
    let said = logged_user_message(&home, "[file: \"list.txt\"").await;
    assert_eq!(said.text, "[file: \"list.txt\", 1 page] buy these");
}
