//! The agent's Markdown as a mail (pure): a `text/plain` body any mail
//! program shows, with the conventions plain-text mail has for marks
//! (`*strong*`, `_emphasis_`, `> ` quotes, links as `words <address>`),
//! and an HTML alternative for programs that show HTML, its line breaks
//! kept as written.

use super::text::{self, wrap_tight, Marks};
use super::tree;

/// The text/plain body of `markdown`.
pub fn plain(markdown: &str) -> String {
    let text = text::render(&tree::parse(markdown), &PlainMail);
    if text.trim().is_empty() {
        return markdown.trim().to_string();
    }
    text
}

/// The text/html body of `markdown`: one block that keeps its line breaks.
pub fn html(markdown: &str) -> String {
    let mut inner = text::render(&tree::parse(markdown), &HtmlMail);
    if inner.trim().is_empty() {
        inner = escape_html(markdown.trim());
    }
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\
         <div style=\"white-space: pre-wrap\">{inner}</div></body></html>\n"
    )
}

/// Text shown as written in HTML.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// Plain-text mail's marks.
struct PlainMail;

impl Marks for PlainMail {
    fn escape(&self, text: &str) -> String {
        text.to_string()
    }
    fn strong(&self, inner: &str) -> String {
        wrap_tight(inner, "*", "*")
    }
    fn emphasis(&self, inner: &str) -> String {
        wrap_tight(inner, "_", "_")
    }
    fn strikethrough(&self, inner: &str) -> String {
        wrap_tight(inner, "~", "~")
    }
    fn code(&self, code: &str) -> String {
        format!("`{code}`")
    }
    fn link(&self, url: &str, words: &str, plain_words: &str) -> String {
        if url.is_empty() || url.starts_with('#') || url == plain_words {
            return words.to_string();
        }
        format!("{words} <{url}>")
    }
    /// Indented by four spaces, as mail has shown code since before Markdown.
    fn code_block(&self, _language: &str, code: &str) -> String {
        code.trim_end_matches('\n')
            .split('\n')
            .map(|line| format!("    {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
    fn quote(&self, inner: &str, _depth: usize) -> String {
        inner
            .split('\n')
            .map(|line| {
                if line.is_empty() {
                    ">".to_string()
                } else {
                    format!("> {line}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// HTML mail's marks.
struct HtmlMail;

impl Marks for HtmlMail {
    fn escape(&self, text: &str) -> String {
        escape_html(text)
    }
    fn strong(&self, inner: &str) -> String {
        format!("<strong>{inner}</strong>")
    }
    fn emphasis(&self, inner: &str) -> String {
        format!("<em>{inner}</em>")
    }
    fn strikethrough(&self, inner: &str) -> String {
        format!("<s>{inner}</s>")
    }
    fn code(&self, code: &str) -> String {
        format!("<code>{}</code>", escape_html(code))
    }
    /// Only web and mail addresses link: anything else is shown as words.
    fn link(&self, url: &str, words: &str, _plain_words: &str) -> String {
        let safe = ["https://", "http://", "mailto:"]
            .iter()
            .any(|scheme| url.to_ascii_lowercase().starts_with(scheme));
        if !safe {
            return words.to_string();
        }
        format!("<a href=\"{}\">{words}</a>", escape_html(url))
    }
    fn code_block(&self, _language: &str, code: &str) -> String {
        format!("<pre>{}</pre>", escape_html(code.trim_end_matches('\n')))
    }
    fn quote(&self, inner: &str, _depth: usize) -> String {
        format!("<blockquote>{inner}</blockquote>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_mail_keeps_the_words_with_the_conventions_of_plain_text() {
        assert_eq!(
            plain("# Plan\n\nHello, **Ada**! Run `x < y`, *carefully*:\n\n1. one\n2. two"),
            "*Plan*\n\nHello, *Ada*! Run `x < y`, _carefully_:\n\n1. one\n2. two"
        );
        assert_eq!(
            plain("See [the docs](https://example.com/d).\n\n> quoted\n\n```\ncode\n```"),
            "See the docs <https://example.com/d>.\n\n> quoted\n\n    code"
        );
    }

    #[test]
    fn html_mail_escapes_text_and_links_only_web_addresses() {
        let html = html("a < b **and** [x](javascript:alert(1)) [y](https://e.com/?a=1&b=2)");
        assert!(
            html.contains(
                "a &lt; b <strong>and</strong> x <a href=\"https://e.com/?a=1&amp;b=2\">y</a>"
            ),
            "{html}"
        );
        assert!(!html.contains("javascript"), "{html}");
    }
}
