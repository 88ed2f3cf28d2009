//! End-to-end: voice notes in a real `hearthd`, transcribed by a fake
//! OpenAI transcription endpoint. A voice note is logged at once as
//! `[voice 0:42, transcribing]`, acknowledged, transcribed in the
//! background and its transcript taken by the turn that waits for it; a
//! redelivery is logged and transcribed once; an outage loses nothing
//! (the message says so in words, and `hearth transcribe ID` tries again),
//! nor does a daemon killed mid-transcription; the cost shows in
//! `hearth stats`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::fake_transcription::{send_keyed_voice_note, Answer, FakeTranscription};
use hearth_tests::harness::{
    eventually, logged_user_message, model_table, Client, Daemon, TestHome,
};

/// A voice note's bytes: enough of an Ogg file for hearth, which never
/// decodes it.
const VOICE: &[u8] = b"OggS\0\x02\0\0\0\0\0\0\0\0 a voice note";

fn home(model: &FakeModel, transcription: &FakeTranscription, extra: &str) -> TestHome {
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "{}\n[transcription]\nbase_url = \"{}\"\nmodel = \"whisper-1\"\nlanguage = \"en\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\nretry_delay_ms = 1\nwait_secs = 60\n{extra}",
        model_table("openai-chat", &model.base_url()),
        transcription.base_url(),
    ));
    home
}

/// Stores the voice note and submits it as the Telegram bridge would.
async fn send_voice(client: &mut Client, key: &str, duration_secs: u32) -> (u64, bool) {
    send_keyed_voice_note(client, "telegram", Some(key), VOICE, duration_secs).await
}

#[tokio::test]
async fn a_voice_note_is_heard_once_however_often_it_is_delivered_and_its_cost_is_shown() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("noted"));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::text("buy milk on the way home", 42.0));
    let home = home(&model, &transcription, "");
    let _daemon = Daemon::start(&home);
    let mut client = home.connect("bridge", None).await;

    let (id, duplicate) = send_voice(&mut client, "telegram:1:77", 42).await;
    assert!(!duplicate);
    let reply = client.reply_to(id).await;
    assert_eq!(reply.text.as_deref(), Some("noted"));

    // The turn waited for the transcript and took it with the voice note.
    let log = home.history().await;
    let voice = log.iter().find(|m| m.id == id).unwrap();
    assert_eq!(voice.text, "[voice 0:42, transcribing]");
    let transcript = logged_user_message(&home, "[voice 0:42] ").await;
    assert_eq!(transcript.text, "[voice 0:42] buy milk on the way home");
    assert_eq!(transcript.source, "telegram");
    assert!(reply.answers.contains(&transcript.id), "{reply:?}");
    let requests = model.requests();
    assert_eq!(requests.len(), 1, "one turn answered both");
    let sent = requests[0].body.to_string();
    assert!(sent.contains("buy milk on the way home"), "{sent}");

    // The request was OpenAI's: the audio, the model, the language, JSON.
    let received = transcription.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.refused, None);
    assert_eq!(request.path, "/v1/audio/transcriptions");
    assert_eq!(request.fields["model"], "whisper-1");
    assert_eq!(request.fields["language"], "en");
    assert_eq!(request.fields["response_format"], "json");
    assert_eq!(request.file, VOICE);
    assert_eq!(request.file_type, "audio/ogg");
    assert!(request.file_name.ends_with(".ogg"), "{}", request.file_name);
    assert_eq!(
        request.authorization.as_deref(),
        Some("Bearer sk-test-secret")
    );

    // The platform delivers it again: the same message, not transcribed again.
    let (again, duplicate) = send_voice(&mut client, "telegram:1:77", 42).await;
    assert_eq!((again, duplicate), (id, true));
    let (after, _) = client.submit("and bread", "telegram", None).await;
    client.reply_to(after).await;
    assert_eq!(transcription.received().len(), 1, "transcribed once");

    // 42 seconds of whisper-1 at $0.006 a minute.
    let stats = home.hearth_async(&["stats", "--json"]).await;
    let line = String::from_utf8_lossy(&stats.stdout).to_string();
    let row: serde_json::Value = serde_json::from_str(line.trim()).expect("one row");
    assert_eq!(row["transcriptions"], 1, "{line}");
    let cost = row["transcription_usd"].as_f64().unwrap();
    assert!((cost - 0.0042).abs() < 1e-9, "{line}");
    let table = home.hearth_async(&["stats"]).await;
    let table = String::from_utf8_lossy(&table.stdout).to_string();
    assert!(table.contains("(1 voice note $0.0042)"), "{table}");
}

#[tokio::test]
async fn a_transcription_outage_loses_nothing_and_hearth_transcribe_tries_again() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("sorry, I could not hear it"));
    let transcription = FakeTranscription::start().await;
    transcription.set_default(Answer::Fail(503));
    let home = home(&model, &transcription, "tries = 3\n");
    let _daemon = Daemon::start(&home);
    let mut client = home.connect("bridge", None).await;

    let (id, _) = send_voice(&mut client, "telegram:1:80", 5).await;
    let failed = logged_user_message(&home, "[voice 0:05: could not transcribe").await;
    assert!(failed.text.contains("answered 503"), "{}", failed.text);
    assert_eq!(transcription.received().len(), 3, "every try was made");
    client.reply_to(id).await;

    // The service is back: the stored audio is tried again on request.
    transcription.set_default(Answer::text("call mum tonight", 5.0));
    let said = home.hearth_async(&["transcribe", &id.to_string()]).await;
    assert!(said.status.success(), "{said:?}");
    let heard = logged_user_message(&home, "[voice 0:05] ").await;
    assert_eq!(heard.text, "[voice 0:05] call mum tonight");

    // The failure's own id names the voice note too.
    let said = home
        .hearth_async(&["transcribe", &failed.id.to_string()])
        .await;
    assert!(said.status.success(), "{said:?}");
    eventually("a second transcript", || async {
        let log = home.history().await;
        let heard = log
            .iter()
            .filter(|m| m.text == "[voice 0:05] call mum tonight");
        (heard.count() == 2).then_some(())
    })
    .await;
    let (words, _) = client.submit("just words", "telegram", None).await;
    let refused = home.hearth_async(&["transcribe", &words.to_string()]).await;
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(why.contains("is not a voice note"), "{why}");
}

#[tokio::test]
async fn a_voice_note_left_pending_by_a_killed_daemon_is_transcribed_after_the_restart() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("got it"));
    let transcription = FakeTranscription::start().await;
    transcription.push(Answer::Stall);
    let home = home(&model, &transcription, "");
    let mut daemon = Daemon::start(&home);
    let mut client = home.connect("bridge", None).await;
    let (id, _) = send_voice(&mut client, "telegram:1:90", 3).await;
    transcription.wait_for(1).await;
    daemon.kill9();
    drop(client);

    transcription.set_default(Answer::text("after the restart", 3.0));
    let _daemon = Daemon::start(&home);
    let heard = logged_user_message(&home, "[voice 0:03] ").await;
    assert_eq!(heard.text, "[voice 0:03] after the restart");
    let mut client = home.connect("watcher", Some(0)).await;
    let reply = client.reply_to(id).await;
    assert!(reply.answers.contains(&heard.id), "{reply:?}");
    let log = home.history().await;
    let voices = log
        .iter()
        .filter(|m| m.text.starts_with("[voice 0:03"))
        .count();
    assert_eq!(voices, 2, "one voice note and one transcript");
}
