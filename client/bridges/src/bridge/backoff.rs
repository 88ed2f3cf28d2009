//! Waits between attempts after failures (pure).

use std::time::Duration;

/// 1 s, doubling up to a minute; back to 1 s after a success.
#[derive(Debug, Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    const LONGEST: Duration = Duration::from_secs(60);

    /// The wait before the next attempt; each call waits longer.
    pub fn next_wait(&mut self) -> Duration {
        let wait = Duration::from_secs(1u64 << self.failures.min(6)).min(Backoff::LONGEST);
        self.failures = self.failures.saturating_add(1);
        wait
    }

    /// After a success, the next failure waits briefly again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_minute_and_resets() {
        let mut backoff = Backoff::default();
        let waits: Vec<u64> = (0..8).map(|_| backoff.next_wait().as_secs()).collect();
        assert_eq!(waits, vec![1, 2, 4, 8, 16, 32, 60, 60]);
        backoff.reset();
        assert_eq!(backoff.next_wait(), Duration::from_secs(1));
    }
}
