//! What the terminal shows above the line being typed: lines printed for
//! good, and below them a live region that is redrawn in place — the reply
//! the model is writing and the status line.
//!
//! [`Display`] is pure: each operation returns the text to print (a
//! "paint"), which erases the live region it drew before, prints what is
//! new, and draws the live region again. Paints are applied in order by one
//! printer (rustyline's external printer, which clears the prompt, prints
//! the paint and a newline when it lacks one, and redraws the prompt), so
//! the region's height is always known.
//!
//! A streamed reply is committed block by block: while a Markdown block
//! (a paragraph, a list, a fenced code block…) is being written it is live,
//! shown as the words arrive; once a blank line ends it, it is printed for
//! good, rendered. The live region so stays small, and no row that scrolled
//! away is ever redrawn. A block taller than the screen is printed raw as it
//! overflows. On a terminal without cursor control (a pipe, `TERM=dumb`)
//! nothing is live: deltas are not shown and replies are printed whole.

use crate::look::Style;
use crate::markdown;
use crate::sanitize::terminal_safe;
use unicode_width::UnicodeWidthChar;

/// The fewest rows a live block may take before it overflows.
const MIN_LIVE_ROWS: usize = 3;
/// Rows kept free below the live region: the prompt and a margin.
const FREE_ROWS: usize = 3;

/// The screen's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size {
    pub columns: usize,
    pub rows: usize,
}

impl Size {
    /// The terminal's size, or 80 × 24 when it cannot be read.
    pub fn of_terminal() -> Size {
        match terminal_size::terminal_size() {
            Some((width, height)) if width.0 > 0 && height.0 > 0 => Size {
                columns: usize::from(width.0),
                rows: usize::from(height.0),
            },
            _ => Size {
                columns: 80,
                rows: 24,
            },
        }
    }
}

/// The live region and what it holds.
#[derive(Debug)]
pub struct Display {
    style: Style,
    size: Size,
    /// The model message being written, if any.
    stream: Option<Stream>,
    /// What the agent is doing, one line.
    status: Option<String>,
    /// How many rows the live region takes on screen now.
    live_rows: usize,
}

/// A model message streaming in.
#[derive(Debug)]
struct Stream {
    /// The line that says who writes and when, printed above the words.
    header: String,
    header_printed: bool,
    /// Every delta so far, terminal-safe.
    text: String,
    /// How much of `text` is printed for good.
    committed: usize,
    /// Blocks printed for good, for the blank line between them.
    blocks: usize,
    /// The block being written overflowed the screen and was printed raw
    /// in part: its rest is printed raw too.
    spilled: bool,
}

impl Display {
    pub fn new(style: Style, size: Size) -> Display {
        Display {
            style,
            size,
            stream: None,
            status: None,
            live_rows: 0,
        }
    }

    /// The screen was resized (or may have been): later paints fit it.
    pub fn resize(&mut self, size: Size) {
        self.size = size;
    }

    /// Whether a model message is streaming.
    pub fn streaming(&self) -> bool {
        self.stream.is_some()
    }

    /// Prints `text` for good above the live region.
    pub fn print(&mut self, text: &str) -> String {
        let mut fresh = text.to_string();
        if !fresh.ends_with('\n') {
            fresh.push('\n');
        }
        self.paint(&fresh)
    }

    /// Sets the status line (none: no status line).
    pub fn set_status(&mut self, status: Option<String>) -> String {
        if self.status == status {
            return String::new();
        }
        self.status = status;
        if !self.style.live {
            return String::new();
        }
        self.paint("")
    }

    /// A piece of the model's text. The first of a message starts it under
    /// `header`. Nothing when the terminal has no cursor control.
    pub fn delta(&mut self, piece: &str, header: impl FnOnce() -> String) -> String {
        if !self.style.live {
            return String::new();
        }
        let stream = self.stream.get_or_insert_with(|| Stream {
            header: header(),
            header_printed: false,
            text: String::new(),
            committed: 0,
            blocks: 0,
            spilled: false,
        });
        stream.text.push_str(&terminal_safe(piece));
        let mut fresh = String::new();
        while let Some(end) = block_end(&stream.text[stream.committed..]) {
            let end = stream.committed + end;
            let block = stream.text[stream.committed..end].to_string();
            fresh.push_str(&stream.commit(&block, self.style));
            stream.committed = end;
        }
        fresh.push_str(&self.spill());
        self.paint(&fresh)
    }

