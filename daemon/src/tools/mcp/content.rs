//! An MCP call's result as a tool outcome: text as text, images into the
//! image store (and back to the model), embedded resources as text, the
//! rest named in a line. The output starts by naming its server, and its
//! provenance is the server: untrusted input.
//!
//! The result is read as JSON (`CallToolResult` serialized), so a block of
//! a kind this hearth does not know is named, never a failure.

use crate::images::ImageStore;
use crate::tools::{Outcome, Provenance};
use hearth_protocol::image;
use serde_json::Value;

/// The outcome of `server`'s answer to a call of its tool `tool`.
pub async fn outcome(
    server: &str,
    tool: &str,
    result: &Value,
    images: Option<&ImageStore>,
) -> Outcome {
    let mut parts = Vec::new();
    let mut recalled = Vec::new();
    let blocks = result.get("content").and_then(Value::as_array);
    for block in blocks.into_iter().flatten() {
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("?");
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        match kind {
            "text" => parts.push(text("text").to_string()),
            "image" => {
                let (media_type, data) = (text("mimeType"), text("data"));
                let stored = match images {
                    Some(store) => match image::decode(media_type, data) {
                        Ok(bytes) => store
                            .put(media_type, bytes, Some(format!("{server}/{tool}")))
                            .await
                            .map_err(|err| err.to_string()),
                        Err(err) => Err(err.to_string()),
                    },
                    None => Err("this agent has no image store".to_string()),
                };
                match stored {
                    Ok(stored) => {
                        parts.push(format!(
                            "[image {} ({media_type}), shown to you after this result]",
                            stored.sha256
                        ));
                        recalled.push(stored);
                    }
                    Err(why) => parts.push(format!(
                        "[an image ({media_type}) that was not kept: {why}]"
                    )),
                }
            }
            "audio" => parts.push(format!(
                "[audio ({}), {} base64 characters, not shown]",
                text("mimeType"),
                text("data").len()
            )),
            "resource" => {
                let resource = block.get("resource").unwrap_or(&Value::Null);
                let field = |key: &str| resource.get(key).and_then(Value::as_str);
                let uri = field("uri").unwrap_or("?");
                match (field("text"), field("blob")) {
                    (Some(body), _) => parts.push(format!("[resource {uri}]\n{body}")),
                    (None, Some(blob)) => parts.push(format!(
                        "[resource {uri} ({}), {} base64 characters of binary, not shown]",
                        field("mimeType").unwrap_or("unknown type"),
                        blob.len()
                    )),
                    (None, None) => parts.push(format!("[resource {uri}, empty]")),
                }
            }
            "resource_link" => parts.push(format!(
                "[resource link {} ({})]",
                text("uri"),
                text("name")
            )),
            other => parts.push(format!("[a `{other}` block, not shown]")),
        }
    }
    if parts.is_empty() {
        match result.get("structuredContent") {
            Some(structured) => parts.push(structured.to_string()),
            None => parts.push("(no output)".to_string()),
        }
    }
    let failed = result.get("isError") == Some(&Value::Bool(true));
    let head = if failed {
        format!("[MCP server `{server}`, tool `{tool}` failed]")
    } else {
        format!("[MCP server `{server}`]")
    };
    let output = format!("{head}\n{}", parts.join("\n"));
    let outcome = if failed {
        Outcome::error(output)
    } else {
        Outcome::ok(output)
    };
    Outcome {
        recalled,
        provenance: Provenance::Mcp {
            server: server.to_string(),
        },
        ..outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A 1×1 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    #[tokio::test]
    async fn text_images_and_resources_become_one_output_naming_the_server() {
        let dir = tempfile::tempdir().unwrap();
        let store = ImageStore::new(dir.path());
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": PNG},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/x"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c"},
            {"type": "hologram"}
        ]});
        let outcome = outcome("ev", "mix", &result, Some(&store)).await;
        assert_eq!(outcome.status, hearth_protocol::MessageStatus::Ok);
        assert_eq!(outcome.recalled.len(), 1);
        assert_eq!(
            outcome.provenance,
            Provenance::Mcp {
                server: "ev".into()
            }
        );
        assert!(outcome.provenance.untrusted());
        let lines: Vec<&str> = outcome.output.lines().collect();
        assert_eq!(lines[0], "[MCP server `ev`]");
        assert_eq!(lines[1], "hello");
        assert!(lines[2].starts_with("[image "), "{}", lines[2]);
        assert_eq!(&lines[3..5], ["[resource file:///a.txt]", "inside"]);
        assert!(lines[5].contains("4 base64 characters of binary"));
        assert_eq!(lines[6], "[resource link file:///c (c)]");
        assert_eq!(lines[7], "[a `hologram` block, not shown]");
    }

    #[tokio::test]
    async fn an_error_result_is_an_error_outcome_and_a_bad_image_is_named() {
        let result = json!({"isError": true, "content": [
            {"type": "text", "text": "no such file"},
            {"type": "image", "mimeType": "image/png", "data": "bm90IGFuIGltYWdl"}
        ]});
        let dir = tempfile::tempdir().unwrap();
        let outcome = outcome("fs", "read", &result, Some(&ImageStore::new(dir.path()))).await;
        assert_eq!(outcome.status, hearth_protocol::MessageStatus::Error);
        assert!(outcome
            .output
            .starts_with("[MCP server `fs`, tool `read` failed]\nno such file\n"));
        assert!(outcome.output.contains("that was not kept"));
        assert!(outcome.recalled.is_empty());
        let structured = json!({"content": [], "structuredContent": {"t": 1}});
        assert_eq!(
            super::outcome("fs", "t", &structured, None).await.output,
            "[MCP server `fs`]\n{\"t\":1}"
        );
    }
}
