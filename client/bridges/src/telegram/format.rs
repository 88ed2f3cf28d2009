//! The agent's Markdown as Telegram HTML (pure), through the bridges'
//! Markdown core (`bridge/markdown`): bold, italic, strikethrough, code and
//! `<pre>` blocks (with their language), links, quotes as `<blockquote>`,
//! headings in bold, lists as bullets and numbers indented by nesting,
//! tables as a `<pre>` grid of aligned columns. Only `<`, `>` and `&` are
//! escaped in text (and `"` in addresses), the tags are always balanced and
//! nested only as Telegram allows; should Telegram still refuse a part, the
//! bridge sends it again as plain text.

use crate::bridge::markdown::{split, text, tree};
use crate::bridge::split::units;

/// Escapes the characters Telegram's HTML mode reserves in text.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            _ => out.push(c),
        }
    }
    out
}

/// `markdown` as Telegram HTML. Markdown that shows nothing (a lone link
/// definition) goes as written, escaped, since Telegram refuses an empty
/// message.
pub fn to_html(markdown: &str) -> String {
    let html = text::render(&tree::parse(markdown), &TelegramHtml);
    if visible(&html).trim().is_empty() {
        return escape(markdown.trim());
    }
    html
}

/// `markdown` in parts of at most `limit` characters as Telegram counts
/// them, both as written (the plain fallback) and as shown from the HTML.
pub fn parts(markdown: &str, limit: usize) -> Vec<String> {
    split::split(markdown, limit, |piece| units(&visible(&to_html(piece))))
}

/// The text Telegram shows for HTML made by [`to_html`]: the tags dropped,
/// the entities read.
pub fn visible(html: &str) -> String {
    let mut shown = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => shown.push(c),
            _ => {}
        }
    }
    shown
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Telegram's HTML subset.
struct TelegramHtml;

impl text::Marks for TelegramHtml {
    fn escape(&self, text: &str) -> String {
        escape(text)
    }

    fn strong(&self, inner: &str) -> String {
        format!("<b>{inner}</b>")
    }

    fn emphasis(&self, inner: &str) -> String {
        format!("<i>{inner}</i>")
    }

    fn strikethrough(&self, inner: &str) -> String {
        format!("<s>{inner}</s>")
    }

    fn code(&self, code: &str) -> String {
        format!("<code>{}</code>", escape(code))
    }

    /// Telegram links only web, mail and its own addresses; any other shows
    /// its words and the address after, as text.
    fn link(&self, url: &str, words: &str, plain_words: &str) -> String {
        let linkable = ["http://", "https://", "mailto:", "tg://"]
            .iter()
            .any(|scheme| url.starts_with(scheme));
        if linkable {
            let href = escape(url).replace('"', "&quot;");
            return format!("<a href=\"{href}\">{words}</a>");
        }
        if url.is_empty() || url.starts_with('#') || url == plain_words {
            return words.to_string();
        }
        format!("{words} ({})", escape(url))
    }

    fn code_block(&self, language: &str, code: &str) -> String {
        let named = !language.is_empty()
            && language
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-_.#".contains(c));
        if named {
            format!(
                "<pre><code class=\"language-{language}\">{}</code></pre>",
                escape(code)
            )
        } else {
            format!("<pre>{}</pre>", escape(code))
        }
    }

    /// Telegram does not nest quotes: an inner one shows behind a bar.
    fn quote(&self, inner: &str, depth: usize) -> String {
        if depth == 1 {
            return format!("<blockquote>{inner}</blockquote>");
        }
        inner
            .split('\n')
            .map(|line| format!("▍ {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_characters_are_escaped() {
        assert_eq!(
            to_html("if a < b && c > d"),
            "if a &lt; b &amp;&amp; c &gt; d"
        );
        assert_eq!(escape("<b>\"x\"</b>"), "&lt;b&gt;\"x\"&lt;/b&gt;");
        assert_eq!(
            to_html("<script>alert(1)</script>"),
            "&lt;script&gt;alert(1)&lt;/script&gt;"
        );
    }

    #[test]
    fn marks_become_tags() {
        assert_eq!(
            to_html("# Plan\nUse **`cargo test`**, *really* ~~not~~ and see [the docs](https://example.org/a?b=1&c=2)."),
            "<b>Plan</b>\n\nUse <b><code>cargo test</code></b>, <i>really</i> <s>not</s> and see <a href=\"https://example.org/a?b=1&amp;c=2\">the docs</a>."
        );
        assert_eq!(to_html("`<tag>`"), "<code>&lt;tag&gt;</code>");
    }

    #[test]
    fn a_quote_is_a_blockquote_not_escaped_marks() {
        assert_eq!(
            to_html("> said *so*\n>\n> > and this"),
            "<blockquote>said <i>so</i>\n\n▍ and this</blockquote>"
        );
    }

    #[test]
    fn lists_are_numbered_from_their_start_and_nested() {
        assert_eq!(
            to_html("3. three\n4. four\n   - inner **b**\n5. five"),
            "3. three\n4. four\n   ◦ inner <b>b</b>\n5. five"
        );
        assert_eq!(to_html("- [x] done\n- [ ] to do"), "• ☑ done\n• ☐ to do");
    }

    #[test]
    fn a_table_is_an_aligned_pre_block() {
        assert_eq!(
            to_html("| a | b<c |\n|---|---|\n| 1 | 22 |"),
            "<pre>a | b&lt;c\n--+----\n1 | 22</pre>"
        );
    }

    #[test]
    fn code_blocks_keep_their_language_and_escape_their_text() {
        assert_eq!(
            to_html("Run:\n```rust\nif a < b && c {}\n```\nDone."),
            "Run:\n\n<pre><code class=\"language-rust\">if a &lt; b &amp;&amp; c {}</code></pre>\n\nDone."
        );
        assert_eq!(to_html("```\na & b"), "<pre>a &amp; b</pre>");
    }

    #[test]
    fn links_telegram_cannot_open_show_their_address() {
        assert_eq!(
            to_html("[x](ftp://host/f) [`y`](https://e.org) <https://e.org>"),
            "x (ftp://host/f) <a href=\"https://e.org\">y</a> <a href=\"https://e.org\">https://e.org</a>"
        );
    }

    #[test]
    fn markdown_that_shows_nothing_goes_as_written() {
        assert_eq!(
            to_html("[x]: https://e.org/?a&b"),
            "[x]: https://e.org/?a&amp;b"
        );
    }

    #[test]
    fn plain_text_and_snake_case_are_unchanged() {
        let text = "Hello there.\n\nSecond paragraph, with: punctuation! snake_case_name 2 * 3 * 4";
        assert_eq!(to_html(text), text);
    }

    #[test]
    fn parts_at_the_limit_are_whole_html() {
        let block = format!("> {}\n\n", ["quoted <b> & words"; 10].join(" "));
        let text = block.repeat(40);
        let parts = parts(&text, 4096);
        assert!(parts.len() > 1);
        for part in &parts {
            let html = to_html(part);
            assert!(units(part) <= 4096 && units(&visible(&html)) <= 4096);
            assert!(html.starts_with("<blockquote>") && html.ends_with("</blockquote>"));
            assert_eq!(
                html.matches("<blockquote>").count(),
                html.matches("</blockquote>").count()
            );
        }
        assert_eq!(parts.join("\n\n"), text.trim_end());
    }
}
