//! What child processes write on stderr (stdio MCP servers, the bridges),
//! copied into the daemon's log within bounds, so that no child can flood
//! `hearthd.log` or the daemon's memory.
//!
//! - A line is cut at [`MAX_LINE`] bytes; the rest of it is read and
//!   dropped as it comes, never held.
//! - Each child has two token buckets, kept across its restarts: lines (a
//!   burst of [`LINES_BURST`], then [`LINES_PER_SEC`] a second) and bytes (a
//!   burst of [`BYTES_BURST`], then [`BYTES_PER_HOUR`] an hour, the total a
//!   child may add to the log). A line that finds either empty is dropped
//!   and counted; the next line logged, or the end of the output, says how
//!   many were (or, when the child falls silent, a note within a second of
//!   the buckets' next room).
//! - The child's last line is kept whatever was dropped: it is the one a
//!   failure names.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// The longest line copied into the log, in bytes.
pub const MAX_LINE: usize = 1024;
/// Lines a child may write at once before the rate applies.
pub const LINES_BURST: f64 = 200.0;
/// Lines a second a child may write, past its burst.
pub const LINES_PER_SEC: f64 = 10.0;
/// Bytes a child may write at once before the hourly rate applies.
pub const BYTES_BURST: f64 = 1024.0 * 1024.0;
/// Bytes an hour a child may add to the log, past its burst.
pub const BYTES_PER_HOUR: f64 = 1024.0 * 1024.0;

/// How long a copy waits for more output before it notes lines it dropped.
const NOTE_AFTER: Duration = Duration::from_secs(1);
/// About the bytes of the note, charged to the byte bucket.
const NOTE_BYTES: usize = 120;

/// A token bucket: `capacity` tokens, refilled at `per_sec`.
#[derive(Debug)]
struct Bucket {
    level: f64,
    capacity: f64,
    per_sec: f64,
    at: Instant,
}

impl Bucket {
    fn new(capacity: f64, per_sec: f64, now: Instant) -> Bucket {
        Bucket {
            level: capacity,
            capacity,
            per_sec,
            at: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let secs = now.saturating_duration_since(self.at).as_secs_f64();
        self.level = (self.level + secs * self.per_sec).min(self.capacity);
        self.at = now;
    }

    fn holds(&self, amount: f64) -> bool {
        self.level >= amount
    }

    fn take(&mut self, amount: f64) {
        self.level -= amount;
    }
}

/// Whether one line may be logged (pure: the clock is given).
#[derive(Debug)]
pub struct Limiter {
    lines: Bucket,
    bytes: Bucket,
    /// Lines dropped since the last one logged.
    dropped: u64,
}

/// What to do with one line.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Log it; `dropped` lines were dropped before it.
    Log { dropped: u64 },
    /// Drop it (counted).
    Drop,
}

impl Limiter {
    pub fn new(now: Instant) -> Limiter {
        Limiter {
            lines: Bucket::new(LINES_BURST, LINES_PER_SEC, now),
            bytes: Bucket::new(BYTES_BURST, BYTES_PER_HOUR / 3600.0, now),
            dropped: 0,
        }
    }

    /// Whether a line of `bytes` (as logged) may be logged at `now`.
    pub fn admit(&mut self, bytes: usize, now: Instant) -> Verdict {
        self.lines.refill(now);
        self.bytes.refill(now);
        let bytes = bytes as f64;
        if self.lines.holds(1.0) && self.bytes.holds(bytes) {
            self.lines.take(1.0);
            self.bytes.take(bytes);
            Verdict::Log {
                dropped: std::mem::take(&mut self.dropped),
            }
        } else {
            self.dropped += 1;
            Verdict::Drop
        }
    }

    /// The lines dropped since the last one logged, now counted as told.
    pub fn take_dropped(&mut self) -> u64 {
        std::mem::take(&mut self.dropped)
    }

    /// Lines were dropped and no line came since: the count, when the
    /// buckets have room for a note saying so (`bytes` long).
    pub fn note(&mut self, bytes: usize, now: Instant) -> Option<u64> {
        self.lines.refill(now);
        self.bytes.refill(now);
        let bytes = bytes as f64;
        if self.dropped == 0 || !self.lines.holds(1.0) || !self.bytes.holds(bytes) {
            return None;
        }
        self.lines.take(1.0);
        self.bytes.take(bytes);
        Some(self.take_dropped())
    }

    fn dropping(&self) -> bool {
        self.dropped > 0
    }
}

/// One configured child's stderr, as the daemon's log shows it: `label`
/// names it on every line. Cheap to clone; clones share the buckets, so a
/// child that restarts does not start with a fresh burst.
#[derive(Clone)]
pub struct ChildLog {
    label: Arc<str>,
    limiter: Arc<Mutex<Limiter>>,
}

impl ChildLog {
    pub fn new(label: impl Into<Arc<str>>) -> ChildLog {
        ChildLog {
            label: label.into(),
            limiter: Arc::new(Mutex::new(Limiter::new(Instant::now()))),
        }
    }

