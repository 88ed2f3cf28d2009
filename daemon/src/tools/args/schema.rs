//! The schema half of the argument check: a parsed value against a tool's
//! JSON Schema (pure).
//!
//! The built-in tools use `type`, `properties`, `required`,
//! `additionalProperties: false`, `items`, `minimum`, `maximum` and `enum`.
//! MCP servers' schemas also use `const`, the exclusive bounds,
//! `multipleOf`, string and array lengths, `uniqueItems`, property counts,
//! `additionalProperties` as a schema, `anyOf`, `oneOf`, `allOf`, `not`,
//! `nullable`, and `$ref` into the schema's own `$defs`/`definitions`; all
//! are checked. Annotations (`description`, `default`, `format`, `title`,
//! `examples`, …) constrain nothing. [`unsupported`] names the first keyword
//! this checker cannot check (`pattern`, `if`, …): a tool whose schema uses
//! one is not offered, rather than offered with a check that skips part of
//! its rules.

use super::ArgsError;
use serde_json::{Map, Value};

/// Keywords that constrain nothing; skipped by the check.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "title",
    "description",
    "default",
    "examples",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
    "contentMediaType",
    "contentEncoding",
];

/// Keywords the check applies.
const CHECKED: &[&str] = &[
    "type",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "items",
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "nullable",
    "$ref",
];

const TYPES: &[&str] = &[
    "string", "integer", "number", "boolean", "array", "object", "null",
];

/// `$ref`s followed in a row without going deeper into the value: more is
/// a schema that refers to itself in a loop.
const MAX_REFS: usize = 32;

/// Checks `value` against a tool's JSON schema.
pub fn check(value: &Value, schema: &Value) -> Result<(), ArgsError> {
    Checker { root: schema }.at(value, schema, "", 0)
}

/// The first keyword of `schema` that `check` cannot check, with where
/// it is (`pattern` at `properties.name`); none when every rule is checked.
pub fn unsupported(schema: &Value) -> Option<String> {
    unsupported_at(schema, schema, "", 0)
}

fn unsupported_at(root: &Value, schema: &Value, path: &str, depth: usize) -> Option<String> {
    let here = |key: &str| {
        if path.is_empty() {
            format!("`{key}`")
        } else {
            format!("`{key}` at `{path}`")
        }
    };
    if depth > super::MAX_DEPTH {
        return Some("a schema nested too deep".to_string());
    }
    let map = match schema {
        Value::Bool(_) => return None,
        Value::Object(map) => map,
        _ => return Some(format!("a schema that is not an object at `{path}`")),
    };
    for (key, sub) in map {
        let inner = |name: &str| {
            if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}.{name}")
            }
        };
        if ANNOTATIONS.contains(&key.as_str()) && !matches!(key.as_str(), "$defs" | "definitions") {
            continue;
        }
        let found = match key.as_str() {
            "$defs" | "definitions" | "properties" => match sub.as_object() {
                Some(subs) => subs.iter().find_map(|(name, sub)| {
                    unsupported_at(root, sub, &inner(&format!("{key}.{name}")), depth + 1)
                }),
                None => Some(here(key)),
            },
            "items" | "additionalProperties" | "not" => {
                unsupported_at(root, sub, &inner(key), depth + 1)
            }
            "anyOf" | "oneOf" | "allOf" => match sub.as_array() {
                Some(subs) if !subs.is_empty() => subs.iter().enumerate().find_map(|(i, sub)| {
                    unsupported_at(root, sub, &inner(&format!("{key}[{i}]")), depth + 1)
                }),
                _ => Some(here(key)),
            },
            "type" => {
                let names: Vec<Option<&str>> = match sub {
                    Value::String(one) => vec![Some(one.as_str())],
                    Value::Array(many) => many.iter().map(Value::as_str).collect(),
                    _ => vec![None],
                };
                names
                    .iter()
                    .any(|name| !name.is_some_and(|name| TYPES.contains(&name)))
                    .then(|| format!("{} {}", here(key), sub))
            }
            "$ref" => match sub.as_str().and_then(|target| resolve(root, target)) {
                Some(_) => None,
                None => Some(format!(
                    "{} {} (only refs into the schema itself)",
                    here(key),
                    sub
                )),
            },
            "exclusiveMinimum" | "exclusiveMaximum" => {
                (!sub.is_number() && !sub.is_boolean()).then(|| here(key))
            }
            "minimum" | "maximum" | "multipleOf" => (!sub.is_number()).then(|| here(key)),
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties" => (!sub.is_u64()).then(|| here(key)),
            "required" | "enum" => (!sub.is_array()).then(|| here(key)),
            "uniqueItems" | "nullable" => (!sub.is_boolean()).then(|| here(key)),
            key if CHECKED.contains(&key) => None,
            key => Some(here(key)),
        };
        if found.is_some() {
            return found;
        }
    }
    None
}

