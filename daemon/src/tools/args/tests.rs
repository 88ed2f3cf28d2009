use super::*;
use serde_json::json;

fn shell_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "timeout_secs": {"type": "integer", "minimum": 1}
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

fn error(text: &str) -> String {
    parse(text.as_bytes()).unwrap_err().to_string()
}

#[test]
fn well_formed_values_parse_like_serde_json() {
    for text in [
        r#"{"command": "ls -la", "timeout_secs": 5}"#,
        r#"[1, -2, 3.5, 1e3, -0.25E-2, true, false, null, "", {}]"#,
        r#"  {"nested": {"a": [[], [{}]]}, "u": "\u00e9\ud83d\ude00\n\t\"\\\/"}  "#,
        r#""just a string""#,
        "0",
        r#"{"big": 123456789012345678901234567890}"#,
    ] {
        let ours = parse(text.as_bytes()).unwrap();
        let theirs: Value = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs, "{text}");
    }
}

#[test]
fn a_repeated_key_is_named_with_its_byte() {
    let text = r#"{"command": "ls", "command": "rm -rf /"}"#;
    assert_eq!(error(text), "arguments: repeated key `command` at byte 18");
    // The same key spelled with an escape is the same key.
    assert_eq!(
        parse(br#"{"a": 1, "\u0061": 2}"#).unwrap_err(),
        ArgsError::RepeatedKey {
            key: "a".into(),
            at: 9
        }
    );
    // Equal keys in different objects are fine.
    assert!(parse(br#"{"a": {"a": 1}, "b": {"a": 2}}"#).is_ok());
}

#[test]
fn an_unpaired_surrogate_is_refused() {
    assert_eq!(
        error(r#"{"a": "\ud800"}"#),
        "arguments: unpaired surrogate `\\ud800` at byte 7"
    );
    assert_eq!(
        parse(br#""x\udc00""#).unwrap_err(),
        ArgsError::LoneSurrogate {
            code: 0xdc00,
            at: 2
        }
    );
    // A high surrogate followed by something other than a low one.
    assert_eq!(
        parse(br#""\ud800\u0041""#).unwrap_err(),
        ArgsError::LoneSurrogate {
            code: 0xd800,
            at: 1
        }
    );
    assert_eq!(
        parse(br#""\ud83d\ude00""#).unwrap(),
        Value::String("😀".into())
    );
}

#[test]
fn nesting_is_bounded_at_256_levels() {
    let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(parse(ok.as_bytes()).is_ok());
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    assert_eq!(
        parse(deep.as_bytes()).unwrap_err(),
        ArgsError::TooDeep { at: MAX_DEPTH }
    );
    // Far deeper input fails the same way, without exhausting the stack.
    let abyss = "[{\"a\":".repeat(100_000);
    assert!(matches!(
        parse(abyss.as_bytes()),
        Err(ArgsError::TooDeep { .. })
    ));
}

#[test]
fn trailing_data_is_refused() {
    assert_eq!(
        error(r#"{"command": "ls"} {"command": "pwd"}"#),
        "arguments: extra data at byte 18 after the JSON value; send one object"
    );
    assert_eq!(parse(b"{} x").unwrap_err(), ArgsError::Trailing { at: 3 });
}

#[test]
fn invalid_utf8_is_refused_with_its_byte() {
    assert_eq!(
        parse(b"{\"a\": \"\xff\"}").unwrap_err(),
        ArgsError::Utf8 { at: 7 }
    );
}

#[test]
fn malformed_json_names_what_was_expected() {
    assert_eq!(
        error(r#"{"a": 1,}"#),
        "arguments: unexpected `}` at byte 8; expected a key in double quotes"
    );
    assert_eq!(
        error(r#"{"a" 1}"#),
        "arguments: unexpected `1` at byte 5; expected `:` after the key"
    );
    assert_eq!(
        error(r#"{"a": 1"#),
        "arguments: the JSON ends early at byte 7; expected `,` or `}`"
    );
    assert_eq!(
        error(r#"{'a': 1}"#),
        "arguments: unexpected `'` at byte 1; expected a key in double quotes"
    );
    assert_eq!(
        error("[1 2]"),
        "arguments: unexpected `2` at byte 3; expected `,` or `]`"
    );
    assert_eq!(
        error(r#"{"a": tru}"#),
        "arguments: unexpected `t` at byte 6; expected a JSON value"
    );
    assert_eq!(
        error(r#"{"a": "open"#),
        "arguments: the JSON ends early at byte 11; expected `\"` to close the string"
    );
    assert_eq!(
        error(""),
        "arguments: the JSON ends early at byte 0; expected a JSON value"
    );
}

#[test]
fn strings_refuse_raw_control_characters_and_bad_escapes() {
    assert_eq!(
        parse(b"\"a\nb\"").unwrap_err(),
        ArgsError::Control { code: b'\n', at: 2 }
    );
    assert_eq!(
        parse(br#""\x41""#).unwrap_err(),
        ArgsError::BadEscape { at: 1 }
    );
    assert_eq!(
        parse(br#""\u12g4""#).unwrap_err(),
        ArgsError::BadEscape { at: 1 }
    );
    assert_eq!(
        parse(br#""\u12""#).unwrap_err(),
        ArgsError::BadEscape { at: 1 }
    );
}

#[test]
fn numbers_follow_the_json_grammar() {
    for bad in ["01", "1.", ".5", "-", "1e", "1e+", "+1", "-.5"] {
        let err = parse(bad.as_bytes()).unwrap_err();
        assert!(
            matches!(
                err,
                ArgsError::BadNumber { .. } | ArgsError::Unexpected { .. }
            ),
            "{bad}: {err}"
        );
    }
    assert_eq!(
        error("[0x10]"),
        "arguments: unexpected `x` at byte 2; expected `,` or `]`"
    );
    assert_eq!(error("01"), "arguments: invalid number `01` at byte 0");
}

#[test]
fn a_missing_required_property_is_named() {
    assert_eq!(
        validate(r#"{"timeout_secs": 5}"#, &shell_schema())
            .unwrap_err()
            .to_string(),
        "arguments: missing required property `command`"
    );
    // Empty arguments are an empty object, which still lacks `command`.
    assert_eq!(
        validate("  ", &shell_schema()).unwrap_err(),
        ArgsError::Missing("command".into())
    );
}

#[test]
fn an_unknown_property_is_named_with_the_known_ones() {
    assert_eq!(
        validate(r#"{"cmd": "ls"}"#, &shell_schema())
            .unwrap_err()
            .to_string(),
        "arguments: unknown property `cmd`; the properties are: command, timeout_secs"
    );
}

#[test]
fn property_types_are_checked() {
    let err = validate(r#"{"command": ["ls"]}"#, &shell_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "arguments: property `command` must be a string, not an array"
    );
    let err = validate(
        r#"{"command": "ls", "timeout_secs": "10"}"#,
        &shell_schema(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "arguments: property `timeout_secs` must be an integer, not a string (\"10\")"
    );
    let err = validate(r#"{"command": "ls", "timeout_secs": 2.5}"#, &shell_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "arguments: property `timeout_secs` must be an integer, not a number (2.5)"
    );
    let err = validate("[1]", &shell_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "arguments: the arguments must be an object, not an array"
    );
}

#[test]
fn minimum_maximum_and_enum_are_checked() {
    let err = validate(r#"{"command": "ls", "timeout_secs": 0}"#, &shell_schema()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "arguments: property `timeout_secs` must be at least 1, not 0"
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "n": {"type": "number", "maximum": 10},
            "tags": {"type": "array", "items": {"type": "string"}},
            "flag": {"type": "boolean"},
            "inner": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
        },
        "additionalProperties": false
    });
    assert_eq!(
        validate(r#"{"mode": "medium"}"#, &schema)
            .unwrap_err()
            .to_string(),
        "arguments: property `mode` must be one of `\"fast\"`, `\"slow\"`, not `\"medium\"`"
    );
    assert_eq!(
        validate(r#"{"n": 10.5}"#, &schema).unwrap_err().to_string(),
        "arguments: property `n` must be at most 10, not 10.5"
    );
    assert_eq!(
        validate(r#"{"tags": ["a", 2]}"#, &schema)
            .unwrap_err()
            .to_string(),
        "arguments: property `tags[1]` must be a string, not an integer (2)"
    );
    assert_eq!(
        validate(r#"{"flag": "yes"}"#, &schema)
            .unwrap_err()
            .to_string(),
        "arguments: property `flag` must be a boolean, not a string (\"yes\")"
    );
    assert_eq!(
        validate(r#"{"inner": {}}"#, &schema)
            .unwrap_err()
            .to_string(),
        "arguments: missing required property `inner.x`"
    );
    assert!(validate(
        r#"{"mode": "fast", "n": 3, "tags": ["a"], "flag": true, "inner": {"x": 1}}"#,
        &schema
    )
    .is_ok());
}

#[test]
fn null_for_an_optional_property_is_absent_but_not_for_a_required_one() {
    assert!(validate(
        r#"{"command": "ls", "timeout_secs": null}"#,
        &shell_schema()
    )
    .is_ok());
    assert_eq!(
        validate(r#"{"command": null}"#, &shell_schema())
            .unwrap_err()
            .to_string(),
        "arguments: property `command` must be a string, not null"
    );
}

#[test]
fn a_type_list_allows_each_of_its_types() {
    let schema = json!({"type": ["integer", "null"]});
    assert!(check(&json!(3), &schema).is_ok());
    assert!(check(&Value::Null, &schema).is_ok());
    assert_eq!(
        check(&json!("3"), &schema).unwrap_err().to_string(),
        "arguments: the arguments must be an integer or null, not a string (\"3\")"
    );
}
