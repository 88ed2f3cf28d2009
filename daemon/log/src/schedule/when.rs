//! When a schedule fires, read from what a person types: a time of day
//! (`07:30`, `9am`), a day and a time (`tomorrow 9am`, `monday 8:00`,
//! `today at 18:00`), a span from now (`in 20 minutes`), a full local time
//! (`2026-12-24 18:00`), an RFC 3339 time with its offset, or a 5-field
//! cron expression (`0 9 * * 1-5`).
//!
//! Days and times of day are read in the daemon's time zone (`[agent]
//! timezone`, else the system's). A time of day alone is the next one: today
//! if it is still ahead, else tomorrow; a weekday is the next such day,
//! today included while the time is ahead. A span is exact (`in 2 hours`
//! across a clock change is still 7,200 seconds). A local time that a clock
//! change skips is refused with the reason; one it repeats is the first of
//! the two.

use chrono::{
    DateTime, Datelike, Duration, Local, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc,
    Weekday,
};
use croner::Cron;
use std::str::FromStr;

/// The forms a schedule's time may take, named in every refusal.
const FORMS: &str = "`07:30`, `9am`, `tomorrow 9am`, `monday 8:00`, `in 20 minutes`, \
`2026-12-24 18:00`, or 5 cron fields like `0 9 * * 1-5`";

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("`{spec}` is not a time hearth reads ({why}); give {FORMS}")]
    Unreadable { spec: String, why: String },
    #[error("`{0}` is in the past")]
    Past(String),
    #[error("the cron expression `{0}` never fires")]
    Never(String),
    #[error("{time} does not exist on {date} in this time zone (the clocks go forward then); choose another time")]
    Skipped { date: NaiveDate, time: NaiveTime },
}

/// When a schedule fires.
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    Once(DateTime<Utc>),
    Cron(String),
}

impl When {
    /// Reads `spec` in the daemon's time zone at `now`.
    pub fn parse(spec: &str, now: DateTime<Utc>) -> Result<When, ScheduleError> {
        parse_in(spec, &now.with_timezone(&Local))
    }

    /// The first firing strictly after `after`, in the daemon's time zone;
    /// none when it never fires again.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.next_after_in(&after.with_timezone(&Local))
    }

    /// The first firing strictly after `after`, a cron expression read in
    /// `after`'s time zone.
    pub fn next_after_in<Tz: TimeZone>(&self, after: &DateTime<Tz>) -> Option<DateTime<Utc>> {
        match self {
            When::Once(at) => (*at > after.with_timezone(&Utc)).then_some(*at),
            When::Cron(spec) => {
                let cron = Cron::from_str(spec).ok()?;
                cron.find_next_occurrence(after, false)
                    .ok()
                    .map(|next| next.with_timezone(&Utc))
            }
        }
    }

    /// How the schedule is stored: the cron expression, or the one-off time
    /// as local RFC 3339.
    pub fn spec(&self) -> String {
        match self {
            When::Once(at) => at.with_timezone(&Local).to_rfc3339(),
            When::Cron(spec) => spec.clone(),
        }
    }

    /// A stored schedule's time (see [`When::spec`]).
    pub fn from_stored(spec: &str) -> Option<When> {
        if spec.split_whitespace().count() == 5 {
            Some(When::Cron(spec.to_string()))
        } else {
            DateTime::parse_from_rfc3339(spec)
                .ok()
                .map(|at| When::Once(at.with_timezone(&Utc)))
        }
    }
}

/// Reads `spec` in `now`'s time zone: the one parser behind `hearth
/// schedule add`, the browser's schedules page and the agent's
/// `schedule_add` tool.
pub fn parse_in<Tz: TimeZone>(spec: &str, now: &DateTime<Tz>) -> Result<When, ScheduleError> {
    let spec = spec.trim();
    let unreadable = |why: &str| ScheduleError::Unreadable {
        spec: spec.to_string(),
        why: why.to_string(),
    };
    if spec.is_empty() {
        return Err(unreadable("it is empty"));
    }
    if spec.split_whitespace().count() == 5 {
        Cron::from_str(spec).map_err(|err| unreadable(&format!("as cron: {err}")))?;
        let when = When::Cron(spec.to_string());
        if when.next_after_in(now).is_none() {
            return Err(ScheduleError::Never(spec.to_string()));
        }
        return Ok(when);
    }
    let at = if let Ok(at) = DateTime::parse_from_rfc3339(spec) {
        at.with_timezone(&Utc)
    } else if let Some(naive) = full_local_time(spec) {
        resolve(&now.timezone(), naive)?
    } else {
        let words = spec.to_lowercase();
        let words: Vec<&str> = words
            .split_whitespace()
            .filter(|word| *word != "at")
            .collect();
        match words.as_slice() {
            ["in", span @ ..] => {
                let span = span_of(&span.concat()).ok_or_else(|| {
                    unreadable("a span is a number and a unit, like `in 20 minutes` or `in 2h`")
                })?;
                now.with_timezone(&Utc) + span
            }
            _ => day_and_time(&words, now).ok_or_else(|| unreadable("no day or time in it"))??,
        }
    };
    if at <= now.with_timezone(&Utc) {
        return Err(ScheduleError::Past(spec.to_string()));
    }
    Ok(When::Once(at))
}

