//! Usage and cost: every model request — a turn's or a compaction's — is
//! stored with its tokens, latency and cost, and spending limits stop
//! requests before they are sent.
//!
//! - `prices.rs`: the built-in price table, `[prices]` overrides, the cost
//!   of one request (pure).
//! - `budget.rs`: `[budget]`: when requests are refused and when a warning
//!   is due (pure).
//!
//! The rows live in the log's database: `usage`, one row per request, and
//! `budget_notes`, the periods whose 80% warning was sent, so a restart does
//! not send it again. [`Meter`] is how an agent's turn loop and compactor
//! reach them.

mod budget;
mod prices;

pub use budget::{usd, Budget, Spending, Warning, WARN_AT};
pub use prices::{is_plan, Price, PriceConfig, Prices};

use crate::log::{append, Log, LogError, NewMessage};
use crate::model::{Bill, Usage};
use chrono::{DateTime, Local, NaiveDate};
use hearth_protocol::{Message, StatsRow};
use rusqlite::{params, Connection};
use std::path::PathBuf;
use std::sync::Arc;

/// Why a request was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A request of a turn's chain.
    Turn,
    /// A compactor's summary.
    Compaction,
    /// A voice note's transcript, priced per minute of audio.
    Transcription,
    /// A `web_search`, priced per query.
    Search,
}

impl Purpose {
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::Turn => "turn",
            Purpose::Compaction => "compaction",
            Purpose::Transcription => "transcription",
            Purpose::Search => "search",
        }
    }
}

/// One request, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub agent: String,
    pub purpose: Purpose,
    /// `provider/model` of the model that answered (a fallback, maybe).
    pub model: String,
    pub usage: Usage,
    /// From sending the request to the whole answer, retries included.
    pub latency_ms: u64,
    /// None for an unpriced model, stored as cost 0.
    pub cost_usd: Option<f64>,
    /// The usage is hearth's estimate: the provider reported none (a cut
    /// stream, a failure after it accepted the request).
    pub estimated: bool,
    /// When the answer came; its local day is the day it counts for.
    pub at: DateTime<Local>,
}

/// An agent's meter: stores what its requests cost and says when the
/// budget forbids another. Cheap to clone.
#[derive(Clone)]
pub struct Meter {
    log: Log,
    agent: String,
    /// The prices and budget, shared by every agent's meter; a reload
    /// replaces them for all at once.
    terms: Arc<std::sync::RwLock<Terms>>,
    /// Named in a refusal, as the place to raise the budget.
    config_file: Arc<PathBuf>,
}

impl Meter {
    pub fn new(
        log: Log,
        agent: &str,
        prices: Prices,
        budget: Budget,
        config_file: PathBuf,
    ) -> Meter {
        Meter {
            log,
            agent: agent.to_string(),
            terms: Arc::new(std::sync::RwLock::new(Terms {
                prices: Arc::new(prices),
                budget,
            })),
            config_file: Arc::new(config_file),
        }
    }

    /// New prices and budget for every agent's requests from now on (a
    /// reloaded configuration).
    pub fn update(&self, prices: Prices, budget: Budget) {
        let mut terms = self
            .terms
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *terms = Terms {
            prices: Arc::new(prices),
            budget,
        };
    }

    /// The prices and budget now.
    fn terms(&self) -> (Arc<Prices>, Budget) {
        // Plain values: a panic while they were written leaves them usable.
        let terms = self
            .terms
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (terms.prices.clone(), terms.budget)
    }

    /// The spending limits now (a reload replaces them).
    pub fn budget(&self) -> Budget {
        self.terms().1
    }

    /// The same prices and budget, for another agent's requests.
    pub fn for_agent(&self, agent: &str) -> Meter {
        Meter {
            agent: agent.to_string(),
            ..self.clone()
        }
    }

    /// Why no request may be sent now, when a budget is spent; the text
    /// names the budget and how to raise it.
    pub async fn refusal(&self) -> Result<Option<String>, LogError> {
        let (_, budget) = self.terms();
        if !budget.is_set() {
            return Ok(None);
        }
        let spending = self.log.spending(Local::now().date_naive()).await?;
        Ok(budget.refusal(spending, self.config_file.as_path()))
    }

