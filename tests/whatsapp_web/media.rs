//! Voice notes and documents through the linked device: WhatsApp delivers
//! an audio message and a PDF as the library converts them, the bridge
//! downloads each through the device, stores it in the daemon and submits
//! it; the daemon transcribes the voice note (the fake transcription
//! endpoint) and the agent answers its words, then reads the PDF with
//! `read_attachment`. A voice note delivered again is logged, downloaded
//! into the same stored file and transcribed once, also when the bridge
//! was killed after the daemon logged it and before WhatsApp was told.
//!
//! The fake device stands where the library's `Client::download` does:
//! that call asks WhatsApp's servers for a media connection over the
//! logged-in session, then fetches the encrypted file from their CDN over
//! HTTPS and decrypts it, which no test without a real account reaches.
//! Everything from the downloaded bytes on is the bridge's real code.

use super::device::*;
use hearth_bridges::whatsapp::web::device::{AudioMessage, DocumentMessage, Received, WebFile};
use hearth_daemon::documents::tiny_pdf;
use hearth_protocol::Kind;
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::fake_transcription::{Answer, FakeTranscription};
use hearth_tests::harness::{logged_user_message, TestHome};
use std::os::unix::fs::PermissionsExt;
use tokio::task::LocalSet;

/// A voice note's bytes: enough of an Ogg file for hearth, which never
/// decodes it.
const VOICE: &[u8] = b"OggS\0\x02\0\0\0\0\0\0\0\0 a voice note from the linked device";

/// A home whose daemon talks to `model` and hears voice notes through
/// `transcription`, with no bridge of its own.
fn hearing_home(model: &FakeModel, transcription: &FakeTranscription) -> TestHome {
    let home = TestHome::new(bins!());
    home.use_model_and_transcription(&model.base_url(), &transcription.base_url(), "");
    home
}

/// The voice note of message `id`, 42 seconds long, held by `device`.
fn voice_note(device: &FakeDevice, id: &str) -> Received {
    let path = format!("/v/t62.7117-24/{id}");
    device.hold_file(&path, VOICE);
    let audio = AudioMessage {
        direct_path: Some(path),
        mimetype: Some("audio/ogg; codecs=opus".into()),
        seconds: Some(42),
        ptt: Some(true),
        ..Default::default()
    };
    file_from(FRIEND, id, WebFile::Audio(Box::new(audio)), None)
}

/// A message from `number` carrying `file`, with `caption` as its words.
fn file_from(number: &str, id: &str, file: WebFile, caption: Option<&str>) -> Received {
    Received {
        text: caption.map(str::to_string),
        file: Some(file),
        ..from(number, "Bea", id, "")
    }
}

/// The files of the home's `folder` whose names end with `ext`; every
/// file there is checked to be the owner's only.
fn stored(home: &TestHome, folder: &str, ext: &str) -> Vec<Vec<u8>> {
    let dir = home.path().join(folder);
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{}", path.display());
        if path.to_string_lossy().ends_with(ext) {
            files.push(std::fs::read(&path).unwrap());
        }
    }
    files
}

