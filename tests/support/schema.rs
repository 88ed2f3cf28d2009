//! A written-down description of a JSON request body, as a provider's
//! documentation gives it, and the check of a body a fake captured against
//! it: the required fields, the optional ones, their types and allowed
//! values, and no field the documentation does not name (the providers
//! refuse unknown parameters: OpenAI with "Unrecognized request argument",
//! Anthropic with "Extra inputs are not permitted", Telegram and Graph
//! ignore some and refuse others). The descriptions themselves live beside
//! the tests that use them (`tests/conformance.rs`), each naming its source.

use serde_json::Value;

/// What a JSON value must be.
#[derive(Clone, Debug)]
pub enum Schema {
    /// Anything (a JSON Schema the model reads, a tool's free arguments).
    Any,
    /// Any JSON object, whatever its fields.
    AnyObject,
    /// A string of `min..=max` characters.
    Str {
        min: usize,
        max: usize,
    },
    /// An integer of at least `min`.
    Int {
        min: i64,
    },
    Bool,
    /// One of these values exactly (an enum).
    OneOf(Vec<Value>),
    /// A list of at least `min` items, each as `items` says.
    Array {
        items: Box<Schema>,
        min: usize,
    },
    /// An object with these fields and no others.
    Object(Vec<Field>),
    /// An object whose field `tag` (`type`, `role`) names its variant; each
    /// variant lists its fields besides the tag.
    Tagged {
        tag: &'static str,
        variants: Vec<(&'static str, Vec<Field>)>,
    },
    /// The first of these that fits.
    AnyOf(Vec<Schema>),
}

/// One field of an object.
#[derive(Clone, Debug)]
pub struct Field {
    pub name: &'static str,
    pub required: bool,
    pub schema: Schema,
}

/// A required field.
pub fn req(name: &'static str, schema: Schema) -> Field {
    Field {
        name,
        required: true,
        schema,
    }
}

/// An optional field.
pub fn opt(name: &'static str, schema: Schema) -> Field {
    Field {
        name,
        required: false,
        schema,
    }
}

/// Any string, empty or not.
pub fn string() -> Schema {
    Schema::Str {
        min: 0,
        max: usize::MAX,
    }
}

/// A string of at least one character.
pub fn nonempty() -> Schema {
    Schema::Str {
        min: 1,
        max: usize::MAX,
    }
}

pub fn int(min: i64) -> Schema {
    Schema::Int { min }
}

pub fn boolean() -> Schema {
    Schema::Bool
}

/// One of these strings.
pub fn one_of(values: &[&str]) -> Schema {
    Schema::OneOf(values.iter().map(|v| Value::from(*v)).collect())
}

/// Exactly this string.
pub fn exactly(value: &str) -> Schema {
    one_of(&[value])
}

/// JSON `null`.
pub fn null() -> Schema {
    Schema::OneOf(vec![Value::Null])
}

/// A list, possibly empty.
pub fn array(items: Schema) -> Schema {
    Schema::Array {
        items: Box::new(items),
        min: 0,
    }
}

/// A list of at least one item.
pub fn array1(items: Schema) -> Schema {
    Schema::Array {
        items: Box::new(items),
        min: 1,
    }
}

pub fn object(fields: Vec<Field>) -> Schema {
    Schema::Object(fields)
}

pub fn tagged(tag: &'static str, variants: Vec<(&'static str, Vec<Field>)>) -> Schema {
    Schema::Tagged { tag, variants }
}

pub fn any_of(schemas: Vec<Schema>) -> Schema {
    Schema::AnyOf(schemas)
}

/// What is wrong with `value`, each problem with its path (`messages[2].role`);
/// empty when it fits.
pub fn check(schema: &Schema, value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check_at(schema, value, "$", &mut problems);
    problems
}

