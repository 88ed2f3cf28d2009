//! When a failed call is tried again, and after how long.
//!
//! Only transient failures are retried (see [`ModelError::is_transient`]:
//! 408, 409, 429, 5xx and 529, overload reported in a stream, broken or
//! silent connections), at most `max_retries` times, and only while the call
//! has produced no output: once reply text has streamed to the clients, a
//! failure ends the call instead of repeating what they saw. The wait is the
//! provider's own (`retry-after-ms`, then `retry-after` in seconds or as an
//! HTTP date), at most a minute; otherwise an exponential backoff with
//! jitter. The decision is a pure function; the loop sleeps with
//! `tokio::time`, so tests run it on a paused clock.

use super::{ModelError, Response};
use crate::model::ModelConfig;
use futures_util::future::BoxFuture;
use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// The longest wait a provider's `retry-after` can impose on one retry.
pub const MAX_SERVER_DELAY: Duration = Duration::from_secs(60);
/// The longest backoff between two tries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// How one model's calls are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries after the first.
    pub max_retries: u32,
    /// The backoff before the first retry; it doubles for each retry after.
    pub first_delay: Duration,
}

impl RetryPolicy {
    pub fn of(config: &ModelConfig) -> RetryPolicy {
        RetryPolicy {
            max_retries: config.max_retries,
            first_delay: Duration::from_millis(config.retry_delay_ms),
        }
    }
}

/// What to do after a failed try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Try again after this wait.
    RetryAfter(Duration),
    /// Report the failure.
    GiveUp,
}

/// The decision after try number `attempt` (0 for the first) failed with
/// `error`, before any output. `jitter` in `[0, 1)` shortens the backoff by
/// up to a quarter, so many clients do not retry in step.
pub fn decide(policy: &RetryPolicy, error: &ModelError, attempt: u32, jitter: f64) -> Decision {
    if !error.is_transient() || attempt >= policy.max_retries {
        return Decision::GiveUp;
    }
    let wait = match error.retry_after() {
        Some(wait) => wait.min(MAX_SERVER_DELAY),
        None => backoff(policy, attempt, jitter),
    };
    Decision::RetryAfter(wait)
}

/// `first_delay · 2^attempt`, at most [`MAX_BACKOFF`], less up to a quarter
/// by `jitter`.
pub fn backoff(policy: &RetryPolicy, attempt: u32, jitter: f64) -> Duration {
    let doubled = policy
        .first_delay
        .saturating_mul(2u32.saturating_pow(attempt.min(16)));
    doubled
        .min(MAX_BACKOFF)
        .mul_f64(1.0 - 0.25 * jitter.clamp(0.0, 1.0))
}

/// The wait a provider asked for in its response headers: `retry-after-ms`
/// (milliseconds), else `retry-after` as seconds or an HTTP date (relative
/// to `now`; a date in the past is no wait). Unreadable values are ignored.
pub fn server_delay(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms.min(1e9) / 1000.0));
        }
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::from_secs_f64(seconds.min(1e9)));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = SystemTime::from(date);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A call that failed for good.
#[derive(Debug)]
pub struct Failure {
    pub error: ModelError,
    /// Reply text had streamed before it failed, so nothing may repeat it.
    pub after_output: bool,
}

/// One try of a call, as the retry loop drives it.
pub trait Attempt: Sync {
    /// Sends the call once; streamed text goes to `on_text`.
    fn attempt<'a>(
        &'a self,
        on_text: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<Response, ModelError>>;
}

/// A retry about to wait: try `attempt` (2 for the first retry) of
/// `attempts` comes after `wait`, because the last one failed with `error`.
pub struct RetryNotice<'a> {
    pub attempt: u32,
    pub attempts: u32,
    pub error: &'a ModelError,
    pub wait: Duration,
}

/// Tries `call` until it succeeds, the failure is not worth a retry, the
/// retries are spent, or it fails after producing output. Text passes
/// through to `on_text`; each wait before a retry is told to `on_retry`
/// first.
pub async fn with_retries(
    policy: &RetryPolicy,
    call: &impl Attempt,
    on_text: &mut (dyn FnMut(&str) + Send),
    on_retry: &mut (dyn FnMut(RetryNotice<'_>) + Send),
) -> Result<Response, Failure> {
    let mut tries = 0;
    loop {
        let mut produced = false;
        let result = {
            let mut tracked = |text: &str| {
                if !text.is_empty() {
                    produced = true;
                }
                on_text(text);
            };
            call.attempt(&mut tracked).await
        };
        let error = match result {
            Ok(response) => return Ok(response),
            Err(error) => error,
        };
        if produced {
            return Err(Failure {
                error,
                after_output: true,
            });
        }
        match decide(policy, &error, tries, jitter()) {
            Decision::GiveUp => {
                return Err(Failure {
                    error,
                    after_output: false,
                })
            }
            Decision::RetryAfter(wait) => {
                tracing::info!(
                    "model call failed ({error}); retry {} of {} in {wait:?}",
                    tries + 1,
                    policy.max_retries
                );
                on_retry(RetryNotice {
                    attempt: tries + 2,
                    attempts: policy.max_retries + 1,
                    error: &error,
                    wait,
                });
                tokio::time::sleep(wait).await;
                tries += 1;
            }
        }
    }
}

/// A number in `[0, 1)` that differs from call to call: the standard
/// library's randomly keyed hasher over the clock.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    hasher.write_u32(nanos);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests;
