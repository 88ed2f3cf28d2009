//! A `SKILL.md`'s front matter: the lines between a first line `---` and
//! the next `---`, read as the small part of YAML skills use (`key:
//! value`, a quoted value, a folded `>` or literal `|` block of indented
//! lines). Keys other than `name` and `description` (`license`,
//! `metadata`, `allowed-tools`, …) are allowed and left alone. Pure.

/// The most characters of a name, and of a description (the limits the
/// open format sets).
pub const MAX_NAME: usize = 64;
pub const MAX_DESCRIPTION: usize = 1024;

/// What the front matter gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    pub name: String,
    /// On one line: a folded or multi-line value is joined with spaces.
    pub description: String,
}

/// Why a `SKILL.md`'s front matter is refused, in words its author can act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontMatterError {
    #[error("its SKILL.md does not begin with front matter (a line `---`, `name:` and `description:`, then `---`)")]
    Missing,
    #[error("its SKILL.md's front matter has no closing `---` line")]
    Unclosed,
    #[error("its front matter has no `{0}`")]
    NoKey(&'static str),
    #[error("its name `{0}` is not 1 to 64 lowercase letters, digits and single hyphens")]
    BadName(String),
    #[error("its description is empty")]
    EmptyDescription,
    #[error("its description is {0} characters, over {MAX_DESCRIPTION}")]
    LongDescription(usize),
}

/// The front matter of `text`, a `SKILL.md`.
pub fn parse(text: &str) -> Result<FrontMatter, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(FrontMatterError::Missing);
    }
    let mut block = Vec::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        block.push(line);
    }
    if !closed {
        return Err(FrontMatterError::Unclosed);
    }
    let name = value_of(&block, "name").ok_or(FrontMatterError::NoKey("name"))?;
    let description =
        value_of(&block, "description").ok_or(FrontMatterError::NoKey("description"))?;
    if !valid_name(&name) {
        return Err(FrontMatterError::BadName(name.chars().take(80).collect()));
    }
    let description: String = description
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let description = description.trim().to_string();
    if description.is_empty() {
        return Err(FrontMatterError::EmptyDescription);
    }
    let length = description.chars().count();
    if length > MAX_DESCRIPTION {
        return Err(FrontMatterError::LongDescription(length));
    }
    Ok(FrontMatter { name, description })
}

/// Lowercase letters, digits and hyphens, neither first nor last nor two
/// in a row, at most [`MAX_NAME`] characters.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The value of a top-level `key:` in the block, on one line.
fn value_of(block: &[&str], key: &str) -> Option<String> {
    let start = block.iter().position(|line| {
        line.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with(':'))
    })?;
    let (_, raw) = block[start].split_once(':')?;
    let raw = raw.trim();
    // The indented lines after the key: a block, or a plain value folded.
    let continued: Vec<&str> = block[start + 1..]
        .iter()
        .take_while(|line| line.starts_with(' ') || line.starts_with('\t') || line.is_empty())
        .map(|line| line.trim())
        .filter(|line| !line.is_empty())
        .collect();
    let value = if raw.starts_with('>') || raw.starts_with('|') {
        continued.join(" ")
    } else if let Some(quoted) = unquote(raw) {
        quoted
    } else {
        let mut parts = vec![raw];
        parts.extend(continued);
        parts.join(" ")
    };
    Some(value.trim().to_string())
}

/// A value in single or double quotes, unquoted (`''` and `\"` undone).
fn unquote(raw: &str) -> Option<String> {
    if raw.len() >= 2 && raw.starts_with('"') && raw.ends_with('"') {
        return Some(raw[1..raw.len() - 1].replace("\\\"", "\""));
    }
    if raw.len() >= 2 && raw.starts_with('\'') && raw.ends_with('\'') {
        return Some(raw[1..raw.len() - 1].replace("''", "'"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_quoted_and_folded_values_are_read() {
        let text = "---\nname: pdf-tools\ndescription: \"Fill PDF forms: use it for \\\"forms\\\".\"\nlicense: MIT\nmetadata:\n  version: 1\n---\nBody\n";
        assert_eq!(
            parse(text).unwrap(),
            FrontMatter {
                name: "pdf-tools".into(),
                description: "Fill PDF forms: use it for \"forms\".".into()
            }
        );
        let folded = "---\nname: notes\ndescription: >\n  Keeps notes\n  tidy.\n---\n";
        assert_eq!(parse(folded).unwrap().description, "Keeps notes tidy.");
        let plain = "---\r\nname: notes\r\ndescription: Keeps notes\r\n  tidy.\r\n---\r\n";
        assert_eq!(parse(plain).unwrap().description, "Keeps notes tidy.");
    }

    #[test]
    fn bad_front_matter_says_what_is_wrong() {
        assert_eq!(parse("# A skill"), Err(FrontMatterError::Missing));
        assert_eq!(
            parse("---\nname: a\ndescription: b\n"),
            Err(FrontMatterError::Unclosed)
        );
        assert_eq!(
            parse("---\nname: a\n---\n"),
            Err(FrontMatterError::NoKey("description"))
        );
        assert_eq!(
            parse("---\nname: Bad Name\ndescription: b\n---\n"),
            Err(FrontMatterError::BadName("Bad Name".into()))
        );
        assert_eq!(
            parse("---\nname: a\ndescription: ''\n---\n"),
            Err(FrontMatterError::EmptyDescription)
        );
        let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
        assert_eq!(parse(&long), Err(FrontMatterError::LongDescription(1025)));
        assert!(!valid_name("a--b") && !valid_name("-a") && valid_name("a-1"));
    }
}