    /// Stores one transcription: `seconds` of audio of `model`, priced per
    /// minute (`price_per_minute`, else the built-in table; unpriced when
    /// neither knows the model or the length is unknown).
    pub async fn record_transcription(
        &self,
        model: &str,
        seconds: Option<f64>,
        price_per_minute: Option<f64>,
        latency: std::time::Duration,
    ) -> Result<(), LogError> {
        let (_, budget) = self.terms();
        let per_minute = price_per_minute.or_else(|| prices::per_minute(model));
        let record = Record {
            agent: self.agent.clone(),
            purpose: Purpose::Transcription,
            model: format!("transcription/{model}"),
            usage: Usage::default(),
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            cost_usd: per_minute
                .zip(seconds)
                .map(|(price, seconds)| price * seconds / 60.0),
            estimated: false,
            at: Local::now(),
        };
        self.log.record_usage(record, budget).await?;
        Ok(())
    }

    /// Stores one search of `provider` that cost `price` (USD); it counts
    /// against the budget as a model request does.
    pub async fn record_search(
        &self,
        provider: &str,
        price: f64,
        latency: std::time::Duration,
    ) -> Result<(), LogError> {
        let (_, budget) = self.terms();
        let record = Record {
            agent: self.agent.clone(),
            purpose: Purpose::Search,
            model: format!("search/{provider}"),
            usage: Usage::default(),
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
            cost_usd: Some(price),
            estimated: false,
            at: Local::now(),
        };
        self.log.record_usage(record, budget).await?;
        Ok(())
    }

    /// Stores every billed try of one call (see [`Bill`]), each priced by
    /// the model tried; logs a note when the spending passed 80% of a
    /// budget for the first time in its period.
    pub async fn record(&self, purpose: Purpose, bills: &[Bill]) -> Result<(), LogError> {
        let (prices, budget) = self.terms();
        for bill in bills {
            let record = Record {
                agent: self.agent.clone(),
                purpose,
                model: bill.model.clone(),
                usage: bill.usage,
                latency_ms: u64::try_from(bill.latency.as_millis()).unwrap_or(u64::MAX),
                cost_usd: prices.cost(&bill.model, &bill.usage),
                estimated: bill.estimated,
                at: Local::now(),
            };
            self.log.record_usage(record, budget).await?;
        }
        Ok(())
    }
}

/// What requests cost and may cost.
struct Terms {
    prices: Arc<Prices>,
    budget: Budget,
}

fn day_text(day: NaiveDate) -> String {
    day.format("%Y-%m-%d").to_string()
}

/// What all agents spent on `day` and in its month.
fn spending(tx: &Connection, day: NaiveDate) -> Result<Spending, rusqlite::Error> {
    let sum = |from: String, to: String| {
        tx.query_row(
            "SELECT COALESCE(SUM(cost_usd), 0) FROM usage WHERE day >= ?1 AND day <= ?2",
            params![from, to],
            |row| row.get::<_, f64>(0),
        )
    };
    let month = day.format("%Y-%m").to_string();
    Ok(Spending {
        today: sum(day_text(day), day_text(day))?,
        // Days are `YYYY-MM-DD` text, so the month is one range of them.
        month: sum(format!("{month}-01"), format!("{month}-31"))?,
    })
}

/// The log's records of what each request cost: written with the request's reply, read for budgets and `stats`.
#[allow(async_fn_in_trait)] // called on `Log` itself, whose futures are `Send`
pub trait UsageLog {
    /// Stores one request's row. With a budget set, also logs (in the
    /// record's agent) the warnings that became due and were not sent before
    /// in their period; returns those notes.
    async fn record_usage(&self, record: Record, budget: Budget) -> Result<Vec<Message>, LogError>;

    /// What all agents spent on `day` and in its month.
    async fn spending(&self, day: NaiveDate) -> Result<Spending, LogError>;

    /// Requests, tokens and cost per day and agent, from `since` on, oldest
    /// day first.
    async fn usage_stats(&self, since: NaiveDate) -> Result<Vec<StatsRow>, LogError>;
}

