//! The login's pure parts: random codes and tokens, their digests, the
//! session cookie, the Origin rule and the login rate limit.

use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::io::Read;
use std::time::{Duration, Instant};

/// The session cookie's name.
pub const COOKIE: &str = "hearth_session";

/// Failed logins allowed per [`LOGIN_WINDOW`]; past it every login is
/// refused until the window has moved on.
pub const LOGIN_FAILURES: usize = 5;
pub const LOGIN_WINDOW: Duration = Duration::from_secs(60);

/// `bytes` random bytes from the kernel, as lowercase hex.
pub fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buffer = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buffer)?;
    Ok(hex(&buffer))
}

/// What the database keeps of a code or a token: its SHA-256, so a copy of
/// the database logs no one in.
pub fn digest(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The value of cookie `name` in a `Cookie` header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (key, value) = pair.trim().split_once('=')?;
        (key == name).then_some(value)
    })
}

/// The `Set-Cookie` value of a new session: HttpOnly (no script reads it),
/// SameSite=Strict (no other site's page sends it), Secure when the page
/// was reached over https (a proxy says so in `X-Forwarded-Proto`).
pub fn session_cookie(token: &str, secure: bool, max_age: Duration) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        max_age.as_secs()
    )
}

/// Whether an `Origin` header names the same host and port as the `Host`
/// header: the page's own origin. `null`, a missing host or any other
/// origin is not.
pub fn same_origin(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    let known_scheme = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    known_scheme
        && !host.is_empty()
        && !authority.contains('/')
        && authority.eq_ignore_ascii_case(host)
}

/// Counts failed logins over a sliding window. Failures are counted for
/// everyone at once: behind a proxy every browser has the same address, and
/// a code is guessed no faster from many addresses than from one.
#[derive(Debug, Default)]
pub struct LoginLimiter {
    failures: VecDeque<Instant>,
}

impl LoginLimiter {
    /// Whether a login may be tried at `now`.
    pub fn allows(&mut self, now: Instant) -> bool {
        while self
            .failures
            .front()
            .is_some_and(|&at| now.duration_since(at) >= LOGIN_WINDOW)
        {
            self.failures.pop_front();
        }
        self.failures.len() < LOGIN_FAILURES
    }

    /// Counts a failed login.
    pub fn failed(&mut self, now: Instant) {
        self.failures.push_back(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_must_be_the_pages_own() {
        assert!(same_origin("http://127.0.0.1:8787", "127.0.0.1:8787"));
        assert!(same_origin("https://Hearth.example", "hearth.example"));
        assert!(!same_origin("http://127.0.0.1:9999", "127.0.0.1:8787"));
        assert!(!same_origin("http://evil.example", "127.0.0.1:8787"));
        assert!(!same_origin("null", "127.0.0.1:8787"));
        assert!(!same_origin("http://127.0.0.1:8787", ""));
        assert!(!same_origin("file://127.0.0.1:8787", "127.0.0.1:8787"));
        assert!(!same_origin("http://127.0.0.1:8787/x", "127.0.0.1:8787"));
    }

    #[test]
    fn the_session_cookie_is_read_by_name() {
        let header = "a=1; hearth_session=abc; b=2";
        assert_eq!(cookie(header, COOKIE), Some("abc"));
        assert_eq!(cookie("xhearth_session=abc", COOKIE), None);
        assert_eq!(cookie("", COOKIE), None);
    }

    #[test]
    fn the_cookie_is_http_only_and_strict() {
        let set = session_cookie("t", false, Duration::from_secs(60));
        assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict"));
        assert!(!set.contains("Secure"));
        assert!(session_cookie("t", true, Duration::from_secs(60)).ends_with("; Secure"));
    }

    #[test]
    fn logins_stop_after_too_many_failures_until_the_window_moves() {
        let mut limiter = LoginLimiter::default();
        let start = Instant::now();
        for _ in 0..LOGIN_FAILURES {
            assert!(limiter.allows(start));
            limiter.failed(start);
        }
        assert!(!limiter.allows(start));
        assert!(!limiter.allows(start + LOGIN_WINDOW - Duration::from_millis(1)));
        assert!(limiter.allows(start + LOGIN_WINDOW));
    }

    #[test]
    fn digests_differ_from_their_secret() {
        let token = random_hex(32).unwrap();
        assert_eq!(token.len(), 64);
        assert_ne!(digest(&token), token);
        assert_eq!(digest(&token), digest(&token));
    }
}
