//! `hearth stats`: what the model requests of the last days used and cost,
//! per day and agent — requests, input tokens, the share of them read from
//! the prompt cache, output tokens and cost (voice notes' transcriptions
//! named in it) — as a table, or one JSON object per row for scripts; with
//! `--agent NAME`, that agent's rows alone.

use hearth_client::running::{ask_once, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ServerFrame, StatsRow};
use serde::Serialize;
use std::io::Write;
use std::process::ExitCode;

/// Days shown when `--days` is not given: the last week, today included.
pub const DEFAULT_DAYS: u32 = 7;

/// Asks the daemon for the last `days` days and prints them.
pub async fn stats(
    home: &Home,
    agent: Option<&str>,
    days: u32,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let frame = ClientFrame::Stats { days: Some(days) };
    let (days, mut rows) = ask_once(home, agent, "hearth-stats", &frame, |answer| match answer {
        ServerFrame::Stats { days, rows, .. } => Some((days, rows)),
        _ => None,
    })
    .await?;
    // The daemon counts every agent; `--agent NAME` asks for one.
    if let Some(agent) = agent {
        rows.retain(|row| row.agent == agent);
    }
    if json {
        for row in &rows {
            writeln!(out, "{}", json_line(row))?;
        }
    } else {
        for line in table(&rows, days) {
            writeln!(out, "{line}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One row for scripts: the daemon's fields and the cached share.
#[derive(Serialize)]
struct JsonRow<'a> {
    day: &'a str,
    agent: &'a str,
    requests: u64,
    input_tokens: u64,
    cached_input_tokens: u64,
    cache_write_tokens: u64,
    /// cached_input_tokens / input_tokens, 0 without input.
    cached_share: f64,
    output_tokens: u64,
    cost_usd: f64,
    unpriced_requests: u64,
    estimated_requests: u64,
    transcriptions: u64,
    transcription_usd: f64,
}

pub fn json_line(row: &StatsRow) -> String {
    let line = JsonRow {
        day: &row.day,
        agent: &row.agent,
        requests: row.requests,
        input_tokens: row.input_tokens,
        cached_input_tokens: row.cached_input_tokens,
        cache_write_tokens: row.cache_write_tokens,
        cached_share: share(row.cached_input_tokens, row.input_tokens).unwrap_or(0.0),
        output_tokens: row.output_tokens,
        cost_usd: row.cost_usd,
        unpriced_requests: row.unpriced_requests,
        estimated_requests: row.estimated_requests,
        transcriptions: row.transcriptions,
        transcription_usd: row.transcription_usd,
    };
    // Plain fields only: serializing cannot fail.
    serde_json::to_string(&line).unwrap_or_default()
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// An amount in USD: four decimals under a dollar, two above.
fn usd(amount: f64) -> String {
    if amount.abs() < 1.0 {
        format!("${amount:.4}")
    } else {
        format!("${amount:.2}")
    }
}

/// The cost cell: the priced requests' cost, how many were unpriced, and
/// how many are counted at hearth's estimate (the provider reported none).
fn cost(row: &StatsRow) -> String {
    let cost = match (row.unpriced_requests, row.requests) {
        (0, _) => usd(row.cost_usd),
        (unpriced, all) if unpriced == all => "unpriced".to_string(),
        (unpriced, _) => format!("{} +{unpriced} unpriced", usd(row.cost_usd)),
    };
    let cost = match row.estimated_requests {
        0 => cost,
        estimated => format!("{cost} ({estimated} estimated)"),
    };
    // Voice notes are requests too: said apart, with their share.
    match row.transcriptions {
        0 => cost,
        1 => format!("{cost} (1 voice note {})", usd(row.transcription_usd)),
        notes => format!(
            "{cost} ({notes} voice notes {})",
            usd(row.transcription_usd)
        ),
    }
}

/// The table's lines: a header, one line per row, a total when there are
/// several rows.
pub fn table(rows: &[StatsRow], days: u32) -> Vec<String> {
    if rows.is_empty() {
        let span = if days == 1 {
            "today".to_string()
        } else {
            format!("in the last {days} days")
        };
        return vec![format!("no model requests {span}")];
    }
    let mut cells: Vec<[String; 7]> = vec![[
        "day".into(),
        "agent".into(),
        "requests".into(),
        "input".into(),
        "cached".into(),
        "output".into(),
        "cost".into(),
    ]];
    let line = |row: &StatsRow| {
        [
            row.day.clone(),
            row.agent.clone(),
            row.requests.to_string(),
            row.input_tokens.to_string(),
            share(row.cached_input_tokens, row.input_tokens)
                .map_or("-".to_string(), |share| format!("{:.0}%", share * 100.0)),
            row.output_tokens.to_string(),
            cost(row),
        ]
    };
    cells.extend(rows.iter().map(line));
    if rows.len() > 1 {
        let mut total = StatsRow {
            day: "total".into(),
            agent: String::new(),
            requests: 0,
            input_tokens: 0,
            cached_input_tokens: 0,
            cache_write_tokens: 0,
            output_tokens: 0,
            cost_usd: 0.0,
            unpriced_requests: 0,
            estimated_requests: 0,
            transcriptions: 0,
            transcription_usd: 0.0,
        };
        for row in rows {
            total.transcriptions += row.transcriptions;
            total.transcription_usd += row.transcription_usd;
            total.requests += row.requests;
            total.input_tokens += row.input_tokens;
            total.cached_input_tokens += row.cached_input_tokens;
            total.cache_write_tokens += row.cache_write_tokens;
            total.output_tokens += row.output_tokens;
            total.cost_usd += row.cost_usd;
            total.unpriced_requests += row.unpriced_requests;
            total.estimated_requests += row.estimated_requests;
        }
        cells.push(line(&total));
    }
    let mut widths = [0usize; 7];
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    cells
        .iter()
        .map(|row| {
            let mut text = String::new();
            for (column, (cell, width)) in row.iter().zip(widths).enumerate() {
                if column > 0 {
                    text.push_str("  ");
                }
                // Day and agent read left to right; numbers line up on the right.
                if column < 2 {
                    text.push_str(&format!("{cell:<width$}"));
                } else {
                    text.push_str(&format!("{cell:>width$}"));
                }
            }
            text.trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(day: &str, agent: &str, requests: u64, unpriced: u64, cost_usd: f64) -> StatsRow {
        StatsRow {
            day: day.into(),
            agent: agent.into(),
            requests,
            input_tokens: 10_000,
            cached_input_tokens: 8_000,
            cache_write_tokens: 0,
            output_tokens: 300,
            cost_usd,
            unpriced_requests: unpriced,
            estimated_requests: 0,
            transcriptions: 0,
            transcription_usd: 0.0,
        }
    }

    #[test]
    fn the_table_shows_cached_share_cost_and_a_total() {
        let rows = vec![
            row("2026-03-01", "hearth", 3, 0, 0.0123),
            row("2026-03-01", "research", 2, 2, 0.0),
            row("2026-03-02", "hearth", 4, 1, 1.5),
        ];
        let lines = table(&rows, 7);
        assert_eq!(lines.len(), 5);
        assert!(
            lines[0].starts_with("day         agent     requests"),
            "{lines:?}"
        );
        assert!(
            lines[1].contains("80%") && lines[1].ends_with("$0.0123"),
            "{lines:?}"
        );
        assert!(lines[2].ends_with("unpriced"), "{lines:?}");
        assert!(lines[3].ends_with("$1.50 +1 unpriced"), "{lines:?}");
        assert!(lines[4].starts_with("total"), "{lines:?}");
        assert!(
            lines[4].contains(" 9 ") && lines[4].contains("30000"),
            "{lines:?}"
        );
    }

    #[test]
    fn estimated_requests_are_named_in_the_cost() {
        let mut estimated = row("2026-03-01", "hearth", 3, 0, 0.5);
        estimated.estimated_requests = 2;
        let lines = table(&[estimated], 1);
        assert!(lines[1].ends_with("$0.5000 (2 estimated)"), "{lines:?}");
    }

    #[test]
    fn voice_notes_are_named_in_the_cost() {
        let mut heard = row("2026-03-01", "hearth", 3, 0, 0.5);
        heard.transcriptions = 2;
        heard.transcription_usd = 0.0042;
        let lines = table(&[heard], 1);
        assert!(
            lines[1].ends_with("$0.5000 (2 voice notes $0.0042)"),
            "{lines:?}"
        );
    }

    #[test]
    fn no_requests_say_so() {
        assert_eq!(table(&[], 7), ["no model requests in the last 7 days"]);
        assert_eq!(table(&[], 1), ["no model requests today"]);
    }

    #[test]
    fn a_json_line_carries_the_cached_share() {
        let value: serde_json::Value =
            serde_json::from_str(&json_line(&row("2026-03-01", "hearth", 3, 0, 0.25))).unwrap();
        assert_eq!(value["cached_share"], 0.8);
        assert_eq!(value["requests"], 3);
        assert_eq!(value["cost_usd"], 0.25);
        assert_eq!(value["agent"], "hearth");
    }
}
