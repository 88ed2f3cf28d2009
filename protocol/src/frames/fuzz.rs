//! Property tests of [`ClientFrame::decode`]: whatever text arrives, it
//! answers a frame or an error with a code, never a panic; a valid frame
//! round-trips through `encode`.
use super::*;
use proptest::prelude::*;
use serde_json::{json, Value};

/// Text of every kind: arbitrary characters, and JSON-ish punctuation.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), "[{}\\[\\]\":,\\\\a-z0-9 ]{0,48}"]
}

/// A valid frame of every type, as JSON, with arbitrary field values.
fn valid_frame() -> impl Strategy<Value = Value> {
    prop_oneof![
        (text(), any::<Option<u64>>()).prop_map(|(client, since)| {
            let mut hello = json!({"type": "hello", "client": client, "version": PROTOCOL_VERSION});
            if let Some(since) = since {
                hello["since"] = json!(since);
            }
            hello
        }),
        (text(), "[a-z]{1,12}", proptest::option::of(text())).prop_map(|(text, source, key)| {
            json!({"type": "submit", "text": text, "source": source, "key": key})
        }),
        (text(), "[a-z]{1,12}")
            .prop_map(|(text, source)| json!({"type": "note", "text": text, "source": source})),
        Just(json!({"type": "interrupt"})),
        (any::<Option<u64>>(), any::<Option<u32>>()).prop_map(
            |(before, limit)| json!({"type": "history", "before": before, "limit": limit})
        ),
        Just(json!({"type": "status"})),
        (text(), text())
            .prop_map(|(key, text)| json!({"type": "notify", "key": key, "text": text})),
        (text(), text())
            .prop_map(|(when, text)| json!({"type": "schedule_add", "when": when, "text": text})),
        Just(json!({"type": "schedule_list"})),
        any::<i64>().prop_map(|id| json!({"type": "schedule_cancel", "id": id})),
        text().prop_map(|path| json!({"type": "backup", "path": path})),
        text().prop_map(|name| json!({"type": "state_get", "name": name})),
        (text(), text())
            .prop_map(|(name, value)| json!({"type": "state_set", "name": name, "value": value})),
        any::<Option<u32>>().prop_map(|days| json!({"type": "stats", "days": days})),
    ]
}

/// One edit of a frame's text, on character boundaries.
#[derive(Debug, Clone)]
enum Edit {
    Cut(usize),
    Delete(usize, usize),
    Insert(usize, String),
    Replace(usize, char),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Cut),
        (any::<usize>(), 1..8usize).prop_map(|(at, len)| Edit::Delete(at, len)),
        (any::<usize>(), "[{}\\[\\]\":,\\\\a-z0-9 ]{1,4}|.{1,2}")
            .prop_map(|(at, text)| Edit::Insert(at, text)),
        (any::<usize>(), any::<char>()).prop_map(|(at, ch)| Edit::Replace(at, ch)),
    ]
}

fn apply(text: &str, edit: &Edit) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = |n: usize| n % (chars.len() + 1);
    let mut out = chars.clone();
    match edit {
        Edit::Cut(n) => out.truncate(at(*n)),
        Edit::Delete(n, len) => {
            let from = at(*n);
            out.drain(from..(from + len).min(chars.len()));
        }
        Edit::Insert(n, text) => {
            let from = at(*n);
            out.splice(from..from, text.chars());
        }
        Edit::Replace(n, ch) => {
            if !chars.is_empty() {
                out[n % chars.len()] = *ch;
            }
        }
    }
    out.into_iter().collect()
}

/// What every outcome of `decode` must be: a frame that round-trips,
/// or an error with a code and a message.
fn decoded_or_refused(text: &str) {
    match ClientFrame::decode(text) {
        Ok(frame) => assert_eq!(ClientFrame::decode(&frame.encode()), Ok(frame)),
        Err(err) => {
            assert!(
                matches!(
                    err.code,
                    ErrorCode::BadFrame | ErrorCode::UnknownType | ErrorCode::TooLarge
                ),
                "{err:?}"
            );
            assert!(!err.message.is_empty());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_text_is_decoded_or_refused(text in text()) {
        decoded_or_refused(&text);
    }

    #[test]
    fn valid_frames_round_trip(frame in valid_frame()) {
        let decoded = ClientFrame::decode(&frame.to_string())
            .unwrap_or_else(|err| panic!("{frame}: {err}"));
        prop_assert_eq!(ClientFrame::decode(&decoded.encode()), Ok(decoded));
    }

    #[test]
    fn mutated_frames_are_decoded_or_refused(
        frame in valid_frame(),
        edits in proptest::collection::vec(edit(), 1..4),
    ) {
        let mut text = frame.to_string();
        for edit in &edits {
            text = apply(&text, edit);
        }
        decoded_or_refused(&text);
    }

    #[test]
    fn a_known_type_with_wrong_fields_is_a_bad_frame(
        frame in valid_frame(),
        field in "[a-z_]{1,10}",
        value in prop_oneof![Just(json!(null)), any::<i64>().prop_map(|n| json!(n)), text().prop_map(|t| json!(t)), Just(json!([1, {}]))],
    ) {
        let mut frame = frame;
        frame[field.as_str()] = value;
        if field == "type" {
            // Another type altogether: any refusal will do.
            decoded_or_refused(&frame.to_string());
        } else if let Err(err) = ClientFrame::decode(&frame.to_string()) {
            prop_assert_eq!(err.code, ErrorCode::BadFrame, "{}", err.message);
        }
    }
}