/// `2026-12-24 18:00`, with seconds or a `T` as well.
fn full_local_time(spec: &str) -> Option<NaiveDateTime> {
    [
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%dT%H:%M:%S",
    ]
    .iter()
    .find_map(|format| NaiveDateTime::parse_from_str(spec, format).ok())
}

/// The instant of a local time in `zone`: the first of two a clock change
/// repeats, a refusal for one it skips.
fn resolve<Tz: TimeZone>(zone: &Tz, naive: NaiveDateTime) -> Result<DateTime<Utc>, ScheduleError> {
    zone.from_local_datetime(&naive)
        .earliest()
        .map(|at| at.with_timezone(&Utc))
        .ok_or(ScheduleError::Skipped {
            date: naive.date(),
            time: naive.time(),
        })
}

/// `20minutes`, `2h`, `an hour`, `90s`, `3days`, `1week` (the words of a
/// span joined): the exact span.
fn span_of(text: &str) -> Option<Duration> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let count: i64 = match number {
        "" if unit.starts_with("an") => return span_of(&format!("1{}", &unit[2..])),
        "" if unit.starts_with('a') => return span_of(&format!("1{}", &unit[1..])),
        number => number.parse().ok().filter(|n| *n > 0)?,
    };
    let seconds = match unit {
        "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600,
        "d" | "day" | "days" => 86_400,
        "w" | "week" | "weeks" => 604_800,
        _ => return None,
    };
    count.checked_mul(seconds).and_then(Duration::try_seconds)
}

/// A day word and a time of day, either order, or a time of day alone:
/// `None` when the words are not that, a refusal when the time is skipped
/// by a clock change or `today`'s is past.
fn day_and_time<Tz: TimeZone>(
    words: &[&str],
    now: &DateTime<Tz>,
) -> Option<Result<DateTime<Utc>, ScheduleError>> {
    // `9 am` is one word: `9am`.
    if let Some(half) = words.iter().position(|w| *w == "am" || *w == "pm") {
        if half > 0 {
            let mut joined: Vec<String> = words.iter().map(|w| w.to_string()).collect();
            let suffix = joined.remove(half);
            joined[half - 1].push_str(&suffix);
            let joined: Vec<&str> = joined.iter().map(String::as_str).collect();
            return day_and_time(&joined, now);
        }
    }
    let (day, time) = match words {
        [one] => (None, time_of_day(one)?),
        [first, second] => match (time_of_day(first), time_of_day(second)) {
            (Some(time), None) => (Some(*second), time),
            (None, Some(time)) => (Some(*first), time),
            _ => return None,
        },
        _ => return None,
    };
    let today = now.date_naive();
    let at = |date: NaiveDate| resolve(&now.timezone(), date.and_time(time));
    let ahead = |date: NaiveDate| {
        // A skipped time is not ahead: the next day's is taken.
        at(date).is_ok_and(|at| at > now.with_timezone(&Utc))
    };
    let date = match day {
        None if ahead(today) => today,
        None => today.succ_opt()?,
        Some("today") => today,
        Some("tomorrow") => today.succ_opt()?,
        Some(word) => {
            let weekday = weekday(word)?;
            let mut date = today;
            while date.weekday() != weekday || (date == today && !ahead(today)) {
                date = date.succ_opt()?;
            }
            date
        }
    };
    Some(at(date))
}

/// `07:30`, `7:30`, `9am`, `9:30pm`, `12am` (midnight), `noon`, `midnight`.
fn time_of_day(word: &str) -> Option<NaiveTime> {
    match word {
        "noon" => return NaiveTime::from_hms_opt(12, 0, 0),
        "midnight" => return NaiveTime::from_hms_opt(0, 0, 0),
        _ => {}
    }
    let (clock, half) = match word.strip_suffix("am") {
        Some(clock) => (clock, Some(0)),
        None => match word.strip_suffix("pm") {
            Some(clock) => (clock, Some(12)),
            None => (word, None),
        },
    };
    let (hour, minute) = match clock.split_once(':') {
        Some((hour, minute)) if minute.len() == 2 => (hour, minute),
        Some(_) => return None,
        // A bare number is an hour only with am or pm.
        None if half.is_some() => (clock, "00"),
        None => return None,
    };
    if hour.is_empty() || hour.len() > 2 || !hour.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (hour, minute): (u32, u32) = (hour.parse().ok()?, minute.parse().ok()?);
    let hour = match half {
        Some(offset) if (1..=12).contains(&hour) => hour % 12 + offset,
        Some(_) => return None,
        None => hour,
    };
    NaiveTime::from_hms_opt(hour, minute, 0)
}

