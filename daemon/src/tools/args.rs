//! Strict tool arguments: one well-formed JSON value that matches the
//! tool's schema, or an error that names exactly what is wrong.
//!
//! Pure: no I/O. The scanner is our own because serde_json silently keeps
//! the last of repeated keys, accepts unpaired escaped surrogates, and stops
//! at 128 levels; a model's call must be unambiguous before anything runs.
//! The schema check (`args/schema.rs`) covers what the built-in tools' and
//! MCP servers' schemas use, and names what it cannot check
//! ([`unsupported`]). An optional property given as `null` is taken as
//! absent, since models often write `null` for "not given".

use serde_json::{Map, Value};
use std::collections::HashSet;

mod schema;

pub use schema::{check, unsupported};

/// How deep arrays and objects may nest.
pub const MAX_DEPTH: usize = 256;

/// What is wrong with a call's arguments; the message goes to the model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArgsError {
    #[error("arguments: invalid UTF-8 at byte {at}")]
    Utf8 { at: usize },
    #[error("arguments: the JSON ends early at byte {at}; expected {expected}")]
    End { at: usize, expected: &'static str },
    #[error("arguments: unexpected {found} at byte {at}; expected {expected}")]
    Unexpected {
        found: String,
        at: usize,
        expected: &'static str,
    },
    #[error("arguments: extra data at byte {at} after the JSON value; send one object")]
    Trailing { at: usize },
    #[error("arguments: repeated key `{key}` at byte {at}")]
    RepeatedKey { key: String, at: usize },
    #[error("arguments: unpaired surrogate `\\u{code:04x}` at byte {at}")]
    LoneSurrogate { code: u16, at: usize },
    #[error("arguments: invalid escape at byte {at}")]
    BadEscape { at: usize },
    #[error("arguments: raw control character U+{code:04X} in a string at byte {at}; escape it")]
    Control { code: u8, at: usize },
    #[error("arguments: invalid number `{text}` at byte {at}")]
    BadNumber { text: String, at: usize },
    #[error("arguments: nested deeper than {MAX_DEPTH} levels at byte {at}")]
    TooDeep { at: usize },
    #[error("arguments: missing required property `{0}`")]
    Missing(String),
    #[error("arguments: unknown property `{name}`; the properties are: {known}")]
    Unknown { name: String, known: String },
    #[error("arguments: {place} must be {expected}, not {found}")]
    Type {
        place: String,
        expected: String,
        found: String,
    },
    #[error("arguments: {place} must be at least {limit}, not {found}")]
    Minimum {
        place: String,
        limit: String,
        found: String,
    },
    #[error("arguments: {place} must be at most {limit}, not {found}")]
    Maximum {
        place: String,
        limit: String,
        found: String,
    },
    #[error("arguments: {place} must be one of {choices}, not {found}")]
    Enum {
        place: String,
        choices: String,
        found: String,
    },
    /// Any other rule of the schema: `rule` reads after "must".
    #[error("arguments: {place} must {rule}, not {found}")]
    Rule {
        place: String,
        rule: String,
        found: String,
    },
}

/// Parses `arguments` strictly and checks it against `schema`. Empty
/// arguments are an empty object, as some servers send for tools that take
/// none.
pub fn validate(arguments: &str, schema: &Value) -> Result<Value, ArgsError> {
    let value = if arguments.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        parse(arguments.as_bytes())?
    };
    check(&value, schema)?;
    Ok(value)
}

/// One strict JSON value: valid UTF-8, no trailing data, no repeated key,
/// no unpaired surrogate, at most [`MAX_DEPTH`] levels.
pub fn parse(bytes: &[u8]) -> Result<Value, ArgsError> {
    if let Err(err) = std::str::from_utf8(bytes) {
        return Err(ArgsError::Utf8 {
            at: err.valid_up_to(),
        });
    }
    let mut scanner = Scanner { text: bytes, at: 0 };
    scanner.skip_space();
    let value = scanner.value(0)?;
    scanner.skip_space();
    if scanner.at < bytes.len() {
        return Err(ArgsError::Trailing { at: scanner.at });
    }
    Ok(value)
}

