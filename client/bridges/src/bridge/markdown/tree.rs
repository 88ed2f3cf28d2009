//! The agent's Markdown read once into blocks and inline runs (pure), for
//! every platform's renderer to walk. CommonMark with GitHub's tables,
//! strikethrough and task lists; raw HTML is kept as text, never as markup.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// A block of the message, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Paragraph(Vec<Inline>),
    /// Any level: the platforms show every heading the same way.
    Heading(Vec<Inline>),
    Quote(Vec<Block>),
    /// `start`: the first number of a numbered list, `None` for bullets.
    List {
        start: Option<u64>,
        items: Vec<Vec<Block>>,
    },
    /// The code as written, without the fence's last line break.
    Code {
        language: String,
        text: String,
    },
    Table(Table),
    Rule,
}

/// A GitHub table: the head row, the body rows, and each column's alignment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Table {
    pub alignments: Vec<Alignment>,
    pub head: Vec<Vec<Inline>>,
    pub rows: Vec<Vec<Vec<Inline>>>,
}

/// A run of text inside a block.
#[derive(Debug, Clone, PartialEq)]
pub enum Inline {
    Text(String),
    Code(String),
    Emphasis(Vec<Inline>),
    Strong(Vec<Inline>),
    Strikethrough(Vec<Inline>),
    /// A link, or an image (shown as a link to it, its words the alt text).
    Link {
        url: String,
        words: Vec<Inline>,
    },
    /// A line break inside a paragraph, as written.
    Break,
}

/// The words of `inlines` without any marks: what a monospace table cell or
/// a link's text shows.
pub fn plain(inlines: &[Inline]) -> String {
    let mut out = String::new();
    for inline in inlines {
        match inline {
            Inline::Text(text) | Inline::Code(text) => out.push_str(text),
            Inline::Emphasis(inner) | Inline::Strong(inner) | Inline::Strikethrough(inner) => {
                out.push_str(&plain(inner));
            }
            Inline::Link { words, .. } => out.push_str(&plain(words)),
            Inline::Break => out.push(' '),
        }
    }
    out
}

/// The extensions the agent's Markdown is read with.
pub fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// `markdown` as blocks. Never fails: what is not Markdown is text.
pub fn parse(markdown: &str) -> Vec<Block> {
    let mut builder = Builder::default();
    for event in Parser::new_ext(markdown, options()) {
        builder.event(event);
    }
    builder.finish()
}

/// A container being filled: the blocks or inline runs of what is open.
#[derive(Debug)]
enum Open {
    /// The document, a quote or a list item: blocks. A list item's loose
    /// inline text (a tight list has no paragraphs) gathers in `inline`.
    Blocks {
        blocks: Vec<Block>,
        inline: Vec<Inline>,
    },
    List {
        start: Option<u64>,
        items: Vec<Vec<Block>>,
    },
    Paragraph(Vec<Inline>),
    Heading(Vec<Inline>),
    Code {
        language: String,
        text: String,
    },
    Table(Table),
    /// Inside a table: the cells of the row under way.
    Row(Vec<Vec<Inline>>),
    Cell(Vec<Inline>),
    Emphasis(Vec<Inline>),
    Strong(Vec<Inline>),
    Strikethrough(Vec<Inline>),
    Link {
        url: String,
        words: Vec<Inline>,
    },
    /// A tag with no shape of its own here (footnotes, definition lists):
    /// its runs join the container around it.
    Transparent,
}

struct Builder {
    stack: Vec<Open>,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder {
            stack: vec![Open::Blocks {
                blocks: Vec::new(),
                inline: Vec::new(),
            }],
        }
    }
}

