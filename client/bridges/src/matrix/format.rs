//! The agent's Markdown as a Matrix message (pure): the `formatted_body`
//! in the HTML subset the Matrix specification lists for `m.room.message`
//! (paragraphs, headings, quotes, nested and numbered lists, code blocks
//! with their language, tables, rules, bold, italics, strikethrough, code,
//! links), walked from the bridges' Markdown core (`bridge/markdown`); and
//! the `body` beside it, the Markdown as written, which clients without
//! HTML show. Text is always escaped, tags always balanced; raw HTML in the
//! Markdown stays text.

use crate::bridge::markdown::tree::{self, Block, Inline};
use pulldown_cmark::Alignment;

/// A message as Matrix takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// What clients without HTML show: the Markdown as written.
    pub body: String,
    /// The `formatted_body` (`org.matrix.custom.html`); `None` when the
    /// Markdown marks nothing, so the body says it all.
    pub html: Option<String>,
}

/// `markdown` as a Matrix message.
pub fn render(markdown: &str) -> Message {
    let blocks = tree::parse(markdown);
    let html = blocks.iter().map(block).collect::<String>();
    let body = markdown.trim().to_string();
    let plain = format!("<p>{}</p>", escape(&body));
    let marks_nothing = html.is_empty() || html == plain;
    Message {
        body,
        html: (!marks_nothing).then_some(html),
    }
}

/// Escapes text for HTML (and attribute values).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

fn block(block: &Block) -> String {
    match block {
        Block::Paragraph(runs) => format!("<p>{}</p>", inlines(runs)),
        Block::Heading(runs) => format!("<h3>{}</h3>", inlines(runs)),
        Block::Quote(blocks) => {
            let inner: String = blocks.iter().map(self::block).collect();
            format!("<blockquote>{inner}</blockquote>")
        }
        Block::List { start, items } => {
            let items: String = items.iter().map(|item| list_item(item)).collect();
            match start {
                Some(1) => format!("<ol>{items}</ol>"),
                Some(first) => format!("<ol start=\"{first}\">{items}</ol>"),
                None => format!("<ul>{items}</ul>"),
            }
        }
        Block::Code { language, text } => {
            let named = !language.is_empty()
                && language
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-_.#".contains(c));
            if named {
                format!(
                    "<pre><code class=\"language-{language}\">{}</code></pre>",
                    escape(text)
                )
            } else {
                format!("<pre><code>{}</code></pre>", escape(text))
            }
        }
        Block::Table(table) => {
            let cell = |tag: &str, at: usize, runs: &[Inline]| {
                let align = match table.alignments.get(at) {
                    Some(Alignment::Left) => " align=\"left\"",
                    Some(Alignment::Center) => " align=\"center\"",
                    Some(Alignment::Right) => " align=\"right\"",
                    _ => "",
                };
                format!("<{tag}{align}>{}</{tag}>", inlines(runs))
            };
            let head: String = table
                .head
                .iter()
                .enumerate()
                .map(|(at, runs)| cell("th", at, runs))
                .collect();
            let rows: String = table
                .rows
                .iter()
                .map(|row| {
                    let cells: String = row
                        .iter()
                        .enumerate()
                        .map(|(at, runs)| cell("td", at, runs))
                        .collect();
                    format!("<tr>{cells}</tr>")
                })
                .collect();
            format!("<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        }
        Block::Rule => "<hr>".to_string(),
    }
}

/// An item of a list: a lone paragraph without its `<p>` (a tight item).
fn list_item(item: &[Block]) -> String {
    let inner = match item {
        [Block::Paragraph(runs)] => inlines(runs),
        blocks => blocks.iter().map(block).collect(),
    };
    format!("<li>{inner}</li>")
}

fn inlines(runs: &[Inline]) -> String {
    runs.iter().map(inline).collect()
}

fn inline(run: &Inline) -> String {
    match run {
        Inline::Text(text) => escape(text),
        Inline::Code(code) => format!("<code>{}</code>", escape(code)),
        Inline::Emphasis(inner) => format!("<em>{}</em>", inlines(inner)),
        Inline::Strong(inner) => format!("<strong>{}</strong>", inlines(inner)),
        Inline::Strikethrough(inner) => format!("<del>{}</del>", inlines(inner)),
        Inline::Link { url, words } => {
            let linkable = ["http://", "https://", "mailto:", "matrix:"]
                .iter()
                .any(|scheme| url.starts_with(scheme));
            if linkable {
                format!("<a href=\"{}\">{}</a>", escape(url), inlines(words))
            } else {
                inlines(words)
            }
        }
        Inline::Break => "<br>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_go_without_html() {
        let message = render("Hello there, 2 < 3.");
        assert_eq!(message.body, "Hello there, 2 < 3.");
        assert_eq!(message.html, None);
    }

    #[test]
    fn marks_become_the_tags_matrix_shows() {
        let message = render(
            "# Plan\nUse **`cargo test`**, *really* ~~not~~ and [docs](https://e.org/?a=1&b=2).",
        );
        assert_eq!(
            message.html.as_deref(),
            Some("<h3>Plan</h3><p>Use <strong><code>cargo test</code></strong>, <em>really</em> <del>not</del> and <a href=\"https://e.org/?a=1&amp;b=2\">docs</a>.</p>")
        );
        assert!(message.body.starts_with("# Plan"));
    }

    #[test]
    fn lists_nest_and_keep_their_numbers() {
        let html = render("3. three\n4. four\n   - inner\n").html.unwrap();
        assert_eq!(
            html,
            "<ol start=\"3\"><li>three</li><li><p>four</p><ul><li>inner</li></ul></li></ol>"
        );
    }

    #[test]
    fn tables_quotes_and_code_are_structure_not_text() {
        let html = render("| a | b |\n|:--|--:|\n| 1 | 2 |\n\n> said\n\n```rust\nfn x() {}\n```\n")
            .html
            .unwrap();
        assert_eq!(
            html,
            "<table><thead><tr><th align=\"left\">a</th><th align=\"right\">b</th></tr></thead><tbody><tr><td align=\"left\">1</td><td align=\"right\">2</td></tr></tbody></table><blockquote><p>said</p></blockquote><pre><code class=\"language-rust\">fn x() {}</code></pre>"
        );
    }

    #[test]
    fn raw_html_stays_text() {
        let html = render("**a** <script>alert(1)</script>").html.unwrap();
        assert_eq!(
            html,
            "<p><strong>a</strong> &lt;script&gt;alert(1)&lt;/script&gt;</p>"
        );
    }
}