/// A local reference (`#`, `#/$defs/Name`, any JSON pointer into the root).
fn resolve<'a>(root: &'a Value, target: &str) -> Option<&'a Value> {
    let pointer = target.strip_prefix('#')?;
    root.pointer(pointer)
}

/// How an error names the place: the arguments, or a property's path.
fn place(path: &str) -> String {
    if path.is_empty() {
        "the arguments".to_string()
    } else {
        format!("property `{path}`")
    }
}

struct Checker<'r> {
    root: &'r Value,
}

impl Checker<'_> {
    /// `refs`: `$ref`s followed since the value last went a level deeper.
    fn at(&self, value: &Value, schema: &Value, path: &str, refs: usize) -> Result<(), ArgsError> {
        let rule = |rule: String| ArgsError::Rule {
            place: place(path),
            rule,
            found: describe(value),
        };
        match schema {
            Value::Bool(false) => return Err(rule("be absent".to_string())),
            Value::Object(_) => {}
            _ => return Ok(()),
        }
        if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
            let Some(target_schema) = resolve(self.root, target) else {
                return Err(rule(format!("match `{target}`, which the schema lacks")));
            };
            if refs >= MAX_REFS {
                return Err(rule(format!("match `{target}`, which refers to itself")));
            }
            self.at(value, target_schema, path, refs + 1)?;
        }
        if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
            return Ok(());
        }
        check_type(value, schema, path)?;
        check_choices(value, schema, path)?;
        check_bounds(value, schema, path)?;
        check_lengths(value, schema, path)?;
        self.combinations(value, schema, path, refs)?;
        match value {
            Value::Object(map) => self.object(map, schema, path),
            Value::Array(items) => match schema.get("items") {
                Some(item_schema) => items.iter().enumerate().try_for_each(|(i, item)| {
                    self.at(item, item_schema, &format!("{path}[{i}]"), 0)
                }),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// `anyOf`, `oneOf`, `allOf`, `not`.
    fn combinations(
        &self,
        value: &Value,
        schema: &Value,
        path: &str,
        refs: usize,
    ) -> Result<(), ArgsError> {
        let rule = |rule: String| ArgsError::Rule {
            place: place(path),
            rule,
            found: describe(value),
        };
        let branches = |key: &str| schema.get(key).and_then(Value::as_array);
        if let Some(all) = branches("allOf") {
            for branch in all {
                self.at(value, branch, path, refs)?;
            }
        }
        for key in ["anyOf", "oneOf"] {
            let Some(forms) = branches(key) else { continue };
            let results: Vec<Result<(), ArgsError>> = forms
                .iter()
                .map(|form| self.at(value, form, path, refs))
                .collect();
            let passed = results.iter().filter(|result| result.is_ok()).count();
            if passed == 0 {
                let why: Vec<String> = results
                    .into_iter()
                    .filter_map(Result::err)
                    .map(|err| {
                        err.to_string()
                            .trim_start_matches("arguments: ")
                            .to_string()
                    })
                    .collect();
                return Err(rule(format!(
                    "match one of its {} allowed forms ({})",
                    forms.len(),
                    why.join("; ")
                )));
            }
            if key == "oneOf" && passed > 1 {
                return Err(rule(format!(
                    "match exactly one of its {} allowed forms, but matches {passed}",
                    forms.len()
                )));
            }
        }
        if let Some(not) = schema.get("not") {
            if self.at(value, not, path, refs).is_ok() {
                return Err(rule(format!("not match {}", show(not))));
            }
        }
        Ok(())
    }

    fn object(
        &self,
        map: &Map<String, Value>,
        schema: &Value,
        path: &str,
    ) -> Result<(), ArgsError> {
        let empty = Map::new();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let join = |name: &str| {
            if path.is_empty() {
                name.to_string()
            } else {
                format!("{path}.{name}")
            }
        };
        let extra = map.keys().filter(|key| !properties.contains_key(*key));
        match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => {
                if let Some(name) = extra.clone().next() {
                    let known = properties.keys().map(String::as_str).collect::<Vec<_>>();
                    return Err(ArgsError::Unknown {
                        name: join(name),
                        known: if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        },
                    });
                }
            }
            Some(extra_schema @ Value::Object(_)) => {
                for name in extra.clone() {
                    self.at(&map[name], extra_schema, &join(name), 0)?;
                }
            }
            _ => {}
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(name) = required.iter().find(|name| !map.contains_key(**name)) {
            return Err(ArgsError::Missing(join(name)));
        }
        for (name, property) in properties {
            match map.get(name) {
                None => {}
                Some(Value::Null) if !required.contains(&name.as_str()) => {}
                Some(value) => self.at(value, property, &join(name), 0)?,
            }
        }
        Ok(())
    }
}

