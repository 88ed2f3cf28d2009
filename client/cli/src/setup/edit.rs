//! Editing `config.toml` in place: the keys `hearth setup` owns are set or
//! removed, and every other byte of the file — other tables, other keys,
//! comments, blank lines, their order — stays as it was (pure).
//!
//! `toml_edit` is not in the dependency tree through `toml` (toml 1 parses
//! with `toml_parser`), so this is a small line editor, made careful in
//! three ways. The file is read as a list of statements: a table header, or
//! a key and its value, whose extent is found by letting the TOML parser
//! accept it (so a multi-line array or string is one statement, and a `[`
//! inside one is never taken for a header). A key is replaced where it
//! stands, and a new one goes after the last key of its table. And after
//! the edit both texts are parsed and compared: everything the edits did not
//! name must be equal, or the edit is refused and nothing is written.

use std::collections::BTreeSet;
use toml::{Table, Value};

/// One change: `table.key` set to `value`, or removed when it is `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    /// A plain table at the top of the file (`model`, `agent`, `telegram`).
    pub table: String,
    pub key: String,
    pub value: Option<Value>,
}

impl Edit {
    pub fn set(table: &str, key: &str, value: impl Into<Value>) -> Edit {
        Edit {
            table: table.to_string(),
            key: key.to_string(),
            value: Some(value.into()),
        }
    }

    pub fn remove(table: &str, key: &str) -> Edit {
        Edit {
            table: table.to_string(),
            key: key.to_string(),
            value: None,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EditError {
    #[error("line {line}: {message}")]
    Unreadable { line: usize, message: String },
    #[error(
        "`{0}` is not a plain table here (an inline table or an array of tables); edit it by hand"
    )]
    NotATable(String),
    #[error("the edit would change `{0}`, which setup does not own; nothing was written (edit the file by hand)")]
    WouldChange(String),
}

/// One statement of the file: lines `start..end` (`end` excluded).
#[derive(Debug, Clone)]
struct Statement {
    start: usize,
    end: usize,
    what: What,
}

#[derive(Debug, Clone, PartialEq)]
enum What {
    /// `[name]` (`array: false`) or `[[name]]`, as dotted parts.
    Header { path: Vec<String>, array: bool },
    /// `key = value`; `key` is the first part of a dotted key.
    Pair { key: String },
}

/// `text` with `edits` applied; see the module's doc for what is kept.
pub fn apply(text: &str, edits: &[Edit]) -> Result<String, EditError> {
    let before: Table = parse(text)?;
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for edit in edits {
        apply_one(&mut lines, edit, before.contains_key(&edit.table))?;
    }
    let mut after = lines.join("\n");
    if !after.is_empty() {
        after.push('\n');
    }
    let parsed = parse(&after)?;
    check_only_edits_changed(&before, &parsed, edits)?;
    Ok(after)
}

fn parse(text: &str) -> Result<Table, EditError> {
    toml::from_str::<Table>(text).map_err(|err| {
        let start = err.span().map_or(0, |span| span.start.min(text.len()));
        let line = text.as_bytes()[..start]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        EditError::Unreadable {
            line,
            message: err.message().trim().to_string(),
        }
    })
}

/// Applies one edit; `exists` says the file has the table already, so it
/// must be found as a `[table]` header (not an inline table, a dotted key
/// or an array of tables).
fn apply_one(lines: &mut Vec<String>, edit: &Edit, exists: bool) -> Result<(), EditError> {
    let statements = statements(lines)?;
    let rendered = edit.value.as_ref().map(|value| pair(&edit.key, value));
    let header = statements.iter().position(|statement| {
        statement.what
            == What::Header {
                path: vec![edit.table.clone()],
                array: false,
            }
    });
    let Some(header) = header else {
        if exists {
            return Err(EditError::NotATable(edit.table.clone()));
        }
        // A new table, at the end of the file.
        if let Some(line) = rendered {
            if lines.last().is_some_and(|last| !last.trim().is_empty()) {
                lines.push(String::new());
            }
            lines.push(format!("[{}]", key_text(&edit.table)));
            lines.push(line);
        }
        return Ok(());
    };
    let section: Vec<&Statement> = statements[header + 1..]
        .iter()
        .take_while(|statement| matches!(statement.what, What::Pair { .. }))
        .collect();
    let existing = section.iter().find(|statement| {
        statement.what
            == What::Pair {
                key: edit.key.clone(),
            }
    });
    match (existing, rendered) {
        (Some(statement), Some(line)) => {
            lines.splice(statement.start..statement.end, [line]);
        }
        (Some(statement), None) => {
            lines.drain(statement.start..statement.end);
        }
        (None, Some(line)) => {
            let after = section
                .last()
                .map_or(statements[header].end, |statement| statement.end);
            lines.insert(after, line);
        }
        (None, None) => {}
    }
    Ok(())
}

/// The statements of the file, in order; blank lines and comments are
/// between them.
fn statements(lines: &[String]) -> Result<Vec<Statement>, EditError> {
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let trimmed = lines[at].trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            at += 1;
            continue;
        }
        if trimmed.starts_with('[') {
            let what = header(trimmed).ok_or_else(|| EditError::Unreadable {
                line: at + 1,
                message: "a table header that setup cannot read".to_string(),
            })?;
            found.push(Statement {
                start: at,
                end: at + 1,
                what,
            });
            at += 1;
            continue;
        }
        // A key and its value: as many lines as the parser needs.
        let mut end = at + 1;
        loop {
            let text = lines[at..end].join("\n");
            if let Ok(table) = toml::from_str::<Table>(&text) {
                let key = table.keys().next().cloned().unwrap_or_default();
                found.push(Statement {
                    start: at,
                    end,
                    what: What::Pair { key },
                });
                break;
            }
            if end == lines.len() {
                return Err(EditError::Unreadable {
                    line: at + 1,
                    message: "a value that does not end".to_string(),
                });
            }
            end += 1;
        }
        at = end;
    }
    Ok(found)
}

