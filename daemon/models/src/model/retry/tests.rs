//! Tests of `retry.rs`: the decisions for each kind of failure, the waits a
//! provider asks for, and the loop against a scripted transport on tokio's
//! paused clock.

use super::*;
use crate::model::error::{classify, Source, WireError};
use futures_util::FutureExt;
use reqwest::header::HeaderValue;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::time::Instant;

const POLICY: RetryPolicy = RetryPolicy {
    max_retries: 3,
    first_delay: Duration::from_millis(500),
};

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_str(value).unwrap());
    }
    map
}

/// The error an HTTP answer with this status, headers and error body makes.
fn http_error(status: u16, pairs: &[(&'static str, &str)], kind: &str, code: &str) -> ModelError {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let source = Source {
        provider: "anthropic",
        model: "claude-test",
        window: None,
        key_hint: "check the key".into(),
    };
    let error = WireError {
        kind: (!kind.is_empty()).then(|| kind.to_string()),
        code: (!code.is_empty()).then(|| code.to_string()),
        message: "said the server".into(),
    };
    classify(
        &source,
        Some(status),
        &error,
        server_delay(&headers(pairs), now),
    )
}

/// The decision after the first try failed with this answer (no jitter).
fn first(status: u16, pairs: &[(&'static str, &str)]) -> Decision {
    decide(&POLICY, &http_error(status, pairs, "", ""), 0, 0.0)
}

#[test]
fn transient_statuses_back_off_exponentially() {
    for status in [408, 409, 429, 500, 502, 503, 504, 529] {
        let error = http_error(status, &[], "", "");
        let waits: Vec<Decision> = (0..4).map(|n| decide(&POLICY, &error, n, 0.0)).collect();
        assert_eq!(
            waits,
            [
                Decision::RetryAfter(Duration::from_millis(500)),
                Decision::RetryAfter(Duration::from_millis(1000)),
                Decision::RetryAfter(Duration::from_millis(2000)),
                Decision::GiveUp,
            ],
            "status {status}"
        );
    }
}

#[test]
fn backoff_is_capped_and_jitter_only_shortens_it() {
    let policy = RetryPolicy {
        max_retries: 20,
        first_delay: Duration::from_secs(1),
    };
    assert_eq!(backoff(&policy, 10, 0.0), MAX_BACKOFF);
    assert_eq!(backoff(&policy, 1000, 0.0), MAX_BACKOFF);
    assert_eq!(
        backoff(&policy, 0, 0.999_999),
        Duration::from_secs(1).mul_f64(0.75 + 0.25 * 0.000_001)
    );
    let jittered = backoff(&POLICY, 2, 0.5);
    assert!(jittered < Duration::from_secs(2) && jittered >= Duration::from_millis(1500));
}

#[test]
fn a_wait_the_provider_asks_for_wins() {
    assert_eq!(
        first(429, &[("retry-after", "7")]),
        Decision::RetryAfter(Duration::from_secs(7))
    );
    assert_eq!(
        first(529, &[("retry-after-ms", "250"), ("retry-after", "7")]),
        Decision::RetryAfter(Duration::from_millis(250))
    );
    assert_eq!(
        first(503, &[("retry-after", "0")]),
        Decision::RetryAfter(Duration::ZERO)
    );
    assert_eq!(
        first(503, &[("retry-after", "1.5")]),
        Decision::RetryAfter(Duration::from_millis(1500))
    );
}

#[test]
fn an_http_date_counts_from_now() {
    // 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
    assert_eq!(
        first(503, &[("retry-after", "Tue, 14 Nov 2023 22:13:30 GMT")]),
        Decision::RetryAfter(Duration::from_secs(10))
    );
    assert_eq!(
        first(503, &[("retry-after", "Tue, 14 Nov 2023 22:00:00 GMT")]),
        Decision::RetryAfter(Duration::ZERO)
    );
}

#[test]
fn a_long_wait_is_capped_at_a_minute_and_nonsense_is_ignored() {
    assert_eq!(
        first(429, &[("retry-after", "3600")]),
        Decision::RetryAfter(MAX_SERVER_DELAY)
    );
    assert_eq!(
        first(429, &[("retry-after-ms", "900000")]),
        Decision::RetryAfter(MAX_SERVER_DELAY)
    );
    for nonsense in ["soon", "-5", "NaN"] {
        assert_eq!(
            first(429, &[("retry-after", nonsense)]),
            Decision::RetryAfter(Duration::from_millis(500)),
            "{nonsense}"
        );
    }
}

#[test]
fn client_errors_are_never_retried_even_with_a_wait() {
    for status in [400, 401, 403, 404, 413, 422] {
        assert_eq!(
            first(status, &[("retry-after", "1")]),
            Decision::GiveUp,
            "{status}"
        );
    }
}

#[test]
fn quota_and_spend_limits_are_never_retried() {
    let openai = http_error(
        429,
        &[("retry-after", "1")],
        "insufficient_quota",
        "insufficient_quota",
    );
    assert!(matches!(openai, ModelError::Quota { .. }));
    assert_eq!(decide(&POLICY, &openai, 0, 0.0), Decision::GiveUp);
    let anthropic = http_error(429, &[], "rate_limit_error", "enforced_spend_limit_reached");
    assert_eq!(decide(&POLICY, &anthropic, 0, 0.0), Decision::GiveUp);
}

#[test]
fn connection_failures_are_retried_and_garbage_is_not() {
    let network = ModelError::Network {
        url: "http://x".into(),
        message: "connection refused".into(),
    };
    assert!(matches!(
        decide(&POLICY, &network, 0, 0.0),
        Decision::RetryAfter(_)
    ));
    assert!(matches!(
        decide(&POLICY, &ModelError::Cut, 2, 0.0),
        Decision::RetryAfter(_)
    ));
    assert_eq!(decide(&POLICY, &ModelError::Cut, 3, 0.0), Decision::GiveUp);
    assert_eq!(
        decide(&POLICY, &ModelError::Garbage("x".into()), 0, 0.0),
        Decision::GiveUp
    );
}

#[test]
fn jitter_stays_in_range() {
    for _ in 0..100 {
        let j = jitter();
        assert!((0.0..1.0).contains(&j), "{j}");
    }
}

// ---- the loop, against a scripted transport ----

/// One scripted try: text it streams first, then its outcome.
struct Try {
    text: &'static str,
    outcome: Result<Response, ModelError>,
}

fn ok(text: &'static str) -> Try {
    Try {
        text,
        outcome: Ok(Response {
            text: text.into(),
            ..Response::default()
        }),
    }
}

fn fail(text: &'static str, error: ModelError) -> Try {
    Try {
        text,
        outcome: Err(error),
    }
}

fn overloaded() -> ModelError {
    http_error(529, &[], "overloaded_error", "")
}

/// A transport that plays a script, one [`Try`] per call.
struct Scripted {
    script: Mutex<VecDeque<Try>>,
    tries: AtomicUsize,
}

impl Attempt for Scripted {
    fn attempt<'a>(
        &'a self,
        on_text: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<Response, ModelError>> {
        self.tries.fetch_add(1, Ordering::Relaxed);
        let next = self
            .script
            .lock()
            .unwrap()
            .pop_front()
            .expect("the loop tried more than scripted");
        on_text(next.text);
        async move { next.outcome }.boxed()
    }
}

/// Runs the loop over `script`; returns its result, the tries made and
/// the streamed text.
async fn run(policy: RetryPolicy, script: Vec<Try>) -> (Result<Response, Failure>, usize, String) {
    let call = Scripted {
        script: Mutex::new(script.into()),
        tries: AtomicUsize::new(0),
    };
    let mut streamed = String::new();
    let mut on_text = |text: &str| streamed.push_str(text);
    let result = with_retries(&policy, &call, &mut on_text, &mut |_| {}).await;
    (result, call.tries.load(Ordering::Relaxed), streamed)
}

#[tokio::test(start_paused = true)]
async fn an_overload_is_retried_after_the_backoff() {
    let started = Instant::now();
    let (result, tries, _) = run(
        POLICY,
        vec![fail("", overloaded()), fail("", overloaded()), ok("hi")],
    )
    .await;
    assert_eq!(result.unwrap().text, "hi");
    assert_eq!(tries, 3);
    // 0.5 s then 1 s, each less up to a quarter of jitter.
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(1125) && waited <= Duration::from_millis(1500),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_providers_wait_is_honoured() {
    let started = Instant::now();
    let limited = http_error(429, &[("retry-after", "20")], "rate_limit_error", "");
    let (result, tries, _) = run(POLICY, vec![fail("", limited), ok("hi")]).await;
    assert!(result.is_ok());
    assert_eq!(tries, 2);
    assert_eq!(started.elapsed(), Duration::from_secs(20));
}

#[tokio::test(start_paused = true)]
async fn retries_stop_after_max_retries() {
    let policy = RetryPolicy {
        max_retries: 2,
        first_delay: Duration::from_millis(1),
    };
    let script = (0..3).map(|_| fail("", overloaded())).collect();
    let (result, tries, _) = run(policy, script).await;
    let failure = result.unwrap_err();
    assert!(matches!(
        failure.error,
        ModelError::Status { status: 529, .. }
    ));
    assert!(!failure.after_output);
    assert_eq!(tries, 3);
}

#[tokio::test(start_paused = true)]
async fn a_failure_after_streamed_text_is_not_retried() {
    let (result, tries, streamed) = run(POLICY, vec![fail("I was say", ModelError::Cut)]).await;
    let failure = result.unwrap_err();
    assert!(failure.after_output);
    assert!(matches!(failure.error, ModelError::Cut));
    assert_eq!(tries, 1);
    assert_eq!(streamed, "I was say");
}

#[tokio::test(start_paused = true)]
async fn a_rejected_key_fails_at_once() {
    let started = Instant::now();
    let (result, tries, _) = run(
        POLICY,
        vec![fail("", http_error(401, &[], "authentication_error", ""))],
    )
    .await;
    assert!(matches!(result.unwrap_err().error, ModelError::Auth { .. }));
    assert_eq!(tries, 1);
    assert_eq!(started.elapsed(), Duration::ZERO);
}