#[tokio::test]
async fn a_voice_note_is_heard_once_and_a_pdf_read_through_the_linked_device() {
    LocalSet::new()
        .run_until(async {
            let model = FakeModel::start().await;
            let transcription = FakeTranscription::start().await;
            transcription.push(Answer::text("remind me to water the plants", 42.0));
            let home = hearing_home(&model, &transcription);
            let _daemon = home.start();
            let config = parse(&web_table(&[FRIEND]));
            let device = FakeDevice::new();
            let mut bridge = Bridge::start(&home, &config, &device).await;

            // A voice note, as the library converts WhatsApp's audio message.
            let voice = voice_note(&device, "3EB0VOICE1");
            model.push(Reply::text("I will remind you."));
            assert!(bridge.deliver(vec![voice.clone()]).await);
            let placeholder = logged_user_message(&home, "[voice 0:42, transcribing]").await;
            assert_eq!(placeholder.source, "whatsapp");
            let heard = logged_user_message(&home, "[voice 0:42] ").await;
            assert_eq!(heard.text, "[voice 0:42] remind me to water the plants");
            assert_eq!(transcription.wait_for(1).await[0].file, VOICE);
            let sent = sends(&device, 1).await;
            assert_eq!(
                (sent[0].to.as_str(), sent[0].text.as_str()),
                (FRIEND, "I will remind you.")
            );
            // The agent answered the words, as if they had been typed.
            let asked = model.requests()[0].body.to_string();
            assert!(asked.contains("remind me to water the plants"), "{asked}");
            assert_eq!(stored(&home, "audio", ".ogg"), vec![VOICE.to_vec()]);

            // WhatsApp delivers it again: the same message, heard once.
            assert!(bridge.deliver(vec![voice]).await);
            assert_eq!(device.0.downloads.borrow().len(), 2);
            assert_eq!(stored(&home, "audio", ".ogg").len(), 1);
            let voices: Vec<String> = home
                .history()
                .await
                .into_iter()
                .filter(|m| m.kind == Kind::User && m.text.starts_with("[voice"))
                .map(|m| m.text)
                .collect();
            assert_eq!(voices.len(), 2, "{voices:?}");
            assert_eq!(transcription.received().len(), 1);

            // A PDF with a caption: said with its pages, read by the agent.
            let pdf = tiny_pdf(&["Deposit: two months of rent."]);
            device.hold_file("/v/t62.7119-24/lease", &pdf);
            let document = file_from(
                FRIEND,
                "3EB0DOC1",
                WebFile::Document(Box::new(DocumentMessage {
                    direct_path: Some("/v/t62.7119-24/lease".into()),
                    mimetype: Some("application/pdf".into()),
                    file_name: Some("lease.pdf".into()),
                    caption: Some("what is the deposit?".into()),
                    ..Default::default()
                })),
                Some("what is the deposit?"),
            );
            let id = home.history().await.last().map_or(0, |last| last.id + 1);
            model.push(Reply::tool_call(
                "read_attachment",
                format!(r#"{{"id": {id}, "page": 1}}"#),
            ));
            model.push(Reply::text("Two months' rent."));
            assert!(bridge.deliver(vec![document]).await);
            let said = logged_user_message(&home, "[file: \"lease.pdf\"").await;
            assert_eq!(said.id, id);
            assert_eq!(
                said.text,
                "[file: \"lease.pdf\", 1 page] what is the deposit?"
            );
            let sent = sends(&device, 2).await;
            assert_eq!(sent[1].text, "Two months' rent.");
            let log = home.history().await;
            let read = log.iter().find(|m| m.kind == Kind::Tool).unwrap();
            assert!(
                read.text.contains("page 1 of 1")
                    && read.text.contains("Deposit: two months of rent."),
                "{}",
                read.text
            );
            assert_eq!(stored(&home, "documents", ".pdf"), vec![pdf]);
            bridge.stop().await;
        })
        .await;
}

#[tokio::test]
async fn a_voice_note_whose_bridge_was_killed_before_whatsapp_was_told_is_heard_once() {
    LocalSet::new()
        .run_until(async {
            let model = FakeModel::start().await;
            let transcription = FakeTranscription::start().await;
            transcription.push(Answer::text("remind me to water the plants", 42.0));
            let home = hearing_home(&model, &transcription);
            let _daemon = home.start();
            let config = parse(&web_table(&[FRIEND]));
            let device = FakeDevice::new();
            let bridge = Bridge::start(&home, &config, &device).await;

            // WhatsApp delivers a voice note and a file in one batch; the
            // voice note is logged, the file's download hangs, and the
            // bridge dies there, before it tells WhatsApp it has either.
            model.push(Reply::text("I will remind you."));
            let voice = voice_note(&device, "3EB0VOICE2");
            device.hold_file("/v/t62.7119-24/list", b"Milk\nEggs\n");
            device.stall_once("/v/t62.7119-24/list");
            let list = DocumentMessage {
                direct_path: Some("/v/t62.7119-24/list".into()),
                mimetype: Some("text/plain".into()),
                file_name: Some("list.txt".into()),
                ..Default::default()
            };
            let list = file_from(FRIEND, "3EB0LIST", WebFile::Document(Box::new(list)), None);
            let answer = bridge.offer(vec![voice.clone(), list.clone()]);
            logged_user_message(&home, "[voice 0:42] ").await;
            bridge.kill().await;
            assert!(!answer.await.unwrap_or(false), "WhatsApp was never told");

            // WhatsApp delivers both again to the bridge started anew.
            model.push(Reply::text("Milk and eggs."));
            let mut bridge = Bridge::start(&home, &config, &device).await;
            assert!(bridge.deliver(vec![voice, list]).await);
            sends(&device, 2).await;
            // Once the second answer is out, a second answer to the voice
            // note would have gone before it.
            assert_eq!(
                device.sent_to(FRIEND),
                ["I will remind you.", "Milk and eggs."]
            );
            let log = home.history().await;
            let user: Vec<&str> = log
                .iter()
                .filter(|m| m.kind == Kind::User)
                .map(|m| m.text.as_str())
                .collect();
            assert_eq!(
                user,
                [
                    "[voice 0:42, transcribing]",
                    "[voice 0:42] remind me to water the plants",
                    "[file: \"list.txt\", 1 page]"
                ]
            );
            assert_eq!(transcription.received().len(), 1, "transcribed once");
            assert_eq!(stored(&home, "audio", ".ogg"), vec![VOICE.to_vec()]);
            bridge.stop().await;
        })
        .await;
}
