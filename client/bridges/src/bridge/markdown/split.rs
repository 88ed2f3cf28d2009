//! Long Markdown in parts a platform takes, cut between blocks (pure).
//!
//! Each part is whole Markdown, rendered on its own, so a part's markup is
//! always complete: no tag or mark is cut. Blocks go together while the
//! part, as written and as the platform shows it, stays within the limit;
//! a block too long for one message is cut alone: a code block into
//! several code blocks of its lines, a table into several tables of its
//! rows under the same head, anything else as plain text is cut (see
//! [`crate::bridge::split`]).

use super::tree::{options, parse, Block};
use crate::bridge::split::{split as split_text, units};
use pulldown_cmark::{Event, Parser};
use std::ops::Range;

/// The parts of `markdown`, each at most `limit` UTF-16 code units as
/// written and as `shown` measures its rendering; in order, none empty.
pub fn split(markdown: &str, limit: usize, shown: impl Fn(&str) -> usize) -> Vec<String> {
    let cost = |piece: &str| units(piece).max(shown(piece));
    let mut parts = Vec::new();
    // The blocks gathered for the next part: where they span and their cost.
    let mut gathered: Option<(Range<usize>, usize)> = None;
    for block in top_level_blocks(markdown) {
        let piece = markdown[block.clone()].trim_end();
        if piece.trim().is_empty() {
            continue;
        }
        let block = block.start..block.start + piece.len();
        let block_cost = cost(piece);
        if block_cost > limit {
            if let Some((range, _)) = gathered.take() {
                parts.push(markdown[range].to_string());
            }
            parts.extend(cut_block(piece, limit, &cost));
            continue;
        }
        gathered = match gathered.take() {
            Some((range, sum))
                if sum + 2 + block_cost <= limit
                    && units(&markdown[range.start..block.end]) <= limit =>
            {
                Some((range.start..block.end, sum + 2 + block_cost))
            }
            Some((range, _)) => {
                parts.push(markdown[range].to_string());
                Some((block, block_cost))
            }
            None => Some((block, block_cost)),
        };
    }
    if let Some((range, _)) = gathered {
        parts.push(markdown[range].to_string());
    }
    if parts.is_empty() {
        // Nothing Markdown shows (a lone link definition): as written.
        return split_text(markdown, limit);
    }
    parts
}

