//! The agent's Markdown as Signal shows it (pure): the text without its
//! markup characters, and signal-cli `textStyle` ranges (`start:length:STYLE`,
//! counted in UTF-16 code units) for what Signal can style: bold, italic,
//! monospace and strikethrough. Headings are bold lines, code blocks and
//! inline code monospace, quotes italic behind a bar, list items bulleted
//! or numbered (nested ones indented), tables a monospace block of aligned
//! columns (laid out by the bridges' Markdown core), links their words with
//! the address after.

use crate::bridge::markdown::text::grid;
use crate::bridge::markdown::tree::{Inline, Table};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// What Signal can style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Bold,
    Italic,
    Monospace,
    Strikethrough,
}

impl Style {
    /// signal-cli's name of the style.
    pub fn name(self) -> &'static str {
        match self {
            Style::Bold => "BOLD",
            Style::Italic => "ITALIC",
            Style::Monospace => "MONOSPACE",
            Style::Strikethrough => "STRIKETHROUGH",
        }
    }
}

/// A style over part of the text, in UTF-16 code units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub style: Style,
    pub start: usize,
    pub length: usize,
}

impl Range {
    /// As signal-cli's `textStyle` takes it: `start:length:STYLE`.
    pub fn encode(&self) -> String {
        format!("{}:{}:{}", self.start, self.length, self.style.name())
    }
}

/// A message as Signal shows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Styled {
    pub text: String,
    pub styles: Vec<Range>,
}

impl Styled {
    /// Text as it is, without styles.
    pub fn plain(text: &str) -> Styled {
        Styled {
            text: text.to_string(),
            styles: Vec::new(),
        }
    }
}

/// `markdown` as text and styles. The text is never longer than the
/// Markdown but for list bullets and link addresses, which are short.
pub fn render(markdown: &str) -> Styled {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut writer = Writer::default();
    for event in Parser::new_ext(markdown, options) {
        writer.event(event);
    }
    writer.finish()
}

