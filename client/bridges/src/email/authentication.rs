//! Whether a mail's `From` is who it claims to be (pure): read from the
//! `Authentication-Results` header (RFC 8601) that the user's own
//! receiving server added, named by its authserv-id in `[email]
//! trusted_authserv_id`. Anyone can write such a header into a mail they
//! send, so headers of any other authserv-id are ignored, and of the
//! trusted one only the topmost counts: a receiving server adds its header
//! above those the mail came with.
//!
//! A sender is verified when that header says `dmarc=pass` for the From
//! domain, or `dkim=pass` with a signing domain (`header.d`) aligned with
//! it, or `spf=pass` with an envelope sender (`smtp.mailfrom`) aligned
//! with it. Aligned is relaxed, as DMARC's default: the same domain, or
//! one a parent of the other.

/// What the trusted server's header says of a mail's sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A passing, aligned result: the method that passed (`dmarc`, `dkim`, `spf`).
    Verified(&'static str),
    /// Not verified, in words for the note that records the refusal.
    Unverified(String),
}

/// One `method=result` of a header with its properties (`header.d=…`).
#[derive(Debug, Default)]
struct MethodResult {
    method: String,
    result: String,
    properties: Vec<(String, String)>,
}

impl MethodResult {
    fn property(&self, name: &str) -> Option<&str> {
        self.properties
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// Judges a mail from `from` (its address) by its `Authentication-Results`
/// headers, `headers` in the order they appear in the mail (topmost
/// first), against the server named `trusted`.
pub fn verdict<'a>(
    headers: impl IntoIterator<Item = &'a str>,
    trusted: &str,
    from: &str,
) -> Verdict {
    let Some(from_domain) = from
        .rsplit_once('@')
        .map(|(_, domain)| domain.to_lowercase())
    else {
        return Verdict::Unverified(format!("its From `{from}` is not an address"));
    };
    let Some(results) = headers
        .into_iter()
        .map(without_comments)
        .find_map(|header| results_of(&header, trusted))
    else {
        return Verdict::Unverified(format!("{trusted} added no Authentication-Results to it"));
    };
    for result in &results {
        if !result.result.eq_ignore_ascii_case("pass") {
            continue;
        }
        let method = result.method.to_lowercase();
        let aligned_property = |property: &str| {
            result
                .property(property)
                .map(|value| value.rsplit('@').next().unwrap_or(value))
                .is_some_and(|domain| aligned(domain, &from_domain))
        };
        match method.as_str() {
            // DMARC checked the From domain itself; when the header says
            // which, it must be this mail's.
            "dmarc"
                if result.property("header.from").is_none() || aligned_property("header.from") =>
            {
                return Verdict::Verified("dmarc")
            }
            "dkim" if aligned_property("header.d") || aligned_property("header.i") => {
                return Verdict::Verified("dkim")
            }
            "spf" if aligned_property("smtp.mailfrom") => return Verdict::Verified("spf"),
            _ => {}
        }
    }
    let said: Vec<String> = results
        .iter()
        .map(|result| format!("{}={}", result.method, result.result))
        .collect();
    let said = if said.is_empty() {
        "no results".to_string()
    } else {
        said.join(", ")
    };
    Verdict::Unverified(format!(
        "{trusted} found no passing DMARC, or DKIM or SPF aligned with {from_domain} ({said})"
    ))
}

/// Relaxed alignment: the same domain, or one a parent of the other.
fn aligned(domain: &str, from_domain: &str) -> bool {
    let domain = domain.trim().trim_end_matches('.').to_lowercase();
    let from_domain = from_domain.trim_end_matches('.');
    if domain.is_empty() {
        return false;
    }
    let parent = |child: &str, parent: &str| {
        child
            .strip_suffix(parent)
            .is_some_and(|rest| rest.ends_with('.'))
            // A public suffix alone (`com`) aligns nothing.
            && parent.contains('.')
    };
    domain == from_domain || parent(from_domain, &domain) || parent(&domain, from_domain)
}

/// The header's text without its `(comments)` (nested ones too), outside
/// quoted strings.
fn without_comments(header: &str) -> String {
    let mut text = String::with_capacity(header.len());
    let mut depth = 0usize;
    let mut quoted = false;
    let mut escaped = false;
    for c in header.chars() {
        if escaped {
            escaped = false;
            if depth == 0 {
                text.push(c);
            }
            continue;
        }
        match c {
            '\\' => {
                escaped = true;
                if depth == 0 {
                    text.push(c);
                }
            }
            '"' if depth == 0 => {
                quoted = !quoted;
                text.push(c);
            }
            '(' if !quoted => depth += 1,
            ')' if !quoted && depth > 0 => depth -= 1,
            _ if depth == 0 => text.push(c),
            _ => {}
        }
    }
    text
}

/// The results of one header, when its authserv-id is `trusted`.
fn results_of(header: &str, trusted: &str) -> Option<Vec<MethodResult>> {
    let mut statements = header.split(';');
    // `authserv-id [version]`
    let id = statements.next()?.split_whitespace().next()?;
    if !id.eq_ignore_ascii_case(trusted) {
        return None;
    }
    let mut results = Vec::new();
    for statement in statements {
        let mut words = statement.split_whitespace();
        let Some((method, result)) = words.next().and_then(|word| word.split_once('=')) else {
            // `none`, or nothing.
            continue;
        };
        // `dkim/1=pass`: the method's version is not needed.
        let method = method.split('/').next().unwrap_or(method).trim();
        let properties = words
            .filter_map(|word| word.split_once('='))
            .map(|(key, value)| (key.to_string(), value.trim_matches('"').to_string()))
            .collect();
        results.push(MethodResult {
            method: method.to_string(),
            result: result.to_string(),
            properties,
        });
    }
    Some(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRUSTED: &str = "mx.provider.example";

    fn judge(headers: &[&str], from: &str) -> Verdict {
        verdict(headers.iter().copied(), TRUSTED, from)
    }

    #[test]
    fn a_dmarc_pass_from_the_trusted_server_verifies() {
        let header = "mx.provider.example; dkim=pass (2048-bit key) header.d=ada.example \
                      header.s=s1; spf=pass smtp.mailfrom=ada@ada.example; \
                      dmarc=pass (p=REJECT) header.from=ada.example";
        assert_eq!(
            judge(&[header], "ada@ada.example"),
            Verdict::Verified("dkim")
        );
        let dmarc = "mx.provider.example 1; dmarc=pass header.from=ada.example";
        assert_eq!(
            judge(&[dmarc], "Ada@ADA.example"),
            Verdict::Verified("dmarc")
        );
    }

    #[test]
    fn dkim_and_spf_count_only_when_aligned_with_the_from_domain() {
        let other = "mx.provider.example; dkim=pass header.d=mallory.example; \
                     spf=pass smtp.mailfrom=bounce@mallory.example";
        assert!(matches!(
            judge(&[other], "ada@ada.example"),
            Verdict::Unverified(_)
        ));
        let subdomain = "mx.provider.example; spf=pass smtp.mailfrom=bounce@mail.ada.example";
        assert_eq!(
            judge(&[subdomain], "ada@ada.example"),
            Verdict::Verified("spf")
        );
        let suffix = "mx.provider.example; dkim=pass header.d=example";
        assert!(matches!(
            judge(&[suffix], "ada@ada.example"),
            Verdict::Unverified(_)
        ));
        let lookalike = "mx.provider.example; dkim=pass header.d=evilada.example";
        assert!(matches!(
            judge(&[lookalike], "ada@ada.example"),
            Verdict::Unverified(_)
        ));
    }

    #[test]
    fn headers_of_other_servers_and_failures_are_not_believed() {
        let forged = "mx.provider.example.evil; dmarc=pass header.from=ada.example";
        let Verdict::Unverified(why) = judge(&[forged], "ada@ada.example") else {
            panic!("a header of another authserv-id verified a sender");
        };
        assert!(why.contains("added no Authentication-Results"), "{why}");
        let failed = "mx.provider.example; dmarc=fail header.from=ada.example; dkim=none";
        let Verdict::Unverified(why) = judge(&[failed], "ada@ada.example") else {
            panic!("a failure verified a sender");
        };
        assert!(why.contains("dmarc=fail, dkim=none"), "{why}");
        // DMARC for another domain than the From's.
        let elsewhere = "mx.provider.example; dmarc=pass header.from=mallory.example";
        assert!(matches!(
            judge(&[elsewhere], "ada@ada.example"),
            Verdict::Unverified(_)
        ));
    }

    #[test]
    fn only_the_topmost_header_of_the_trusted_server_counts() {
        // The server's own header says fail; a pass the sender wrote in
        // below it, with the same authserv-id, is not believed.
        let added = "mx.provider.example; dmarc=fail header.from=ada.example";
        let sent = "mx.provider.example; dmarc=pass header.from=ada.example";
        assert!(matches!(
            judge(&[added, sent], "ada@ada.example"),
            Verdict::Unverified(_)
        ));
    }

    #[test]
    fn comments_do_not_hide_or_fake_results() {
        let header =
            "mx.provider.example (dmarc=pass); dmarc=fail (not dmarc=pass) header.from=ada.example";
        assert!(matches!(
            judge(&[header], "ada@ada.example"),
            Verdict::Unverified(_)
        ));
        assert!(matches!(
            judge(&["mx.provider.example; dmarc=pass"], "nobody"),
            Verdict::Unverified(_)
        ));
    }
}