impl Builder {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => self.inline(Inline::Code(code.to_string())),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math),
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::FootnoteReference(name) => self.text(&format!("[{name}]")),
            // Chats keep the lines as written, as the platforms' own apps do.
            Event::SoftBreak | Event::HardBreak => self.inline(Inline::Break),
            Event::Rule => self.block(Block::Rule),
            Event::TaskListMarker(done) => self.text(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        let open = match tag {
            Tag::Paragraph => Open::Paragraph(Vec::new()),
            Tag::Heading { .. } => Open::Heading(Vec::new()),
            Tag::BlockQuote(_) | Tag::Item => Open::Blocks {
                blocks: Vec::new(),
                inline: Vec::new(),
            },
            Tag::CodeBlock(kind) => Open::Code {
                language: match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                },
                text: String::new(),
            },
            Tag::HtmlBlock => Open::Paragraph(Vec::new()),
            Tag::List(start) => Open::List {
                start,
                items: Vec::new(),
            },
            Tag::Table(alignments) => Open::Table(Table {
                alignments,
                ..Table::default()
            }),
            Tag::TableHead | Tag::TableRow => Open::Row(Vec::new()),
            Tag::TableCell => Open::Cell(Vec::new()),
            Tag::Emphasis => Open::Emphasis(Vec::new()),
            Tag::Strong => Open::Strong(Vec::new()),
            Tag::Strikethrough => Open::Strikethrough(Vec::new()),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => Open::Link {
                url: dest_url.to_string(),
                words: Vec::new(),
            },
            Tag::FootnoteDefinition(name) => {
                self.text(&format!("[{name}] "));
                Open::Transparent
            }
            Tag::MetadataBlock(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript => Open::Transparent,
        };
        self.stack.push(open);
    }

    fn end(&mut self, tag: TagEnd) {
        // The document itself is never closed by an event.
        if self.stack.len() < 2 {
            return;
        }
        let Some(open) = self.stack.pop() else {
            return;
        };
        let is_head = tag == TagEnd::TableHead;
        match open {
            Open::Blocks { blocks, inline } => {
                let blocks = with_loose(blocks, inline);
                match tag {
                    TagEnd::Item => {
                        if let Some(Open::List { items, .. }) = self.stack.last_mut() {
                            items.push(blocks);
                        }
                    }
                    _ => self.block(Block::Quote(blocks)),
                }
            }
            Open::List { start, items } => self.block(Block::List { start, items }),
            Open::Paragraph(mut inlines) => {
                // An HTML block's text ends with its line break.
                if let Some(Inline::Text(last)) = inlines.last_mut() {
                    last.truncate(last.trim_end().len());
                }
                if !inlines.is_empty() {
                    self.block(Block::Paragraph(inlines));
                }
            }
            Open::Heading(inlines) => self.block(Block::Heading(inlines)),
            Open::Code { language, text } => {
                let text = text.strip_suffix('\n').unwrap_or(&text).to_string();
                self.block(Block::Code { language, text });
            }
            Open::Table(table) => self.block(Block::Table(table)),
            Open::Row(cells) => {
                if let Some(Open::Table(table)) = self.stack.last_mut() {
                    if is_head {
                        table.head = cells;
                    } else {
                        table.rows.push(cells);
                    }
                }
            }
            Open::Cell(inlines) => {
                if let Some(Open::Row(cells)) = self.stack.last_mut() {
                    cells.push(inlines);
                }
            }
            Open::Emphasis(inner) => self.inline(Inline::Emphasis(inner)),
            Open::Strong(inner) => self.inline(Inline::Strong(inner)),
            Open::Strikethrough(inner) => self.inline(Inline::Strikethrough(inner)),
            Open::Link { url, words } => self.inline(Inline::Link { url, words }),
            Open::Transparent => {}
        }
    }

    /// Adds text to what is open (a code block takes it as written).
    fn text(&mut self, text: &str) {
        if let Some(Open::Code { text: code, .. }) = self.stack.last_mut() {
            code.push_str(text);
            return;
        }
        self.inline(Inline::Text(text.to_string()));
    }

    /// Adds an inline run to the innermost container that takes them.
    fn inline(&mut self, inline: Inline) {
        for open in self.stack.iter_mut().rev() {
            let runs = match open {
                Open::Paragraph(runs)
                | Open::Heading(runs)
                | Open::Cell(runs)
                | Open::Emphasis(runs)
                | Open::Strong(runs)
                | Open::Strikethrough(runs)
                | Open::Link { words: runs, .. } => runs,
                Open::Blocks { inline, .. } => inline,
                Open::Transparent => continue,
                Open::List { .. } | Open::Code { .. } | Open::Table(_) | Open::Row(_) => return,
            };
            // Adjacent text joins, so renderers see words whole.
            if let (Inline::Text(more), Some(Inline::Text(last))) = (&inline, runs.last_mut()) {
                last.push_str(more);
                return;
            }
            runs.push(inline);
            return;
        }
    }

    /// Adds a block to the innermost container that takes blocks.
    fn block(&mut self, block: Block) {
        for open in self.stack.iter_mut().rev() {
            match open {
                Open::Blocks { blocks, inline } => {
                    if !inline.is_empty() {
                        blocks.push(Block::Paragraph(std::mem::take(inline)));
                    }
                    blocks.push(block);
                    return;
                }
                Open::Transparent => continue,
                _ => return,
            }
        }
    }

    fn finish(mut self) -> Vec<Block> {
        // Close whatever an odd input left open, innermost first.
        while self.stack.len() > 1 {
            let tag = match self.stack.last() {
                Some(Open::Blocks { .. }) => TagEnd::BlockQuote(None),
                _ => TagEnd::Paragraph,
            };
            self.end(tag);
        }
        match self.stack.pop() {
            Some(Open::Blocks { blocks, inline }) => with_loose(blocks, inline),
            _ => Vec::new(),
        }
    }
}