impl UsageLog for Log {
    async fn record_usage(&self, record: Record, budget: Budget) -> Result<Vec<Message>, LogError> {
        self.run(move |tx, appended| {
            let day = record.at.date_naive();
            tx.execute(
                "INSERT INTO usage (agent, purpose, model, input, cached_input, cache_write,
                                    output, latency_ms, cost_usd, priced, day, at, estimated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
                params![
                    record.agent,
                    record.purpose.as_str(),
                    record.model,
                    record.usage.input as i64,
                    record.usage.cached_input as i64,
                    record.usage.cache_write as i64,
                    record.usage.output as i64,
                    record.latency_ms as i64,
                    record.cost_usd.unwrap_or(0.0),
                    record.cost_usd.is_some(),
                    day_text(day),
                    record.at.to_rfc3339(),
                    record.estimated,
                ],
            )?;
            let mut notes = Vec::new();
            if !budget.is_set() {
                return Ok(notes);
            }
            for warning in budget.warnings(spending(tx, day)?, day) {
                let fresh = tx.execute(
                    "INSERT OR IGNORE INTO budget_notes (period, at) VALUES (?1, ?2)",
                    params![warning.period, record.at.to_rfc3339()],
                )?;
                if fresh > 0 {
                    let note = NewMessage::daemon_note(warning.text);
                    notes.push(append(tx, &record.agent, note, appended)?);
                }
            }
            Ok(notes)
        })
        .await
    }

    async fn spending(&self, day: NaiveDate) -> Result<Spending, LogError> {
        self.run(move |tx, _| spending(tx, day)).await
    }

    async fn usage_stats(&self, since: NaiveDate) -> Result<Vec<StatsRow>, LogError> {
        self.run(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT day, agent, COUNT(*), SUM(input), SUM(cached_input), SUM(cache_write),
                        SUM(output), SUM(cost_usd), SUM(priced = 0), SUM(estimated),
                        SUM(purpose = 'transcription'),
                        SUM(CASE WHEN purpose = 'transcription' THEN cost_usd ELSE 0 END)
                 FROM usage WHERE day >= ?1 GROUP BY day, agent ORDER BY day, agent",
            )?;
            let count = |row: &rusqlite::Row, at| row.get::<_, i64>(at).map(|n| n.max(0) as u64);
            let rows = statement.query_map(params![day_text(since)], |row| {
                Ok(StatsRow {
                    day: row.get(0)?,
                    agent: row.get(1)?,
                    requests: count(row, 2)?,
                    input_tokens: count(row, 3)?,
                    cached_input_tokens: count(row, 4)?,
                    cache_write_tokens: count(row, 5)?,
                    output_tokens: count(row, 6)?,
                    cost_usd: row.get(7)?,
                    unpriced_requests: count(row, 8)?,
                    estimated_requests: count(row, 9)?,
                    transcriptions: count(row, 10)?,
                    transcription_usd: row.get(11)?,
                })
            })?;
            rows.collect()
        })
        .await
    }
}

