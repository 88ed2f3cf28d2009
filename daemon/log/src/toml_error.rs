//! Where in a TOML file an error points, for messages that name the line
//! (the configuration and the layouts both say it).

/// The line (from 1) that a TOML error points at in `text`; the first when
/// it points nowhere. Counts bytes, so no place can fall inside a character.
pub fn toml_error_line(text: &str, err: &toml::de::Error) -> usize {
    let start = err.span().map_or(0, |span| span.start.min(text.len()));
    text.as_bytes()[..start]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}
