//! The agent's Markdown, rendered for a colour terminal with ANSI styles:
//! headings, bold, italics, strikethrough, inline code, fenced code with its
//! language named, block quotes, lists (nested, numbered, tasks), links with
//! their address, tables with aligned columns, rules.
//!
//! Parsing is pulldown-cmark's (CommonMark with GitHub's tables,
//! strikethrough and task lists); this module only decides how each part
//! looks. Lines are not re-wrapped: the terminal wraps them. The text must
//! already be terminal-safe (see `sanitize.rs`): nothing here removes
//! control characters.

use crate::sanitize::terminal_safe;
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use unicode_width::UnicodeWidthStr;

const BOLD: &str = "\x1b[1m";
const BOLD_OFF: &str = "\x1b[22m";
const ITALIC: &str = "\x1b[3m";
const ITALIC_OFF: &str = "\x1b[23m";
const UNDERLINE: &str = "\x1b[4m";
const UNDERLINE_OFF: &str = "\x1b[24m";
const STRIKE: &str = "\x1b[9m";
const STRIKE_OFF: &str = "\x1b[29m";
/// Inline code and the lines of code blocks.
const CODE: &str = "\x1b[36m";
/// Quote bars, code frames, bullets, addresses: grey, a colour rather
/// than SGR 2 (dim), whose reset would also end a bold that spans them.
const GREY: &str = "\x1b[90m";
const COLOUR_OFF: &str = "\x1b[39m";

/// How wide a rule is drawn.
const RULE_WIDTH: usize = 40;

/// `markdown` rendered with ANSI styles, without a trailing newline.
pub fn render(markdown: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut renderer = Renderer::default();
    for event in Parser::new_ext(markdown, options) {
        renderer.event(event);
    }
    let mut out = renderer.out;
    let kept = out.trim_end_matches('\n').len();
    out.truncate(kept);
    out
}

/// The width `text` takes on a terminal, its ANSI styles not counted.
pub fn visible_width(text: &str) -> usize {
    terminal_safe(text).width()
}

fn grey(text: &str) -> String {
    format!("{GREY}{text}{COLOUR_OFF}")
}

/// A table being read: its rows of rendered cells.
#[derive(Default)]
struct Table {
    alignments: Vec<Alignment>,
    rows: Vec<Vec<String>>,
    /// How many of the first rows are the header.
    header_rows: usize,
    row: Vec<String>,
    cell: String,
}

#[derive(Default)]
struct Renderer {
    out: String,
    /// What starts each line inside the open quotes and list items,
    /// outermost first: a bar for a quote, spaces under a list bullet.
    prefixes: Vec<String>,
    /// A list item's bullet, written once in place of the innermost prefix
    /// at the start of its first line.
    bullet: Option<String>,
    at_line_start: bool,
    /// A block ended: the next block starts after a blank line.
    blank_pending: bool,
    /// The open lists, innermost last: the next number of an ordered one.
    lists: Vec<Option<u64>>,
    /// The open link's address and the text shown for it so far.
    link: Option<(String, String)>,
    /// The open image's address and its alternative text so far.
    image: Option<(String, String)>,
    /// The open code block's language and its text so far.
    code: Option<(String, String)>,
    table: Option<Table>,
}

