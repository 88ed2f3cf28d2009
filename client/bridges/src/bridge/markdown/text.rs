//! Blocks laid out as one message of text with a platform's marks (pure):
//! what Telegram's HTML and WhatsApp's formatting share. Blocks are apart
//! by a blank line; headings are bold; list items are bulleted or numbered
//! from their list's start, nested ones indented under their parent's
//! words; tables are a monospace block of aligned columns, since neither
//! platform has tables; links are the platform's own or their words with
//! the address after.

use super::tree::{plain, Block, Inline, Table};
use pulldown_cmark::Alignment;

/// How a platform marks text. Every method returns the marked text whole,
/// so what it opens it also closes.
pub trait Marks {
    /// Text shown as written (the platform's reserved characters escaped).
    fn escape(&self, text: &str) -> String;
    fn strong(&self, inner: &str) -> String;
    fn emphasis(&self, inner: &str) -> String;
    fn strikethrough(&self, inner: &str) -> String;
    /// Inline code, as written.
    fn code(&self, code: &str) -> String;
    /// A link to `url` showing `words` (already marked); `plain_words` are
    /// the same words without marks, to tell a bare address.
    fn link(&self, url: &str, words: &str, plain_words: &str) -> String;
    /// A block of code (or a table's grid), as written, in monospace.
    fn code_block(&self, language: &str, code: &str) -> String;
    /// A quote of already marked blocks; `depth` is 1 for the outermost.
    fn quote(&self, inner: &str, depth: usize) -> String;
}

/// `blocks` as one message marked by `marks`.
pub fn render(blocks: &[Block], marks: &impl Marks) -> String {
    let writer = Writer { marks };
    writer.blocks(blocks, &Context::default(), "\n\n")
}

/// Where a block or run sits: what its platform may not nest.
#[derive(Default, Clone, Copy)]
struct Context {
    quotes: usize,
    lists: usize,
}

struct Writer<'a, M> {
    marks: &'a M,
}

impl<M: Marks> Writer<'_, M> {
    fn blocks(&self, blocks: &[Block], context: &Context, between: &str) -> String {
        let rendered: Vec<String> = blocks
            .iter()
            .map(|block| self.block(block, context))
            .filter(|text| !text.is_empty())
            .collect();
        rendered.join(between)
    }

    fn block(&self, block: &Block, context: &Context) -> String {
        match block {
            Block::Paragraph(runs) => self.inlines(runs, false),
            Block::Heading(runs) => self.marks.strong(&self.inlines(runs, false)),
            Block::Quote(blocks) => {
                let inner = Context {
                    quotes: context.quotes + 1,
                    ..*context
                };
                let text = self.blocks(blocks, &inner, "\n\n");
                self.marks.quote(&text, inner.quotes)
            }
            Block::List { start, items } => self.list(*start, items, context),
            Block::Code { language, text } => self.marks.code_block(language, text),
            Block::Table(table) => self.marks.code_block("", &grid(table)),
            Block::Rule => self.marks.escape("———"),
        }
    }

    /// Items one a line, each behind its bullet or number; an item's further
    /// lines indented to its words.
    fn list(&self, start: Option<u64>, items: &[Vec<Block>], context: &Context) -> String {
        let inner = Context {
            lists: context.lists + 1,
            ..*context
        };
        let mut lines = Vec::new();
        for (n, item) in items.iter().enumerate() {
            let marker = match start {
                Some(first) => format!("{}. ", first.saturating_add(n as u64)),
                None => format!("{} ", bullet(context.lists)),
            };
            let indent = " ".repeat(marker.chars().count());
            let text = self.blocks(item, &inner, "\n");
            let mut item_lines = text.split('\n');
            let first = item_lines.next().unwrap_or("");
            lines.push(format!("{}{first}", self.marks.escape(&marker)));
            for line in item_lines {
                lines.push(if line.is_empty() {
                    String::new()
                } else {
                    format!("{indent}{line}")
                });
            }
        }
        lines.join("\n")
    }

    /// Runs marked; inside a link (`in_link`) nothing links or is code, as
    /// platforms do not nest those.
    fn inlines(&self, runs: &[Inline], in_link: bool) -> String {
        let mut out = String::new();
        for run in runs {
            let marked = match run {
                Inline::Text(text) => self.marks.escape(text),
                Inline::Code(code) if in_link => self.marks.escape(code),
                Inline::Code(code) => self.marks.code(code),
                Inline::Emphasis(inner) => self.marks.emphasis(&self.inlines(inner, in_link)),
                Inline::Strong(inner) => self.marks.strong(&self.inlines(inner, in_link)),
                Inline::Strikethrough(inner) => {
                    self.marks.strikethrough(&self.inlines(inner, in_link))
                }
                Inline::Link { words, .. } if in_link => self.inlines(words, true),
                Inline::Link { url, words } => {
                    self.marks
                        .link(url, &self.inlines(words, true), &plain(words))
                }
                Inline::Break => "\n".to_string(),
            };
            out.push_str(&marked);
        }
        out
    }
}

