//! `[search]`: the provider `web_search` asks (`tools/web_search.rs` in
//! hearth-daemon runs the searches).

use reqwest::Url;
use serde::Deserialize;

/// The Brave Search API's web search endpoint.
pub const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";

/// Where the Brave key is found.
pub const BRAVE_KEY_ENV: &str = "BRAVE_SEARCH_API_KEY";

/// What a Brave query costs, in USD, unless `price_per_query_usd` says
/// otherwise: Brave's Search API page (<https://brave.com/search/api/>)
/// lists its paid web search plan at $5 per 1,000 requests. A free plan's
/// owner sets 0.
pub const BRAVE_PRICE_PER_QUERY_USD: f64 = 5.0 / 1000.0;

/// `[search]`: the provider `web_search` asks. Without the table there is
/// no `web_search`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SearchConfig {
    pub provider: SearchProvider,
    /// SearXNG: the instance's address (required). Brave: the API's
    /// address, `BRAVE_URL` unless set (a test's fake).
    #[serde(default)]
    pub url: Option<String>,
    /// Results per search, 1 to 20.
    #[serde(default = "default_results")]
    pub results: usize,
    /// What one search costs, in USD; Brave's default is
    /// `BRAVE_PRICE_PER_QUERY_USD`, SearXNG's nothing.
    #[serde(default)]
    pub price_per_query_usd: Option<f64>,
    /// Seconds a search may take.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SearchProvider {
    Searxng,
    Brave,
}

fn default_results() -> usize {
    5
}

fn default_timeout() -> u64 {
    20
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SearchConfigError {
    #[error("[search] provider = \"searxng\" needs `url`, the instance's address (e.g. \"http://127.0.0.1:8888\")")]
    NoUrl,
    #[error("[search] url `{0}` is not an http(s) URL")]
    BadUrl(String),
    #[error("[search] results must be 1 to 20, not {0}")]
    Results(usize),
}

impl SearchConfig {
    /// Refuses a table that cannot work, saying what to change.
    pub fn check(&self) -> Result<(), SearchConfigError> {
        if self.provider == SearchProvider::Searxng && self.url.is_none() {
            return Err(SearchConfigError::NoUrl);
        }
        if let Some(url) = &self.url {
            let parsed = Url::parse(url).map_err(|_| SearchConfigError::BadUrl(url.clone()))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return Err(SearchConfigError::BadUrl(url.clone()));
            }
        }
        if !(1..=20).contains(&self.results) {
            return Err(SearchConfigError::Results(self.results));
        }
        Ok(())
    }

    /// What one search costs, when the provider prices it.
    pub fn price(&self) -> Option<f64> {
        match self.provider {
            SearchProvider::Brave => self.price_per_query_usd.or(Some(BRAVE_PRICE_PER_QUERY_USD)),
            SearchProvider::Searxng => self.price_per_query_usd,
        }
    }
}