/// `monday`, `mon`, … `sunday`, `sun`.
fn weekday(word: &str) -> Option<Weekday> {
    let days = [
        ("monday", Weekday::Mon),
        ("tuesday", Weekday::Tue),
        ("wednesday", Weekday::Wed),
        ("thursday", Weekday::Thu),
        ("friday", Weekday::Fri),
        ("saturday", Weekday::Sat),
        ("sunday", Weekday::Sun),
    ];
    days.iter()
        .find(|(name, _)| *name == word || (word.len() >= 3 && name.starts_with(word)))
        .map(|(_, day)| *day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{FixedOffset, MappedLocalTime, NaiveDate};

    /// Central European time in 2026, as Europe/Paris keeps it: UTC+1, and
    /// UTC+2 from 29 March 01:00 UTC (02:00 local becomes 03:00) to
    /// 25 October 01:00 UTC (03:00 local becomes 02:00 again).
    #[derive(Debug, Clone, Copy)]
    struct Paris;

    fn hours(n: i32) -> FixedOffset {
        FixedOffset::east_opt(n * 3_600).unwrap()
    }

    fn utc(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M").unwrap()
    }

    impl TimeZone for Paris {
        type Offset = FixedOffset;

        fn from_offset(_: &FixedOffset) -> Paris {
            Paris
        }

        fn offset_from_local_date(&self, local: &NaiveDate) -> MappedLocalTime<FixedOffset> {
            self.offset_from_local_datetime(&local.and_hms_opt(12, 0, 0).unwrap())
        }

        fn offset_from_local_datetime(
            &self,
            local: &NaiveDateTime,
        ) -> MappedLocalTime<FixedOffset> {
            let fits = |offset: FixedOffset| {
                let instant = *local - Duration::seconds(offset.local_minus_utc().into());
                self.offset_from_utc_datetime(&instant) == offset
            };
            match (fits(hours(2)), fits(hours(1))) {
                (true, true) => MappedLocalTime::Ambiguous(hours(2), hours(1)),
                (true, false) => MappedLocalTime::Single(hours(2)),
                (false, true) => MappedLocalTime::Single(hours(1)),
                (false, false) => MappedLocalTime::None,
            }
        }

        fn offset_from_utc_date(&self, utc: &NaiveDate) -> FixedOffset {
            self.offset_from_utc_datetime(&utc.and_hms_opt(12, 0, 0).unwrap())
        }

        fn offset_from_utc_datetime(&self, at: &NaiveDateTime) -> FixedOffset {
            let summer = utc("2026-03-29 01:00")..utc("2026-10-25 01:00");
            if summer.contains(at) {
                hours(2)
            } else {
                hours(1)
            }
        }
    }

    /// `local` (`YYYY-MM-DD HH:MM`, one that exists) in Paris.
    fn paris(local: &str) -> DateTime<Paris> {
        Paris.from_local_datetime(&utc(local)).earliest().unwrap()
    }

    /// What `spec` reads as at `now`, as a Paris time `YYYY-MM-DD HH:MM +HH:MM`.
    fn read(spec: &str, now: &str) -> Result<String, ScheduleError> {
        match parse_in(spec, &paris(now))? {
            When::Once(at) => Ok(at
                .with_timezone(&Paris)
                .format("%Y-%m-%d %H:%M %:z")
                .to_string()),
            When::Cron(spec) => Ok(format!("cron {spec}")),
        }
    }

    #[test]
    fn the_forms_a_person_types_read_as_times_in_the_zone() {
        // 2026-12-01 is a Tuesday.
        let now = "2026-12-01 10:00";
        let table = [
            ("07:30", "2026-12-02 07:30 +01:00"),
            ("10:30", "2026-12-01 10:30 +01:00"),
            ("7:05", "2026-12-02 07:05 +01:00"),
            ("9am", "2026-12-02 09:00 +01:00"),
            ("9 PM", "2026-12-01 21:00 +01:00"),
            ("12am", "2026-12-02 00:00 +01:00"),
            ("12pm", "2026-12-01 12:00 +01:00"),
            ("noon", "2026-12-01 12:00 +01:00"),
            ("midnight", "2026-12-02 00:00 +01:00"),
            ("tomorrow 9am", "2026-12-02 09:00 +01:00"),
            ("Tomorrow at 9:30 pm", "2026-12-02 21:30 +01:00"),
            ("9am tomorrow", "2026-12-02 09:00 +01:00"),
            ("today 18:00", "2026-12-01 18:00 +01:00"),
            ("monday 8:00", "2026-12-07 08:00 +01:00"),
            ("wed 8:00", "2026-12-02 08:00 +01:00"),
            ("tuesday 11:00", "2026-12-01 11:00 +01:00"),
            ("tuesday 09:00", "2026-12-08 09:00 +01:00"),
            ("in 20 minutes", "2026-12-01 10:20 +01:00"),
            ("in 2h", "2026-12-01 12:00 +01:00"),
            ("in an hour", "2026-12-01 11:00 +01:00"),
            ("in 90 s", "2026-12-01 10:01 +01:00"),
            ("in 3 days", "2026-12-04 10:00 +01:00"),
            ("in 1 week", "2026-12-08 10:00 +01:00"),
            ("2026-12-24 18:00", "2026-12-24 18:00 +01:00"),
            ("2026-12-24T18:00:30", "2026-12-24 18:00 +01:00"),
            ("2026-12-24T17:00:00Z", "2026-12-24 18:00 +01:00"),
            ("0 9 * * 1-5", "cron 0 9 * * 1-5"),
        ];
        for (spec, expected) in table {
            assert_eq!(read(spec, now).as_deref(), Ok(expected), "{spec}");
        }
    }

    #[test]
    fn clock_changes_skip_and_repeat_local_times() {
        // The night the clocks go forward: 02:30 does not exist.
        let eve = "2026-03-28 20:00";
        let skipped = read("tomorrow 02:30", eve).unwrap_err();
        assert!(
            matches!(skipped, ScheduleError::Skipped { .. }),
            "{skipped}"
        );
        assert!(skipped.to_string().contains("does not exist on 2026-03-29"));
        assert!(read("2026-03-29 02:30", eve).is_err());
        // A time of day alone that is skipped tonight is tomorrow night's.
        assert_eq!(
            read("02:30", "2026-03-29 01:00").as_deref(),
            Ok("2026-03-30 02:30 +02:00")
        );
        // The same wall time the next day, 23 hours later; a span stays exact.
        assert_eq!(
            read("tomorrow 9am", eve).as_deref(),
            Ok("2026-03-29 09:00 +02:00")
        );
        assert_eq!(
            read("in 2 hours", "2026-03-29 01:30").as_deref(),
            Ok("2026-03-29 04:30 +02:00")
        );
        // The night they go back: 02:30 comes twice; the first is taken.
        assert_eq!(
            read("tomorrow 02:30", "2026-10-24 20:00").as_deref(),
            Ok("2026-10-25 02:30 +02:00")
        );
        assert_eq!(
            read("in 1 hour", "2026-10-25 02:30").as_deref(),
            Ok("2026-10-25 02:30 +01:00")
        );
        // Cron runs on local time across the change.
        let when = parse_in("0 9 * * *", &paris(eve)).unwrap();
        let next = when.next_after_in(&paris(eve)).unwrap();
        assert_eq!(
            next.with_timezone(&Paris)
                .format("%d %H:%M %:z")
                .to_string(),
            "29 09:00 +02:00"
        );
    }

    #[test]
    fn what_cannot_be_read_or_is_past_is_refused_with_the_forms() {
        let now = "2026-12-01 10:00";
        for spec in [
            "",
            "tomorrow-ish",
            "25:00",
            "7:5",
            "13pm",
            "0am",
            "9",
            "in minutes",
            "in 0 minutes",
            "in -5 minutes",
            "in 5 fortnights",
            "someday 9am",
            "tomorrow",
            "monday",
            "tomorrow monday",
            "9am 10am",
            "61 9 * * *",
        ] {
            let err = read(spec, now).unwrap_err();
            assert!(
                matches!(err, ScheduleError::Unreadable { .. }),
                "{spec}: {err:?}"
            );
            assert!(err.to_string().contains("tomorrow 9am"), "{spec}: {err}");
        }
        for spec in ["today 09:00", "2020-01-01 09:00", "2026-12-01T08:00:00Z"] {
            assert!(
                matches!(read(spec, now), Err(ScheduleError::Past(_))),
                "{spec}"
            );
        }
        assert!(matches!(
            read("0 0 31 2 *", now),
            Err(ScheduleError::Never(_))
        ));
    }

    #[test]
    fn a_stored_time_reads_back() {
        let at = Utc.with_ymd_and_hms(2026, 12, 24, 17, 0, 0).unwrap();
        assert_eq!(
            When::from_stored(&When::Once(at).spec()),
            Some(When::Once(at))
        );
        let cron = When::Cron("0 9 * * 1-5".into());
        assert_eq!(When::from_stored(&cron.spec()), Some(cron));
    }
}
