//! A voice note from the phone in the terminal: its `[voice 0:42,
//! transcribing]` line, then its transcript on a line of its own that
//! says it follows on (`↳`), each once, live and in the history shown on
//! attach.

use crate::pty::{count, Pty};
use crate::{idle, key_env};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::fake_transcription::{send_voice_note, Answer, FakeTranscription};
use hearth_tests::harness::TestHome;

const VOICE: &[u8] = b"OggS\0\x02\0\0\0\0\0\0\0\0 a voice note";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_notes_transcript_follows_it_once_live_and_in_history() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("I will remind you."));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::Text {
        text: "remind me to water the plants".into(),
        seconds: 42.0,
    });
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n\
         [transcription]\nbase_url = \"{}\"\napi_key_env = \"HEARTH_TEST_KEY\"\n\
         retry_delay_ms = 1\n",
        model.base_url(),
        transcription.base_url(),
    ));
    let _daemon = home.start();
    let mut pty = Pty::attach(&home, &key_env());
    pty.wait_for("/help");

    let mut phone = home.connect("telegram", None).await;
    send_voice_note(&mut phone, "telegram", VOICE, 42).await;
    let placeholder = "[telegram] [voice 0:42, transcribing]";
    let heard = "[telegram] ↳ [voice 0:42] remind me to water the plants";
    let live = pty.wait_until("the reply, and the turn's end", |screen| {
        screen.contains("I will remind you.") && idle(screen)
    });
    for line in [placeholder, heard] {
        assert_eq!(count(&live, line), 1, "{line}:\n{live}");
    }
    assert_eq!(count(&live, "water the plants"), 1, "{live}");
    assert!(
        live.find(placeholder) < live.find(heard),
        "the transcript follows its voice note:\n{live}"
    );
    pty.line("/quit");
    assert!(pty.wait_exit());

    // Attached again: the history shows them as they were shown live.
    let pty = Pty::attach(&home, &key_env());
    let again = pty.wait_for("I will remind you.");
    for line in [placeholder, heard] {
        assert_eq!(count(&again, line), 1, "{line}:\n{again}");
    }
    assert_eq!(count(&again, "water the plants"), 1, "{again}");
}