impl Renderer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => self.inline(&format!("{CODE}{code}{COLOUR_OFF}"), &code),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math),
            Event::Html(html) | Event::InlineHtml(html) => self.inline(&grey(&html), &html),
            Event::FootnoteReference(name) => self.text(&format!("[^{name}]")),
            Event::SoftBreak | Event::HardBreak => self.text("\n"),
            Event::Rule => {
                self.start_block();
                self.write(&grey(&"─".repeat(RULE_WIDTH)));
                self.end_block();
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::MetadataBlock(_) => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                if level == HeadingLevel::H1 {
                    self.write(UNDERLINE);
                }
                self.write(BOLD);
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.prefixes.push(format!("{} ", grey("│")));
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((language, String::new()));
            }
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.new_line();
                }
                self.lists.push(first);
            }
            Tag::Item => self.start_item(),
            Tag::FootnoteDefinition(name) => {
                self.start_block();
                self.write(&format!("[^{name}]: "));
            }
            Tag::DefinitionList | Tag::DefinitionListTitle => self.start_block(),
            Tag::DefinitionListDefinition => {
                self.new_line();
                self.prefixes.push("    ".to_string());
            }
            Tag::Table(alignments) => {
                self.start_block();
                self.table = Some(Table {
                    alignments,
                    ..Table::default()
                });
            }
            Tag::TableHead | Tag::TableRow => {}
            Tag::TableCell => {
                if let Some(table) = self.table.as_mut() {
                    table.cell.clear();
                }
            }
            Tag::Emphasis => self.write(ITALIC),
            Tag::Strong => self.write(BOLD),
            Tag::Strikethrough => self.write(STRIKE),
            Tag::Superscript | Tag::Subscript => {}
            Tag::Link { dest_url, .. } => {
                self.write(UNDERLINE);
                self.link = Some((dest_url.to_string(), String::new()));
            }
            Tag::Image { dest_url, .. } => {
                self.image = Some((dest_url.to_string(), String::new()));
            }
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::MetadataBlock(_) => self.end_block(),
            TagEnd::Heading(level) => {
                self.write(BOLD_OFF);
                if level == HeadingLevel::H1 {
                    self.write(UNDERLINE_OFF);
                }
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.new_line();
                self.prefixes.pop();
                self.end_block();
            }
            TagEnd::CodeBlock => self.end_code_block(),
            TagEnd::List(_) => {
                self.lists.pop();
                if self.lists.is_empty() {
                    self.end_block();
                } else {
                    self.new_line();
                }
            }
            TagEnd::Item => {
                self.new_line();
                self.prefixes.pop();
                self.bullet = None;
            }
            TagEnd::FootnoteDefinition | TagEnd::DefinitionList | TagEnd::DefinitionListTitle => {
                self.end_block()
            }
            TagEnd::DefinitionListDefinition => {
                self.new_line();
                self.prefixes.pop();
            }
            TagEnd::Table => self.end_table(),
            TagEnd::TableHead => {
                if let Some(table) = self.table.as_mut() {
                    table.rows.push(std::mem::take(&mut table.row));
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::TableRow => {
                if let Some(table) = self.table.as_mut() {
                    table.rows.push(std::mem::take(&mut table.row));
                }
            }
            TagEnd::TableCell => {
                if let Some(table) = self.table.as_mut() {
                    let cell = std::mem::take(&mut table.cell);
                    table.row.push(cell);
                }
            }
            TagEnd::Emphasis => self.write(ITALIC_OFF),
            TagEnd::Strong => self.write(BOLD_OFF),
            TagEnd::Strikethrough => self.write(STRIKE_OFF),
            TagEnd::Superscript | TagEnd::Subscript => {}
            TagEnd::Link => {
                self.write(UNDERLINE_OFF);
                if let Some((url, shown)) = self.link.take() {
                    let bare = url.strip_prefix("mailto:").unwrap_or(&url);
                    if !url.is_empty() && shown != url && shown != bare {
                        self.write(&grey(&format!(" ({url})")));
                    }
                }
            }
            TagEnd::Image => {
                if let Some((url, alt)) = self.image.take() {
                    let alt = if alt.is_empty() {
                        "image"
                    } else {
                        alt.as_str()
                    };
                    self.write(&format!("[{alt}]"));
                    if !url.is_empty() {
                        self.write(&grey(&format!(" ({url})")));
                    }
                }
            }
        }
    }

    /// Words of the text: into the open code block, image, table cell or
    /// line.
    fn text(&mut self, text: &str) {
        if let Some((_, code)) = self.code.as_mut() {
            code.push_str(text);
            return;
        }
        if let Some((_, alt)) = self.image.as_mut() {
            alt.push_str(text);
            return;
        }
        self.inline(text, text);
    }

    /// Writes `styled`, whose words without styles are `plain` (what a
    /// link shows, compared with its address).
    fn inline(&mut self, styled: &str, plain: &str) {
        if let Some((_, shown)) = self.link.as_mut() {
            shown.push_str(plain);
        }
        if let Some(table) = self.table.as_mut() {
            // A cell is one line.
            table.cell.push_str(&styled.replace('\n', " "));
            return;
        }
        self.write(styled);
    }

    /// Writes text to the output, starting each line with the prefixes of
    /// the open blocks.
    fn write(&mut self, text: &str) {
        let mut lines = text.split('\n');
        if let Some(first) = lines.next() {
            self.write_in_line(first);
        }
        for line in lines {
            self.out.push('\n');
            self.at_line_start = true;
            self.write_in_line(line);
        }
    }

    fn write_in_line(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.at_line_start || self.out.is_empty() {
            self.write_prefix();
            self.at_line_start = false;
        }
        self.out.push_str(text);
    }

    fn write_prefix(&mut self) {
        let innermost = self.prefixes.len().saturating_sub(1);
        let bullet = self.bullet.take();
        for (index, prefix) in self.prefixes.iter().enumerate() {
            match &bullet {
                Some(bullet) if index == innermost => self.out.push_str(bullet),
                _ => self.out.push_str(prefix),
            }
        }
    }

    /// Ends the line being written, if one is.
    fn new_line(&mut self) {
        if !self.at_line_start && !self.out.is_empty() {
            self.out.push('\n');
            self.at_line_start = true;
        }
    }

    /// Before a block: a fresh line, and a blank one after an earlier block.
    fn start_block(&mut self) {
        self.new_line();
        if self.blank_pending && !self.out.is_empty() {
            // The bars of the open quotes go on, without trailing spaces.
            let bars: String = self.prefixes.concat();
            self.out.push_str(bars.trim_end());
            self.out.push('\n');
            self.at_line_start = true;
        }
        self.blank_pending = false;
    }

    fn end_block(&mut self) {
        self.new_line();
        self.blank_pending = true;
    }

    fn start_item(&mut self) {
        self.new_line();
        if self.blank_pending {
            self.start_block();
        }
        let depth = self.lists.len().saturating_sub(1);
        let bullet = match self.lists.last_mut() {
            Some(Some(number)) => {
                let bullet = format!("{number}. ");
                *number += 1;
                bullet
            }
            _ => format!("{} ", ["•", "◦", "▪"][depth % 3]),
        };
        let width = bullet.width();
        self.bullet = Some(grey(&bullet));
        self.prefixes.push(" ".repeat(width));
    }

    fn end_code_block(&mut self) {
        let Some((language, code)) = self.code.take() else {
            return;
        };
        let name = if language.is_empty() {
            "code"
        } else {
            &language
        };
        self.write(&grey(&format!("╭─ {name}")));
        for line in code.trim_end_matches('\n').split('\n') {
            self.new_line();
            self.write(&format!("{}{CODE}{line}{COLOUR_OFF}", grey("│ ")));
        }
        self.new_line();
        self.write(&grey("╰─"));
        self.end_block();
    }

    fn end_table(&mut self) {
        let Some(table) = self.table.take() else {
            return;
        };
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for row in &table.rows {
            for (column, cell) in row.iter().enumerate() {
                widths[column] = widths[column].max(visible_width(cell));
            }
        }
        let separator = grey(" │ ");
        for (index, row) in table.rows.iter().enumerate() {
            let header = index < table.header_rows;
            let cells: Vec<String> = (0..columns)
                .map(|column| {
                    let cell = row.get(column).map(String::as_str).unwrap_or_default();
                    let alignment = table.alignments.get(column).copied();
                    let padded = pad(cell, widths[column], alignment);
                    if header {
                        format!("{BOLD}{padded}{BOLD_OFF}")
                    } else {
                        padded
                    }
                })
                .collect();
            self.new_line();
            self.write(cells.join(&separator).trim_end());
            if header && index + 1 == table.header_rows {
                let rule: Vec<String> = widths.iter().map(|width| "─".repeat(*width)).collect();
                self.new_line();
                self.write(&grey(&rule.join("─┼─")));
            }
        }
        self.end_block();
    }
}

