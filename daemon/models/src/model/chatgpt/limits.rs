//! The plan's usage limits, as the Codex backend reports them: on every
//! answer, headers `x-codex-primary-used-percent`, `-window-minutes` and
//! `-reset-at` (Unix seconds; or `-reset-after-seconds`), and the same for
//! `secondary`; in a stream, a `codex.rate_limits` event; and at the limit,
//! a 429 whose error is `usage_limit_reached` with `resets_at` or
//! `resets_in_seconds`. The last report is kept for `hearth status`.

use chrono::{DateTime, Utc};
use hearth_protocol::{PlanLimits, PlanWindow};
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::sync::{Mutex, PoisonError};

/// The last report of the plan's limits in this process. One process
/// serves one home, and so one sign-in.
static LAST: Mutex<Option<PlanLimits>> = Mutex::new(None);

/// The plan's limits as last reported, for `hearth status`.
pub fn last() -> Option<PlanLimits> {
    LAST.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

fn keep(update: impl FnOnce(&mut PlanLimits)) {
    let mut last = LAST.lock().unwrap_or_else(PoisonError::into_inner);
    let limits = last.get_or_insert_with(|| PlanLimits {
        plan: None,
        windows: Vec::new(),
        limited_until: None,
        reported_at: String::new(),
    });
    update(limits);
    limits.reported_at = rfc3339(Utc::now());
}

/// Records the limits an answer's headers report, if they report any. An
/// answer the plan took clears a past refusal.
pub fn record_headers(headers: &HeaderMap, plan: Option<&str>, taken: bool) {
    let now = Utc::now();
    let windows: Vec<PlanWindow> = ["primary", "secondary"]
        .iter()
        .filter_map(|name| window_from_headers(headers, name, now))
        .collect();
    if windows.is_empty() && !taken {
        return;
    }
    keep(|limits| {
        if !windows.is_empty() {
            limits.windows = windows;
        }
        if plan.is_some() {
            limits.plan = plan.map(str::to_string);
        }
        if taken {
            limits.limited_until = None;
        }
    });
}

fn window_from_headers(headers: &HeaderMap, name: &str, now: DateTime<Utc>) -> Option<PlanWindow> {
    let header = |field: &str| {
        headers
            .get(format!("x-codex-{name}-{field}"))
            .and_then(|value| value.to_str().ok())
            .map(str::trim)
            .filter(|value| !value.is_empty())
    };
    let used_percent: f64 = header("used-percent")?
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())?;
    let window_minutes = header("window-minutes").and_then(|v| v.parse().ok());
    let resets_at = header("reset-at")
        .and_then(|v| v.parse::<i64>().ok())
        .and_then(|secs| DateTime::from_timestamp(secs, 0))
        .or_else(|| {
            let after: i64 = header("reset-after-seconds")?.parse().ok()?;
            Some(now + chrono::Duration::seconds(after))
        });
    Some(PlanWindow {
        window_minutes,
        used_percent,
        resets_at: resets_at.map(rfc3339),
    })
}

/// Records a `codex.rate_limits` stream event.
pub fn record_event(event: &Value) {
    let window = |name: &str| {
        let window = event.pointer(&format!("/rate_limits/{name}"))?;
        Some(PlanWindow {
            used_percent: window.get("used_percent")?.as_f64()?,
            window_minutes: window.get("window_minutes").and_then(Value::as_u64),
            resets_at: window
                .get("reset_at")
                .and_then(Value::as_i64)
                .and_then(|secs| DateTime::from_timestamp(secs, 0))
                .map(rfc3339),
        })
    };
    let windows: Vec<PlanWindow> = ["primary", "secondary"]
        .iter()
        .filter_map(|n| window(n))
        .collect();
    let plan = event.get("plan_type").and_then(Value::as_str);
    if windows.is_empty() && plan.is_none() {
        return;
    }
    keep(|limits| {
        if !windows.is_empty() {
            limits.windows = windows;
        }
        if let Some(plan) = plan {
            limits.plan = Some(plan.to_string());
        }
    });
}

