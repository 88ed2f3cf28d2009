//! The agent's Markdown as Telegram HTML (pure).
//!
//! Deliberately small: fenced code blocks become `<pre>`, inline code
//! `<code>`, `**bold**` and `# headings` `<b>`, `[text](http…)` links `<a>`;
//! everything else is escaped and shown as written. Single `*` and `_` are
//! left alone, since in prose and code they are more often arithmetic or
//! snake_case than emphasis. The tags are always balanced, so Telegram
//! should parse every result; when it does not, the bridge sends the text
//! again as plain text.

/// Escapes the three characters Telegram's HTML mode reserves.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// `markdown` as Telegram HTML. The visible text is never longer than the
/// input, so a part that fits Telegram's limit as Markdown fits as HTML.
pub fn to_html(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len() + 32);
    let mut fence: Option<String> = None;
    let mut code = String::new();
    for line in markdown.split('\n') {
        let trimmed = line.trim_start();
        match &fence {
            Some(_) if trimmed.starts_with("```") => {
                out.push_str(&escape(code.strip_suffix('\n').unwrap_or(&code)));
                out.push_str("</pre>\n");
                code.clear();
                fence = None;
            }
            Some(_) => {
                code.push_str(line);
                code.push('\n');
            }
            None => {
                if let Some(language) = trimmed.strip_prefix("```") {
                    fence = Some(language.trim().to_string());
                    out.push_str("<pre>");
                } else {
                    out.push_str(&inline_line(line));
                    out.push('\n');
                }
            }
        }
    }
    if fence.is_some() {
        // An unclosed fence runs to the end, as Markdown renderers do.
        out.push_str(&escape(code.strip_suffix('\n').unwrap_or(&code)));
        out.push_str("</pre>\n");
    }
    out.truncate(out.trim_end_matches('\n').len());
    out
}

/// One line outside code blocks: a heading in bold, else its inline marks.
fn inline_line(line: &str) -> String {
    let trimmed = line.trim_start();
    let hashes = trimmed.chars().take_while(|&c| c == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
        let title = trimmed[hashes..].trim();
        return format!("<b>{}</b>", inline(title));
    }
    inline(line)
}

/// Inline code, bold and links in one line; the rest escaped.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('`') {
            if let Some(end) = after.find('`').filter(|&end| end > 0) {
                out.push_str("<code>");
                out.push_str(&escape(&after[..end]));
                out.push_str("</code>");
                rest = &after[end + 1..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("**") {
            if let Some(end) = after.find("**").filter(|&end| end > 0) {
                out.push_str("<b>");
                out.push_str(&inline(&after[..end]));
                out.push_str("</b>");
                rest = &after[end + 2..];
                continue;
            }
        }
        if let Some((label, url, consumed)) = link(rest) {
            out.push_str(&format!(
                "<a href=\"{}\">{}</a>",
                escape(url),
                escape(label)
            ));
            rest = &rest[consumed..];
            continue;
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push_str(&escape(c.encode_utf8(&mut [0; 4])));
        }
        rest = chars.as_str();
    }
    out
}

/// `[label](url)` at the start of `text`, with an http(s) URL: the label,
/// the URL and how many bytes it spans.
fn link(text: &str) -> Option<(&str, &str, usize)> {
    let after = text.strip_prefix('[')?;
    let label_end = after.find("](")?;
    let label = &after[..label_end];
    if label.is_empty() || label.contains('[') {
        return None;
    }
    let target = &after[label_end + 2..];
    let url_end = target.find(')')?;
    let url = &target[..url_end];
    if !(url.starts_with("http://") || url.starts_with("https://")) || url.contains(' ') {
        return None;
    }
    Some((label, url, 1 + label_end + 2 + url_end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_characters_are_escaped() {
        assert_eq!(
            to_html("if a < b && c > d"),
            "if a &lt; b &amp;&amp; c &gt; d"
        );
        assert_eq!(escape("<b>\"x\"</b>"), "&lt;b&gt;&quot;x&quot;&lt;/b&gt;");
    }

    #[test]
    fn bold_code_headings_and_links_become_tags() {
        assert_eq!(
            to_html("# Plan\nUse **`cargo test`** and see [the docs](https://example.org/a?b=1&c=2)."),
            "<b>Plan</b>\nUse <b><code>cargo test</code></b> and see <a href=\"https://example.org/a?b=1&amp;c=2\">the docs</a>."
        );
        assert_eq!(to_html("`<tag>`"), "<code>&lt;tag&gt;</code>");
    }

    #[test]
    fn single_stars_underscores_and_unclosed_marks_stay_as_written() {
        assert_eq!(
            to_html("2*3*4 and snake_case_name"),
            "2*3*4 and snake_case_name"
        );
        assert_eq!(to_html("**not closed and `open"), "**not closed and `open");
        assert_eq!(
            to_html("[x](ftp://host) [y](no)"),
            "[x](ftp://host) [y](no)"
        );
        assert_eq!(to_html("#hashtag"), "#hashtag");
    }

    #[test]
    fn fenced_code_is_pre_and_escaped_even_when_unclosed() {
        assert_eq!(
            to_html("Run:\n```sh\nls **/*.rs <x>\n```\nDone."),
            "Run:\n<pre>ls **/*.rs &lt;x&gt;</pre>\nDone."
        );
        assert_eq!(to_html("```\na & b"), "<pre>a &amp; b</pre>");
    }

    #[test]
    fn plain_text_is_unchanged_but_for_escapes() {
        let text = "Hello there.\n\nSecond paragraph, with: punctuation! (and parentheses)";
        assert_eq!(to_html(text), text);
    }
}
