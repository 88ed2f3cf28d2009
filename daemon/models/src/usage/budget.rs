//! Spending limits: `[budget] daily_usd` and `monthly_usd`, over every
//! agent's requests together. Pure: what was spent comes in; whether a
//! request may start, and which warnings are due, go out.

use chrono::NaiveDate;
use serde::Deserialize;
use std::path::Path;

/// The share of a budget at which a note warns, once per day or month.
pub const WARN_AT: f64 = 0.8;

/// `[budget]` in `config.toml`; a limit left out is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// USD all requests of one local day may cost.
    #[serde(default)]
    pub daily_usd: Option<f64>,
    /// USD all requests of one local calendar month may cost.
    #[serde(default)]
    pub monthly_usd: Option<f64>,
}

/// What all agents together spent, in USD.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spending {
    /// On the local day asked about.
    pub today: f64,
    /// In that day's month, that day included.
    pub month: f64,
}

/// A note due because spending passed [`WARN_AT`] of a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    /// `daily:2026-03-01` or `monthly:2026-03`: remembered once sent, so a
    /// period's warning is sent once, restarts included.
    pub period: String,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Period {
    Day,
    Month,
}

impl Period {
    fn adjective(self) -> &'static str {
        match self {
            Period::Day => "daily",
            Period::Month => "monthly",
        }
    }

    fn when(self) -> &'static str {
        match self {
            Period::Day => "today",
            Period::Month => "this month",
        }
    }

    fn next(self) -> &'static str {
        match self {
            Period::Day => "tomorrow",
            Period::Month => "next month",
        }
    }

    fn key(self, today: NaiveDate) -> String {
        match self {
            Period::Day => format!("daily:{}", today.format("%Y-%m-%d")),
            Period::Month => format!("monthly:{}", today.format("%Y-%m")),
        }
    }
}

impl Budget {
    /// Whether any limit is set.
    pub fn is_set(&self) -> bool {
        self.daily_usd.is_some() || self.monthly_usd.is_some()
    }

    /// Each set limit with what its period spent.
    fn limits(&self, spending: Spending) -> impl Iterator<Item = (Period, f64, f64)> {
        let day = self
            .daily_usd
            .map(|limit| (Period::Day, limit, spending.today));
        let month = self
            .monthly_usd
            .map(|limit| (Period::Month, limit, spending.month));
        day.into_iter().chain(month)
    }

    /// Why no model request may start, when a limit is spent: names the
    /// budget, what was spent, and how to raise it (`config_file`).
    pub fn refusal(&self, spending: Spending, config_file: &Path) -> Option<String> {
        let (period, limit, spent) = self
            .limits(spending)
            .find(|(_, limit, spent)| spent >= limit)?;
        let adjective = period.adjective();
        Some(format!(
            "the {adjective} budget of {} is spent ({} {}): no model request is sent until {}; \
             to go on now, raise [budget] {adjective}_usd in {} and run `hearth reload`",
            usd(limit),
            usd(spent),
            period.when(),
            period.next(),
            config_file.display()
        ))
    }

    /// The warnings due on `today` for `spending`: one per limit whose
    /// spending reached [`WARN_AT`] of it. The caller sends each period's once.
    pub fn warnings(&self, spending: Spending, today: NaiveDate) -> Vec<Warning> {
        self.limits(spending)
            .filter(|(_, limit, spent)| *spent >= WARN_AT * limit)
            .map(|(period, limit, spent)| {
                let adjective = period.adjective();
                let share = if limit > 0.0 {
                    spent / limit * 100.0
                } else {
                    100.0
                };
                Warning {
                    period: period.key(today),
                    text: format!(
                        "spending {} is {}, {share:.0}% of the {adjective} budget of {} \
                         ([budget] {adjective}_usd); model requests stop when it is spent",
                        period.when(),
                        usd(spent),
                        usd(limit),
                    ),
                }
            })
            .collect()
    }
}

/// An amount in USD: four decimals under a dollar, two above.
pub fn usd(amount: f64) -> String {
    if amount.abs() < 1.0 {
        format!("${amount:.4}")
    } else {
        format!("${amount:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 3, 14).unwrap()
    }

    fn spending(today: f64, month: f64) -> Spending {
        Spending { today, month }
    }

    #[test]
    fn no_budget_never_refuses_or_warns() {
        let budget = Budget::default();
        assert!(!budget.is_set());
        let spent = spending(1e6, 1e9);
        assert_eq!(budget.refusal(spent, Path::new("c.toml")), None);
        assert!(budget.warnings(spent, day()).is_empty());
    }

    #[test]
    fn a_spent_daily_budget_refuses_and_says_how_to_raise_it() {
        let budget = Budget {
            daily_usd: Some(1.0),
            monthly_usd: Some(30.0),
        };
        assert_eq!(
            budget.refusal(spending(0.99, 5.0), Path::new("c.toml")),
            None
        );
        let why = budget
            .refusal(spending(1.0, 5.0), Path::new("/h/config.toml"))
            .unwrap();
        assert!(
            why.starts_with("the daily budget of $1.00 is spent ($1.00 today)"),
            "{why}"
        );
        assert!(
            why.contains("raise [budget] daily_usd in /h/config.toml"),
            "{why}"
        );
        assert!(why.contains("until tomorrow"), "{why}");
    }

    #[test]
    fn a_spent_monthly_budget_refuses_even_on_a_quiet_day() {
        let budget = Budget {
            daily_usd: Some(1.0),
            monthly_usd: Some(10.0),
        };
        let why = budget
            .refusal(spending(0.0, 10.5), Path::new("c.toml"))
            .unwrap();
        assert!(why.starts_with("the monthly budget of $10.00 is spent ($10.50 this month)"));
        assert!(why.contains("monthly_usd"), "{why}");
    }

    #[test]
    fn warnings_start_at_eighty_percent_with_one_period_each() {
        let budget = Budget {
            daily_usd: Some(1.0),
            monthly_usd: Some(10.0),
        };
        assert!(budget.warnings(spending(0.79, 7.9), day()).is_empty());
        let warnings = budget.warnings(spending(0.8, 7.9), day());
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].period, "daily:2026-03-14");
        assert!(
            warnings[0].text.contains("80% of the daily budget"),
            "{warnings:?}"
        );
        let both = budget.warnings(spending(0.9, 8.5), day());
        let periods: Vec<&str> = both.iter().map(|w| w.period.as_str()).collect();
        assert_eq!(periods, ["daily:2026-03-14", "monthly:2026-03"]);
    }

    #[test]
    fn amounts_read_as_dollars() {
        assert_eq!(usd(0.001835), "$0.0018");
        assert_eq!(usd(12.345), "$12.35");
    }
}