/// A refusal at the plan's limit, read from a 429's body: the plan, and
/// when it takes requests again. None when the body is no such refusal.
pub fn refusal(body: &str) -> Option<Refusal> {
    let value: Value = serde_json::from_str(body).ok()?;
    let error = value.get("error")?;
    let kind = error.get("type").or_else(|| error.get("code"))?.as_str()?;
    if kind != "usage_limit_reached" && kind != "usage_not_included" {
        return None;
    }
    let resets_at = error
        .get("resets_at")
        .and_then(Value::as_i64)
        .and_then(|secs| DateTime::from_timestamp(secs, 0))
        .or_else(|| {
            let after = error.get("resets_in_seconds")?.as_i64()?;
            Some(Utc::now() + chrono::Duration::seconds(after))
        });
    let refusal = Refusal {
        plan: error
            .get("plan_type")
            .and_then(Value::as_str)
            .map(str::to_string),
        resets_at,
        not_included: kind == "usage_not_included",
    };
    keep(|limits| {
        if refusal.plan.is_some() {
            limits.plan = refusal.plan.clone();
        }
        limits.limited_until = refusal.resets_at.map(rfc3339);
    });
    Some(refusal)
}

/// The plan refused a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub plan: Option<String>,
    pub resets_at: Option<DateTime<Utc>>,
    /// The plan does not include this use at all (no reset helps).
    pub not_included: bool,
}

impl Refusal {
    /// What the person is told, with the reset in local time.
    pub fn message(&self) -> String {
        let plan = match &self.plan {
            Some(plan) => format!("your ChatGPT {plan} plan"),
            None => "your ChatGPT plan".to_string(),
        };
        if self.not_included {
            return format!("{plan} does not include this model's use through Codex; upgrade the plan or use another provider");
        }
        match self.resets_at {
            Some(at) => format!(
                "{plan} has reached its usage limit; it resets at {}",
                at.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M")
            ),
            None => format!("{plan} has reached its usage limit; try again later"),
        }
    }
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_read_from_the_backends_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("x-codex-primary-used-percent", "37.5".parse().unwrap());
        headers.insert("x-codex-primary-window-minutes", "300".parse().unwrap());
        headers.insert("x-codex-primary-reset-at", "4070908800".parse().unwrap());
        headers.insert("x-codex-secondary-used-percent", "12".parse().unwrap());
        headers.insert(
            "x-codex-secondary-reset-after-seconds",
            "60".parse().unwrap(),
        );
        let now = Utc::now();
        let primary = window_from_headers(&headers, "primary", now).unwrap();
        assert_eq!(primary.used_percent, 37.5);
        assert_eq!(primary.window_minutes, Some(300));
        assert_eq!(primary.resets_at.as_deref(), Some("2099-01-01T00:00:00Z"));
        let secondary = window_from_headers(&headers, "secondary", now).unwrap();
        assert_eq!(secondary.window_minutes, None);
        assert_eq!(
            secondary.resets_at,
            Some(rfc3339(now + chrono::Duration::seconds(60)))
        );
        assert!(window_from_headers(&HeaderMap::new(), "primary", now).is_none());
    }

    #[test]
    fn a_usage_limit_refusal_names_the_plan_and_its_reset() {
        let body = r#"{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"plus","resets_at":4070908800}}"#;
        let refusal = refusal(body).unwrap();
        assert_eq!(refusal.plan.as_deref(), Some("plus"));
        assert_eq!(
            refusal.resets_at.map(|at| at.timestamp()),
            Some(4_070_908_800)
        );
        assert!(refusal
            .message()
            .contains("ChatGPT plus plan has reached its usage limit; it resets at"));
        assert!(super::refusal(r#"{"error":{"type":"rate_limit_exceeded"}}"#).is_none());
    }
}
