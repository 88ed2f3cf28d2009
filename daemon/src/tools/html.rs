//! HTML reduced to readable text, for `web_fetch`. Pure.
//!
//! Not a parser: scripts, styles and comments are dropped, block tags become
//! line breaks, other tags vanish, common entities are decoded and
//! whitespace is collapsed. Good enough for a model to read a page.
//!
//! Linear in the page's size, whatever it holds: a tag is looked for only
//! up to the next `<` outside quotes (or [`MAX_TAG`] bytes), so a page full
//! of stray `<` is read once, not once per `<`; an entity's `;` is looked
//! for only [`MAX_ENTITY`] bytes after its `&`. At most [`MAX_HTML_BYTES`]
//! of a page are reduced.

/// The most of a page [`readable`] and [`title`] look at; the rest is
/// dropped (`web_fetch` reads less by default, `fetch_max_bytes`).
pub const MAX_HTML_BYTES: usize = 8 * 1024 * 1024;

/// The longest tag taken as one; a longer `<…` is text.
const MAX_TAG: usize = 8192;

/// Elements whose content is never text to read.
const SKIPPED: &[&str] = &["script", "style", "noscript", "template", "svg", "title"];

/// Tags that start a new line.
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "td",
    "th",
    "tr",
    "ul",
];

/// The page's title, if it has one.
pub fn title(html: &str) -> Option<String> {
    let html = bounded(html);
    let lower = html.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let title = collapse(&decode_entities(&html[start..end]));
    (!title.is_empty()).then_some(title)
}

/// The text of the page.
pub fn readable(html: &str) -> String {
    let html = bounded(html);
    // ASCII lowering keeps every byte offset, so `lower` indexes `html`.
    let lower = html.to_ascii_lowercase();
    let mut out = String::new();
    let mut at = 0;
    while at < html.len() {
        let Some(found) = html[at..].find('<') else {
            out.push_str(&decode_entities(&html[at..]));
            break;
        };
        out.push_str(&decode_entities(&html[at..at + found]));
        at += found;
        if lower[at..].starts_with("<!--") {
            at = lower[at..]
                .find("-->")
                .map_or(html.len(), |end| at + end + 3);
            continue;
        }
        let start = at;
        let Some(end) = tag_end(html, at) else {
            // A stray `<` in text.
            out.push('<');
            at = start + 1;
            continue;
        };
        let tag = &lower[at + 1..end.saturating_sub(1).max(at + 1)];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        at = end;
        if name.is_empty() {
            // `<!doctype …>`, `<?xml …>`, or a stray `<` in text.
            if !(tag.starts_with('!') || tag.starts_with('?')) {
                out.push('<');
                at = start + 1;
            }
            continue;
        }
        if !closing && SKIPPED.contains(&name.as_str()) && !tag.trim_end().ends_with('/') {
            let close = format!("</{name}");
            at = match lower[at..].find(&close) {
                Some(found) => tag_end(html, at + found).unwrap_or(at + found + close.len()),
                None => html.len(),
            };
            out.push('\n');
            continue;
        }
        if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
            if name == "li" && !closing {
                out.push_str("- ");
            }
        }
    }
    tidy(&out)
}

/// The first [`MAX_HTML_BYTES`] of `html`, cut at a character's start.
fn bounded(html: &str) -> &str {
    if html.len() <= MAX_HTML_BYTES {
        return html;
    }
    let mut cut = MAX_HTML_BYTES;
    while !html.is_char_boundary(cut) {
        cut -= 1;
    }
    &html[..cut]
}

