//! A voice note from the phone in the terminal: its `[voice 0:42,
//! transcribing]` line, then its transcript on a line of its own that
//! says it follows on (`↳`), each once, live and in the history shown on
//! attach. `/file` attaches a document and a voice note from the terminal.

use super::pty::{count, Pty};
use super::{idle, key_env};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::fake_transcription::{send_voice_note, Answer, FakeTranscription};
use hearth_tests::harness::TestHome;

const VOICE: &[u8] = b"OggS\0\x02\0\0\0\0\0\0\0\0 a voice note";

/// A home whose daemon talks to `model` and hears voice notes through
/// `transcription`.
fn hearing_home(model: &FakeModel, transcription: &FakeTranscription) -> TestHome {
    let home = TestHome::new(bins!());
    home.use_model_and_transcription(&model.base_url(), &transcription.base_url(), "");
    home
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_notes_transcript_follows_it_once_live_and_in_history() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("I will remind you."));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::text("remind me to water the plants", 42.0));
    let home = hearing_home(&model, &transcription);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_attaches_a_document_and_a_voice_note_from_the_terminal() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("Done reading."));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::text("call the plumber", 3.0));
    let home = hearing_home(&model, &transcription);
    let _daemon = home.start();
    let notes = home.path().join("notes.md");
    std::fs::write(&notes, "# Shopping\n- milk\n").unwrap();
    let voice = home.path().join("memo.ogg");
    std::fs::write(&voice, VOICE).unwrap();
    let mut pty = Pty::attach(&home, &key_env());
    pty.wait_for("/help");

    pty.line(&format!("/file {} sum it up", notes.display()));
    let screen = pty.wait_until("the reply, and the turn's end", |screen| {
        screen.contains("Done reading.") && idle(screen)
    });
    assert_eq!(
        count(&screen, "› [file: \"notes.md\", 1 page] sum it up"),
        1,
        "{screen}"
    );

    pty.line(&format!("/file {}", voice.display()));
    let screen = pty.wait_until("the transcript, the reply, the turn's end", |screen| {
        count(screen, "Done reading.") == 2 && idle(screen)
    });
    assert_eq!(count(&screen, "› [voice, transcribing]"), 1, "{screen}");
    assert_eq!(
        count(&screen, "› ↳ [voice] call the plumber"),
        1,
        "{screen}"
    );
    pty.line("/quit");
    assert!(pty.wait_exit());
    // In the next session both are still yours: the transcript is the
    // words of the terminal that sent the voice note.
    let pty = Pty::attach(&home, &key_env());
    let again = pty.wait_for("call the plumber");
    assert_eq!(count(&again, "› ↳ [voice] call the plumber"), 1, "{again}");
    assert_eq!(count(&again, "› [voice, transcribing]"), 1, "{again}");
    let log = home.history().await;
    let user: Vec<&str> = log
        .iter()
        .filter(|m| m.kind == hearth_protocol::Kind::User)
        .map(|m| m.text.as_str())
        .collect();
    assert_eq!(
        user,
        [
            "[file: \"notes.md\", 1 page] sum it up",
            "[voice, transcribing]",
            "[voice] call the plumber"
        ]
    );
}
