//! Text that hearth did not write, made safe to print on a terminal.
//!
//! Messages, tool output, fetched pages and model replies can hold control
//! sequences: an OSC 0 that retitles the window, an OSC 52 that writes the
//! clipboard, CSI sequences that move the cursor or repaint the screen, a
//! bare carriage return that hides what came before it on the line. Every
//! client path that prints such text to a terminal passes it through
//! [`terminal_safe`] first: escape sequences (7-bit and 8-bit forms) are
//! removed whole, and any other control character except newline and tab is
//! shown as `�`. A carriage return before a newline (Windows line ends) is
//! dropped quietly.

use std::borrow::Cow;

/// What stands in for a lone control character.
const REPLACEMENT: char = '\u{fffd}';

const ESC: char = '\u{1b}';
const BEL: char = '\u{7}';

/// `text` without escape sequences and with other control characters
/// (C0 but newline and tab, DEL, C1) replaced; borrowed when it held none.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_control) {
        return Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ESC => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // A two-character sequence (ESC 7, ESC c, …), or a charset
                // choice (ESC ( B) whose one argument goes with it.
                Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%' | ' ') => {
                    chars.next();
                }
                Some(_) | None => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\r' if chars.peek() == Some(&'\n') => {}
            c if is_control(c) => safe.push(REPLACEMENT),
            c => safe.push(c),
        }
    }
    Cow::Owned(safe)
}

/// Whether `c` is a control character that must not reach the terminal
/// as it is: newline and tab may.
fn is_control(c: char) -> bool {
    c != '\n' && c != '\t' && c.is_control()
}

/// Skips the rest of a CSI sequence: parameter and intermediate bytes, then
/// one final byte. A sequence cut short ends at the first character that
/// cannot belong to it, which is skipped as well.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if !('\u{20}'..='\u{3f}').contains(&c) {
            return;
        }
    }
}

/// Skips a control string (OSC, DCS, SOS, PM, APC) up to its terminator:
/// BEL, ST (`ESC \`) or the 8-bit ST. An unterminated one runs to the end
/// of the text, which is then dropped: it was never meant to be seen.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            BEL | '\u{9c}' => return,
            ESC => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_with_newlines_and_tabs_is_borrowed_unchanged() {
        let text = "héllo\n\tworld ✓";
        assert!(matches!(terminal_safe(text), Cow::Borrowed(_)));
        assert_eq!(terminal_safe(text), text);
    }

    #[test]
    fn osc_title_and_clipboard_writes_are_removed_whole() {
        assert_eq!(terminal_safe("a\x1b]0;pwned\x07b"), "ab");
        assert_eq!(terminal_safe("a\x1b]52;c;ZWNobyBoaQ==\x1b\\b"), "ab");
        assert_eq!(terminal_safe("a\u{9d}0;t\u{9c}b"), "ab");
        // Unterminated: everything after the introducer goes.
        assert_eq!(terminal_safe("a\x1b]52;c;ZWNo"), "a");
    }

    #[test]
    fn csi_sequences_are_removed_whole() {
        assert_eq!(terminal_safe("\x1b[2J\x1b[Hclean"), "clean");
        assert_eq!(terminal_safe("red \x1b[31;1mtext\x1b[0m"), "red text");
        assert_eq!(terminal_safe("x\x1b[?1049hy"), "xy");
        assert_eq!(terminal_safe("x\u{9b}2Jy"), "xy");
        assert_eq!(terminal_safe("x\x1bPdcs\x1b\\y"), "xy");
        assert_eq!(terminal_safe("x\x1b(By\x1bcz"), "xyz");
    }

    #[test]
    fn other_controls_are_shown_as_replacement_characters() {
        assert_eq!(terminal_safe("bell\x07 bs\x08 del\x7f"), "bell� bs� del�");
        assert_eq!(terminal_safe("over\rwrite"), "over�write");
        assert_eq!(terminal_safe("c1\u{85}x"), "c1�x");
        assert_eq!(terminal_safe("windows\r\nline"), "windows\nline");
        assert_eq!(
            terminal_safe("lone escape at the end \x1b"),
            "lone escape at the end "
        );
    }
}
