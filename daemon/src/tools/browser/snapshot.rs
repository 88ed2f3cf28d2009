//! A page's accessibility tree (Chromium's `Accessibility.getFullAXTree`)
//! as the outline the model reads: one line a node that says something,
//! indented by depth, the elements one can click or type into numbered
//! (`[3] button "Send"`), so a later call names them by number. Pure: the
//! tree's JSON in, the outline and the numbered elements out.

use serde_json::Value;
use std::collections::HashMap;

/// The most elements numbered in one snapshot; the rest are listed unnumbered.
pub const MAX_ELEMENTS: usize = 500;
/// The most characters of outline; the rest is cut with a note.
pub const MAX_CHARS: usize = 60_000;

/// The roles one acts on: they get numbers.
const ACTIONABLE: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "checkbox",
    "radio",
    "combobox",
    "listbox",
    "option",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "tab",
    "switch",
    "slider",
    "spinbutton",
    "treeitem",
];

/// Roles that say nothing themselves: their children stand in their place.
const TRANSPARENT: &[&str] = &[
    "generic",
    "none",
    "presentation",
    "RootWebArea",
    "WebArea",
    "InlineTextBox",
    "LineBreak",
    "LayoutTable",
    "LayoutTableRow",
    "LayoutTableCell",
    "Section",
    "group",
    "paragraph",
    "Iframe",
];

/// One numbered element: what it is, and the DOM node a click reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub role: String,
    pub name: String,
    pub backend_node: i64,
}

/// The outline and its numbered elements (element `n` is `elements[n-1]`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub outline: String,
    pub elements: Vec<Element>,
}

/// The outline of `nodes` (the `nodes` of `getFullAXTree`).
pub fn outline(nodes: &[Value]) -> Snapshot {
    let by_id: HashMap<&str, &Value> = nodes
        .iter()
        .filter_map(|node| Some((node.get("nodeId")?.as_str()?, node)))
        .collect();
    let root = nodes.iter().find(|node| node.get("parentId").is_none());
    let mut snapshot = Snapshot::default();
    let mut cut = false;
    if let Some(root) = root {
        walk(root, &by_id, 0, false, &mut snapshot, &mut cut);
    }
    if cut {
        snapshot
            .outline
            .push_str(&format!("[the rest of the page is cut at {MAX_CHARS} characters; scroll and read again for more]\n"));
    }
    snapshot
}