    /// The model message is logged: `text` is all of it. What streamed of it
    /// is replaced by its rendering; with nothing streamed it is printed
    /// whole under `header`.
    pub fn finish(&mut self, header: &str, text: &str) -> String {
        let text = terminal_safe(text);
        let fresh = match self.stream.take() {
            Some(mut stream) if text.starts_with(&stream.text[..stream.committed]) => {
                let rest = text[stream.committed..].to_string();
                stream.header = header.to_string();
                stream.commit(&rest, self.style)
            }
            _ => {
                let mut whole = format!("{header}\n");
                whole.push_str(&self.style.body(&text));
                whole.push('\n');
                whole
            }
        };
        self.paint(&fresh)
    }

    /// The model message ended without being logged (an interrupt, a
    /// failure): what streamed stays on screen as it was.
    pub fn abandon(&mut self) -> String {
        let Some(mut stream) = self.stream.take() else {
            return String::new();
        };
        let rest = stream.text[stream.committed..].to_string();
        stream.spilled = true;
        let fresh = stream.commit(&rest, self.style);
        self.paint(&fresh)
    }

    /// Erases the live region, prints `fresh` (whole lines) and draws the
    /// region again below it.
    fn paint(&mut self, fresh: &str) -> String {
        let mut paint = String::new();
        if self.live_rows > 0 {
            paint.push_str(&format!("\x1b[{}A\r\x1b[J", self.live_rows));
        }
        paint.push_str(fresh);
        let live = self.live_lines();
        self.live_rows = live.len();
        paint.push_str(&live.join("\n"));
        if live.is_empty() && self.live_rows == 0 && !paint.is_empty() && !paint.ends_with('\n') {
            // Only an erase: the printer's newline would leave a blank row,
            // so step up into the line above, where that newline lands.
            paint.push_str("\x1b[A");
        }
        paint
    }

    /// The live region's rows: the streaming block, then the status line.
    fn live_lines(&self) -> Vec<String> {
        if !self.style.live {
            return Vec::new();
        }
        let mut lines = Vec::new();
        if let Some(stream) = &self.stream {
            if !stream.header_printed {
                lines.push(stream.header.clone());
            }
            let live = &stream.text[stream.committed..];
            for (start, end) in wrap(live, self.width()) {
                lines.push(live[start..end].to_string());
            }
        }
        if let Some(status) = &self.status {
            let (start, end) = wrap(status, self.width())
                .first()
                .copied()
                .unwrap_or((0, 0));
            lines.push(self.style.grey(&status[start..end]));
        }
        lines
    }

    /// Columns a live row may take: one less than the screen's, so that no
    /// row ends exactly at the edge, where terminals differ.
    fn width(&self) -> usize {
        self.size.columns.saturating_sub(1).max(10)
    }

    /// Prints raw, for good, the rows of a live block too tall for the
    /// screen, so that the region never reaches above the top.
    fn spill(&mut self) -> String {
        let width = self.width();
        let room = self
            .size
            .rows
            .saturating_sub(FREE_ROWS + 1)
            .max(MIN_LIVE_ROWS);
        let Some(stream) = self.stream.as_mut() else {
            return String::new();
        };
        let live = &stream.text[stream.committed..];
        let rows = wrap(live, width);
        if rows.len() <= room {
            return String::new();
        }
        let cut = rows[rows.len() - room].0;
        let spilled = live[..cut].to_string();
        let mut fresh = stream.take_header();
        if !stream.spilled && stream.blocks > 0 {
            fresh.push('\n');
        }
        fresh.push_str(&spilled);
        if !fresh.ends_with('\n') {
            fresh.push('\n');
        }
        stream.committed += cut;
        stream.spilled = true;
        fresh
    }
}

