//! The login's pure parts: random codes, tokens and keys, their digests,
//! the session cookie, the session key's place in the WebSocket upgrade,
//! the Origin rule and the login rate limit.

use crate::server::preauth;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// The session cookie's name.
pub const COOKIE: &str = "hearth_session";

/// The WebSocket subprotocol the page asks for, and the daemon answers with.
pub const SUBPROTOCOL: &str = "hearth";

/// The prefix of the second subprotocol the page offers, whose rest is the
/// session's key: `Sec-WebSocket-Protocol: hearth, hearth-key.<key>`. A
/// header, so the key is sent only by a script of the page's own origin
/// (which holds it), never by the browser on its own as a cookie is.
pub const KEY_PROTOCOL_PREFIX: &str = "hearth-key.";

/// Failed logins allowed per address per [`LOGIN_WINDOW`]; past it that
/// address's logins are refused until the window has moved on.
pub const LOGIN_FAILURES: usize = 5;
pub const LOGIN_WINDOW: Duration = Duration::from_secs(60);
/// Addresses whose failures are remembered at once; past it the address
/// that failed least recently is forgotten.
pub const LOGIN_ADDRESSES: usize = 1024;

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

/// The session key among the subprotocols a WebSocket upgrade offers
/// (every `Sec-WebSocket-Protocol` header's comma-separated list), and
/// whether it offered [`SUBPROTOCOL`].
pub fn offered_key<'a>(headers: impl Iterator<Item = &'a str>) -> (Option<&'a str>, bool) {
    let mut key = None;
    let mut hearth = false;
    for offered in headers.flat_map(|header| header.split(',')).map(str::trim) {
        if offered == SUBPROTOCOL {
            hearth = true;
        } else if let Some(rest) = offered.strip_prefix(KEY_PROTOCOL_PREFIX) {
            key = Some(rest);
        }
    }
    (key, hearth)
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

/// Counts failed logins per address (an IPv6 address by its /64) over a
/// sliding window, so that a stranger's failures never refuse the owner's
/// code from another address. Guessing stays hopeless either way: a code
/// is 128 random bits, works once and for ten minutes, and each address
/// may fail `LOGIN_FAILURES` times a minute. Behind a proxy every
/// browser has the proxy's address and shares its count.
#[derive(Debug, Default)]
pub struct LoginLimiter {
    failures: HashMap<IpAddr, VecDeque<Instant>>,
}

impl LoginLimiter {
    /// Whether a login from `address` may be tried at `now`.
    pub fn allows(&mut self, address: IpAddr, now: Instant) -> bool {
        let address = preauth::counted_as(address);
        let Some(failures) = self.failures.get_mut(&address) else {
            return true;
        };
        forget_before(failures, now);
        if failures.is_empty() {
            self.failures.remove(&address);
            return true;
        }
        failures.len() < LOGIN_FAILURES
    }

    /// Counts a failed login from `address`.
    pub fn failed(&mut self, address: IpAddr, now: Instant) {
        let address = preauth::counted_as(address);
        self.failures.entry(address).or_default().push_back(now);
        if self.failures.len() > LOGIN_ADDRESSES {
            self.failures.retain(|_, failures| {
                forget_before(failures, now);
                !failures.is_empty()
            });
        }
        while self.failures.len() > LOGIN_ADDRESSES {
            let stalest = self
                .failures
                .iter()
                .filter(|(at, _)| **at != address)
                .min_by_key(|(_, failures)| failures.back().copied())
                .map(|(at, _)| *at);
            match stalest {
                Some(stalest) => self.failures.remove(&stalest),
                None => break,
            };
        }
    }

    /// How many addresses' failures are remembered.
    #[cfg(test)]
    fn addresses(&self) -> usize {
        self.failures.len()
    }
}

/// Drops the failures that the window has moved past.
fn forget_before(failures: &mut VecDeque<Instant>, now: Instant) {
    while failures
        .front()
        .is_some_and(|&at| now.duration_since(at) >= LOGIN_WINDOW)
    {
        failures.pop_front();
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
        let stranger: IpAddr = "192.0.2.7".parse().unwrap();
        let start = Instant::now();
        for _ in 0..LOGIN_FAILURES {
            assert!(limiter.allows(stranger, start));
            limiter.failed(stranger, start);
        }
        assert!(!limiter.allows(stranger, start));
        let almost = start + LOGIN_WINDOW - Duration::from_millis(1);
        assert!(!limiter.allows(stranger, almost));
        assert!(limiter.allows(stranger, start + LOGIN_WINDOW));
    }

    #[test]
    fn one_addresss_failures_never_refuse_another() {
        let mut limiter = LoginLimiter::default();
        let start = Instant::now();
        let stranger: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        for _ in 0..LOGIN_FAILURES {
            limiter.failed(stranger, start);
        }
        // Another address in the same /64 is the same host.
        assert!(!limiter.allows("2001:db8:1:2::99".parse().unwrap(), start));
        assert!(limiter.allows("2001:db8:1:3::1".parse().unwrap(), start));
        assert!(limiter.allows("127.0.0.1".parse().unwrap(), start));
    }

    #[test]
    fn the_addresses_remembered_are_bounded_and_the_newest_kept() {
        let mut limiter = LoginLimiter::default();
        let start = Instant::now();
        let guesser: IpAddr = "198.51.100.1".parse().unwrap();
        for _ in 0..LOGIN_FAILURES {
            limiter.failed(guesser, start);
        }
        for n in 0..(LOGIN_ADDRESSES as u32 * 2) {
            let address = IpAddr::from((0x0a00_0000 + n).to_be_bytes());
            limiter.failed(address, start + Duration::from_millis(u64::from(n) + 1));
        }
        assert_eq!(limiter.addresses(), LOGIN_ADDRESSES);
        let last = IpAddr::from((0x0a00_0000 + LOGIN_ADDRESSES as u32 * 2 - 1).to_be_bytes());
        limiter.failed(last, start + Duration::from_secs(1));
        assert!(limiter.failures.contains_key(&last));
    }

    #[test]
    fn the_key_is_read_from_the_offered_subprotocols() {
        let (key, hearth) = offered_key(["hearth, hearth-key.abc"].into_iter());
        assert_eq!((key, hearth), (Some("abc"), true));
        let (key, hearth) = offered_key(["hearth", "hearth-key.abc"].into_iter());
        assert_eq!((key, hearth), (Some("abc"), true));
        assert_eq!(offered_key(["chat"].into_iter()), (None, false));
        assert_eq!(offered_key(std::iter::empty()), (None, false));
    }

    #[test]
    fn digests_differ_from_their_secret() {
        let token = random_hex(32).unwrap();
        assert_eq!(token.len(), 64);
        assert_ne!(digest(&token), token);
        assert_eq!(digest(&token), digest(&token));
    }
}