fn check_type(value: &Value, schema: &Value, path: &str) -> Result<(), ArgsError> {
    let Some(types) = schema.get("type") else {
        return Ok(());
    };
    let allowed: Vec<&str> = match types {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !allowed.is_empty() && !allowed.iter().any(|t| is_type(value, t)) {
        return Err(ArgsError::Type {
            place: place(path),
            expected: allowed
                .iter()
                .map(|t| type_name(t))
                .collect::<Vec<_>>()
                .join(" or "),
            found: describe(value),
        });
    }
    Ok(())
}

/// `enum` and `const`.
fn check_choices(value: &Value, schema: &Value, path: &str) -> Result<(), ArgsError> {
    let one = schema.get("const").map(std::slice::from_ref);
    let choices = schema
        .get("enum")
        .and_then(Value::as_array)
        .map(Vec::as_slice);
    for choices in [choices, one].into_iter().flatten() {
        if !choices.iter().any(|choice| same(choice, value)) {
            return Err(ArgsError::Enum {
                place: place(path),
                choices: choices
                    .iter()
                    .map(|c| format!("`{}`", show(c)))
                    .collect::<Vec<_>>()
                    .join(", "),
                found: format!("`{}`", show(value)),
            });
        }
    }
    Ok(())
}

/// Equal as JSON values, numbers by value (`1` is `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// `minimum`, `maximum`, the exclusive bounds (draft 6 numbers, or draft 4
/// booleans on `minimum`/`maximum`), `multipleOf`.
fn check_bounds(value: &Value, schema: &Value, path: &str) -> Result<(), ArgsError> {
    let Some(found) = value.as_f64() else {
        return Ok(());
    };
    let number = |key| schema.get(key).and_then(Value::as_f64);
    let flag = |key| schema.get(key) == Some(&Value::Bool(true));
    let (low, high) = (number("minimum"), number("maximum"));
    if let Some(limit) = low.filter(|m| found < *m || (flag("exclusiveMinimum") && found == *m)) {
        return Err(if flag("exclusiveMinimum") {
            rule_error(path, format!("be more than {}", shown_number(limit)), value)
        } else {
            ArgsError::Minimum {
                place: place(path),
                limit: schema["minimum"].to_string(),
                found: value.to_string(),
            }
        });
    }
    if let Some(limit) = high.filter(|m| found > *m || (flag("exclusiveMaximum") && found == *m)) {
        return Err(if flag("exclusiveMaximum") {
            rule_error(path, format!("be less than {}", shown_number(limit)), value)
        } else {
            ArgsError::Maximum {
                place: place(path),
                limit: schema["maximum"].to_string(),
                found: value.to_string(),
            }
        });
    }
    if let Some(limit) = number("exclusiveMinimum").filter(|m| found <= *m) {
        return Err(rule_error(
            path,
            format!("be more than {}", shown_number(limit)),
            value,
        ));
    }
    if let Some(limit) = number("exclusiveMaximum").filter(|m| found >= *m) {
        return Err(rule_error(
            path,
            format!("be less than {}", shown_number(limit)),
            value,
        ));
    }
    if let Some(step) = number("multipleOf").filter(|step| *step > 0.0) {
        let ratio = found / step;
        if (ratio - ratio.round()).abs() > 1e-9 * ratio.abs().max(1.0) {
            return Err(rule_error(
                path,
                format!("be a multiple of {}", shown_number(step)),
                value,
            ));
        }
    }
    Ok(())
}

/// String lengths (in characters), item and property counts, unique items.
fn check_lengths(value: &Value, schema: &Value, path: &str) -> Result<(), ArgsError> {
    let (count, unit) = match value {
        Value::String(text) => (text.chars().count(), "characters"),
        Value::Array(items) => (items.len(), "items"),
        Value::Object(map) => (map.len(), "properties"),
        _ => return Ok(()),
    };
    let (low, high) = match value {
        Value::String(_) => ("minLength", "maxLength"),
        Value::Array(_) => ("minItems", "maxItems"),
        _ => ("minProperties", "maxProperties"),
    };
    let limit = |key| schema.get(key).and_then(Value::as_u64);
    if let Some(least) = limit(low).filter(|least| (count as u64) < *least) {
        return Err(rule_error(
            path,
            format!("have at least {least} {unit}"),
            value,
        ));
    }
    if let Some(most) = limit(high).filter(|most| (count as u64) > *most) {
        return Err(rule_error(
            path,
            format!("have at most {most} {unit}"),
            value,
        ));
    }
    if let (Value::Array(items), Some(Value::Bool(true))) = (value, schema.get("uniqueItems")) {
        for (i, item) in items.iter().enumerate() {
            if items[..i].iter().any(|earlier| same(earlier, item)) {
                return Err(rule_error(
                    path,
                    format!("have no repeated items (item {i} repeats an earlier one)"),
                    value,
                ));
            }
        }
    }
    Ok(())
}

fn rule_error(path: &str, rule: String, value: &Value) -> ArgsError {
    ArgsError::Rule {
        place: place(path),
        rule,
        found: describe(value),
    }
}

fn shown_number(number: f64) -> String {
    if number.fract() == 0.0 && number.abs() < 1e15 {
        format!("{}", number as i64)
    } else {
        number.to_string()
    }
}

fn is_type(value: &Value, name: &str) -> bool {
    match name {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        // A type this checker does not know is not held against the model;
        // `unsupported` keeps such schemas from MCP servers out.
        _ => true,
    }
}

fn type_name(name: &str) -> String {
    match name {
        "integer" => "an integer".to_string(),
        "array" => "an array".to_string(),
        "object" => "an object".to_string(),
        "null" => "null".to_string(),
        other => format!("a {other}"),
    }
}

/// The kind of a value and, for a scalar, the value itself.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) if n.is_f64() => format!("a number ({n})"),
        Value::Number(n) => format!("an integer ({n})"),
        Value::String(_) => format!("a string ({})", show(value)),
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// A value as JSON, cut short when long.
fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(60).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests;
