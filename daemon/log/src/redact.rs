//! Masking keys before anything is logged or stored.
//!
//! Every value of a secret hearth holds (API keys, tokens, from the
//! environment or `secrets.env`) is registered at start; [`mask`] replaces
//! each occurrence of one with `[redacted]`, and common key shapes that
//! hearth did not load (`sk-…`, `sk-ant-…`, `ghp_…`, `github_pat_…`,
//! `xox?-…`, `AKIA…`, Telegram bot tokens, `Bearer …`) with
//! `[redacted key]`. The log applies it to every message it appends and to
//! every summary line, and the daemon's own log lines go through it, so a
//! model endpoint that echoes the `Authorization` header, or a tool that
//! prints a key, puts the key nowhere: not in the log, not in the memory
//! (and so never in a later request), not on stderr. Every frame a client
//! is sent goes through [`mask_frame`] (`server/websocket.rs`), so a key in
//! a live event or an answer (a model's error, `hearth send --wait`) never
//! reaches a client either, and a reply's streamed deltas through
//! [`StreamMask`], so a key split between two deltas is masked whole.

use std::borrow::Cow;
use std::sync::RwLock;

/// Secrets shorter than this are not masked by value (they would match
/// ordinary words); key shapes still are.
const MIN_SECRET: usize = 8;

static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Registers secret values to mask from now on.
pub fn hold(values: impl IntoIterator<Item = String>) {
    let mut secrets = SECRETS
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for value in values {
        let value = value.trim().to_string();
        if value.len() >= MIN_SECRET && !secrets.contains(&value) {
            secrets.push(value);
        }
    }
    // Longest first, so a key that contains another is masked whole.
    secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
}

/// `text` with every held secret and every key shape masked.
pub fn mask(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut out = Cow::Borrowed(text);
    for secret in secrets.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), "[redacted]"));
        }
    }
    match mask_shapes(&out) {
        Some(masked) => Cow::Owned(masked),
        None => out,
    }
}

/// A frame's JSON text as a client may see it: every string in it masked.
/// Text with nothing to mask comes back borrowed, untouched; otherwise the
/// masking is done on each string value, so the frame stays valid JSON.
pub fn mask_frame(encoded: &str) -> Cow<'_, str> {
    if let Cow::Borrowed(_) = mask(encoded) {
        return Cow::Borrowed(encoded);
    }
    match serde_json::from_str::<serde_json::Value>(encoded) {
        Ok(mut value) => {
            mask_strings(&mut value);
            Cow::Owned(value.to_string())
        }
        // Not JSON (never from `encode`): masked as text.
        Err(_) => Cow::Owned(mask(encoded).into_owned()),
    }
}

fn mask_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => {
            if let Cow::Owned(masked) = mask(text) {
                *text = masked;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask_strings),
        serde_json::Value::Object(map) => map.values_mut().for_each(mask_strings),
        _ => {}
    }
}

/// Text that comes in pieces (a reply's deltas, as the model streams
/// them), masked across the pieces: a key split between two deltas is
/// masked whole. The end of the text so far that could still grow into a
/// key (see `held_from`) is held back until the next piece shows it
/// whole, or [`StreamMask::finish`] lets it out.
#[derive(Debug, Default)]
pub struct StreamMask {
    held: String,
}

/// The most a [`StreamMask`] holds back: no key is this long, so a run
/// longer than it (a blob) is let through, masked, but for its end.
const MAX_HELD: usize = 4096;
/// What is kept of a run that long, in case a key begins at its end.
const KEPT_OF_LONG_RUN: usize = 256;

impl StreamMask {
    /// Takes the next piece; returns what may be shown now, masked.
    pub fn push(&mut self, piece: &str) -> Option<String> {
        self.held.push_str(piece);
        let mut ready = held_from(&self.held);
        if self.held.len() - ready > MAX_HELD {
            // Every byte of a run of key characters is ASCII, so any index
            // in it is a character boundary.
            ready = self.held.len() - KEPT_OF_LONG_RUN;
        }
        if ready == 0 {
            return None;
        }
        let shown: String = self.held.drain(..ready).collect();
        Some(mask(&shown).into_owned())
    }

    /// The end of the text: whatever is held, masked.
    pub fn finish(&mut self) -> Option<String> {
        let rest = std::mem::take(&mut self.held);
        (!rest.is_empty()).then(|| mask(&rest).into_owned())
    }
}

