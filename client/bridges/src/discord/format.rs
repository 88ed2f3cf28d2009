//! The agent's Markdown as Discord shows it (pure), through the bridges'
//! Markdown core (`bridge/markdown`). Discord reads a Markdown dialect of
//! its own: `**bold**`, `*italic*`, `~~strike~~`, `` `code` ``, fenced
//! code blocks with their language, `> ` before quoted lines (one level
//! only), masked links `[words](address)`. It has no tables (they become a
//! monospace block of aligned columns) and its headings are loud, so
//! headings are bold, as on the other platforms. Text is escaped with `\`
//! where Discord would read a mark, so `snake_case` and `2 * 3 * 4` show as
//! written. A message holds at most 2,000 characters.

use crate::bridge::markdown::text::{wrap_tight, Marks};
use crate::bridge::markdown::{split, text, tree};
use crate::bridge::split::units;

/// The longest message Discord takes, in characters (counted here in
/// UTF-16 code units, which are never fewer).
pub const MESSAGE_LIMIT: usize = 2000;

/// `markdown` in Discord's dialect.
pub fn to_discord(markdown: &str) -> String {
    let shown = text::render(&tree::parse(markdown), &DiscordMarks);
    if shown.trim().is_empty() {
        // Markdown with nothing to show (a lone link definition): as written.
        return escape(markdown.trim());
    }
    shown
}

/// `markdown` in parts Discord takes, each shown whole: cut between
/// blocks so a code block or a style is never cut in two.
pub fn parts(markdown: &str) -> Vec<String> {
    split::split(markdown, MESSAGE_LIMIT, |piece| units(&to_discord(piece)))
}

/// Text shown as written: every character Discord reads as a mark gets a
/// `\` before it; `>`, `#` and `-` only where a line starts, where they
/// would quote, head or list.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut line_start = true;
    for c in text.chars() {
        let mark = matches!(c, '\\' | '*' | '_' | '~' | '`' | '|' | '[' | ']' | '<')
            || (line_start && matches!(c, '>' | '#' | '-'));
        if mark {
            out.push('\\');
        }
        out.push(c);
        line_start = c == '\n' || (line_start && c == ' ');
    }
    out
}

/// Discord's marks.
struct DiscordMarks;

impl Marks for DiscordMarks {
    fn escape(&self, text: &str) -> String {
        escape(text)
    }

    fn strong(&self, inner: &str) -> String {
        wrap_tight(inner, "**", "**")
    }

    fn emphasis(&self, inner: &str) -> String {
        wrap_tight(inner, "*", "*")
    }

    fn strikethrough(&self, inner: &str) -> String {
        wrap_tight(inner, "~~", "~~")
    }

    /// Code between one backtick, or two when it holds one (spaced when it
    /// starts or ends with one).
    fn code(&self, code: &str) -> String {
        if code.trim().is_empty() {
            return escape(code);
        }
        // Discord's inline code holds no backtick between single ones, and
        // no run of two between double ones: such code shows as text.
        let fence = match longest_run(code, '`') {
            0 => "`",
            1 => "``",
            _ => return escape(code),
        };
        let pad = if code.starts_with('`') || code.ends_with('`') {
            " "
        } else {
            ""
        };
        format!("{fence}{pad}{code}{pad}{fence}")
    }

    fn link(&self, url: &str, words: &str, plain_words: &str) -> String {
        let address = url.strip_prefix("mailto:").unwrap_or(url);
        if url.is_empty() || url.starts_with('#') {
            return words.to_string();
        }
        if plain_words.trim() == address {
            return address.to_string();
        }
        if url.starts_with("http://") || url.starts_with("https://") {
            return format!("[{words}](<{url}>)");
        }
        format!("{words} ({address})")
    }

    /// A fenced block; a fence inside the code is broken with a zero-width
    /// space so it cannot end the block early.
    fn code_block(&self, language: &str, code: &str) -> String {
        let language: String = language
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '#' | '.'))
            .collect();
        let code = code.replace("```", "`\u{200b}``");
        let code = code.strip_suffix('\n').unwrap_or(&code);
        format!("```{language}\n{code}\n```")
    }

    /// `> ` before every line: Discord quotes one level deep.
    fn quote(&self, inner: &str, _depth: usize) -> String {
        inner
            .split('\n')
            .map(|line| {
                let line = line.trim_start_matches("> ");
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

/// The longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for found in text.chars() {
        run = if found == c { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_become_discords() {
        assert_eq!(
            to_discord("# Plan\n\nUse **bold**, *italic*, ~~old~~ and `x < y`."),
            "**Plan**\n\nUse **bold**, *italic*, ~~old~~ and `x < y`."
        );
    }

    #[test]
    fn text_that_looks_like_marks_is_escaped() {
        assert_eq!(
            to_discord("snake_case_name and 2 \\* 3 and a|b"),
            "snake\\_case\\_name and 2 \\* 3 and a\\|b"
        );
        assert_eq!(to_discord("<@123> hi"), "\\<@123> hi");
        assert_eq!(to_discord("`` a`b ``"), "``a`b``");
    }

    #[test]
    fn quotes_lists_and_links() {
        assert_eq!(
            to_discord("> said *so*\n> > deeper\n\n3. three\n4. four\n   - inner"),
            "> said *so*\n>\n> deeper\n\n3. three\n4. four\n   ◦ inner"
        );
        assert_eq!(
            to_discord("See [the docs](https://e.org/x) or <https://e.org>."),
            "See [the docs](<https://e.org/x>) or https://e.org."
        );
    }

    #[test]
    fn code_blocks_keep_their_language_and_tables_are_monospace() {
        assert_eq!(
            to_discord("```rust\nif a < b {}\n```"),
            "```rust\nif a < b {}\n```"
        );
        assert_eq!(
            to_discord("```\nsay ```\n```\n"),
            "```\nsay `\u{200b}``\n```"
        );
        assert_eq!(
            to_discord("| a | b |\n|---|--:|\n| 1 | 22 |"),
            "```\na |  b\n--+---\n1 | 22\n```"
        );
    }

    #[test]
    fn long_text_goes_in_parts_of_at_most_2000_characters_each_whole() {
        let code = "let x = 1;\n".repeat(400);
        let text = format!("Here:\n\n```\n{code}```");
        let parts = parts(&text);
        assert!(parts.len() > 2);
        for part in &parts[1..] {
            let shown = to_discord(part);
            assert!(units(&shown) <= MESSAGE_LIMIT);
            assert!(
                shown.starts_with("```\nlet x") && shown.ends_with(";\n```"),
                "{shown}"
            );
        }
    }
}
