//! End-to-end: documents in a real `hearthd`. A small real PDF, written by
//! hand by the test, is stored with `media_put`, said in its message as
//! `[file: "lease.pdf", 2 pages]`, and read back page by page by the agent
//! with `read_attachment`; reading it taints the turn, so an acting tool
//! then needs a person's yes. An encrypted or broken PDF is refused with
//! the reason and nothing is logged; `hearth send --file` attaches a text
//! file. A PDF bomb (a few kilobytes that parse into gigabytes) is read in
//! the reader process and refused there: hearthd stays small and answers
//! the next message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_daemon::documents::{bomb_pdf, tiny_pdf};
use hearth_protocol::image::encode;
use hearth_protocol::{ClientFrame, ErrorCode, EventKind, Kind, MediaKind, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{eventually, process_gone, Client, Daemon, TestHome};

fn home(model: &FakeModel) -> TestHome {
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    home
}

async fn put(client: &mut Client, media_type: &str, bytes: &[u8], name: &str) -> ServerFrame {
    client
        .request(ClientFrame::MediaPut {
            media_type: media_type.into(),
            data_base64: encode(bytes),
            name: Some(name.into()),
            duration_secs: None,
        })
        .await
}

/// The id the next message will get.
async fn next_id(home: &TestHome) -> u64 {
    home.history().await.last().map_or(0, |last| last.id + 1)
}

#[tokio::test]
async fn a_pdf_from_the_phone_is_read_page_by_page_and_taints_the_turn() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let _daemon = Daemon::start(&home);
    let mut client = home.connect("bridge", None).await;

    let pdf = tiny_pdf(&[
        "Rent: 900 EUR a month.",
        "Notice: three months, in writing.",
    ]);
    let stored = match put(&mut client, "application/pdf", &pdf, "lease.pdf").await {
        ServerFrame::MediaStored(stored) => stored,
        other => panic!("expected media_stored, got {other:?}"),
    };
    assert_eq!((stored.kind, stored.pages), (MediaKind::Document, Some(2)));

    let id = next_id(&home).await;
    model.push(Reply::tool_call(
        "read_attachment",
        format!(r#"{{"id": {id}, "page": 2}}"#),
    ));
    model.push(Reply::tool_call("shell", r#"{"command": "echo hi"}"#));
    model.push(Reply::text("Three months' notice, in writing."));
    let answer = client
        .request(ClientFrame::Submit {
            text: "how much notice must I give?".into(),
            source: "whatsapp".into(),
            key: Some("wa:1".into()),
            images: Vec::new(),
            person: None,
            media: vec![stored.attachment()],
        })
        .await;
    assert!(
        matches!(answer, ServerFrame::Ack { id: acked, .. } if acked == id),
        "{answer:?}"
    );
    // The document's words tainted the turn: the shell call waits for a
    // person, and says why.
    let asking = client
        .wait_for(|event| event.kind == EventKind::Approval)
        .await;
    let approval = asking.approval.clone().expect("the call that waits");
    assert_eq!(approval.tool, "shell");
    let said = asking.text.clone().unwrap_or_default();
    assert!(said.contains("document"), "{said}");
    client.approve(&approval.id, false).await;
    let reply = client.reply_to(id).await;
    assert_eq!(
        reply.text.as_deref(),
        Some("Three months' notice, in writing.")
    );

    let log = home.history().await;
    let asked = log.iter().find(|m| m.id == id).unwrap();
    assert_eq!(
        asked.text,
        "[file: \"lease.pdf\", 2 pages] how much notice must I give?"
    );
    let tools: Vec<_> = log.iter().filter(|m| m.kind == Kind::Tool).collect();
    assert!(
        tools[0].text.contains("page 2 of 2") && tools[0].text.contains("three months"),
        "{}",
        tools[0].text
    );
    assert!(tools[1].text.contains("denied"), "{}", tools[1].text);
}

#[tokio::test]
async fn an_encrypted_or_broken_pdf_is_refused_with_the_reason() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let _daemon = Daemon::start(&home);
    let mut client = home.connect("bridge", None).await;
    let pdf = String::from_utf8(tiny_pdf(&["secret"])).unwrap();
    let encrypted = pdf.replace("/Root 1 0 R", "/Root 1 0 R /Encrypt 3 0 R /ID [<00> <00>]");
    for (bytes, why) in [
        (encrypted.into_bytes(), "PDF"),
        (b"%PDF-1.4\nnot really".to_vec(), "cannot be read"),
        (b"not a pdf".to_vec(), "not application/pdf"),
    ] {
        match put(&mut client, "application/pdf", &bytes, "x.pdf").await {
            ServerFrame::Error { code, message } => {
                assert!(
                    matches!(code, ErrorCode::Refused | ErrorCode::BadFrame),
                    "{code:?}"
                );
                assert!(message.contains(why), "{message}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    assert!(home.history().await.iter().all(|m| m.kind != Kind::User));
}

/// The peak resident memory of process `pid` (`VmHWM`), in bytes.
fn peak_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .unwrap();
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|kb| kb.parse().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test]
async fn a_pdf_bomb_fails_alone_and_the_daemon_stays_small() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("still here"));
    let home = home(&model);
    let daemon = Daemon::start(&home);
    let mut client = home.connect("bridge", None).await;

    let bomb = bomb_pdf(4);
    assert!(bomb.len() < 200_000, "{} bytes", bomb.len());
    match put(&mut client, "application/pdf", &bomb, "bomb.pdf").await {
        ServerFrame::Error { code, message } => {
            assert_eq!(code, ErrorCode::Refused);
            assert!(
                message.contains("the PDF needed more than 512 MB to read; it was not read"),
                "{message}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    // The reading happened in the reader, not in hearthd.
    let peak = peak_memory(daemon.pid());
    assert!(peak < 200 * 1024 * 1024, "hearthd peaked at {peak} bytes");
    // The log is read from hearthd's stderr as it comes: waited for.
    eventually("the refusal in the daemon's log", || {
        let logged = daemon.log_text();
        std::future::ready(
            logged
                .contains("a document was refused: the PDF needed more than 512 MB")
                .then_some(()),
        )
    })
    .await;

    // The daemon goes on: the next message is answered, and an ordinary
    // PDF still reads.
    let (id, _) = client.submit("are you there?", "whatsapp", None).await;
    let reply = client.reply_to(id).await;
    assert_eq!(reply.text.as_deref(), Some("still here"));
    let pdf = tiny_pdf(&["An ordinary page."]);
    match put(&mut client, "application/pdf", &pdf, "ok.pdf").await {
        ServerFrame::MediaStored(stored) => assert_eq!(stored.pages, Some(1)),
        other => panic!("expected media_stored, got {other:?}"),
    }
    assert!(home
        .history()
        .await
        .iter()
        .all(|m| !m.text.contains("bomb")));
}

/// The document reader hearthd `pid` started, once one runs.
async fn reader_of(pid: u32) -> u32 {
    eventually("a document reader to run", || async move {
        std::fs::read_dir("/proc")
            .ok()?
            .flatten()
            .find_map(|entry| {
                let child: u32 = entry.file_name().to_str()?.parse().ok()?;
                let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).ok()?;
                let args: Vec<&[u8]> = cmdline.split(|byte| *byte == 0).collect();
                let ours = args.get(1) == Some(&&b"--document-reader"[..])
                    && args.get(2) == Some(&pid.to_string().as_bytes());
                ours.then_some(child)
            })
    })
    .await
}

/// A stop while a bomb is being read ends hearthd cleanly and the reader
/// with it; so does a SIGKILL of hearthd (the reader's parent-death
/// signal).
#[tokio::test]
async fn the_reader_dies_with_the_daemon_stopped_or_killed() {
    let model = FakeModel::start().await;
    let home = home(&model);
    for kill9 in [false, true] {
        let mut daemon = Daemon::start(&home);
        let mut client = home.connect("bridge", None).await;
        let putting = tokio::spawn(async move {
            let _ = put(&mut client, "application/pdf", &bomb_pdf(4), "bomb.pdf").await;
        });
        let reader = reader_of(daemon.pid()).await;
        if kill9 {
            daemon.kill9();
        } else {
            // Waits for the exit: a stop does not wait for the reading.
            assert!(daemon.stop(), "{}", daemon.log_text());
        }
        eventually("the reader to be gone", || {
            std::future::ready(process_gone(reader).then_some(()))
        })
        .await;
        putting.abort();
    }
}

#[tokio::test]
async fn hearth_send_attaches_a_text_file() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("read it"));
    let home = home(&model);
    let _daemon = Daemon::start(&home);
    let notes = home.path().join("notes.md");
    std::fs::write(&notes, "# Shopping\n- milk\n- bread\n").unwrap();
    let sent = home
        .hearth_async(&["send", "--file", notes.to_str().unwrap(), "sum", "it", "up"])
        .await;
    assert!(sent.status.success(), "{sent:?}");
    let log = home.history().await;
    let user = log.iter().find(|m| m.kind == Kind::User).unwrap();
    assert_eq!(user.text, "[file: \"notes.md\", 1 page] sum it up");

    let refused = home
        .hearth_async(&["send", "--file", "/nonexistent/archive.zip"])
        .await;
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr).to_string();
    assert!(why.contains("not a file hearth reads"), "{why}");
}
