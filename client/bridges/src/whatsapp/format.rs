//! The agent's Markdown as WhatsApp shows it (pure), through the bridges'
//! Markdown core (`bridge/markdown`): `*bold*`, `_italic_`, `~strike~`,
//! ```` ```monospace``` ```` for code, `> ` before quoted lines, headings
//! in bold, lists as bullets and numbers indented by nesting, tables as a
//! monospace block of aligned columns, links as their words with the
//! address after (WhatsApp links addresses itself). WhatsApp has no way to
//! escape its marks, so text goes as written. Both backends, the Cloud API
//! and the linked device, send this.

use crate::bridge::markdown::text::{wrap_tight, Marks};
use crate::bridge::markdown::{split, text, tree};
use crate::bridge::split::units;

/// `markdown` in WhatsApp's formatting.
pub fn to_whatsapp(markdown: &str) -> String {
    let shown = text::render(&tree::parse(markdown), &WhatsAppMarks);
    if shown.trim().is_empty() {
        // Markdown with nothing to show (a lone link definition): as written.
        return markdown.trim().to_string();
    }
    shown
}

/// `markdown` in parts of at most `limit` characters, as written and as
/// shown, each formatted whole.
pub fn parts(markdown: &str, limit: usize) -> Vec<String> {
    split::split(markdown, limit, |piece| units(&to_whatsapp(piece)))
}

/// WhatsApp's formatting marks.
struct WhatsAppMarks;

impl Marks for WhatsAppMarks {
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
        wrap_tight(code, "```", "```")
    }

    fn link(&self, url: &str, words: &str, plain_words: &str) -> String {
        let address = url.strip_prefix("mailto:").unwrap_or(url);
        if url.is_empty() || url.starts_with('#') || plain_words.trim() == address {
            return words.to_string();
        }
        format!("{words} ({address})")
    }

    fn code_block(&self, _language: &str, code: &str) -> String {
        format!("```{code}```")
    }

    fn quote(&self, inner: &str, _depth: usize) -> String {
        inner
            .split('\n')
            .map(|line| format!("> {line}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_become_whatsapps() {
        assert_eq!(
            to_whatsapp("# Plan\n\nUse **bold**, *italic*, ~~old~~ and `x < y`."),
            "*Plan*\n\nUse *bold*, _italic_, ~old~ and ```x < y```."
        );
        assert_eq!(to_whatsapp("** spaced **"), "** spaced **");
    }

    #[test]
    fn quotes_lists_and_links() {
        assert_eq!(
            to_whatsapp("> said *so*\n> again\n\n3. three\n4. four\n   - inner"),
            "> said _so_\n> again\n\n3. three\n4. four\n   ◦ inner"
        );
        assert_eq!(
            to_whatsapp("See [the docs](https://e.org/x) or <https://e.org>."),
            "See the docs (https://e.org/x) or https://e.org."
        );
    }

    #[test]
    fn code_and_tables_are_monospace_blocks() {
        assert_eq!(
            to_whatsapp("```rust\nif a < b {}\n```"),
            "```if a < b {}```"
        );
        assert_eq!(
            to_whatsapp("| a | b |\n|---|--:|\n| 1 | 22 |"),
            "```a |  b\n--+---\n1 | 22```"
        );
    }

    #[test]
    fn plain_text_is_unchanged() {
        let text = "Hello there.\n\nsnake_case_name and 2 * 3 * 4";
        assert_eq!(to_whatsapp(text), text);
    }

    #[test]
    fn parts_at_the_limit_keep_code_blocks_whole() {
        let code = "let x = 1;\n".repeat(600);
        let text = format!("Here:\n\n```\n{code}```");
        let parts = parts(&text, 4096);
        assert!(parts.len() > 1);
        for part in &parts[1..] {
            let shown = to_whatsapp(part);
            assert!(units(&shown) <= 4096);
            assert!(
                shown.starts_with("```let x") && shown.ends_with(";```"),
                "{shown}"
            );
        }
    }
}
