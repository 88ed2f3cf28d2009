//! Splitting long text into messages a platform takes (pure).
//!
//! Telegram and WhatsApp take at most 4,096 characters per message. Text is
//! cut on the last paragraph break that keeps a part within the limit, else
//! the last line break, else the last space, and only as a last resort
//! inside a word; a break is used only when it leaves the part at least half
//! full, so a long text is not cut into slivers.

/// Both platforms' limit per message. Counted in UTF-16 code units, as
/// Telegram counts entity offsets, so text with emoji never goes over on
/// either (a character is never fewer units than one).
pub const MAX_MESSAGE_UNITS: usize = 4096;

/// The parts of `text`, each at most `limit` UTF-16 code units, in order;
/// none empty. The breaks where a cut was made are dropped; all else is kept.
/// Whitespace-only text has no parts.
pub fn split(text: &str, limit: usize) -> Vec<String> {
    let limit = limit.max(1);
    let mut parts = Vec::new();
    let mut rest = text.trim_matches(|c: char| c.is_whitespace());
    while !rest.is_empty() {
        let end = prefix_within(rest, limit);
        if end == rest.len() {
            parts.push(rest.to_string());
            break;
        }
        let window = &rest[..end];
        let half = end / 2;
        let (cut, skip) = [("\n\n", 2), ("\n", 1), (" ", 1)]
            .into_iter()
            .find_map(|(separator, len)| {
                window
                    .rfind(separator)
                    .filter(|&at| at > 0 && at >= half)
                    .map(|at| (at, len))
            })
            .unwrap_or((end, 0));
        let part = rest[..cut].trim_end();
        if !part.is_empty() {
            parts.push(part.to_string());
        }
        rest = rest[cut + skip..].trim_start_matches('\n');
    }
    parts
}

/// The byte length of the longest prefix of `text` within `limit` UTF-16
/// code units, ending on a character boundary. At least one character, so
/// splitting always moves on.
fn prefix_within(text: &str, limit: usize) -> usize {
    let mut units = 0;
    for (at, c) in text.char_indices() {
        units += c.len_utf16();
        if units > limit {
            return if at == 0 { c.len_utf8() } else { at };
        }
    }
    text.len()
}

/// The length Telegram sees (never less than the characters WhatsApp counts).
pub fn units(text: &str) -> usize {
    text.encode_utf16().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_part_and_blank_text_none() {
        assert_eq!(split("hello", 4096), vec!["hello"]);
        assert_eq!(split("\n  hello\n\n", 4096), vec!["hello"]);
        assert!(split(" \n\t ", 4096).is_empty());
        assert!(split("", 4096).is_empty());
    }

    #[test]
    fn long_text_is_cut_on_paragraphs() {
        let paragraph = "word ".repeat(300).trim_end().to_string(); // 1,499 characters
        let text = [paragraph.as_str(); 6].join("\n\n");
        let parts = split(&text, MAX_MESSAGE_UNITS);
        assert_eq!(parts.len(), 3);
        for part in &parts {
            assert!(units(part) <= MAX_MESSAGE_UNITS);
            assert_eq!(part, &[paragraph.as_str(); 2].join("\n\n"));
        }
    }

    #[test]
    fn without_paragraphs_lines_then_spaces_then_characters() {
        let lines = "a line of text\n".repeat(10);
        let parts = split(&lines, 40);
        assert!(parts.iter().all(|p| units(p) <= 40 && !p.starts_with('\n')));
        assert_eq!(parts.join("\n"), lines.trim_end());
        assert_eq!(parts[0], "a line of text\na line of text");

        let words = "abc ".repeat(20);
        let parts = split(&words, 10);
        assert_eq!(parts[0], "abc abc");
        assert_eq!(parts.join(" "), words.trim_end());

        let word = "x".repeat(25);
        assert_eq!(
            split(&word, 10),
            vec!["x".repeat(10), "x".repeat(10), "x".repeat(5)]
        );
    }

    #[test]
    fn an_early_break_is_not_used_when_it_would_leave_a_sliver() {
        let text = format!("Title\n\n{}", "y ".repeat(50));
        let parts = split(&text, 40);
        assert!(parts[0].len() > 20, "{parts:?}");
        assert!(parts.iter().all(|p| units(p) <= 40));
    }

    #[test]
    fn limits_count_utf16_units_and_never_cut_a_character() {
        let text = "🙂".repeat(5000);
        let parts = split(&text, MAX_MESSAGE_UNITS);
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| units(p) <= MAX_MESSAGE_UNITS));
        assert_eq!(parts.concat(), text);
        assert_eq!(
            split("🙂🙂", 1),
            vec!["🙂", "🙂"],
            "a character over the limit still moves on"
        );
    }
}
