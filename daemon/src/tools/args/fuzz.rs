//! Property tests of the argument validator: no bytes make it panic; any
//! JSON value serde_json writes is read back the same; every refusal is a
//! specific error, its byte offset within the text.

use super::*;
use proptest::prelude::*;
use serde_json::json;

/// Any JSON value, a few levels deep (object keys are unique).
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// The schema of a shell-like tool, with each keyword the checker knows.
fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout_secs": {"type": "integer", "minimum": 1, "maximum": 600},
            "mode": {"enum": ["fast", "slow"]},
            "paths": {"type": "array", "items": {"type": "string"}},
            "limit": {"type": ["integer", "null"]}
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

/// Arguments for [`schema`]: objects of its properties (and one more) with
/// values of any type, so every check gets to run.
fn arguments() -> impl Strategy<Value = Value> {
    let names = vec!["command", "timeout_secs", "mode", "paths", "limit", "other"];
    let field = prop_oneof![
        value(),
        Just(json!("fast")),
        (0i64..700).prop_map(|n| json!(n)),
        proptest::collection::vec(any::<String>(), 0..3).prop_map(|items| json!(items)),
    ];
    prop_oneof![
        value(),
        proptest::collection::btree_map(proptest::sample::select(names), field, 0..6).prop_map(
            |map| {
                Value::Object(
                    map.into_iter()
                        .map(|(name, value)| (name.to_string(), value))
                        .collect(),
                )
            }
        ),
    ]
}

/// The byte offset an error names, for the errors that name one.
fn offset(err: &ArgsError) -> Option<usize> {
    match err {
        ArgsError::Utf8 { at }
        | ArgsError::End { at, .. }
        | ArgsError::Unexpected { at, .. }
        | ArgsError::Trailing { at }
        | ArgsError::RepeatedKey { at, .. }
        | ArgsError::LoneSurrogate { at, .. }
        | ArgsError::BadEscape { at }
        | ArgsError::Control { at, .. }
        | ArgsError::BadNumber { at, .. }
        | ArgsError::TooDeep { at } => Some(*at),
        _ => None,
    }
}

/// Bytes that look like arguments: JSON punctuation, escapes, digits.
fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            proptest::sample::select(b"{}[]\",:\\-+.eEuU0123456789 \ttrfalsenul".to_vec()),
            any::<u8>(),
        ],
        0..64,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_are_read_or_refused_at_a_byte_within_them(bytes in jsonish()) {
        match parse(&bytes) {
            Ok(value) => {
                // What we accept, serde_json reads the same.
                let text = std::str::from_utf8(&bytes).expect("accepted text is UTF-8");
                prop_assert_eq!(serde_json::from_str::<Value>(text).ok(), Some(value));
            }
            Err(err) => {
                let at = offset(&err).expect("a syntax error names its byte");
                prop_assert!(at <= bytes.len(), "{} in {} bytes", err, bytes.len());
                prop_assert!(err.to_string().starts_with("arguments: "));
            }
        }
    }

    #[test]
    fn what_serde_json_writes_is_read_as_serde_json_reads_it(value in value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        // Compared with serde_json's own reading: both read numbers alike.
        let expected: Value = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(parse(text.as_bytes()), Ok(expected));
    }

    #[test]
    fn a_value_against_a_schema_passes_or_names_what_is_wrong(value in arguments()) {
        let text = value.to_string();
        match validate(&text, &schema()) {
            Ok(checked) => {
                prop_assert_eq!(Some(checked), serde_json::from_str::<Value>(&text).ok());
                prop_assert!(value.is_object());
            }
            Err(err) => {
                prop_assert!(offset(&err).is_none(), "valid JSON refused as syntax: {}", err);
                let said = err.to_string();
                prop_assert!(
                    said.contains("the arguments") || said.contains('`'),
                    "names the place or the property: {}",
                    said
                );
            }
        }
    }

    #[test]
    fn cut_or_changed_arguments_never_panic(
        cut in any::<usize>(),
        at in any::<usize>(),
        byte in any::<u8>(),
    ) {
        let text = br#"{"command": "ls -la \u00e9", "timeout_secs": 5, "paths": ["a", "b"]}"#;
        let cut_text = &text[..cut % (text.len() + 1)];
        let _ = validate(&String::from_utf8_lossy(cut_text), &schema());
        let mut changed = text.to_vec();
        changed[at % text.len()] = byte;
        match parse(&changed) {
            Ok(value) => { let _ = check(&value, &schema()); }
            Err(err) => prop_assert!(offset(&err).is_some_and(|at| at <= changed.len())),
        }
    }
}