/// The rendering under way.
#[derive(Default)]
struct Writer {
    text: String,
    /// The text's length in UTF-16 code units.
    units: usize,
    styles: Vec<Range>,
    /// Styles begun and not ended yet, with where they began.
    open: Vec<(Style, usize)>,
    /// The lists the text is in: the next number of a numbered one.
    lists: Vec<Option<u64>>,
    /// How many quotes the text is in.
    quotes: usize,
    /// Inside a code block: text goes as written.
    code: bool,
    /// The address of the link being written.
    links: Vec<String>,
    /// Where the link's words began, to tell whether they are the address.
    link_starts: Vec<usize>,
    /// The table being read: its cells gather here, as text, until it
    /// ends and is written whole.
    table: Option<Table>,
    /// The words of the table cell being read.
    cell: String,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.write(&text),
            Event::Code(code) => {
                self.begin(Style::Monospace);
                self.write(&code);
                self.finish_style(Style::Monospace);
            }
            Event::InlineMath(math) | Event::DisplayMath(math) => self.write(&math),
            Event::Html(html) | Event::InlineHtml(html) => self.write(&html),
            Event::FootnoteReference(name) => self.write(&format!("[{name}]")),
            Event::SoftBreak | Event::HardBreak => self.push("\n"),
            Event::Rule => {
                self.block();
                self.push("———");
            }
            Event::TaskListMarker(done) => self.push(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::MetadataBlock(_) => self.block(),
            Tag::Heading { .. } => {
                self.block();
                self.begin(Style::Bold);
            }
            Tag::BlockQuote(_) => {
                self.block();
                self.quotes += 1;
                self.begin(Style::Italic);
            }
            Tag::CodeBlock(_) => {
                self.block();
                self.code = true;
                self.begin(Style::Monospace);
            }
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.block();
                }
                self.lists.push(first);
            }
            Tag::Item => self.item(),
            Tag::Table(alignments) => {
                self.block();
                self.table = Some(Table {
                    alignments,
                    ..Table::default()
                });
            }
            Tag::TableHead => {}
            Tag::TableRow => {
                if let Some(table) = &mut self.table {
                    table.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.cell.clear(),
            Tag::Emphasis => self.begin(Style::Italic),
            Tag::Strong => self.begin(Style::Bold),
            Tag::Strikethrough => self.begin(Style::Strikethrough),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.link_starts.push(self.text.len());
            }
            Tag::FootnoteDefinition(name) => {
                self.block();
                self.push(&format!("[{name}] "));
            }
            Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) => self.finish_style(Style::Bold),
            TagEnd::BlockQuote(_) => {
                self.finish_style(Style::Italic);
                self.quotes = self.quotes.saturating_sub(1);
            }
            TagEnd::CodeBlock => {
                // The block's last line break is the fence's, not the code's.
                if self.text.ends_with('\n') {
                    self.text.pop();
                    self.units -= 1;
                }
                self.finish_style(Style::Monospace);
                self.code = false;
            }
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::TableCell => {
                let cell = vec![Inline::Text(std::mem::take(&mut self.cell))];
                if let Some(table) = &mut self.table {
                    match table.rows.last_mut() {
                        Some(row) => row.push(cell),
                        None => table.head.push(cell),
                    }
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.begin(Style::Monospace);
                    self.push(&grid(&table));
                    self.finish_style(Style::Monospace);
                }
            }
            TagEnd::Emphasis => self.finish_style(Style::Italic),
            TagEnd::Strong => self.finish_style(Style::Bold),
            TagEnd::Strikethrough => self.finish_style(Style::Strikethrough),
            TagEnd::Link | TagEnd::Image => {
                let (Some(url), Some(start)) = (self.links.pop(), self.link_starts.pop()) else {
                    return;
                };
                let words = self.text[start..].trim();
                if !url.is_empty() && words != url && !url.starts_with('#') {
                    self.push(&format!(" ({url})"));
                }
            }
            _ => {}
        }
    }

    /// Starts a block: after a blank line, or on a new line inside a list.
    fn block(&mut self) {
        if self.text.is_empty() {
            return;
        }
        if !self.lists.is_empty() {
            self.line();
            return;
        }
        while !self.text.ends_with("\n\n") {
            self.push("\n");
        }
    }

    /// Moves to a new line unless the text is at the start of one.
    fn line(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.push("\n");
        }
    }

    /// A list item's bullet or number, indented by the lists it is in.
    fn item(&mut self) {
        self.line();
        let depth = self.lists.len().saturating_sub(1);
        let marker = match self.lists.last_mut() {
            Some(Some(number)) => {
                let marker = format!("{number}. ");
                *number += 1;
                marker
            }
            _ => "• ".to_string(),
        };
        self.push(&"  ".repeat(depth));
        self.push(&marker);
    }

    /// Writes text; in a quote, each line starts behind the bar.
    fn write(&mut self, text: &str) {
        if self.code || self.quotes == 0 || self.table.is_some() {
            self.push(text);
            return;
        }
        for (n, line) in text.split('\n').enumerate() {
            if n > 0 {
                self.push("\n");
            }
            if self.text.is_empty() || self.text.ends_with('\n') {
                self.push(&"▍".repeat(self.quotes));
                self.push(" ");
            }
            self.push(line);
        }
    }

    /// Adds to the text, or inside a table to the cell being read.
    fn push(&mut self, text: &str) {
        if self.table.is_some() {
            self.cell.push_str(text);
            return;
        }
        self.units += text.encode_utf16().count();
        self.text.push_str(text);
    }

    fn begin(&mut self, style: Style) {
        self.open.push((style, self.units));
    }

    /// Ends the innermost open `style`, keeping it if it covers anything.
    fn finish_style(&mut self, style: Style) {
        let Some(at) = self.open.iter().rposition(|(open, _)| *open == style) else {
            return;
        };
        let (_, start) = self.open.remove(at);
        if self.units > start {
            self.styles.push(Range {
                style,
                start,
                length: self.units - start,
            });
        }
    }

    /// The text without the blank lines at its end, and the styles within it.
    fn finish(mut self) -> Styled {
        let kept = self.text.trim_end().len();
        let dropped = self.text[kept..].encode_utf16().count();
        self.text.truncate(kept);
        let end = self.units - dropped;
        let mut styles: Vec<Range> = self
            .styles
            .into_iter()
            .filter(|range| range.start < end)
            .map(|range| Range {
                length: range.length.min(end - range.start),
                ..range
            })
            .filter(|range| range.length > 0)
            .collect();
        styles.sort_by_key(|range| (range.start, range.length));
        Styled {
            text: self.text,
            styles,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn styles(styled: &Styled) -> Vec<String> {
        styled.styles.iter().map(Range::encode).collect()
    }

    /// The text each style covers, to read the tests by.
    fn covered(styled: &Styled) -> Vec<(String, &'static str)> {
        let units: Vec<u16> = styled.text.encode_utf16().collect();
        styled
            .styles
            .iter()
            .map(|range| {
                let part = &units[range.start..range.start + range.length];
                (String::from_utf16_lossy(part), range.style.name())
            })
            .collect()
    }

    #[test]
    fn emphasis_becomes_styles_and_the_marks_go() {
        let styled = render("Hello, **Ada**! *Really* ~~old~~ and `x < y`.");
        assert_eq!(styled.text, "Hello, Ada! Really old and x < y.");
        assert_eq!(
            styles(&styled),
            vec![
                "7:3:BOLD",
                "12:6:ITALIC",
                "19:3:STRIKETHROUGH",
                "27:5:MONOSPACE"
            ]
        );
    }

    #[test]
    fn offsets_count_utf16_units() {
        let styled = render("🙂 **ok**");
        assert_eq!(styled.text, "🙂 ok");
        assert_eq!(styles(&styled), vec!["3:2:BOLD"]);
    }

    #[test]
    fn headings_code_blocks_and_quotes() {
        let styled = render("# Plan\n\nRun:\n\n```sh\nls **/*.rs\n```\n\n> said *so*\n> twice");
        assert_eq!(
            styled.text,
            "Plan\n\nRun:\n\nls **/*.rs\n\n▍ said so\n▍ twice"
        );
        assert_eq!(
            covered(&styled),
            vec![
                ("Plan".to_string(), "BOLD"),
                ("ls **/*.rs".to_string(), "MONOSPACE"),
                ("▍ said so\n▍ twice".to_string(), "ITALIC"),
                ("so".to_string(), "ITALIC"),
            ]
        );
    }

    #[test]
    fn lists_keep_their_numbers_and_nesting() {
        let styled = render("1. one\n2. two\n   - inner\n3. three\n\nAfter.");
        assert_eq!(styled.text, "1. one\n2. two\n  • inner\n3. three\n\nAfter.");
        let styled = render("- [x] done\n- [ ] to do");
        assert_eq!(styled.text, "• ☑ done\n• ☐ to do");
    }

    #[test]
    fn tables_are_aligned_monospace_and_links_show_their_address() {
        let styled = render("| a | b |\n|---|---|\n| 1 | 2 |\n\nSee [the docs](https://e.org/x) or <https://e.org>.");
        assert_eq!(
            styled.text,
            "a | b\n--+--\n1 | 2\n\nSee the docs (https://e.org/x) or https://e.org."
        );
        assert_eq!(
            covered(&styled),
            vec![("a | b\n--+--\n1 | 2".to_string(), "MONOSPACE")]
        );
    }

    #[test]
    fn a_table_in_a_quote_is_one_monospace_block() {
        let styled = render("> | a | **b** |\n> |---|--:|\n> | 1 | 22 |");
        assert_eq!(styled.text, "a |  b\n--+---\n1 | 22");
        assert_eq!(styles(&styled), vec!["0:20:MONOSPACE", "0:20:ITALIC"]);
    }

    #[test]
    fn plain_text_and_snake_case_stay_as_written() {
        let text = "Hello there.\n\nsnake_case_name and 2 * 3 * 4";
        let styled = render(text);
        assert_eq!(styled.text, text);
        assert!(styled.styles.is_empty());
    }
}
