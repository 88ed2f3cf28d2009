//! How Telegram reads a message sent with `parse_mode: "HTML"`, for the
//! fake to accept or refuse it as Telegram would.

/// The text Telegram shows for `parse_mode: "HTML"`, read as Telegram reads
/// it, or why it cannot be ("can't parse entities: …"): only the Bot API's
/// tags (b, strong, i, em, u, ins, s, strike, del, code, pre, a with an
/// href, blockquote, tg-spoiler, span class="tg-spoiler"), each closed in
/// order; nothing inside code or pre but a pre's one code; no quote in a
/// quote nor link in a link; the entities &lt; &gt; &amp; &quot; and
/// numeric ones.
pub fn read_html(html: &str) -> Result<String, String> {
    let mut text = String::with_capacity(html.len());
    let mut open: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(c) = rest.chars().next() {
        let at = html.len() - rest.len();
        match c {
            '<' => {
                let end = rest
                    .find('>')
                    .ok_or_else(|| format!("Unclosed start tag at byte offset {at}"))?;
                let tag = &rest[1..end];
                rest = &rest[end + 1..];
                if let Some(name) = tag.strip_prefix('/') {
                    let name = name.trim().to_ascii_lowercase();
                    match open.pop() {
                        Some(expected) if expected == name => {}
                        Some(expected) => {
                            return Err(format!(
                                "Unmatched end tag at byte offset {at}, expected \"</{expected}>\", found \"</{name}>\""
                            ))
                        }
                        None => {
                            return Err(format!(
                                "Unexpected end tag at byte offset {at}"
                            ))
                        }
                    }
                    continue;
                }
                let name = tag
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase();
                let attributes = tag[tag.len().min(name.len())..].trim();
                let known = [
                    "b",
                    "strong",
                    "i",
                    "em",
                    "u",
                    "ins",
                    "s",
                    "strike",
                    "del",
                    "code",
                    "pre",
                    "a",
                    "blockquote",
                    "tg-spoiler",
                    "span",
                ];
                if !known.contains(&name.as_str()) {
                    return Err(format!(
                        "Unsupported start tag \"{name}\" at byte offset {at}"
                    ));
                }
                if name == "a" && !attributes.starts_with("href=\"") {
                    return Err(format!("Tag \"a\" must have an href at byte offset {at}"));
                }
                if name == "span" && attributes != "class=\"tg-spoiler\"" {
                    return Err(format!(
                        "Tag \"span\" must have class \"tg-spoiler\" at byte offset {at}"
                    ));
                }
                let inside_code = open.iter().any(|tag| tag == "code");
                let inside_pre = open.last().is_some_and(|tag| tag == "pre");
                let pre_code = name == "code" && inside_pre;
                if inside_code || (open.iter().any(|tag| tag == "pre") && !pre_code) {
                    return Err(format!(
                        "Can't use tag \"{name}\" inside code or pre at byte offset {at}"
                    ));
                }
                if (name == "blockquote" || name == "a" || name == "pre") && open.contains(&name) {
                    return Err(format!(
                        "Tag \"{name}\" can't be nested at byte offset {at}"
                    ));
                }
                if (name == "code" || name == "pre") && open.iter().any(|tag| tag == "a") {
                    return Err(format!(
                        "Can't use tag \"{name}\" inside a link at byte offset {at}"
                    ));
                }
                open.push(name);
            }
            '&' => {
                let end = rest.find(';').filter(|&end| end <= 10);
                let entity = end.map(|end| &rest[1..end]);
                let decoded = match entity {
                    Some("lt") => Some('<'),
                    Some("gt") => Some('>'),
                    Some("amp") => Some('&'),
                    Some("quot") => Some('"'),
                    Some(number) if number.starts_with('#') => {
                        let digits = &number[1..];
                        let value = match digits.strip_prefix(['x', 'X']) {
                            Some(hex) => u32::from_str_radix(hex, 16).ok(),
                            None => digits.parse().ok(),
                        };
                        value.and_then(char::from_u32)
                    }
                    _ => None,
                };
                match (decoded, end) {
                    (Some(c), Some(end)) => {
                        text.push(c);
                        rest = &rest[end + 1..];
                    }
                    // A lone `&` is shown as it is.
                    _ => {
                        text.push('&');
                        rest = &rest[1..];
                    }
                }
            }
            _ => {
                text.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    match open.first() {
        Some(tag) => Err(format!(
            "Can't find end tag corresponding to start tag \"{tag}\""
        )),
        None => Ok(text),
    }
}

#[cfg(test)]
mod tests {
    use super::read_html;

    #[test]
    fn html_is_read_as_telegram_reads_it() {
        assert_eq!(
            read_html("<b>a</b> &lt;&amp;&gt; &#65; <a href=\"https://e.org\">x</a> & y").unwrap(),
            "a <&> A x & y"
        );
        assert_eq!(
            read_html("<pre><code class=\"language-rust\">a &lt; b</code></pre><blockquote><i>q</i></blockquote>")
                .unwrap(),
            "a < bq"
        );
        for bad in [
            "<x>unknown</x>",
            "<b>unclosed",
            "<b><i>crossed</b></i>",
            "</b>",
            "a < b",
            "<blockquote><blockquote>q</blockquote></blockquote>",
            "<code><b>x</b></code>",
            "<a href=\"https://e.org\"><code>x</code></a>",
            "<a>no href</a>",
        ] {
            assert!(read_html(bad).is_err(), "{bad} should be refused");
        }
    }
}