impl Stream {
    /// The header, once, before the first words printed for good.
    fn take_header(&mut self) -> String {
        if self.header_printed {
            return String::new();
        }
        self.header_printed = true;
        format!("{}\n", self.header)
    }

    /// What prints `block` for good: rendered, or raw when its block
    /// overflowed; a blank line before it when a block came before.
    fn commit(&mut self, block: &str, style: Style) -> String {
        let mut fresh = self.take_header();
        let spilled = std::mem::take(&mut self.spilled);
        if spilled {
            fresh.push_str(block.trim_end_matches('\n'));
            if !fresh.ends_with('\n') {
                fresh.push('\n');
            }
            self.blocks += 1;
            return fresh;
        }
        let body = block.trim_matches('\n');
        if body.trim().is_empty() {
            return fresh;
        }
        if self.blocks > 0 {
            fresh.push('\n');
        }
        fresh.push_str(&style.body(body));
        fresh.push('\n');
        self.blocks += 1;
        fresh
    }
}

impl Style {
    /// A model message's words as shown: rendered Markdown in colour, else
    /// the text as written (Markdown is plain text already).
    pub fn body(self, text: &str) -> String {
        if self.colour {
            markdown::render(text)
        } else {
            text.trim_end_matches('\n').to_string()
        }
    }
}

/// Where the first complete Markdown block of `text` ends (after the blank
/// line that ends it, or after a code fence's closing line), if one is
/// complete. Only whole lines count.
fn block_end(text: &str) -> Option<usize> {
    let mut fence: Option<(char, usize)> = None;
    let mut offset = 0;
    let mut seen_words = false;
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') {
            return None;
        }
        offset += line.len();
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        if let Some((mark, length)) = fence {
            let closing = indent < 4
                && trimmed.trim_end().chars().all(|c| c == mark)
                && trimmed.trim_end().len() >= length;
            if closing {
                return Some(offset);
            }
            continue;
        }
        if indent < 4 {
            for mark in ['`', '~'] {
                let run = trimmed.chars().take_while(|c| *c == mark).count();
                if run >= 3 {
                    fence = Some((mark, run));
                }
            }
            if fence.is_some() {
                seen_words = true;
                continue;
            }
        }
        if line.trim().is_empty() {
            if seen_words {
                return Some(offset);
            }
        } else {
            seen_words = true;
        }
    }
    None
}

