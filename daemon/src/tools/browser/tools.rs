//! The `browser_*` tools, one per action, over one agent's [`Browser`].
//!
//! Which act (`Tool::acts`, see `taint.rs`): `browser_open` goes to an
//! address, so it acts as `web_fetch` does, when the host is new to the
//! turn; `browser_click` and `browser_type` act always (they send what the
//! model chose to the site: a form, a purchase, a message); reading,
//! scrolling and a screenshot only read.

use super::Browser;
use crate::model::ToolSpec;
use crate::tools::tool::{text_of, Acts, Call, Tool};
use crate::tools::Outcome;
use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::Arc;

/// The browser's tools, in the order the model sees them.
pub fn tools(browser: &Arc<Browser>) -> Vec<Arc<dyn Tool>> {
    [
        Action::Open,
        Action::Read,
        Action::Click,
        Action::Type,
        Action::Scroll,
        Action::Screenshot,
    ]
    .map(|action| {
        Arc::new(BrowserTool {
            action,
            browser: browser.clone(),
        }) as Arc<dyn Tool>
    })
    .into()
}

#[derive(Clone, Copy)]
enum Action {
    Open,
    Read,
    Click,
    Type,
    Scroll,
    Screenshot,
}

struct BrowserTool {
    action: Action,
    browser: Arc<Browser>,
}

fn element() -> Value {
    json!({"type": "integer", "minimum": 1, "description": "The element's number in the last outline ([3] is 3)."})
}

fn spec(name: &str, description: &str, properties: Value, required: &[&str]) -> ToolSpec {
    ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters: json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        }),
    }
}

impl Tool for BrowserTool {
    fn spec(&self) -> ToolSpec {
        match self.action {
            Action::Open => spec(
                "browser_open",
                "Opens a web page (http or https) in your browser, a real Chromium that runs the \
page's scripts, and returns its outline: headings, text, and the elements you can click or \
type into, numbered [1], [2], …",
                json!({"url": {"type": "string", "description": "An http:// or https:// URL."}}),
                &["url"],
            ),
            Action::Read => spec(
                "browser_read",
                "Reads the page open in your browser again: as an outline with numbered \
elements (the default), or as its plain text.",
                json!({"as": {"type": "string", "enum": ["outline", "text"], "description": "outline (numbered elements) or text."}}),
                &[],
            ),
            Action::Click => spec(
                "browser_click",
                "Clicks a numbered element of the page's last outline (a button, a link, a \
checkbox) and says where the page is then.",
                json!({"element": element()}),
                &["element"],
            ),
            Action::Type => spec(
                "browser_type",
                "Types text into a numbered field of the page's last outline, replacing what \
it held; with submit, presses Enter after it.",
                json!({
                    "element": element(),
                    "text": {"type": "string"},
                    "submit": {"type": "boolean", "description": "Press Enter after typing."}
                }),
                &["element", "text"],
            ),
            Action::Scroll => spec(
                "browser_scroll",
                "Scrolls the page most of a screen down (the default) or up, and returns its \
outline.",
                json!({"direction": {"type": "string", "enum": ["down", "up"]}}),
                &[],
            ),
            Action::Screenshot => spec(
                "browser_screenshot",
                "Takes a screenshot of what the page shows (1280×800); you see the image.",
                json!({}),
                &[],
            ),
        }
    }

    fn acts(&self) -> Acts {
        match self.action {
            Action::Open => Acts::OnNewHost,
            Action::Click | Action::Type => Acts::Always,
            Action::Read | Action::Scroll | Action::Screenshot => Acts::Never,
        }
    }

    fn detail(&self, arguments: &Value) -> Option<String> {
        match self.action {
            Action::Open => text_of(arguments, "url"),
            Action::Click | Action::Type => arguments
                .get("element")
                .and_then(Value::as_u64)
                .map(|n| format!("[{n}]")),
            _ => None,
        }
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Outcome> {
        let arguments = call.arguments;
        let browser = &self.browser;
        let element = arguments
            .get("element")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match self.action {
            Action::Open => {
                let url = text_of(&arguments, "url").unwrap_or_default();
                Box::pin(browser.open(url))
            }
            Action::Read => {
                let as_text = arguments.get("as").and_then(Value::as_str) == Some("text");
                Box::pin(browser.read(as_text))
            }
            Action::Click => Box::pin(browser.click(element)),
            Action::Type => {
                let text = text_of(&arguments, "text").unwrap_or_default();
                let submit = arguments.get("submit").and_then(Value::as_bool) == Some(true);
                Box::pin(browser.type_text(element, text, submit))
            }
            Action::Scroll => {
                let down = arguments.get("direction").and_then(Value::as_str) != Some("up");
                Box::pin(browser.scroll(down))
            }
            Action::Screenshot => Box::pin(browser.screenshot()),
        }
    }
}