/// The first day of a window of `days` days that ends on `today`.
pub fn window_start(today: NaiveDate, days: u32) -> NaiveDate {
    today - chrono::Days::new(u64::from(days.max(1) - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use hearth_protocol::Kind;
    use std::time::Duration;
    use tokio::sync::broadcast;

    fn open(dir: &tempfile::TempDir) -> Log {
        let (events, _) = broadcast::channel(64);
        Log::open(&dir.path().join("hearth.db"), events).unwrap()
    }

    fn at(day: u32, hour: u32) -> DateTime<Local> {
        Local
            .with_ymd_and_hms(2026, 3, day, hour, 0, 0)
            .single()
            .unwrap()
    }

    fn record(agent: &str, cost_usd: Option<f64>, when: DateTime<Local>) -> Record {
        Record {
            agent: agent.into(),
            purpose: Purpose::Turn,
            model: "openai/gpt-5-mini".into(),
            usage: Usage {
                input: 1000,
                cached_input: 800,
                cache_write: 0,
                cache_write_long: 0,
                output: 50,
            },
            latency_ms: 120,
            cost_usd,
            estimated: false,
            at: when,
        }
    }

    #[tokio::test]
    async fn stats_add_up_per_day_and_agent() {
        let dir = tempfile::tempdir().unwrap();
        let log = open(&dir);
        let none = Budget::default();
        for row in [
            record("a", Some(0.25), at(1, 9)),
            record("a", Some(0.5), at(2, 9)),
            record("a", None, at(2, 18)),
            record("b", Some(1.0), at(2, 10)),
        ] {
            log.record_usage(row, none).await.unwrap();
        }
        let since = NaiveDate::from_ymd_opt(2026, 3, 2).unwrap();
        let rows = log.usage_stats(since).await.unwrap();
        let keys: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.day.as_str(), r.agent.as_str()))
            .collect();
        assert_eq!(keys, [("2026-03-02", "a"), ("2026-03-02", "b")]);
        let a = &rows[0];
        assert_eq!((a.requests, a.unpriced_requests), (2, 1));
        assert_eq!((a.input_tokens, a.cached_input_tokens), (2000, 1600));
        assert_eq!(a.output_tokens, 100);
        assert!((a.cost_usd - 0.5).abs() < 1e-12);
        let march = log.spending(since).await.unwrap();
        assert!((march.today - 1.5).abs() < 1e-12, "{march:?}");
        assert!((march.month - 1.75).abs() < 1e-12, "{march:?}");
    }

    #[tokio::test]
    async fn the_eighty_percent_note_is_logged_once_per_period_even_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let budget = Budget {
            daily_usd: Some(1.0),
            monthly_usd: None,
        };
        let log = open(&dir);
        let notes = log
            .record_usage(record("a", Some(0.5), at(3, 9)), budget)
            .await
            .unwrap();
        assert!(notes.is_empty(), "50% warns of nothing");
        let notes = log
            .record_usage(record("a", Some(0.35), at(3, 10)), budget)
            .await
            .unwrap();
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].kind, Kind::Note);
        assert!(
            notes[0].text.contains("85% of the daily budget"),
            "{}",
            notes[0].text
        );
        let again = log
            .record_usage(record("a", Some(0.1), at(3, 11)), budget)
            .await
            .unwrap();
        assert!(again.is_empty());
        drop(log);

        let log = open(&dir);
        let after_restart = log
            .record_usage(record("a", Some(0.1), at(3, 12)), budget)
            .await
            .unwrap();
        assert!(after_restart.is_empty());
        let next_day = log
            .record_usage(record("a", Some(0.9), at(4, 9)), budget)
            .await
            .unwrap();
        assert_eq!(next_day.len(), 1, "a new day warns anew");
        let logged = log.page("a", None, 10).await.unwrap();
        assert_eq!(logged.len(), 2);
    }

    #[tokio::test]
    async fn a_meter_refuses_once_its_budget_is_spent() {
        let dir = tempfile::tempdir().unwrap();
        let log = open(&dir);
        let mut prices = std::collections::BTreeMap::new();
        prices.insert(
            "pricey".to_string(),
            PriceConfig {
                input: 1000.0,
                output: 1000.0,
                cached_input: None,
                cache_write: None,
            },
        );
        let budget = Budget {
            daily_usd: Some(0.5),
            monthly_usd: None,
        };
        let meter = Meter::new(
            log.clone(),
            "a",
            Prices::new(&prices),
            budget,
            dir.path().join("config.toml"),
        );
        assert_eq!(meter.refusal().await.unwrap(), None);
        let free = Bill {
            model: "openai-chat/local-thing".into(),
            usage: Usage {
                input: 1_000_000,
                ..Usage::default()
            },
            estimated: false,
            latency: Duration::from_millis(5),
        };
        meter
            .record(Purpose::Compaction, std::slice::from_ref(&free))
            .await
            .unwrap();
        assert_eq!(
            meter.refusal().await.unwrap(),
            None,
            "unpriced costs nothing"
        );
        let paid = Bill {
            model: "openai-chat/pricey".into(),
            estimated: true,
            ..free
        };
        meter
            .for_agent("b")
            .record(Purpose::Turn, &[paid])
            .await
            .unwrap();
        let why = meter.refusal().await.unwrap().unwrap();
        assert!(why.contains("daily budget of $0.5000 is spent"), "{why}");
        assert!(why.contains("daily_usd"), "{why}");
        let today = Local::now().date_naive();
        let rows = log.usage_stats(today).await.unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].agent.as_str(), rows[0].unpriced_requests),
            ("a", 1)
        );
        assert!((rows[1].cost_usd - 1000.0).abs() < 1e-9);
        assert_eq!(
            (rows[0].estimated_requests, rows[1].estimated_requests),
            (0, 1)
        );
    }

    #[test]
    fn windows_count_today() {
        let today = NaiveDate::from_ymd_opt(2026, 3, 7).unwrap();
        assert_eq!(window_start(today, 7).to_string(), "2026-03-01");
        assert_eq!(window_start(today, 1), today);
        assert_eq!(window_start(today, 0), today);
    }
}