/// `text` cut into rows of at most `width` columns, as byte ranges: at its
/// newlines, and within a line at the last space that fits (or anywhere
/// when a word is wider than a row). An empty text has no rows; a trailing
/// newline starts an empty last row.
pub fn wrap(text: &str, width: usize) -> Vec<(usize, usize)> {
    let mut rows = Vec::new();
    if text.is_empty() {
        return rows;
    }
    let width = width.max(1);
    let mut line_start = 0;
    for line in text.split('\n') {
        let mut start = line_start;
        let mut used = 0;
        let mut last_space: Option<usize> = None;
        for (index, c) in line.char_indices() {
            let at = line_start + index;
            let cells = c.width().unwrap_or(0);
            if used + cells > width {
                let cut = match last_space {
                    Some(space) if space > start => space + 1,
                    _ => at,
                };
                rows.push((start, cut));
                used = text[cut..at].chars().map(|c| c.width().unwrap_or(0)).sum();
                start = cut;
                last_space = None;
            }
            if c == ' ' {
                last_space = Some(at);
            }
            used += cells;
        }
        rows.push((start, line_start + line.len()));
        line_start += line.len() + 1;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(colour: bool) -> Display {
        Display::new(
            Style { colour, live: true },
            Size {
                columns: 41,
                rows: 20,
            },
        )
    }

    fn rows(text: &str, width: usize) -> Vec<&str> {
        wrap(text, width)
            .into_iter()
            .map(|(start, end)| &text[start..end])
            .collect()
    }

    #[test]
    fn wrap_breaks_at_spaces_newlines_and_long_words() {
        assert_eq!(rows("one two three", 8), ["one two ", "three"]);
        assert_eq!(rows("a\nb", 8), ["a", "b"]);
        assert_eq!(rows("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(rows("日本語", 4), ["日本", "語"]);
        assert_eq!(rows("end\n", 8), ["end", ""]);
        assert!(rows("", 8).is_empty());
    }

    #[test]
    fn blocks_end_at_blank_lines_outside_code_fences() {
        assert_eq!(block_end("para\nstill\n\nnext"), Some(12));
        assert_eq!(block_end("para, not ended\n"), None);
        assert_eq!(block_end("```\ncode\n\nmore\n```\nafter"), Some(19));
        assert_eq!(block_end("```\ncode\n\n"), None);
        assert_eq!(block_end("\n\npara\n\n"), Some(8));
    }

    #[test]
    fn deltas_show_live_then_the_finished_reply_replaces_them() {
        let mut display = live(false);
        let first = display.delta("Hello wo", || "10:00 hearth".to_string());
        assert_eq!(first, "10:00 hearth\nHello wo");
        let second = display.delta("rld", || unreachable!());
        // Up over the header and the row, then both again.
        assert_eq!(second, "\x1b[2A\r\x1b[J10:00 hearth\nHello world");
        let done = display.finish("10:01 hearth", "Hello world");
        assert_eq!(done, "\x1b[2A\r\x1b[J10:01 hearth\nHello world\n");
        assert!(!display.streaming());
        assert_eq!(display.print("next"), "next\n");
    }

    #[test]
    fn a_finished_block_is_printed_for_good_rendered() {
        let mut display = live(true);
        display.delta("**one**", || "h".to_string());
        let paint = display.delta("\n\ntw", || unreachable!());
        let rendered = markdown::render("**one**");
        assert_eq!(paint, format!("\x1b[2A\r\x1b[Jh\n{rendered}\ntw"));
        let done = display.finish("h", "**one**\n\ntwo");
        assert_eq!(done, "\x1b[1A\r\x1b[J\ntwo\n");
    }

    #[test]
    fn the_status_line_sits_below_and_clearing_it_leaves_no_blank_row() {
        let mut display = live(false);
        assert_eq!(display.set_status(Some("thinking".into())), "thinking");
        assert_eq!(display.print("a note"), "\x1b[1A\r\x1b[Ja note\nthinking");
        assert_eq!(display.set_status(None), "\x1b[1A\r\x1b[J\x1b[A");
        assert_eq!(display.set_status(None), "");
    }

    #[test]
    fn a_reply_that_differs_from_its_deltas_is_printed_whole() {
        let mut display = live(false);
        display.delta("first try\n\n", || "h".to_string());
        display.delta("again", || unreachable!());
        let done = display.finish("h", "second try");
        assert!(done.ends_with("h\nsecond try\n"), "{done:?}");
    }

    #[test]
    fn a_block_taller_than_the_screen_spills_raw() {
        let mut display = live(false);
        let long: String = (0..40).map(|n| format!("line {n}\n")).collect();
        let paint = display.delta(&format!("```\n{long}"), || "h".to_string());
        assert!(paint.starts_with("h\n```\nline 0\n"), "{paint:?}");
        let live_rows = paint.matches('\n').count();
        assert!(live_rows > 20);
        let done = display.finish("h", &format!("```\n{long}```"));
        assert!(done.ends_with("line 39\n```\n"), "{done:?}");
    }

    #[test]
    fn without_cursor_control_nothing_is_live() {
        let mut display = Display::new(
            Style {
                colour: false,
                live: false,
            },
            Size {
                columns: 80,
                rows: 24,
            },
        );
        assert_eq!(display.delta("partial", || "h".to_string()), "");
        assert_eq!(display.set_status(Some("thinking".into())), "");
        assert_eq!(display.finish("h", "whole"), "h\nwhole\n");
    }

    #[test]
    fn control_sequences_in_deltas_never_reach_the_screen() {
        let mut display = live(false);
        let paint = display.delta("hi\x1b]0;title\x07 there", || "h".to_string());
        assert_eq!(paint, "h\nhi there");
    }
}
