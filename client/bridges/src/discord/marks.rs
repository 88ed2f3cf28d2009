//! How far the bridge has read each of its chats: the id of the newest
//! message taken in each direct-message channel and in the allowlisted
//! channel, stored in the daemon, so the messages written while the bridge
//! was away can be read from Discord when it is back (the Gateway does not
//! replay them) and none is taken twice (pure).
//!
//! Discord's ids (snowflakes) grow with time, so "after the mark" is
//! "written since".

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The newest message taken in each channel the bridge reads back.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReadMarks {
    stored: Stored,
    /// Channels whose catch-up stopped short (Discord did not answer), with
    /// the messages the Gateway brought in them since: their mark stays
    /// where it was, since what came after it is not all read, until a
    /// catch-up reaches the end. In memory only: the next run reads from
    /// the stored mark again.
    behind: BTreeMap<u64, BTreeSet<u64>>,
}

/// What is stored: channel id → the newest message id taken, direct
/// messages apart from the server channel (whose messages read back from
/// Discord do not say they are a server's).
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stored {
    #[serde(default)]
    direct: BTreeMap<u64, u64>,
    #[serde(default)]
    channel: BTreeMap<u64, u64>,
}

impl ReadMarks {
    /// Reads the stored marks (a JSON object); `None` when unreadable.
    pub fn parse(text: &str) -> Option<ReadMarks> {
        let stored = serde_json::from_str(text).ok()?;
        Some(ReadMarks {
            stored,
            behind: BTreeMap::new(),
        })
    }

    /// What to store.
    pub fn encode(&self) -> String {
        // Maps of numbers always serialize.
        serde_json::to_string(&self.stored).unwrap_or_default()
    }

    /// Forgets the marks of server channels other than `channel` (the
    /// allowlisted one now): one allowlisted again later starts afresh
    /// rather than with everything written there since.
    pub fn keep_channel(&mut self, channel: Option<u64>) {
        self.stored.channel.retain(|id, _| Some(*id) == channel);
    }

    /// The channels to read back, each with its mark: every direct-message
    /// channel written from and the allowlisted channel, once read. A
    /// channel never read has no mark and is not read back.
    pub fn channels(&self) -> Vec<(u64, u64)> {
        let direct = self.stored.direct.iter();
        direct
            .chain(&self.stored.channel)
            .map(|(channel, newest)| (*channel, *newest))
            .collect()
    }

    /// Whether message `id` in `channel` was taken already.
    pub fn taken(&self, channel: u64, id: u64) -> bool {
        let marked = [&self.stored.direct, &self.stored.channel]
            .iter()
            .any(|marks| marks.get(&channel).is_some_and(|newest| id <= *newest));
        marked
            || self
                .behind
                .get(&channel)
                .is_some_and(|taken| taken.contains(&id))
    }

    /// Whether `channel`'s last catch-up stopped short.
    pub fn is_behind(&self, channel: u64) -> bool {
        self.behind.contains_key(&channel)
    }

    /// `channel`'s catch-up stopped short: its mark waits.
    pub fn fell_behind(&mut self, channel: u64) {
        self.behind.entry(channel).or_default();
    }

    /// `channel`'s catch-up read to the end.
    pub fn caught_up(&mut self, channel: u64) {
        self.behind.remove(&channel);
    }

    /// Message `id` in `channel` (a direct-message channel when `direct`)
    /// was taken: the mark moves to it, unless the channel is behind, when
    /// it is only remembered as taken. Returns whether the stored marks
    /// changed and are to be stored again.
    pub fn took(&mut self, channel: u64, direct: bool, id: u64) -> bool {
        if let Some(taken) = self.behind.get_mut(&channel) {
            taken.insert(id);
            return false;
        }
        self.moved(channel, direct, id)
    }

    /// Message `id` was the newest a catch-up of `channel` read, whatever
    /// was done with it (the bot's own replies are not taken, and need not
    /// be read again). Returns whether the stored marks changed.
    pub fn read_to(&mut self, channel: u64, id: u64) -> bool {
        let direct = self.stored.direct.contains_key(&channel);
        self.moved(channel, direct, id)
    }

    fn moved(&mut self, channel: u64, direct: bool, id: u64) -> bool {
        let marks = match direct {
            true => &mut self.stored.direct,
            false => &mut self.stored.channel,
        };
        let newest = marks.entry(channel).or_insert(0);
        if id <= *newest {
            return false;
        }
        *newest = id;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_stored_per_channel_and_read_back() {
        let mut marks = ReadMarks::default();
        assert!(marks.channels().is_empty(), "nothing read back at first");
        assert!(marks.took(10, true, 100));
        assert!(marks.took(20, false, 200));
        assert!(!marks.took(10, true, 90), "an older one moves nothing");
        let stored = marks.encode();
        assert_eq!(stored, r#"{"direct":{"10":100},"channel":{"20":200}}"#);
        let read = ReadMarks::parse(&stored).unwrap();
        assert_eq!(read, marks);
        assert_eq!(read.channels(), vec![(10, 100), (20, 200)]);
        assert!(read.taken(10, 100) && read.taken(10, 99) && !read.taken(10, 101));
        assert!(!read.taken(30, 1), "a channel never read took nothing");
        assert_eq!(ReadMarks::parse("nope"), None);
    }

    #[test]
    fn a_channel_allowlisted_no_more_is_forgotten() {
        let mut marks = ReadMarks::default();
        marks.took(10, true, 100);
        marks.took(20, false, 200);
        marks.keep_channel(Some(30));
        assert_eq!(marks.channels(), vec![(10, 100)]);
    }

    #[test]
    fn a_channel_behind_keeps_its_mark_and_what_the_gateway_brought() {
        let mut marks = ReadMarks::default();
        marks.took(10, true, 100);
        marks.fell_behind(10);
        assert!(!marks.took(10, true, 150), "the mark waits");
        assert!(marks.taken(10, 150), "but 150 is not taken twice");
        assert!(
            !marks.taken(10, 120),
            "and what came before it is still to read"
        );
        assert_eq!(marks.channels(), vec![(10, 100)]);
        marks.caught_up(10);
        assert!(marks.read_to(10, 160));
        assert_eq!(marks.channels(), vec![(10, 160)]);
    }
}
