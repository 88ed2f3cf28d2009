//! Where the browser may go: `web_fetch`'s rules (`web.rs`, reused, not
//! copied) applied to every request Chromium makes, the page's own among
//! them: http and https only, no loopback, private, link-local or other
//! non-public address unless `[tools] allow_private_network` allows them
//! all, or `[tools.browser] allow_private` names the host (or the host and
//! port). Inline data (`data:`, `blob:`, `about:`) reaches no address.
//!
//! A name is refused when any address it resolves to is not public.
//! Chromium resolves the name again when it connects, so a name whose
//! answers change between the two (DNS rebinding) is not caught here; what
//! is caught is every address written in a URL and every name that points
//! at the owner's network when asked.

use crate::tools::web::{check_name, check_url, FetchError};
use reqwest::Url;

/// The address rules of one agent's browser.
pub struct Addresses {
    /// `[tools] allow_private_network`: every address is allowed.
    all_private: bool,
    /// `[tools.browser] allow_private`, lowercased: hosts, or hosts and ports.
    allowed: Vec<String>,
}

impl Addresses {
    pub fn new(all_private: bool, allowed: &[String]) -> Addresses {
        Addresses {
            all_private,
            allowed: allowed
                .iter()
                .map(|a| a.trim().to_ascii_lowercase())
                .collect(),
        }
    }

    /// Whether the browser may request `url`; the refusal in words.
    pub async fn check(&self, url: &str) -> Result<(), String> {
        let parsed = Url::parse(url.trim())
            .map_err(|err| FetchError::BadUrl(url.to_string(), err.to_string()).to_string())?;
        if matches!(parsed.scheme(), "data" | "blob" | "about") {
            return Ok(());
        }
        if self.names(&parsed) {
            return check_url(&parsed, true).map_err(|err| err.to_string());
        }
        check_url(&parsed, self.all_private).map_err(|err| self.explain(err))?;
        match parsed.domain() {
            Some(name) if !self.all_private => {
                check_name(name).await.map_err(|err| self.explain(err))
            }
            _ => Ok(()),
        }
    }

    /// Whether `[tools.browser] allow_private` names the URL's host, alone
    /// or with its port.
    fn names(&self, url: &Url) -> bool {
        let Some(host) = url.host_str().map(str::to_ascii_lowercase) else {
            return false;
        };
        let port = url.port_or_known_default();
        self.allowed.iter().any(|allowed| {
            *allowed == host || port.is_some_and(|port| *allowed == format!("{host}:{port}"))
        })
    }

    fn explain(&self, err: FetchError) -> String {
        match err {
            FetchError::Private { .. } => {
                format!("{err}, or name this host in [tools.browser] allow_private")
            }
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_and_private_addresses_are_refused_unless_named() {
        let rules = Addresses::new(false, &["127.0.0.1:8080".to_string(), "10.0.0.1".into()]);
        assert!(rules.check("http://127.0.0.1:8080/a").await.is_ok());
        assert!(rules.check("http://10.0.0.1:9/").await.is_ok());
        let refused = rules.check("http://127.0.0.1:8081/").await.unwrap_err();
        assert!(refused.contains("loopback"), "{refused}");
        assert!(refused.contains("allow_private"), "{refused}");
        assert!(rules.check("http://[::1]/").await.is_err());
        assert!(rules.check("http://169.254.169.254/latest").await.is_err());
        assert!(rules.check("http://localhost:8080/").await.is_err());
        assert!(rules.check("file:///etc/passwd").await.is_err());
        assert!(rules.check("data:text/html,hi").await.is_ok());
        assert!(rules.check("about:blank").await.is_ok());
    }

    #[tokio::test]
    async fn allowing_the_private_network_allows_every_address_but_not_other_schemes() {
        let rules = Addresses::new(true, &[]);
        assert!(rules.check("http://127.0.0.1:1/").await.is_ok());
        assert!(rules.check("http://localhost/").await.is_ok());
        assert!(rules.check("file:///etc/passwd").await.is_err());
        assert!(rules.check("chrome://settings").await.is_err());
    }
}
