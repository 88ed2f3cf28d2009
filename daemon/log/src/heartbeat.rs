//! The heartbeat: an optional checklist, `agents/NAME/HEARTBEAT.md`, that
//! the agent reviews on a schedule (`[heartbeat] every`), off by default.
//!
//! The rule ([`Heartbeat::next`], pure): a beat is due `every` after the
//! last one (or after the start), and fires only
//!
//! - when the agent is idle: its loop looks only between turns, with no
//!   message waiting;
//! - while the provider's cache still holds the prefix: within `within`
//!   after a turn ended (a real one, or a beat's). A beat that comes due
//!   later waits for the next real turn and fires right after it. So an
//!   agent no one talks to costs nothing overnight; a beat costs a turn on
//!   a warm cache.
//!
//! Beats missed meanwhile (a sleep, a long turn, a quiet night) are one
//! beat: the next is counted from when it fired. A beat is a `user`
//! message from the source `heartbeat` carrying the checklist; its turn is
//! metered and refused by the budget like any other. An answer that is
//! exactly [`QUIET`] (the prompt asks for it when nothing needs doing) is
//! logged with the status `quiet`, which no bridge sends.

use hearth_protocol::Kind;
use serde::Deserialize;
use std::path::Path;
use std::time::Duration;
use tokio::time::Instant;

/// The answer that means "nothing to do".
pub const QUIET: &str = "HEARTBEAT_OK";

/// The checklist's file in the agent's folder.
pub const FILE: &str = "HEARTBEAT.md";

/// The source of a beat's message.
pub const SOURCE: &str = "heartbeat";

/// The most bytes of the checklist sent.
pub const MAX_CHECKLIST: usize = 16 * 1024;

/// `[heartbeat]`: how often the checklist is reviewed, and how long after a
/// turn the provider's cache is counted on.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatConfig {
    /// `30m`, `2h`, `90s`: a number and a unit (s, m, h).
    pub every: String,
    /// How long after a turn a beat may still fire, the prefix still
    /// cached: 5 minutes (the providers' shortest cache) unless set.
    #[serde(default = "default_within")]
    pub within: String,
}

fn default_within() -> String {
    "5m".to_string()
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "[heartbeat] {key} = \"{value}\" is not a duration: write a number and s, m or h (\"30m\")"
)]
pub struct DurationError {
    key: &'static str,
    value: String,
}

impl HeartbeatConfig {
    /// `every` and `within`, or which one is not a duration.
    pub fn durations(&self) -> Result<(Duration, Duration), DurationError> {
        let read = |key, value: &str| {
            duration(value).ok_or_else(|| DurationError {
                key,
                value: value.to_string(),
            })
        };
        Ok((read("every", &self.every)?, read("within", &self.within)?))
    }
}

/// `90s`, `30m`, `2h` as a duration; none for anything else or zero.
pub fn duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let unit = text.chars().last()?;
    let number: u64 = text[..text.len() - unit.len_utf8()].trim().parse().ok()?;
    let seconds = match unit {
        's' => number,
        'm' => number.checked_mul(60)?,
        'h' => number.checked_mul(3600)?,
        _ => return None,
    };
    (seconds > 0).then(|| Duration::from_secs(seconds))
}

/// One agent's heartbeat: when the last beat fired and the last turn ended.
#[derive(Debug, Clone)]
pub struct Heartbeat {
    every: Duration,
    within: Duration,
    /// The last beat, or the start.
    last_beat: Instant,
    /// None until a turn ends: at a start the cache is cold.
    last_turn: Option<Instant>,
}

impl Heartbeat {
    pub fn new(every: Duration, within: Duration, now: Instant) -> Heartbeat {
        Heartbeat {
            every,
            within,
            last_beat: now,
            last_turn: None,
        }
    }

    /// When the next beat fires, if one can before another turn: the
    /// first moment it is due and a turn ended at most `within` before.
    pub fn next(&self) -> Option<Instant> {
        let due = self.last_beat + self.every;
        let ended = self.last_turn?;
        let at = due.max(ended);
        (at <= ended + self.within).then_some(at)
    }

    /// Whether a beat fires at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.next().is_some_and(|at| at <= now)
    }

    /// A beat fired at `now`: however many were missed, the next is
    /// counted from here.
    pub fn fired(&mut self, now: Instant) {
        self.last_beat = now;
    }

    /// A turn ended at `now`: the cache holds the prefix for `within`.
    pub fn turn_ended(&mut self, now: Instant) {
        self.last_turn = Some(now);
    }
}