/// Just past the `>` that ends the tag opening at `at`, quotes respected;
/// `None` when there is none before the next `<` outside quotes, within
/// [`MAX_TAG`] bytes, or before the end (then the `<` is text). An unquoted
/// `<` cannot be inside a tag, which is what keeps the whole page linear.
fn tag_end(html: &str, at: usize) -> Option<usize> {
    let bytes = html.as_bytes();
    let limit = bytes.len().min(at + MAX_TAG);
    let mut quote = None;
    let mut i = at + 1;
    while i < limit {
        #[cfg(test)]
        SCANNED.with(|scanned| scanned.set(scanned.get() + 1));
        match (quote, bytes[i]) {
            (None, b'>') => return Some(i + 1),
            (None, b'<') => return None,
            (None, q @ (b'"' | b'\'')) => quote = Some(q),
            (Some(q), b) if b == q => quote = None,
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
thread_local! {
    /// Bytes looked at by `tag_end` and `semicolon_after` on this thread,
    /// for the linearity tests.
    static SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The longest entity name (or number) looked for after a `&`: `;` is
/// looked for this far and no further, so a page of `&` without `;` is
/// read once, not once per `&`.
const MAX_ENTITY: usize = 10;

/// Decodes `&amp;`-style entities and numeric references; unknown ones stay.
/// Linear in the text: at most [`MAX_ENTITY`] bytes are looked at after
/// each `&`.
pub fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = semicolon_after(rest)
            .and_then(|semi| entity(&rest[1..1 + semi]).map(|ch| (ch, semi + 2)));
        match decoded {
            Some((ch, length)) => {
                out.push(ch);
                rest = &rest[length..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where the `;` that ends the entity starting at `entity`'s `&` is,
/// counted from just after the `&`; `None` unless within [`MAX_ENTITY`].
fn semicolon_after(entity: &str) -> Option<usize> {
    let window = &entity.as_bytes()[1..entity.len().min(2 + MAX_ENTITY)];
    #[cfg(test)]
    SCANNED.with(|scanned| scanned.set(scanned.get() + window.len()));
    window.iter().position(|byte| *byte == b';')
}

fn entity(name: &str) -> Option<char> {
    if let Some(number) = name.strip_prefix('#') {
        let code = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        return char::from_u32(code).filter(|c| *c != '\0');
    }
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "copy" => '©',
        "reg" => '®',
        "trade" => '™',
        "mdash" => '—',
        "ndash" => '–',
        "hellip" => '…',
        "laquo" => '«',
        "raquo" => '»',
        "lsquo" => '‘',
        "rsquo" => '’',
        "ldquo" => '“',
        "rdquo" => '”',
        "bull" => '•',
        "middot" => '·',
        "euro" => '€',
        "deg" => '°',
        "times" => '×',
        _ => return None,
    })
}

/// Runs of spaces within a line become one space.
fn collapse(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Collapsed lines without blank ones.
fn tidy(text: &str) -> String {
    text.lines()
        .map(collapse)
        .filter(|line| !line.is_empty() && line != "-")
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_becomes_its_text() {
        let html = r#"<!DOCTYPE html>
<html><head><title>The  Hearth &amp; Home</title>
<style>body { color: red; }</style>
<script type="text/javascript">if (a < b) { alert("<p>no</p>"); }</script></head>
<body><!-- a comment <p>hidden</p> -->
<h1>Welcome</h1><p>First   paragraph with <a href="/x?a=1&b=2">a link</a>
and <b>bold</b>&nbsp;text.</p>
<ul><li>one</li><li>two &lt;three&gt;</li></ul>
<p>Caf&eacute; &#233;t&#xE9; &#8212; done</p></body></html>"#;
        assert_eq!(title(html).as_deref(), Some("The Hearth & Home"));
        assert_eq!(
            readable(html),
            "Welcome\nFirst paragraph with a link\nand bold text.\n- one\n- two <three>\nCaf&eacute; été — done"
        );
    }

    #[test]
    fn stray_angle_brackets_and_unclosed_tags_do_not_lose_text() {
        assert_eq!(readable("1 < 2 and 3 > 2"), "1 < 2 and 3 > 2");
        assert_eq!(readable("<p>open <script>never closed"), "open");
        assert_eq!(readable("<div title='a > b'>quoted</div>"), "quoted");
        assert_eq!(readable("a <b <i>c</i>"), "a <b c");
    }

    /// Counts the bytes `tag_end` looks at, by reading a page in two sizes:
    /// the work must grow with the page, not with its square.
    #[test]
    fn a_page_of_stray_angle_brackets_is_read_in_linear_time() {
        fn page(n: usize) -> String {
            "a < b \" c ' <".repeat(n)
        }
        let scanned = |text: &str| {
            SCANNED.with(|scanned| scanned.set(0));
            let read = readable(text);
            (read, SCANNED.with(std::cell::Cell::get))
        };
        let (small, small_work) = scanned(&page(1_000));
        assert_eq!(small.matches('<').count(), 2_000, "every stray `<` stays");
        let (big, big_work) = scanned(&page(20_000));
        assert_eq!(big.matches('<').count(), 40_000);
        let size = page(20_000).len();
        assert!(
            big_work <= 4 * size,
            "{big_work} bytes looked at for {size}"
        );
        assert!(
            big_work <= 25 * small_work,
            "20 times the page, {big_work} against {small_work}"
        );
    }

    /// A page of `&` with no `;` (and `&` before long runs of text) is
    /// decoded looking at a few bytes per `&`, not at the rest of the page
    /// for each.
    #[test]
    fn a_page_of_ampersands_is_decoded_in_linear_time() {
        let scanned = |text: &str| {
            SCANNED.with(|scanned| scanned.set(0));
            let read = readable(text);
            (read, SCANNED.with(std::cell::Cell::get))
        };
        for page in [
            "&".repeat(200_000),
            "&amp".repeat(50_000),
            format!("{}{}", "&x ".repeat(50_000), "y".repeat(100_000)),
        ] {
            let (read, work) = scanned(&page);
            assert_eq!(
                read.matches('&').count(),
                page.matches('&').count(),
                "every `&` stays"
            );
            assert!(
                work <= (MAX_ENTITY + 1) * page.len(),
                "{work} bytes looked at for {}",
                page.len()
            );
        }
    }

    #[test]
    fn only_the_first_megabytes_of_a_page_are_reduced() {
        let page = format!("<p>kept</p>{}<p>dropped</p>", " ".repeat(MAX_HTML_BYTES));
        assert_eq!(readable(&page), "kept");
        let late = format!("{}<title>late</title>", " ".repeat(MAX_HTML_BYTES));
        assert_eq!(title(&late), None);
    }

    #[test]
    fn entities_decode_and_unknown_ones_stay() {
        assert_eq!(
            decode_entities("a &amp; b &lt;&gt; &#65;&#x42; &bogus; & x"),
            "a & b <> AB &bogus; & x"
        );
        assert_eq!(decode_entities("&#0; &#x110000;"), "&#0; &#x110000;");
    }
}