/// A cursor over text already known to be UTF-8.
struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn unexpected(&self, expected: &'static str) -> ArgsError {
        match self.peek() {
            None => ArgsError::End {
                at: self.at,
                expected,
            },
            Some(_) => {
                // The text is UTF-8 and `at` is always at a character start.
                let found = String::from_utf8_lossy(&self.text[self.at..])
                    .chars()
                    .next()
                    .unwrap_or('?');
                let shown: String = if found.is_control() {
                    found.escape_debug().collect()
                } else {
                    found.to_string()
                };
                ArgsError::Unexpected {
                    found: format!("`{shown}`"),
                    at: self.at,
                    expected,
                }
            }
        }
    }

    /// A value whose containers sit `depth` levels deep.
    fn value(&mut self, depth: usize) -> Result<Value, ArgsError> {
        match self.peek() {
            Some(b'{') | Some(b'[') if depth >= MAX_DEPTH => {
                Err(ArgsError::TooDeep { at: self.at })
            }
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => Ok(Value::String(self.string()?)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'n') => self.literal("null", Value::Null),
            _ => Err(self.unexpected("a JSON value")),
        }
    }

    fn literal(&mut self, word: &'static str, value: Value) -> Result<Value, ArgsError> {
        if self.text[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            Ok(value)
        } else {
            Err(self.unexpected("a JSON value"))
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, ArgsError> {
        self.at += 1;
        let mut map = Map::new();
        let mut seen = HashSet::new();
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_space();
            if self.peek() != Some(b'"') {
                return Err(self.unexpected("a key in double quotes"));
            }
            let key_at = self.at;
            let key = self.string()?;
            if !seen.insert(key.clone()) {
                return Err(ArgsError::RepeatedKey { key, at: key_at });
            }
            self.skip_space();
            if self.peek() != Some(b':') {
                return Err(self.unexpected("`:` after the key"));
            }
            self.at += 1;
            self.skip_space();
            let value = self.value(depth)?;
            map.insert(key, value);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Value::Object(map));
                }
                _ => return Err(self.unexpected("`,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, ArgsError> {
        self.at += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(Value::Array(items));
        }
        loop {
            self.skip_space();
            items.push(self.value(depth)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Value::Array(items));
                }
                _ => return Err(self.unexpected("`,` or `]`")),
            }
        }
    }

    /// A string starting at its opening quote, unescaped.
    fn string(&mut self) -> Result<String, ArgsError> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let Some(byte) = self.peek() else {
                return Err(self.unexpected("`\"` to close the string"));
            };
            match byte {
                b'"' => {
                    self.at += 1;
                    // Only whole characters and escapes were copied.
                    return String::from_utf8(out).map_err(|_| ArgsError::Utf8 { at: self.at });
                }
                b'\\' => {
                    let ch = self.escape()?;
                    out.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                }
                0x00..=0x1f => {
                    return Err(ArgsError::Control {
                        code: byte,
                        at: self.at,
                    })
                }
                _ => {
                    out.push(byte);
                    self.at += 1;
                }
            }
        }
    }

    /// One escape at its backslash; a surrogate pair is one escape.
    fn escape(&mut self) -> Result<char, ArgsError> {
        let start = self.at;
        let simple = match self.text.get(start + 1) {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => return self.unicode_escape(),
            None => {
                self.at += 1;
                return Err(self.unexpected("an escape"));
            }
            Some(_) => return Err(ArgsError::BadEscape { at: start }),
        };
        self.at += 2;
        Ok(simple)
    }

    fn unicode_escape(&mut self) -> Result<char, ArgsError> {
        let start = self.at;
        let first = self.hex4(start + 2)?;
        self.at = start + 6;
        match first {
            0xD800..=0xDBFF => {
                let low = if self.text[self.at..].starts_with(b"\\u") {
                    Some(self.hex4(self.at + 2)?)
                } else {
                    None
                };
                match low {
                    Some(low @ 0xDC00..=0xDFFF) => {
                        self.at += 6;
                        let code =
                            0x10000 + ((first as u32 - 0xD800) << 10) + (low as u32 - 0xDC00);
                        char::from_u32(code).ok_or(ArgsError::BadEscape { at: start })
                    }
                    _ => Err(ArgsError::LoneSurrogate {
                        code: first,
                        at: start,
                    }),
                }
            }
            0xDC00..=0xDFFF => Err(ArgsError::LoneSurrogate {
                code: first,
                at: start,
            }),
            code => char::from_u32(code as u32).ok_or(ArgsError::BadEscape { at: start }),
        }
    }

    /// Four hex digits at `at`.
    fn hex4(&self, at: usize) -> Result<u16, ArgsError> {
        let digits = self
            .text
            .get(at..at + 4)
            .ok_or(ArgsError::BadEscape { at: at - 2 })?;
        let digits =
            std::str::from_utf8(digits).map_err(|_| ArgsError::BadEscape { at: at - 2 })?;
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(ArgsError::BadEscape { at: at - 2 });
        }
        u16::from_str_radix(digits, 16).map_err(|_| ArgsError::BadEscape { at: at - 2 })
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Result<Value, ArgsError> {
        let start = self.at;
        let digits = |s: &mut Self| {
            let from = s.at;
            while matches!(s.peek(), Some(b'0'..=b'9')) {
                s.at += 1;
            }
            s.at - from
        };
        if self.peek() == Some(b'-') {
            self.at += 1;
        }
        let leading_zero = self.peek() == Some(b'0');
        let whole = digits(self);
        let mut ok = whole > 0 && !(leading_zero && whole > 1);
        if self.peek() == Some(b'.') {
            self.at += 1;
            ok &= digits(self) > 0;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            ok &= digits(self) > 0;
        }
        // The token is ASCII: only the bytes matched above.
        let text = String::from_utf8_lossy(&self.text[start..self.at]).into_owned();
        let bad = |text: String| ArgsError::BadNumber { text, at: start };
        if !ok {
            return Err(bad(text));
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Number(_)) => Ok(value),
            _ => Err(bad(text)),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod fuzz;
