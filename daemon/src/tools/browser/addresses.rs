//! Where the browser may go: `web_fetch`'s rules (`web.rs`, reused, not
//! copied) applied to every request Chromium makes, the page's own among
//! them: http and https only, no loopback, private, link-local or other
//! non-public address unless `[tools] allow_private_network` allows them
//! all, or `[tools.browser] allow_private` names the host (or the host and
//! port). Inline data (`data:`, `blob:`, `about:`) reaches no address.
//!
//! A name is refused when any address it resolves to is not public.
//! Chromium would resolve the name again when it connects; it connects
//! through the gate (`gate.rs`) instead, which resolves the name itself and
//! connects only to an address these rules checked ([`Addresses::resolve`]),
//! so a name whose answers change in between (DNS rebinding), and a
//! connection the request rules never see (a WebSocket), reach nothing
//! unchecked.

use crate::tools::web::{check_name, check_url, non_public, FetchError};
use reqwest::Url;
use std::net::{IpAddr, SocketAddr};

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
        let Some(host) = url.host_str() else {
            return false;
        };
        self.names_host(host, url.port_or_known_default())
    }

    fn names_host(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = host.to_ascii_lowercase();
        self.allowed.iter().any(|allowed| {
            *allowed == host
                || port.is_some_and(|port| {
                    *allowed == format!("{host}:{port}") || *allowed == format!("[{host}]:{port}")
                })
        })
    }

    /// Where a connection to `host` (a name or an address) and `port` may
    /// go (the browser's gate, `gate.rs`): every address the name resolves
    /// to, each public unless the owner allows it. The refusal in words, or
    /// none for a name that does not resolve (nothing was refused: Chromium
    /// asks for its own services' names too, and they fail as they would
    /// without the gate).
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Option<String>> {
        let found: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(address) => vec![SocketAddr::new(address, port)],
            Err(_) => tokio::net::lookup_host((host, port))
                .await
                .map_err(|_| None)?
                .collect(),
        };
        if found.is_empty() {
            return Err(None);
        }
        if self.all_private || self.names_host(host, Some(port)) {
            return Ok(found);
        }
        match found
            .iter()
            .find_map(|address| non_public(address.ip()).map(|kind| (address.ip(), kind)))
        {
            // Said as `web_fetch` and the request rules say it.
            Some((address, kind)) => Err(Some(self.explain(FetchError::Private {
                target: format!("{host} ({address})"),
                kind,
            }))),
            None => Ok(found),
        }
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
