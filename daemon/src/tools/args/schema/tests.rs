use super::*;
use serde_json::json;

fn error(value: Value, schema: Value) -> String {
    check(&value, &schema).unwrap_err().to_string()
}

#[test]
fn lengths_counts_and_unique_items_are_checked() {
    let schema = json!({"type": "string", "minLength": 2, "maxLength": 3});
    assert!(check(&json!("ab"), &schema).is_ok());
    assert!(
        check(&json!("ééé"), &schema).is_ok(),
        "characters, not bytes"
    );
    assert_eq!(
        error(json!("a"), schema.clone()),
        "arguments: the arguments must have at least 2 characters, not a string (\"a\")"
    );
    assert!(error(json!("abcd"), schema).contains("at most 3 characters"));
    let paths = json!({"type": "object", "properties": {"paths": {"type": "array", "minItems": 1, "uniqueItems": true, "items": {"type": "string"}}}});
    assert_eq!(
        error(json!({"paths": []}), paths.clone()),
        "arguments: property `paths` must have at least 1 items, not an array"
    );
    assert!(error(json!({"paths": ["a", "a"]}), paths.clone()).contains("item 1 repeats"));
    assert!(
        error(json!({"paths": ["a", 2]}), paths).contains("property `paths[1]` must be a string")
    );
    assert!(error(json!({}), json!({"minProperties": 1})).contains("at least 1 properties"));
}

#[test]
fn const_exclusive_bounds_and_multiples_are_checked() {
    assert!(error(json!("b"), json!({"const": "a"})).contains("must be one of `\"a\"`"));
    assert!(check(&json!(1.0), &json!({"const": 1})).is_ok());
    let schema = json!({"exclusiveMinimum": 0, "exclusiveMaximum": 10});
    assert!(check(&json!(5), &schema).is_ok());
    assert!(error(json!(0), schema.clone()).contains("must be more than 0"));
    assert!(error(json!(10), schema).contains("must be less than 10"));
    let draft4 = json!({"minimum": 0, "exclusiveMinimum": true});
    assert!(error(json!(0), draft4).contains("must be more than 0"));
    assert!(error(json!(0.5), json!({"multipleOf": 0.25, "maximum": 0.4})).contains("at most 0.4"));
    assert!(error(json!(7), json!({"multipleOf": 2})).contains("multiple of 2"));
    assert!(check(&json!(0.75), &json!({"multipleOf": 0.25})).is_ok());
}

#[test]
fn any_of_one_of_all_of_and_not_are_checked() {
    let optional = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
    assert!(check(&json!("x"), &optional).is_ok());
    assert!(check(&Value::Null, &optional).is_ok());
    assert_eq!(
        error(json!(3), optional),
        "arguments: the arguments must match one of its 2 allowed forms (the arguments must be \
         a string, not an integer (3); the arguments must be null, not an integer (3)), not an integer (3)"
    );
    let one = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
    assert!(check(&json!(1.5), &one).is_ok());
    assert!(error(json!(2), one).contains("exactly one of its 2 allowed forms, but matches 2"));
    let all = json!({"allOf": [{"minimum": 1}, {"maximum": 3}]});
    assert!(check(&json!(2), &all).is_ok());
    assert!(error(json!(4), all).contains("at most 3"));
    assert!(error(json!("x"), json!({"not": {"type": "string"}})).contains("must not match"));
}

#[test]
fn refs_into_the_schema_and_extra_property_schemas_are_followed() {
    let schema = json!({
        "type": "object",
        "properties": {"where": {"$ref": "#/$defs/Place"}},
        "additionalProperties": {"type": "integer"},
        "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    });
    assert!(check(&json!({"where": {"city": "Oslo"}, "n": 1}), &schema).is_ok());
    assert_eq!(
        error(json!({"where": {}}), schema.clone()),
        "arguments: missing required property `where.city`"
    );
    assert!(error(json!({"n": "x"}), schema).contains("property `n` must be an integer"));
    let looping = json!({"$ref": "#"});
    assert!(error(json!(1), looping).contains("refers to itself"));
    let tree = json!({"type": "object", "properties": {"child": {"$ref": "#"}, "leaf": {"type": "integer"}}});
    assert!(check(&json!({"child": {"child": {"leaf": 1}}}), &tree).is_ok());
    assert!(error(json!({"child": {"child": {"leaf": "x"}}}), tree).contains("child.child.leaf"));
}

#[test]
fn nullable_allows_null_and_false_refuses_everything() {
    assert!(check(&Value::Null, &json!({"type": "string", "nullable": true})).is_ok());
    let schema = json!({"type": "object", "properties": {"no": false}});
    assert!(error(json!({"no": 1}), schema).contains("property `no` must be absent"));
}

#[test]
fn what_cannot_be_checked_is_named_and_annotations_are_not() {
    let fine = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "where", "format": "uri", "default": "."},
            "mode": {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "null"}]}
        },
        "required": ["path"]
    });
    assert_eq!(unsupported(&fine), None);
    assert_eq!(
        unsupported(
            &json!({"type": "object", "properties": {"name": {"type": "string", "pattern": "^a"}}})
        ),
        Some("`pattern` at `properties.name`".to_string())
    );
    assert_eq!(
        unsupported(&json!({"if": {}, "then": {}})),
        Some("`if`".to_string())
    );
    assert!(unsupported(&json!({"$ref": "https://example.com/s.json"}))
        .unwrap()
        .contains("only refs into the schema itself"));
    assert!(unsupported(&json!({"type": "decimal"})).is_some());
    assert_eq!(
        unsupported(&json!({"$defs": {"A": {"patternProperties": {}}}})),
        Some("`patternProperties` at `$defs.A`".to_string())
    );
    assert!(unsupported(&json!({"items": [{"type": "string"}]})).is_some());
}
