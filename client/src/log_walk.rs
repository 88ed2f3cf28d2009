//! Reading the log backwards in `history` pages: [`LogWalk`], the pure
//! arithmetic of which page comes next, and [`walk_log`], which runs it over
//! a connection.

use crate::connection::Connection;
use crate::running::CommandError;
use hearth_protocol::{ClientFrame, Message, ServerFrame};

/// The most messages asked for in one `history` page; longer walks take
/// several pages.
pub const PAGE: u32 = 500;

/// Runs a [`LogWalk`] over the connection: asks for pages until it is done.
pub async fn walk_log(
    connection: &mut Connection,
    mut walk: LogWalk,
) -> Result<Vec<Message>, CommandError> {
    while let Some((before, limit)) = walk.next_page() {
        let answer = connection
            .request(
                &ClientFrame::History {
                    before,
                    limit: Some(limit),
                },
                &mut |_| {},
            )
            .await?;
        match answer {
            ServerFrame::History { messages } => walk.take_page(messages),
            ServerFrame::Error { message, .. } => return Err(CommandError::Refused(message)),
            other => return Err(CommandError::Unexpected(other.encode())),
        }
    }
    Ok(walk.into_messages())
}

/// A walk backwards through the log in `history` pages, from the newest
/// message until it has `limit` messages or reaches `since`. Pure: the caller
/// asks for each page it names and hands the answer back.
#[derive(Debug)]
pub struct LogWalk {
    since: Option<u64>,
    limit: Option<u32>,
    /// Pages taken so far, newest page first, each oldest first and already
    /// cut to ids after `since`.
    pages: Vec<Vec<Message>>,
    collected: usize,
    /// The oldest id seen so far: the next page ends before it.
    before: Option<u64>,
    done: bool,
}

impl LogWalk {
    pub fn new(since: Option<u64>, limit: Option<u32>) -> LogWalk {
        LogWalk {
            since,
            limit,
            pages: Vec::new(),
            collected: 0,
            before: None,
            done: limit == Some(0),
        }
    }

    /// The next page to ask for, as `(before, limit)`, or `None` when done.
    pub fn next_page(&self) -> Option<(Option<u64>, u32)> {
        if self.done {
            return None;
        }
        let size = match (self.since, self.limit) {
            // Newest N: ask only for what is still missing.
            (None, Some(limit)) => {
                let missing = u64::from(limit).saturating_sub(self.collected as u64);
                u32::try_from(missing).unwrap_or(PAGE).min(PAGE)
            }
            _ => PAGE,
        };
        Some((self.before, size))
    }

    /// Takes the answer to the page [`LogWalk::next_page`] named.
    pub fn take_page(&mut self, page: Vec<Message>) {
        let Some(oldest) = page.iter().map(|message| message.id).min() else {
            self.done = true;
            return;
        };
        // A page that does not end before the last one would repeat forever.
        if self.before.is_some_and(|before| oldest >= before) {
            self.done = true;
            return;
        }
        let kept: Vec<Message> = page
            .into_iter()
            .filter(|message| self.since.is_none_or(|since| message.id > since))
            .filter(|message| self.before.is_none_or(|before| message.id < before))
            .collect();
        self.collected += kept.len();
        self.pages.push(kept);
        self.before = Some(oldest);
        let reached_since = self.since.is_some_and(|since| oldest <= since + 1);
        let have_enough = self.since.is_none()
            && self
                .limit
                .is_some_and(|limit| self.collected >= limit as usize);
        if oldest == 0 || reached_since || have_enough {
            self.done = true;
        }
    }

    /// The messages, oldest first: with `since`, the first `limit` after it;
    /// otherwise the newest `limit`.
    pub fn into_messages(self) -> Vec<Message> {
        let mut messages: Vec<Message> = self.pages.into_iter().rev().flatten().collect();
        messages.sort_by_key(|message| message.id);
        messages.dedup_by_key(|message| message.id);
        if let Some(limit) = self.limit {
            let limit = limit as usize;
            if self.since.is_some() {
                messages.truncate(limit);
            } else if messages.len() > limit {
                messages.drain(..messages.len() - limit);
            }
        }
        messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::Kind;

    fn message(id: u64, kind: Kind, text: &str) -> Message {
        Message {
            agent: "hearth".into(),
            id,
            kind,
            source: "terminal".into(),
            text: text.into(),
            status: None,
            at: "2026-11-30T10:00:05+01:00".into(),
            answers: Vec::new(),
            images: Vec::new(),
            outbox: None,
            client: None,
            transcript_of: None,
        }
    }

    /// A fake log of `count` messages answering `history` as the daemon does.
    fn page(count: u64, before: Option<u64>, limit: u32) -> Vec<Message> {
        let end = before.unwrap_or(count).min(count);
        let start = end.saturating_sub(u64::from(limit));
        (start..end)
            .map(|id| message(id, Kind::User, "x"))
            .collect()
    }

    fn run_walk(count: u64, since: Option<u64>, limit: Option<u32>) -> (Vec<u64>, usize) {
        let mut walk = LogWalk::new(since, limit);
        let mut requests = 0;
        while let Some((before, size)) = walk.next_page() {
            requests += 1;
            assert!(requests < 100, "the walk does not end");
            walk.take_page(page(count, before, size));
        }
        let ids = walk.into_messages().iter().map(|m| m.id).collect();
        (ids, requests)
    }

    #[test]
    fn log_without_since_takes_the_newest_limit() {
        let (ids, requests) = run_walk(1200, None, Some(50));
        assert_eq!(ids, (1150..1200).collect::<Vec<_>>());
        assert_eq!(requests, 1);

        let (ids, requests) = run_walk(1200, None, Some(700));
        assert_eq!(ids, (500..1200).collect::<Vec<_>>());
        assert_eq!(requests, 2);

        let (ids, _) = run_walk(10, None, Some(50));
        assert_eq!(ids, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn log_since_pages_back_to_since_and_keeps_only_later_ids() {
        let (ids, requests) = run_walk(1200, Some(100), None);
        assert_eq!(ids, (101..1200).collect::<Vec<_>>());
        assert_eq!(requests, 3);

        let (ids, _) = run_walk(1200, Some(100), Some(5));
        assert_eq!(ids, vec![101, 102, 103, 104, 105]);

        let (ids, requests) = run_walk(20, Some(19), None);
        assert!(ids.is_empty());
        assert_eq!(requests, 1);

        let (ids, _) = run_walk(0, Some(3), None);
        assert!(ids.is_empty());
    }

    #[test]
    fn log_walk_stops_when_a_page_does_not_go_back() {
        let mut walk = LogWalk::new(Some(0), None);
        walk.take_page(vec![
            message(5, Kind::User, "a"),
            message(6, Kind::User, "b"),
        ]);
        assert_eq!(walk.next_page(), Some((Some(5), PAGE)));
        walk.take_page(vec![message(5, Kind::User, "a")]);
        assert_eq!(walk.next_page(), None);
        let ids: Vec<u64> = walk.into_messages().iter().map(|m| m.id).collect();
        assert_eq!(ids, vec![5, 6]);
    }
}