/// `[a.b]` or `[[a.b]]` (a comment may follow), as its dotted parts.
fn header(line: &str) -> Option<What> {
    let table: Table = toml::from_str(line).ok()?;
    let array = line.starts_with("[[");
    let mut path = Vec::new();
    let mut value = Value::Table(table);
    loop {
        let table = match value {
            Value::Table(table) => table,
            Value::Array(mut items) if items.len() == 1 => match items.pop() {
                Some(Value::Table(table)) => table,
                _ => return None,
            },
            _ => return None,
        };
        if table.is_empty() {
            break;
        }
        let (key, inner) = table.into_iter().next()?;
        path.push(key);
        value = inner;
    }
    Some(What::Header { path, array })
}

/// `key = value`, the value as TOML writes it inline.
fn pair(key: &str, value: &Value) -> String {
    format!("{} = {value}", key_text(key))
}

/// A key bare when TOML allows, else quoted.
fn key_text(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_string()
    } else {
        Value::String(key.to_string()).to_string()
    }
}

/// Everything but the edited keys must be as it was.
fn check_only_edits_changed(
    before: &Table,
    after: &Table,
    edits: &[Edit],
) -> Result<(), EditError> {
    let edited_tables: BTreeSet<&str> = edits.iter().map(|edit| edit.table.as_str()).collect();
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    for name in names {
        let (was, is) = (before.get(name), after.get(name));
        if !edited_tables.contains(name.as_str()) {
            if was != is {
                return Err(EditError::WouldChange(name.clone()));
            }
            continue;
        }
        let empty = Table::new();
        let was = was.and_then(Value::as_table).unwrap_or(&empty);
        let is = is.and_then(Value::as_table).unwrap_or(&empty);
        let keys: BTreeSet<&String> = was.keys().chain(is.keys()).collect();
        for key in keys {
            let edit = edits
                .iter()
                .rev()
                .find(|edit| &edit.table == name && &edit.key == key);
            let unchanged = match edit {
                Some(edit) => is.get(key) == edit.value.as_ref(),
                None => was.get(key) == is.get(key),
            };
            if !unchanged {
                return Err(EditError::WouldChange(format!("{name}.{key}")));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# my hearth\n\n[agent]\nname = \"ada\" # who\n\n[model]\n# the cheap one\nprovider = \"openai\"\nmodel = \"old\"\neffort = \"low\"\n\n[[model.fallback]]\nprovider = \"anthropic\"\nmodel = \"b\"\n\n[tools]\nallow = [\n  \"x\",\n  \"[not a header]\",\n]\n";

    #[test]
    fn a_key_is_replaced_where_it_stands_and_the_rest_is_kept() {
        let edits = [
            Edit::set("model", "model", "new"),
            Edit::set("model", "base_url", "http://127.0.0.1:1/v1"),
            Edit::remove("model", "effort"),
        ];
        let after = apply(FILE, &edits).unwrap();
        assert!(after.contains("# my hearth\n"), "{after}");
        assert!(after.contains("name = \"ada\" # who\n"), "{after}");
        assert!(after.contains("# the cheap one\nprovider = \"openai\"\nmodel = \"new\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\n[[model.fallback]]"), "{after}");
        assert!(!after.contains("effort"), "{after}");
        assert!(after.contains("  \"[not a header]\",\n]\n"), "{after}");
    }

    #[test]
    fn a_missing_table_is_added_at_the_end() {
        let after = apply(
            FILE,
            &[Edit::set("telegram", "allow", vec![Value::from(42)])],
        )
        .unwrap();
        assert!(
            after.ends_with("]\n\n[telegram]\nallow = [42]\n"),
            "{after}"
        );
        let fresh = apply("", &[Edit::set("model", "provider", "openai-chat")]).unwrap();
        assert_eq!(fresh, "[model]\nprovider = \"openai-chat\"\n");
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused_with_its_line() {
        let err = apply(
            "[model]\nprovider = \n",
            &[Edit::set("model", "model", "m")],
        )
        .unwrap_err();
        assert!(
            matches!(err, EditError::Unreadable { line: 2, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn an_inline_table_is_not_edited() {
        let err = apply(
            "model = { provider = \"openai\", model = \"m\" }\n",
            &[Edit::set("model", "model", "n")],
        );
        assert_eq!(err, Err(EditError::NotATable("model".to_string())));
    }

    #[test]
    fn a_dotted_key_elsewhere_is_left_alone() {
        let text = "[telegram]\nallow = [1]\n\n[web]\nlisten = \"127.0.0.1:8080\"\n";
        let after = apply(
            text,
            &[Edit::set(
                "telegram",
                "allow",
                vec![Value::from(1), Value::from(2)],
            )],
        )
        .unwrap();
        assert_eq!(
            after,
            "[telegram]\nallow = [1, 2]\n\n[web]\nlisten = \"127.0.0.1:8080\"\n"
        );
    }
}