/// The beat's message for the checklist in `agent_dir`; none when there is
/// no checklist or it is empty (nothing to review, no turn spent).
pub fn message(agent_dir: &Path) -> Option<crate::log::NewMessage> {
    let text = std::fs::read_to_string(agent_dir.join(FILE)).ok()?;
    let mut checklist = text.trim().to_string();
    if checklist.is_empty() {
        return None;
    }
    if checklist.len() > MAX_CHECKLIST {
        let mut end = MAX_CHECKLIST;
        while !checklist.is_char_boundary(end) {
            end -= 1;
        }
        checklist.truncate(end);
        checklist.push_str("\n[the checklist is cut here]");
    }
    let text = format!(
        "Heartbeat: review your checklist ({FILE}) and do what is due.\n\n{checklist}\n\n\
         If nothing needs doing or telling, answer exactly {QUIET} and nothing else: that \
         answer is logged quietly and sent to no one."
    );
    Some(crate::log::NewMessage::new(Kind::User, SOURCE, text))
}

/// Whether a reply is the quiet answer.
pub fn is_quiet(reply: &str) -> bool {
    reply.trim() == QUIET
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn durations_are_a_number_and_a_unit() {
        assert_eq!(duration("30m"), Some(30 * MINUTE));
        assert_eq!(duration("2h"), Some(120 * MINUTE));
        assert_eq!(duration(" 90s "), Some(Duration::from_secs(90)));
        for bad in ["", "m", "0m", "30", "3d", "-1m", "1.5h"] {
            assert_eq!(duration(bad), None, "{bad}");
        }
        let config = HeartbeatConfig {
            every: "soon".into(),
            within: default_within(),
        };
        assert_eq!(
            config.durations().unwrap_err().to_string(),
            "[heartbeat] every = \"soon\" is not a duration: write a number and s, m or h (\"30m\")"
        );
    }

    #[test]
    fn a_beat_waits_for_a_warm_cache_and_fires_only_within_it() {
        let start = Instant::now();
        let mut beat = Heartbeat::new(30 * MINUTE, 5 * MINUTE, start);
        // No turn yet: the cache is cold, nothing fires.
        assert_eq!(beat.next(), None);
        // A turn ended 28 minutes in: due at 30, within its 5 minutes.
        beat.turn_ended(start + 28 * MINUTE);
        assert_eq!(beat.next(), Some(start + 30 * MINUTE));
        assert!(!beat.due(start + 29 * MINUTE));
        assert!(beat.due(start + 30 * MINUTE));
        // A turn 10 minutes in: due at 30 is past its cache; wait.
        beat.turn_ended(start + 10 * MINUTE);
        assert_eq!(beat.next(), None);
    }

    #[test]
    fn beats_missed_in_a_sleep_are_one_and_the_next_counts_from_it() {
        let start = Instant::now();
        let mut beat = Heartbeat::new(30 * MINUTE, 5 * MINUTE, start);
        // A night without turns: ten beats' worth, none fired.
        let morning = start + 300 * MINUTE;
        beat.turn_ended(morning);
        // The first turn of the morning brings one beat, at once.
        assert_eq!(beat.next(), Some(morning));
        beat.fired(morning);
        beat.turn_ended(morning + MINUTE);
        // The next is counted from it, and needs a warm cache again.
        assert_eq!(beat.next(), None);
        beat.turn_ended(morning + 29 * MINUTE);
        assert_eq!(beat.next(), Some(morning + 30 * MINUTE));
    }

    #[test]
    fn the_checklist_becomes_a_beat_and_only_the_exact_answer_is_quiet() {
        let dir = tempfile::tempdir().unwrap();
        assert!(message(dir.path()).is_none());
        std::fs::write(dir.path().join(FILE), "  \n").unwrap();
        assert!(message(dir.path()).is_none());
        std::fs::write(dir.path().join(FILE), "- water the plants\n").unwrap();
        let beat = message(dir.path()).unwrap();
        assert_eq!(beat.source, SOURCE);
        assert!(beat
            .text
            .contains("- water the plants\n\nIf nothing needs doing"));
        assert!(is_quiet(" HEARTBEAT_OK\n"));
        assert!(!is_quiet("HEARTBEAT_OK, but the plants need water"));
    }
}