/// Where each block of the document's top level is written.
fn top_level_blocks(markdown: &str) -> Vec<Range<usize>> {
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    for (event, range) in Parser::new_ext(markdown, options()).into_offset_iter() {
        match event {
            Event::Start(_) => {
                if depth == 0 {
                    blocks.push(range);
                }
                depth += 1;
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            _ if depth == 0 => blocks.push(range),
            _ => {}
        }
    }
    blocks
}

/// One block too long for a message, in parts that fit: a fenced code
/// block as several with the same fences, a table as several with the same
/// head, anything else cut as plain text.
fn cut_block(piece: &str, limit: usize, cost: &impl Fn(&str) -> usize) -> Vec<String> {
    if let Some((open, code, close)) = fenced_code(piece) {
        let wrap = |lines: &str| format!("{open}\n{lines}\n{close}");
        return cut_text(code, limit, cost, wrap);
    }
    if let Some((head, rows)) = table(piece) {
        let wrap = |rows: &str| format!("{head}\n{rows}");
        return cut_text(rows, limit, cost, wrap);
    }
    cut_text(piece, limit, cost, str::to_string)
}

/// A fenced code block's opening line, code and closing fence. `None` when
/// `piece` is not one.
fn fenced_code(piece: &str) -> Option<(&str, &str, String)> {
    let (open, rest) = piece.split_once('\n')?;
    let fence = open.trim_start();
    let mark = fence.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let fence_len = fence.chars().take_while(|c| *c == mark).count();
    if fence_len < 3 {
        return None;
    }
    let close = mark.to_string().repeat(fence_len);
    let code = match rest.trim_end().strip_suffix(close.as_str()) {
        Some(code) => code.strip_suffix('\n').unwrap_or(code),
        None => rest,
    };
    Some((open, code, close))
}

/// A table's head (its first line and the delimiter line) and its rows.
/// `None` when `piece` is not one table.
fn table(piece: &str) -> Option<(&str, &str)> {
    if !matches!(parse(piece).as_slice(), [Block::Table(_)]) {
        return None;
    }
    let (first, rest) = piece.split_once('\n')?;
    let (delimiter, rows) = rest.split_once('\n')?;
    Some((&piece[..first.len() + 1 + delimiter.len()], rows))
}

/// `text` cut as plain text into parts that fit once `wrap`ped, cut
/// smaller while the rendering of a part would not.
fn cut_text(
    text: &str,
    limit: usize,
    cost: &impl Fn(&str) -> usize,
    wrap: impl Fn(&str) -> String,
) -> Vec<String> {
    let overhead = units(&wrap(""));
    let mut room = limit.saturating_sub(overhead).max(1);
    loop {
        let parts: Vec<String> = split_text(text, room)
            .iter()
            .map(|part| wrap(part))
            .collect();
        if room <= 1 || parts.iter().all(|part| cost(part) <= limit) {
            return parts;
        }
        room = room * 9 / 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_go_together_up_to_the_limit() {
        let text = "First paragraph.\n\n- a\n- b\n\nLast one here.";
        assert_eq!(split(text, 4096, units), vec![text]);
        assert_eq!(
            split(text, 30, units),
            vec!["First paragraph.\n\n- a\n- b", "Last one here."]
        );
    }

    #[test]
    fn a_long_code_block_is_cut_into_whole_code_blocks() {
        let code: Vec<String> = (0..40).map(|n| format!("line {n:02} <x>")).collect();
        let text = format!("Run:\n\n```sh\n{}\n```\n\nDone.", code.join("\n"));
        let parts = split(&text, 200, units);
        assert!(parts.len() > 2, "{parts:?}");
        assert_eq!(parts[0], "Run:");
        for part in &parts[1..parts.len() - 1] {
            assert!(part.starts_with("```sh\nline "), "{part}");
            assert!(part.ends_with("\n```"), "{part}");
            assert!(units(part) <= 200);
        }
        assert_eq!(parts.last().map(String::as_str), Some("Done."));
        let lines: Vec<&str> = parts[1..parts.len() - 1]
            .iter()
            .flat_map(|part| part.lines().filter(|line| line.starts_with("line")))
            .collect();
        assert_eq!(lines, code);
    }

    #[test]
    fn a_long_table_is_cut_into_tables_with_the_same_head() {
        let rows: Vec<String> = (0..60).map(|n| format!("| {n} | row {n} |")).collect();
        let text = format!("| n | what |\n|--:|---|\n{}", rows.join("\n"));
        let parts = split(&text, 300, units);
        assert!(parts.len() > 2, "{parts:?}");
        for part in &parts {
            assert!(part.starts_with("| n | what |\n|--:|---|\n| "), "{part}");
            assert!(matches!(parse(part).as_slice(), [Block::Table(_)]));
        }
        let cut: Vec<&str> = parts.iter().flat_map(|part| part.lines().skip(2)).collect();
        assert_eq!(cut, rows);
    }

    #[test]
    fn text_that_shows_nothing_goes_as_written() {
        assert_eq!(
            split("[x]: https://e.org", 4096, units),
            vec!["[x]: https://e.org"]
        );
        assert!(split(" \n ", 4096, units).is_empty());
    }

    #[test]
    fn the_rendered_length_counts_as_well() {
        // A rendering twice as long as the text halves what fits.
        let text = "word ".repeat(100);
        let parts = split(&text, 200, |piece| 2 * units(piece));
        assert!(parts.iter().all(|part| 2 * units(part) <= 200), "{parts:?}");
        assert_eq!(parts.join(" "), text.trim_end());
    }
}