/// `blocks` with loose inline text after them made a paragraph.
fn with_loose(mut blocks: Vec<Block>, inline: Vec<Inline>) -> Vec<Block> {
    if !inline.is_empty() {
        blocks.push(Block::Paragraph(inline));
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(words: &str) -> Inline {
        Inline::Text(words.to_string())
    }

    #[test]
    fn blocks_and_runs_are_read() {
        let blocks =
            parse("# Plan\n\nSay **hi** to `x`.\n\n> quoted\n\n```rust\nlet a = 1 < 2;\n```");
        assert_eq!(
            blocks,
            vec![
                Block::Heading(vec![text("Plan")]),
                Block::Paragraph(vec![
                    text("Say "),
                    Inline::Strong(vec![text("hi")]),
                    text(" to "),
                    Inline::Code("x".into()),
                    text("."),
                ]),
                Block::Quote(vec![Block::Paragraph(vec![text("quoted")])]),
                Block::Code {
                    language: "rust".into(),
                    text: "let a = 1 < 2;".into()
                },
            ]
        );
    }

    #[test]
    fn lists_keep_their_start_and_nesting() {
        let blocks = parse("3. three\n4. four\n   - inner");
        assert_eq!(
            blocks,
            vec![Block::List {
                start: Some(3),
                items: vec![
                    vec![Block::Paragraph(vec![text("three")])],
                    vec![
                        Block::Paragraph(vec![text("four")]),
                        Block::List {
                            start: None,
                            items: vec![vec![Block::Paragraph(vec![text("inner")])]],
                        },
                    ],
                ],
            }]
        );
    }

    #[test]
    fn tables_have_a_head_rows_and_alignments() {
        let blocks = parse("| a | b |\n|:--|--:|\n| 1 | **2** |");
        let Some(Block::Table(table)) = blocks.first() else {
            panic!("{blocks:?}");
        };
        assert_eq!(table.alignments, vec![Alignment::Left, Alignment::Right]);
        assert_eq!(table.head, vec![vec![text("a")], vec![text("b")]]);
        assert_eq!(
            table.rows,
            vec![vec![vec![text("1")], vec![Inline::Strong(vec![text("2")])]]]
        );
    }

    #[test]
    fn html_stays_text() {
        assert_eq!(
            parse("<script>alert(1)</script>"),
            vec![Block::Paragraph(vec![text("<script>alert(1)</script>")])]
        );
    }
}