/// `cell` padded with spaces to `width` columns as its column is aligned.
fn pad(cell: &str, width: usize, alignment: Option<Alignment>) -> String {
    let room = width.saturating_sub(visible_width(cell));
    match alignment {
        Some(Alignment::Right) => format!("{}{cell}", " ".repeat(room)),
        Some(Alignment::Center) => {
            let left = room / 2;
            format!("{}{cell}{}", " ".repeat(left), " ".repeat(room - left))
        }
        _ => format!("{cell}{}", " ".repeat(room)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rendering with its styles taken out: what the words and their
    /// layout look like.
    fn shown(markdown: &str) -> String {
        terminal_safe(&render(markdown)).into_owned()
    }

    #[test]
    fn emphasis_strong_and_code_are_styled_not_marked() {
        let out = render("some *soft* and **loud** and `code` and ~~gone~~");
        assert!(
            out.contains(&format!("{ITALIC}soft{ITALIC_OFF}")),
            "{out:?}"
        );
        assert!(out.contains(&format!("{BOLD}loud{BOLD_OFF}")), "{out:?}");
        assert!(out.contains(&format!("{CODE}code{COLOUR_OFF}")), "{out:?}");
        assert!(
            out.contains(&format!("{STRIKE}gone{STRIKE_OFF}")),
            "{out:?}"
        );
        assert_eq!(shown("*a* **b** `c`"), "a b c");
    }

    #[test]
    fn headings_are_bold_on_their_own_lines_with_a_blank_line_between_blocks() {
        let out = render("# Title\nfirst para\n\nsecond para");
        assert!(
            out.starts_with(&format!("{UNDERLINE}{BOLD}Title")),
            "{out:?}"
        );
        assert_eq!(
            shown("# Title\nfirst\n\n## Sub\nsecond"),
            "Title\n\nfirst\n\nSub\n\nsecond"
        );
    }

    #[test]
    fn fenced_code_names_its_language_and_keeps_its_lines() {
        let out = shown("Look:\n\n```rust\nfn main() {\n    go();\n}\n```\nafter");
        assert_eq!(
            out,
            "Look:\n\n╭─ rust\n│ fn main() {\n│     go();\n│ }\n╰─\n\nafter"
        );
        assert!(shown("```\nplain\n```").starts_with("╭─ code\n│ plain"));
    }

    #[test]
    fn lists_nest_and_number() {
        let out = shown("- one\n- two\n  - deep\n- three\n\n3. c\n4. d");
        assert_eq!(out, "• one\n• two\n  ◦ deep\n• three\n\n3. c\n4. d");
        assert_eq!(shown("- [x] done\n- [ ] open"), "• [x] done\n• [ ] open");
    }

    #[test]
    fn quotes_carry_a_bar_on_every_line() {
        assert_eq!(
            shown("> said\n> twice\n\nafter"),
            "│ said\n│ twice\n\nafter"
        );
        assert_eq!(shown("> one\n>\n> two"), "│ one\n│\n│ two");
    }

    #[test]
    fn links_show_their_address_unless_it_is_their_text() {
        let out = render("see [the docs](https://example.org/d)");
        assert!(
            out.contains(&format!("{UNDERLINE}the docs{UNDERLINE_OFF}")),
            "{out:?}"
        );
        assert_eq!(
            shown("see [the docs](https://example.org/d)"),
            "see the docs (https://example.org/d)"
        );
        assert_eq!(shown("<https://example.org>"), "https://example.org");
        assert_eq!(shown("![a cat](cat.png)"), "[a cat] (cat.png)");
    }

    #[test]
    fn tables_align_their_columns() {
        let out = shown("| name | n |\n|:-----|--:|\n| a | 1 |\n| longer | 22 |");
        assert_eq!(out, "name   │  n\n───────┼───\na      │  1\nlonger │ 22");
    }

    #[test]
    fn rules_and_breaks() {
        assert_eq!(
            shown("a\n\n---\n\nb"),
            format!("a\n\n{}\n\nb", "─".repeat(RULE_WIDTH))
        );
        assert_eq!(shown("line one\nline two"), "line one\nline two");
    }

    #[test]
    fn wide_characters_count_twice_in_tables() {
        assert_eq!(visible_width("日本"), 4);
        assert_eq!(visible_width(&render("**日本**")), 4);
    }
}