fn string_of<'a>(node: &'a Value, key: &str) -> &'a str {
    node.get(key)
        .and_then(|field| field.get("value"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A property's value (`checked`, `disabled`, `level`), as written.
fn property(node: &Value, name: &str) -> Option<String> {
    let properties = node.get("properties")?.as_array()?;
    let found = properties
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name))?;
    let value = found.get("value")?.get("value")?;
    Some(match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

/// Writes `node` at `depth` and its children; `inside_named` drops text
/// that only repeats a numbered element's name.
fn walk(
    node: &Value,
    by_id: &HashMap<&str, &Value>,
    depth: usize,
    inside_named: bool,
    snapshot: &mut Snapshot,
    cut: &mut bool,
) {
    if *cut {
        return;
    }
    let ignored = node.get("ignored").and_then(Value::as_bool) == Some(true);
    let role = string_of(node, "role");
    let name = one_line(string_of(node, "name"));
    let mut child_depth = depth;
    let mut named = inside_named;
    if !ignored && !TRANSPARENT.contains(&role) {
        let line = if role == "StaticText" {
            (!inside_named && !name.is_empty()).then(|| name.clone())
        } else if ACTIONABLE.contains(&role) {
            let mut line = match node.get("backendDOMNodeId").and_then(Value::as_i64) {
                Some(backend_node) if snapshot.elements.len() < MAX_ELEMENTS => {
                    snapshot.elements.push(Element {
                        role: role.to_string(),
                        name: name.clone(),
                        backend_node,
                    });
                    format!("[{}] {role}", snapshot.elements.len())
                }
                _ => role.to_string(),
            };
            if !name.is_empty() {
                line.push_str(&format!(" {name:?}"));
            }
            let value = one_line(string_of(node, "value"));
            if !value.is_empty() {
                line.push_str(&format!(" value={value:?}"));
            }
            for state in ["checked", "selected", "expanded", "disabled", "required"] {
                match property(node, state).as_deref() {
                    Some("true") => line.push_str(&format!(" ({state})")),
                    Some("mixed") => line.push_str(&format!(" ({state}: mixed)")),
                    _ => {}
                }
            }
            named = !name.is_empty();
            Some(line)
        } else if !name.is_empty() {
            let level = property(node, "level").map(|level| format!(" {level}"));
            // A heading's name is its text: said once.
            named = role == "heading";
            Some(format!("{role}{} {name:?}", level.unwrap_or_default()))
        } else {
            None
        };
        if let Some(line) = line {
            let line = format!("{}{line}\n", "  ".repeat(depth.min(20)));
            if snapshot.outline.len() + line.len() > MAX_CHARS {
                *cut = true;
                return;
            }
            snapshot.outline.push_str(&line);
            child_depth = depth + 1;
        }
    }
    if role == "StaticText" {
        // Its children are its inline text boxes, the same words again.
        return;
    }
    let children = node.get("childIds").and_then(Value::as_array);
    for child in children.into_iter().flatten() {
        if let Some(child) = child.as_str().and_then(|id| by_id.get(id)) {
            walk(child, by_id, child_depth, named, snapshot, cut);
        }
    }
}

/// `text` on one line, runs of white space as one space, at most 200 chars.
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match joined.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &joined[..at]),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(id: &str, parent: Option<&str>, role: &str, name: &str, children: &[&str]) -> Value {
        let mut node = json!({
            "nodeId": id,
            "ignored": false,
            "role": {"type": "role", "value": role},
            "name": {"type": "computedString", "value": name},
            "childIds": children,
            "backendDOMNodeId": id.parse::<i64>().unwrap() + 100,
        });
        if let Some(parent) = parent {
            node["parentId"] = json!(parent);
        }
        node
    }

    #[test]
    fn actionable_elements_are_numbered_and_their_own_text_is_not_repeated() {
        let mut field = node("5", Some("1"), "textbox", "Name", &[]);
        field["value"] = json!({"type": "string", "value": "Ada"});
        let mut heading = node("2", Some("1"), "heading", "Welcome", &["3"]);
        heading["properties"] =
            json!([{"name": "level", "value": {"type": "integer", "value": 1}}]);
        let nodes = vec![
            node(
                "1",
                None,
                "RootWebArea",
                "A page",
                &["2", "4", "5", "6", "8"],
            ),
            heading,
            node("3", Some("2"), "StaticText", "Welcome", &[]),
            node("4", Some("1"), "button", "Go", &["7"]),
            field,
            node("6", Some("1"), "generic", "", &["9"]),
            node("7", Some("4"), "StaticText", "Go", &[]),
            node("8", Some("1"), "link", "About us", &[]),
            node("9", Some("6"), "StaticText", "Some   words\nhere", &[]),
        ];
        let snapshot = outline(&nodes);
        assert_eq!(
            snapshot.outline,
            "heading 1 \"Welcome\"\n[1] button \"Go\"\n[2] textbox \"Name\" value=\"Ada\"\nSome words here\n[3] link \"About us\"\n"
        );
        assert_eq!(snapshot.elements.len(), 3);
        assert_eq!(
            snapshot.elements[0],
            Element {
                role: "button".into(),
                name: "Go".into(),
                backend_node: 104
            }
        );
        assert_eq!(snapshot.elements[2].backend_node, 108);
    }

    #[test]
    fn a_huge_page_is_cut_with_a_note() {
        let ids: Vec<String> = (2..3000).map(|n| n.to_string()).collect();
        let children: Vec<&str> = ids.iter().map(String::as_str).collect();
        let mut nodes = vec![node("1", None, "RootWebArea", "", &children)];
        let long = "word ".repeat(40);
        for id in &ids {
            nodes.push(node(id, Some("1"), "link", &long, &[]));
        }
        let snapshot = outline(&nodes);
        assert!(snapshot.outline.len() < MAX_CHARS + 200);
        assert!(snapshot
            .outline
            .ends_with("scroll and read again for more]\n"));
        assert!(snapshot.elements.len() <= MAX_ELEMENTS);
    }
}