/// A [`StreamMask`] with where its text goes: each piece is masked and
/// sent, and what it holds back is sent when it is dropped, however the
/// stream ended (finished, failed, or a turn interrupted mid-answer that
/// drops the call), so a reader sees every word that streamed.
pub struct MaskedSender<F: FnMut(String)> {
    mask: StreamMask,
    send: F,
}

impl<F: FnMut(String)> MaskedSender<F> {
    pub fn new(send: F) -> Self {
        MaskedSender {
            mask: StreamMask::default(),
            send,
        }
    }

    /// Masks and sends what of `piece` may be shown now.
    pub fn push(&mut self, piece: &str) {
        if let Some(shown) = self.mask.push(piece) {
            (self.send)(shown);
        }
    }
}

impl<F: FnMut(String)> Drop for MaskedSender<F> {
    fn drop(&mut self) {
        if let Some(rest) = self.mask.finish() {
            (self.send)(rest);
        }
    }
}

/// Where the end of `text` that could still grow into a key begins: a
/// run of key characters that begins a key shape (or continues one, or is
/// a bot token's digits), with a `Bearer ` or a bot token's digits and `:`
/// before it; or an end that begins a held secret. Other text is let
/// through at once, so a reply's last word is not held back for nothing
/// (an interrupted or paused stream shows every word it streamed).
fn held_from(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut start = bytes.len();
    while start > 0 && key_char(bytes[start - 1]) {
        start -= 1;
    }
    let shaped = if text[..start].ends_with("Bearer ") {
        start - "Bearer ".len()
    } else if start > 0 && bytes[start - 1] == b':' && digits_before(bytes, start - 1) > 0 {
        start - 1 - digits_before(bytes, start - 1)
    } else if could_begin_key(&text[start..]) {
        start
    } else {
        bytes.len()
    };
    shaped.min(held_secret_begins(text))
}

/// How many ASCII digits end `bytes[..end]`.
fn digits_before(bytes: &[u8], end: usize) -> usize {
    bytes[..end]
        .iter()
        .rev()
        .take_while(|byte| byte.is_ascii_digit())
        .count()
}

/// Whether a run of key characters could be, or become, a key of a known
/// shape: a prefix of one, a key under way, or digits (a bot token's).
fn could_begin_key(run: &str) -> bool {
    !run.is_empty()
        && (run.bytes().all(|byte| byte.is_ascii_digit())
            || SHAPES
                .iter()
                .any(|(prefix, _)| prefix.starts_with(run) || run.starts_with(prefix)))
}

/// Where the earliest end of `text` that begins a held secret (as a word
/// of its own) starts;
/// `text.len()` when none does.
fn held_secret_begins(text: &str) -> usize {
    let secrets = SECRETS
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut earliest = text.len();
    for secret in secrets.iter() {
        let longest = (secret.len() - 1).min(text.len());
        // A secret is a word of its own: it begins at the text's start or
        // after a character no key has (not inside a word, where every
        // word ending in its first letter would wait).
        let begins_word = |at: usize| at == 0 || !key_char(text.as_bytes()[at - 1]);
        for at in (text.len() - longest..text.len())
            .filter(|at| text.is_char_boundary(*at) && begins_word(*at))
        {
            if secret.starts_with(&text[at..]) {
                earliest = earliest.min(at);
                break;
            }
        }
    }
    earliest
}

/// Characters a key is made of.
fn key_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// The prefixes of common keys and the length of key characters (after the
/// prefix) that makes one.
const SHAPES: &[(&str, usize)] = &[
    ("sk-ant-", 20),
    ("sk-proj-", 20),
    ("sk-", 20),
    ("github_pat_", 20),
    ("ghp_", 20),
    ("gho_", 20),
    ("ghs_", 20),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("AKIA", 16),
    ("Bearer ", 16),
];

/// Masks key shapes; `None` when there is none.
fn mask_shapes(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        let boundary = at == 0 || !key_char(bytes[at - 1]);
        let found = boundary.then(|| key_at(bytes, at)).flatten();
        match found {
            Some(end) => {
                let out = out.get_or_insert_with(String::new);
                out.push_str(&text[copied..at]);
                out.push_str("[redacted key]");
                copied = end;
                at = end;
            }
            None => at += 1,
        }
    }
    out.map(|mut out| {
        out.push_str(&text[copied..]);
        out
    })
}

