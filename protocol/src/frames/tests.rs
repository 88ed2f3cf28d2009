use super::*;
use crate::Doing;

#[test]
fn submit_round_trips_with_default_source() {
    let frame = ClientFrame::decode(r#"{"type":"submit","text":"hi"}"#).unwrap();
    assert_eq!(
        frame,
        ClientFrame::Submit {
            text: "hi".into(),
            source: "terminal".into(),
            key: None,
            images: vec![],
            person: None,
            media: Vec::new(),
        }
    );
    assert_eq!(ClientFrame::decode(&frame.encode()).unwrap(), frame);
}

#[test]
fn decode_tells_the_ways_a_frame_is_wrong() {
    assert_eq!(
        ClientFrame::decode("not json").unwrap_err().code,
        ErrorCode::BadFrame
    );
    assert_eq!(
        ClientFrame::decode(r#"{"type":"launch"}"#)
            .unwrap_err()
            .code,
        ErrorCode::UnknownType
    );
    assert_eq!(
        ClientFrame::decode(r#"{"type":"submit"}"#)
            .unwrap_err()
            .code,
        ErrorCode::BadFrame
    );
    let big = format!(
        r#"{{"type":"submit","text":"{}"}}"#,
        "x".repeat(MAX_FRAME_BYTES)
    );
    assert_eq!(
        ClientFrame::decode(&big).unwrap_err().code,
        ErrorCode::TooLarge
    );
}

#[test]
fn a_key_said_twice_is_refused_not_read_as_the_last() {
    let twice = r#"{"type":"submit","text":"shown","source":"terminal","text":"run"}"#;
    let err = ClientFrame::decode(twice).unwrap_err();
    assert_eq!(err.code, ErrorCode::BadFrame);
    assert!(
        err.message.contains("`text` is given twice"),
        "{}",
        err.message
    );
    let nested = r#"{"type":"hello","client":"a","version":1,"client":"b"}"#;
    assert!(ClientFrame::decode(nested).is_err());
}

#[test]
fn stats_asks_for_a_week_unless_told() {
    let frame = ClientFrame::decode(r#"{"type":"stats"}"#).unwrap();
    assert_eq!(frame, ClientFrame::Stats { days: None });
    let frame = ClientFrame::Stats { days: Some(30) };
    assert_eq!(frame.encode(), r#"{"type":"stats","days":30}"#);
}

#[test]
fn approve_reads_with_or_without_a_person() {
    let frame = ClientFrame::decode(r#"{"type":"approve","id":"abc123","allow":true}"#).unwrap();
    assert_eq!(
        frame,
        ClientFrame::Approve {
            id: "abc123".into(),
            allow: true,
            by: None
        }
    );
    let frame = ClientFrame::Approve {
        id: "abc123".into(),
        allow: false,
        by: Some("@ada".into()),
    };
    assert_eq!(ClientFrame::decode(&frame.encode()).unwrap(), frame);
    assert_eq!(
        ClientFrame::decode(r#"{"type":"approve","id":"abc123"}"#)
            .unwrap_err()
            .code,
        ErrorCode::BadFrame
    );
}

#[test]
fn an_approval_event_carries_the_call_and_is_no_message() {
    let mut event = Event::signal(EventKind::Approval, "hearth", Some("shell `ls`".into()));
    event.approval = Some(Box::new(Approval {
        id: "abc123".into(),
        tool: "shell".into(),
        arguments: r#"{"command":"ls"}"#.into(),
        deadline: "2026-11-30T10:05:00+00:00".into(),
        timeout_secs: 300,
        allowed: None,
    }));
    let text = ServerFrame::Event(event.clone()).encode();
    assert!(text.contains(r#""kind":"approval""#), "{text}");
    assert!(!text.contains("allowed"), "{text}");
    let ServerFrame::Event(read) = ServerFrame::decode(&text).unwrap() else {
        panic!("not an event: {text}");
    };
    assert_eq!(read, event);
    assert_eq!(read.as_message(), None);
}

#[test]
fn only_image_put_may_be_larger_than_a_frame() {
    let data = "A".repeat(MAX_FRAME_BYTES + 8);
    let put = format!(r#"{{"type":"image_put","media_type":"image/png","data_base64":"{data}"}}"#);
    assert!(matches!(
        ClientFrame::decode(&put),
        Ok(ClientFrame::ImagePut { .. })
    ));
    let huge = "A".repeat(image::MAX_IMAGE_FRAME_BYTES);
    let put = format!(r#"{{"type":"image_put","media_type":"image/png","data_base64":"{huge}"}}"#);
    assert_eq!(
        ClientFrame::decode(&put).unwrap_err().code,
        ErrorCode::TooLarge
    );
    let submit = ClientFrame::decode(r#"{"type":"submit","text":"","images":["ab"]}"#).unwrap();
    assert!(matches!(submit, ClientFrame::Submit { images, .. } if images == ["ab"]));
    let stored = ServerFrame::ImageStored(ImageRef {
        sha256: "ab".into(),
        media_type: "image/png".into(),
        width: Some(1),
        height: None,
        name: None,
    });
    let text = stored.encode();
    assert_eq!(
        text,
        r#"{"type":"image_stored","sha256":"ab","media_type":"image/png","width":1}"#
    );
    assert_eq!(ServerFrame::decode(&text).unwrap(), stored);
}

#[test]
fn message_event_round_trips() {
    let message = Message {
        agent: "hearth".into(),
        id: 7,
        kind: Kind::Reply,
        source: "hearth".into(),
        text: "hello".into(),
        status: None,
        at: "2026-11-30T10:00:00+00:00".into(),
        answers: vec![5, 6],
        images: vec![],
        outbox: None,
        client: None,
        transcript_of: None,
    };
    let frame = ServerFrame::Event(Event::message(&message));
    let text = frame.encode();
    assert!(
        text.starts_with(r#"{"type":"event","kind":"reply""#),
        "{text}"
    );
    let ServerFrame::Event(event) = ServerFrame::decode(&text).unwrap() else {
        panic!("not an event: {text}");
    };
    assert_eq!(event.as_message(), Some(message));
}

#[test]
fn a_tool_message_carries_its_outbox_through_an_event() {
    let message = Message {
        agent: "hearth".into(),
        id: 9,
        kind: Kind::Tool,
        source: "hearth".into(),
        text: "whatsapp_send(…) → queued".into(),
        status: Some("ok".into()),
        at: "2026-11-30T10:00:00+00:00".into(),
        answers: vec![],
        images: vec![],
        outbox: Some(Outbox {
            via: "whatsapp".into(),
            to: "4915112345678".into(),
            text: "see you at 8".into(),
        }),
        client: None,
        transcript_of: None,
    };
    let text = ServerFrame::Event(Event::message(&message)).encode();
    assert!(
        text.contains(r#""outbox":{"via":"whatsapp","to":"4915112345678""#),
        "{text}"
    );
    let ServerFrame::Event(event) = ServerFrame::decode(&text).unwrap() else {
        panic!("{text}")
    };
    assert_eq!(event.as_message(), Some(message));
}

#[test]
fn memory_frames_read_with_their_defaults() {
    let frame = ClientFrame::decode(r#"{"type":"search","query":"plumber"}"#).unwrap();
    assert_eq!(
        frame,
        ClientFrame::Search {
            query: "plumber".into(),
            before: None,
            after: None,
            kind: None,
            source: None,
            limit: None
        }
    );
    assert_eq!(frame.encode(), r#"{"type":"search","query":"plumber"}"#);
    assert_eq!(
        ClientFrame::decode(r#"{"type":"memory"}"#).unwrap(),
        ClientFrame::Memory
    );
    assert_eq!(
        ClientFrame::decode(r#"{"type":"memory_show","id":8,"n":4}"#).unwrap(),
        ClientFrame::MemoryShow { id: 8, n: 4 }
    );
    assert_eq!(
        ClientFrame::decode(r#"{"type":"facts","add":"likes tea"}"#).unwrap(),
        ClientFrame::Facts {
            add: Some("likes tea".into()),
            remove: None
        }
    );
    let answer = ServerFrame::SearchResults {
        hits: vec![SearchHit {
            id: 3,
            n: 1,
            kind: "user".into(),
            source: "terminal".into(),
            at: "2026-11-30T10:00:00.000+00:00".into(),
            snippet: "the [plumber] is".into(),
        }],
    };
    assert_eq!(ServerFrame::decode(&answer.encode()).unwrap(), answer);
}

#[test]
fn an_activity_event_says_what_the_agent_does_in_its_own_words() {
    let activity = Activity {
        doing: Doing::Tool {
            name: "shell".into(),
            detail: Some("cargo build".into()),
            line: Some("Compiling hearth".into()),
            running: 1,
        },
        since: "2026-12-01T09:00:00+01:00".into(),
        compacting: 2,
    };
    let frame = ServerFrame::Event(Event::activity("hearth", activity.clone()));
    let text = frame.encode();
    assert!(
        text.contains(r#""kind":"activity""#) && text.contains(r#""state":"tool""#),
        "{text}"
    );
    let ServerFrame::Event(event) = ServerFrame::decode(&text).unwrap() else {
        panic!("an event")
    };
    assert_eq!(event.activity.as_deref(), Some(&activity));
    assert_eq!(event.as_message(), None);
    assert_eq!(
        activity.describe(),
        "shell: cargo build | Compiling hearth · compacting (2)"
    );
    let retry = Activity {
        doing: Doing::Retrying {
            attempt: 2,
            attempts: 4,
            reason: "HTTP 529 overloaded".into(),
            wait_ms: 1500,
        },
        since: String::new(),
        compacting: 0,
    };
    assert_eq!(
        retry.describe(),
        "retrying the model (2 of 4) in 1.5 s: HTTP 529 overloaded"
    );
    let idle = Activity {
        compacting: 3,
        ..Activity::idle(String::new())
    };
    assert_eq!(idle.describe(), "compacting memory (3 summaries)");
}

#[test]
fn stop_and_reload_are_frames_and_their_answers_read_back() {
    assert_eq!(
        ClientFrame::decode(r#"{"type":"stop"}"#).unwrap(),
        ClientFrame::Stop { restart: false }
    );
    assert_eq!(
        ClientFrame::Stop { restart: true }.encode(),
        r#"{"type":"stop","restart":true}"#
    );
    assert_eq!(
        ClientFrame::decode(r#"{"type":"reload"}"#).unwrap(),
        ClientFrame::Reload
    );
    let reloaded = ServerFrame::Reloaded {
        applied: vec!["budget".into()],
        needs_restart: vec!["listen".into()],
    };
    assert_eq!(ServerFrame::decode(&reloaded.encode()).unwrap(), reloaded);
}

#[test]
fn an_older_status_frame_still_reads() {
    let text = r#"{"type":"status","agent":"hearth","busy":false,"last_id":null,"waiting":0,"model":null,"clients":1,"pid":7,"version":"0.1.0"}"#;
    let ServerFrame::Status(status) = ServerFrame::decode(text).unwrap() else {
        panic!("a status")
    };
    assert_eq!(status.activity, None);
    assert!(status.bridges.is_empty());
}

#[test]
fn an_import_and_its_answer_read_back_and_an_unknown_field_is_refused() {
    let frame = ClientFrame::decode(
        r#"{"type":"import","from":"openclaw","messages":[{"kind":"user","text":"hi","at":"2025-01-02T10:00:00Z","key":"s:1:ab","session":"s"}],"dry_run":true}"#,
    )
    .unwrap();
    let ClientFrame::Import {
        from,
        messages,
        force,
        dry_run,
    } = &frame
    else {
        panic!("an import: {frame:?}")
    };
    assert_eq!((from.as_str(), *force, *dry_run), ("openclaw", false, true));
    assert_eq!(messages[0].kind, Kind::User);
    assert_eq!(ClientFrame::decode(&frame.encode()).unwrap(), frame);
    assert!(ClientFrame::decode(
        r#"{"type":"import","from":"openclaw","messages":[{"kind":"user","text":"hi","at":"x","key":"k","role":"user"}]}"#
    )
    .is_err());
    let answer = ServerFrame::Imported {
        imported: 3,
        known: 1,
        first_id: Some(0),
        last_id: Some(2),
    };
    assert_eq!(ServerFrame::decode(&answer.encode()).unwrap(), answer);
}