/// The bullet of a list nested `depth` lists deep.
fn bullet(depth: usize) -> char {
    ['•', '◦', '▪'][depth % 3]
}

/// A table as monospace text: the head, a rule, then the rows, the columns
/// padded to line up and aligned as the table says.
pub fn grid(table: &Table) -> String {
    let cells = |row: &[Vec<Inline>]| -> Vec<String> {
        row.iter()
            .map(|cell| plain(cell).trim().to_string())
            .collect()
    };
    let head = cells(&table.head);
    let rows: Vec<Vec<String>> = table.rows.iter().map(|row| cells(row)).collect();
    let columns = std::iter::once(&head)
        .chain(&rows)
        .map(Vec::len)
        .max()
        .unwrap_or(0);
    let mut widths = vec![1; columns];
    for row in std::iter::once(&head).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String]| -> String {
        let padded: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(column, &width)| {
                let cell = row.get(column).map_or("", String::as_str);
                let alignment = table
                    .alignments
                    .get(column)
                    .copied()
                    .unwrap_or(Alignment::None);
                pad(cell, width, alignment)
            })
            .collect();
        padded.join(" | ").trim_end().to_string()
    };
    let rule: Vec<String> = widths.iter().map(|&width| "-".repeat(width)).collect();
    let mut lines = vec![line(&head), rule.join("-+-")];
    lines.extend(rows.iter().map(|row| line(row)));
    lines.join("\n")
}

/// `cell` padded with spaces to `width` characters.
fn pad(cell: &str, width: usize, alignment: Alignment) -> String {
    let room = width.saturating_sub(cell.chars().count());
    let (before, after) = match alignment {
        Alignment::Right => (room, 0),
        Alignment::Center => (room / 2, room - room / 2),
        Alignment::Left | Alignment::None => (0, room),
    };
    format!("{}{cell}{}", " ".repeat(before), " ".repeat(after))
}

/// `inner` between `open` and `close`, with the spaces at its ends left
/// outside, as marks that must touch their words need (WhatsApp's).
pub fn wrap_tight(inner: &str, open: &str, close: &str) -> String {
    let words = inner.trim();
    if words.is_empty() {
        return inner.to_string();
    }
    let start = inner.len() - inner.trim_start().len();
    let end = start + words.len();
    format!("{}{open}{words}{close}{}", &inner[..start], &inner[end..])
}

#[cfg(test)]
mod tests {
    use super::super::tree::parse;
    use super::*;

    /// Marks that show themselves, to read the layout by.
    struct Visible;

    impl Marks for Visible {
        fn escape(&self, text: &str) -> String {
            text.to_string()
        }
        fn strong(&self, inner: &str) -> String {
            format!("[b]{inner}[/b]")
        }
        fn emphasis(&self, inner: &str) -> String {
            format!("[i]{inner}[/i]")
        }
        fn strikethrough(&self, inner: &str) -> String {
            format!("[s]{inner}[/s]")
        }
        fn code(&self, code: &str) -> String {
            format!("[c]{code}[/c]")
        }
        fn link(&self, url: &str, words: &str, _plain_words: &str) -> String {
            format!("[a {url}]{words}[/a]")
        }
        fn code_block(&self, _language: &str, code: &str) -> String {
            format!("[pre]{code}[/pre]")
        }
        fn quote(&self, inner: &str, depth: usize) -> String {
            format!("[q{depth}]{inner}[/q]")
        }
    }

    fn layout(markdown: &str) -> String {
        render(&parse(markdown), &Visible)
    }

    #[test]
    fn numbered_lists_start_where_written_and_nest_under_their_words() {
        assert_eq!(
            layout("3. three\n4. four\n   - inner\n     - deeper\n5. five\n\nAfter."),
            "3. three\n4. four\n   ◦ inner\n     ▪ deeper\n5. five\n\nAfter."
        );
    }

    #[test]
    fn tables_are_aligned_columns_in_monospace() {
        assert_eq!(
            layout("| name | n |\n|:-----|--:|\n| Ada | 36 |\n| Grace Hopper | 7 |"),
            "[pre]name         |  n\n-------------+---\nAda          | 36\nGrace Hopper |  7[/pre]"
        );
    }

    #[test]
    fn quotes_headings_links_and_code_are_marked() {
        assert_eq!(
            layout("# Plan\n\n> said **so**\n> > deeper\n\nSee [the *docs*](https://e.org) and `a<b`."),
            "[b]Plan[/b]\n\n[q1]said [b]so[/b]\n\n[q2]deeper[/q][/q]\n\nSee [a https://e.org]the [i]docs[/i][/a] and [c]a<b[/c]."
        );
    }

    #[test]
    fn tight_marks_leave_spaces_outside() {
        assert_eq!(wrap_tight(" bold ", "*", "*"), " *bold* ");
        assert_eq!(wrap_tight("  ", "*", "*"), "  ");
    }
}