    fn limiter(&self) -> std::sync::MutexGuard<'_, Limiter> {
        // Each change is a few assignments; a panic cannot leave half of one.
        self.limiter.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Copies `source` into the log until it ends, within the bounds; puts
    /// each non-empty line (cut) in `last`.
    pub async fn copy(&self, source: impl AsyncRead + Unpin, last: &Mutex<Option<String>>) {
        let mut reader = BufReader::new(source);
        let mut line = Vec::with_capacity(256);
        // The line's whole length, with what was cut.
        let mut length = 0usize;
        loop {
            // While lines are dropped, the note comes within a second of a
            // token, even if the child says nothing more.
            let dropping = self.limiter().dropping();
            let read = if dropping {
                tokio::time::timeout(NOTE_AFTER, reader.fill_buf()).await
            } else {
                Ok(reader.fill_buf().await)
            };
            let buffer = match read {
                Err(_waited) => {
                    if let Some(dropped) = self.limiter().note(NOTE_BYTES, Instant::now()) {
                        self.dropped(dropped);
                    }
                    continue;
                }
                Ok(Ok(buffer)) => buffer,
                Ok(Err(_)) => break,
            };
            if buffer.is_empty() {
                break;
            }
            let end = buffer.iter().position(|byte| *byte == b'\n');
            let chunk = &buffer[..end.unwrap_or(buffer.len())];
            let room = MAX_LINE.saturating_sub(line.len());
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            length += chunk.len();
            let used = chunk.len() + usize::from(end.is_some());
            reader.consume(used);
            if end.is_some() {
                self.line(&line, length, last);
                line.clear();
                length = 0;
            }
        }
        if length > 0 {
            self.line(&line, length, last);
        }
        let dropped = self.limiter().take_dropped();
        if dropped > 0 {
            self.dropped(dropped);
        }
    }

    fn dropped(&self, lines: u64) {
        tracing::warn!(
            target: "hearthd::child",
            "{}: {lines} line(s) not logged: it wrote faster than hearthd logs a child's output",
            self.label
        );
    }

    /// Logs one line (`kept` of its `length` bytes), if the buckets allow.
    fn line(&self, kept: &[u8], length: usize, last: &Mutex<Option<String>>) {
        let text = String::from_utf8_lossy(kept);
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        let cut = length - kept.len();
        let shown = if cut > 0 {
            format!("{text}… ({cut} more bytes not logged)")
        } else {
            text.to_string()
        };
        let verdict = self.limiter().admit(shown.len(), Instant::now());
        if let Verdict::Log { dropped } = verdict {
            if dropped > 0 {
                self.dropped(dropped);
            }
            tracing::info!(target: "hearthd::child", "{}: {shown}", self.label);
        }
        *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(shown);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_holds_and_drops_are_counted() {
        let start = Instant::now();
        let mut limiter = Limiter::new(start);
        for _ in 0..LINES_BURST as usize {
            assert_eq!(limiter.admit(10, start), Verdict::Log { dropped: 0 });
        }
        for _ in 0..50 {
            assert_eq!(limiter.admit(10, start), Verdict::Drop);
        }
        // A second later, ten lines more pass; the first says what was dropped.
        let later = start + Duration::from_secs(1);
        assert_eq!(limiter.admit(10, later), Verdict::Log { dropped: 50 });
        for _ in 1..LINES_PER_SEC as usize {
            assert_eq!(limiter.admit(10, later), Verdict::Log { dropped: 0 });
        }
        assert_eq!(limiter.admit(10, later), Verdict::Drop);
    }

    #[test]
    fn the_bytes_a_child_adds_are_capped_per_hour() {
        let start = Instant::now();
        let mut limiter = Limiter::new(start);
        let mut logged = 0usize;
        // A line a second for a day, each as long as a line may be.
        for second in 0..86_400u64 {
            let now = start + Duration::from_secs(second);
            if let Verdict::Log { .. } = limiter.admit(MAX_LINE, now) {
                logged += MAX_LINE;
            }
        }
        let most = BYTES_BURST + BYTES_PER_HOUR * 24.0 + MAX_LINE as f64;
        assert!(logged as f64 <= most, "{logged} > {most}");
        assert!(logged as f64 >= BYTES_PER_HOUR * 24.0, "{logged}");
    }

    #[tokio::test]
    async fn long_lines_are_cut_and_the_last_line_is_kept() {
        let mut text = vec![b'a'; 10 * MAX_LINE];
        text.extend_from_slice(b"\n\nfirst\nlast words");
        let last = Mutex::new(None);
        ChildLog::new("test").copy(&text[..], &last).await;
        assert_eq!(last.lock().unwrap().as_deref(), Some("last words"));
        let text = vec![b'b'; 5 * MAX_LINE];
        ChildLog::new("test").copy(&text[..], &last).await;
        let kept = last.lock().unwrap().clone().unwrap();
        assert!(kept.starts_with(&"b".repeat(MAX_LINE)), "{kept}");
        assert!(kept.ends_with(&format!("({} more bytes not logged)", 4 * MAX_LINE)));
    }
}