/// The end of a key starting at `at`, if one does.
fn key_at(bytes: &[u8], at: usize) -> Option<usize> {
    let run = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|byte| key_char(**byte))
            .count()
    };
    for (prefix, least) in SHAPES {
        if bytes[at..].starts_with(prefix.as_bytes()) {
            let from = at + prefix.len();
            let length = run(from);
            if length >= *least {
                return Some(from + length);
            }
        }
    }
    // A Telegram bot token: 6 to 12 digits, `:`, 35 key characters.
    let digits = bytes[at..]
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    if (6..=12).contains(&digits) && bytes.get(at + digits) == Some(&b':') {
        let length = run(at + digits + 1);
        if length >= 35 {
            return Some(at + digits + 1 + length);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_secrets_and_key_shapes_are_masked() {
        hold(["a-held-secret-value-42".to_string(), "short".to_string()]);
        let text = "key a-held-secret-value-42, short stays, \
            Authorization: Bearer abcdefghijklmnopqrstuvwx, sk-proj-ABCDEFGHIJKLMNOPQRSTUV12, \
            bot 123456789:AAbbccddeeffgghhiijjkkllmmnnooppqqr ok";
        let masked = mask(text);
        assert!(!masked.contains("a-held-secret-value-42"), "{masked}");
        assert!(masked.contains("short stays"));
        assert!(!masked.contains("abcdefghijklmnopqrstuvwx"), "{masked}");
        assert!(!masked.contains("ABCDEFGHIJKLMNOPQRSTUV12"), "{masked}");
        assert!(!masked.contains("AAbbccdd"), "{masked}");
        assert!(masked.ends_with(" ok"));
    }

    #[test]
    fn a_key_split_across_pieces_is_masked_whole() {
        hold(["held-secret-in-pieces".to_string()]);
        let text = "the key: Bearer abcdefghijklmnopqrstuvwx, sk-proj-ABCDEFGHIJKLMNOPQRSTUV12 \
            and held-secret-in-pieces, bot 123456789:AAbbccddeeffgghhiijjkkllmmnnooppqqr. héllo ✓";
        for size in [1, 2, 3, 4, 7] {
            let chars: Vec<char> = text.chars().collect();
            let mut stream = StreamMask::default();
            let mut shown = String::new();
            for piece in chars.chunks(size) {
                let piece: String = piece.iter().collect();
                shown.extend(stream.push(&piece));
            }
            shown.extend(stream.finish());
            assert_eq!(shown, mask(text), "pieces of {size}");
        }
        // A long blob that could be a key under way is let through, but
        // for its end.
        let mut stream = StreamMask::default();
        let blob = "7".repeat(10_000);
        let shown = stream.push(&blob).unwrap();
        assert_eq!(shown.len(), blob.len() - KEPT_OF_LONG_RUN);
    }

    #[test]
    fn ordinary_words_are_never_held_back() {
        let mut stream = StreamMask::default();
        assert_eq!(
            stream.push("Thinking out loud").as_deref(),
            Some("Thinking out loud")
        );
        assert_eq!(stream.push(" in 2024").as_deref(), Some(" in "));
        assert_eq!(stream.push(".").as_deref(), Some("2024."));
        // The start of a key shape waits for what follows.
        assert_eq!(stream.push(" then sk").as_deref(), Some(" then "));
        assert_eq!(stream.finish().as_deref(), Some("sk"));
    }

    #[test]
    fn a_frame_is_masked_string_by_string_and_stays_json() {
        let frame = r#"{"type":"event","text":"Bearer abcdefghijklmnopqrstuvwx \"quoted\"","n":1}"#;
        let masked = mask_frame(frame);
        let value: serde_json::Value = serde_json::from_str(&masked).unwrap();
        assert_eq!(value["text"], "[redacted key] \"quoted\"");
        assert!(matches!(
            mask_frame(r#"{"text":"hello"}"#),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn ordinary_text_is_untouched_and_borrowed() {
        let text = "a task-list, sk-short, ask-me, 12:30 and a 1234567:short token";
        assert!(matches!(mask(text), Cow::Borrowed(_)));
    }
}