fn check_at(schema: &Schema, value: &Value, path: &str, problems: &mut Vec<String>) {
    let mut problem = |what: String| problems.push(format!("{path}: {what}"));
    match schema {
        Schema::Any => {}
        Schema::AnyObject => {
            if !value.is_object() {
                problem(format!("{value} is not an object"));
            }
        }
        Schema::Str { min, max } => match value.as_str() {
            Some(text) => {
                let chars = text.chars().count();
                if chars < *min || chars > *max {
                    problem(format!("{chars} characters, not {min}..={max}"));
                }
            }
            None => problem(format!("{value} is not a string")),
        },
        Schema::Int { min } => match value.as_i64() {
            Some(n) if n >= *min => {}
            Some(n) => problem(format!("{n} is below {min}")),
            None => problem(format!("{value} is not an integer")),
        },
        Schema::Bool => {
            if !value.is_boolean() {
                problem(format!("{value} is not a boolean"));
            }
        }
        Schema::OneOf(values) => {
            if !values.contains(value) {
                problem(format!("{value} is not one of {values:?}"));
            }
        }
        Schema::Array { items, min } => match value.as_array() {
            Some(list) => {
                if list.len() < *min {
                    problem(format!("{} items, fewer than {min}", list.len()));
                }
                for (n, item) in list.iter().enumerate() {
                    check_at(items, item, &format!("{path}[{n}]"), problems);
                }
            }
            None => problem(format!("{value} is not a list")),
        },
        Schema::Object(fields) => check_object(fields, None, value, path, problems),
        Schema::Tagged { tag, variants } => {
            let name = value.get(*tag).and_then(Value::as_str).unwrap_or_default();
            match variants.iter().find(|(variant, _)| *variant == name) {
                Some((_, fields)) => check_object(fields, Some(tag), value, path, problems),
                None => {
                    let known: Vec<_> = variants.iter().map(|(variant, _)| *variant).collect();
                    problem(format!("{tag} {name:?} is not one of {known:?}"));
                }
            }
        }
        Schema::AnyOf(schemas) => {
            let mut tried = Vec::new();
            for schema in schemas {
                let found = check(schema, value);
                if found.is_empty() {
                    return;
                }
                tried.push(found.join("; "));
            }
            problem(format!("fits none of its forms: {}", tried.join(" | ")));
        }
    }
}

fn check_object(
    fields: &[Field],
    tag: Option<&str>,
    value: &Value,
    path: &str,
    problems: &mut Vec<String>,
) {
    let Some(object) = value.as_object() else {
        problems.push(format!("{path}: {value} is not an object"));
        return;
    };
    for field in fields {
        match object.get(field.name) {
            Some(inner) => check_at(
                &field.schema,
                inner,
                &format!("{path}.{}", field.name),
                problems,
            ),
            None if field.required => {
                problems.push(format!("{path}: `{}` is required", field.name))
            }
            None => {}
        }
    }
    for key in object.keys() {
        let known = Some(key.as_str()) == tag || fields.iter().any(|field| field.name == key);
        if !known {
            problems.push(format!("{path}: `{key}` is not a documented field"));
        }
    }
}

/// Fails naming every problem of every body.
pub fn assert_conform(what: &str, schema: &Schema, bodies: &[&Value]) {
    assert!(!bodies.is_empty(), "{what}: no bodies were captured");
    let problems: Vec<String> = bodies
        .iter()
        .enumerate()
        .flat_map(|(n, body)| {
            check(schema, body)
                .into_iter()
                .map(move |problem| format!("{what} request {n}: {problem}"))
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The description bites: a field no documentation names is refused.
    let mut extra = bodies[0].clone();
    extra["not_a_documented_field"] = Value::Bool(true);
    assert!(
        !check(schema, &extra).is_empty(),
        "{what}: an unknown field passed"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_body_is_checked_field_by_field() {
        let schema = object(vec![
            req("model", nonempty()),
            opt("stream", boolean()),
            req(
                "messages",
                array1(tagged(
                    "role",
                    vec![("user", vec![req("content", string())])],
                )),
            ),
        ]);
        let good = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        assert!(check(&schema, &good).is_empty());
        let bad = json!({"stream": "yes", "extra": 1, "messages": [{"role": "bot"}]});
        assert_eq!(
            check(&schema, &bad),
            vec![
                "$: `model` is required",
                "$.stream: \"yes\" is not a boolean",
                "$.messages[0]: role \"bot\" is not one of [\"user\"]",
                "$: `extra` is not a documented field",
            ]
        );
    }
}
