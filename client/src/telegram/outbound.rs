//! The outbound half: follows the log and sends the agent's replies (and,
//! as configured, its echoes, work reports, notes and errors) to the allowed
//! users' chats, and shows "typing…" while the agent works.
//!
//! Delivery is in log order and survives restarts: the cursor (the id of the
//! last message delivered or skipped) is stored in the daemon after each
//! send, and a restarted bridge says `hello {since: cursor}`. A crash
//! between a send and storing the cursor repeats that one message; nothing
//! is lost. User messages are never sent: the chat shows the person's own
//! words already, and mirroring what was typed elsewhere would read as if
//! the owner had said it here.

use super::api::{Api, ApiError, Backoff, Failure};
use super::bridge::BridgeError;
use super::config::{Outgoing, ParseMode, TelegramConfig};
use super::format::to_html;
use super::link::{self, CURSOR_STATE, SOURCE};
use super::split::{split, MAX_MESSAGE_UNITS};
use crate::commands::{connect_running, LogWalk};
use crate::connection::Connection;
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, Event, EventKind, ServerFrame};
use std::collections::{BTreeSet, VecDeque};
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{interval, MissedTickBehavior};

/// Telegram shows "typing…" for five seconds at most; re-sent this often.
const TYPING_EVERY: Duration = Duration::from_secs(4);

/// Where delivery stands: the last log message delivered or skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cursor {
    /// Nothing yet: the log was empty when the bridge first ran, so every
    /// message, from id 0, is still to come.
    Start,
    After(u64),
}

impl Cursor {
    /// Reads the stored form: `start` or an id.
    pub fn parse(text: &str) -> Option<Cursor> {
        match text {
            "start" => Some(Cursor::Start),
            id => id.parse().ok().map(Cursor::After),
        }
    }

    /// The stored form.
    pub fn encode(self) -> String {
        match self {
            Cursor::Start => "start".to_string(),
            Cursor::After(id) => id.to_string(),
        }
    }

    /// Whether message `id` was already delivered or skipped.
    fn covers(self, id: u64) -> bool {
        matches!(self, Cursor::After(last) if id <= last)
    }
}

/// The text that goes out for an event, if any (pure).
pub fn outgoing_text(event: &Event, config: &TelegramConfig) -> Option<String> {
    let text = event.text.as_deref().unwrap_or_default().trim();
    let text = match event.kind {
        EventKind::Reply => text.to_string(),
        EventKind::Echo if config.sends(Outgoing::Echo) => text.to_string(),
        EventKind::Work if config.sends(Outgoing::Work) => text.to_string(),
        // The bridge's own notes stay home: one about a failed delivery would
        // otherwise be delivered, fail again and be noted again.
        EventKind::Note
            if config.sends(Outgoing::Note) && event.source.as_deref() != Some(SOURCE) =>
        {
            format!("note: {text}")
        }
        EventKind::Error if config.sends(Outgoing::Error) => format!("error: {text}"),
        _ => return None,
    };
    (!text.trim().is_empty()).then_some(text)
}

/// How sending one part to one chat ended.
enum Delivery {
    Sent,
    /// Telegram will never take it (blocked, no such chat): skipped.
    Undeliverable(ApiError),
}

/// The outbound half's state.
pub struct Outbound<'a> {
    api: &'a Api,
    config: &'a TelegramConfig,
    /// Says `hello {since: cursor}`; its events are what goes out.
    connection: Connection,
    cursor: Cursor,
    /// The cursor moved past skipped messages and is not stored yet; it is
    /// stored before the half waits again, so a restart does not re-read them.
    unsaved: bool,
    /// Events read while a request or a send was under way, in order.
    backlog: VecDeque<Event>,
    /// The chats that wrote to the bot, kept by the inbound half.
    chats: watch::Receiver<BTreeSet<i64>>,
    /// Between `busy` and `idle`: "typing…" is shown.
    busy: bool,
}

impl<'a> Outbound<'a> {
    /// Connects from where delivery stands. With no stored cursor (the first
    /// run on this home) delivery starts after the log's newest message, and
    /// that is stored at once.
    pub async fn start(
        home: &Home,
        api: &'a Api,
        config: &'a TelegramConfig,
        stored: Option<Cursor>,
        chats: watch::Receiver<BTreeSet<i64>>,
    ) -> Result<Outbound<'a>, BridgeError> {
        let since = match stored {
            Some(Cursor::After(id)) => Some(id),
            _ => None,
        };
        let (connection, welcome) = connect_running(home, "telegram-out", since).await?;
        let mut outbound = Outbound {
            api,
            config,
            connection,
            cursor: stored.unwrap_or(Cursor::Start),
            unsaved: false,
            backlog: VecDeque::new(),
            chats,
            busy: welcome.busy,
        };
        match stored {
            Some(Cursor::After(_)) => {}
            Some(Cursor::Start) => outbound.read_log_through(welcome.last_id).await?,
            None => {
                outbound.cursor = welcome.last_id.map_or(Cursor::Start, Cursor::After);
                outbound.save_cursor().await?;
            }
        }
        Ok(outbound)
    }

    /// Queues every message up to `last` (`hello` cannot ask for the log
    /// from id 0), ahead of the live events that arrive meanwhile.
    async fn read_log_through(&mut self, last: Option<u64>) -> Result<(), BridgeError> {
        let Some(last) = last else { return Ok(()) };
        let mut walk = LogWalk::new(None, None);
        let mut live = Vec::new();
        while let Some((before, limit)) = walk.next_page() {
            let frame = ClientFrame::History {
                before,
                limit: Some(limit),
            };
            match link::request(&mut self.connection, frame, &mut |e| live.push(e)).await? {
                ServerFrame::History { messages } => walk.take_page(messages),
                other => return Err(BridgeError::Unexpected(other.encode())),
            }
        }
        let logged = walk.into_messages().into_iter().filter(|m| m.id <= last);
        self.backlog
            .extend(logged.map(|message| Event::message(&message)));
        self.backlog.extend(live);
        Ok(())
    }

    /// Delivers until something fails for good.
    pub async fn run(mut self) -> Result<Infallible, BridgeError> {
        // The first tick is at once: a turn already running shows "typing…".
        let mut typing = interval(TYPING_EVERY);
        typing.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            if let Some(event) = self.backlog.pop_front() {
                if event.kind == EventKind::Busy {
                    typing.reset();
                }
                self.take(event).await?;
                continue;
            }
            if self.unsaved {
                self.save_cursor().await?;
                continue;
            }
            tokio::select! {
                frame = self.connection.next() => match frame? {
                    None => return Err(crate::connection::ConnectError::Closed.into()),
                    Some(ServerFrame::Event(event)) => self.backlog.push_back(event),
                    Some(other) => tracing::warn!("unexpected frame from hearthd: {}", other.encode()),
                },
                _ = typing.tick(), if self.busy => self.send_typing().await?,
            }
        }
    }

    /// Acts on one event.
    async fn take(&mut self, event: Event) -> Result<(), BridgeError> {
        match event.kind {
            EventKind::Busy => {
                self.busy = true;
                return self.send_typing().await;
            }
            EventKind::Idle => self.busy = false,
            _ => {}
        }
        let logged = event.kind.message_kind().is_some();
        let id = match (logged, event.id) {
            (true, Some(id)) if self.cursor.covers(id) => return Ok(()),
            (true, Some(id)) => Some(id),
            (true, None) => return Ok(()),
            // Live signals (an error) have no place in the log.
            (false, _) => None,
        };
        let text = outgoing_text(&event, self.config);
        let delivered = match text {
            Some(text) if !self.targets().is_empty() => {
                self.deliver(id, &text).await?;
                true
            }
            _ => false,
        };
        if let Some(id) = id {
            self.cursor = Cursor::After(id);
            self.unsaved = true;
            if delivered {
                self.save_cursor().await?;
            }
        }
        Ok(())
    }

    /// The allowed users' chats that wrote to the bot (a user taken off the
    /// allowlist gets nothing more). Only private chats are kept, and a
    /// private chat's id is its user's id.
    fn targets(&self) -> Vec<i64> {
        let chats = self.chats.borrow();
        chats
            .iter()
            .copied()
            .filter(|chat| self.config.allows(*chat))
            .collect()
    }

    /// Sends `text` to every target chat, split into parts Telegram takes.
    /// A chat that can never be reached is skipped with a note.
    async fn deliver(&mut self, id: Option<u64>, text: &str) -> Result<(), BridgeError> {
        let parts = split(text, MAX_MESSAGE_UNITS);
        for chat in self.targets() {
            for part in &parts {
                let send = send_part(self.api, self.config, chat, part);
                let backlog = &mut self.backlog;
                let sent = link::beside(&mut self.connection, send, &mut |e| backlog.push_back(e))
                    .await??;
                if let Delivery::Undeliverable(error) = sent {
                    let what =
                        id.map_or_else(|| "an error".to_string(), |id| format!("message #{id}"));
                    let note = format!(
                        "telegram: could not deliver {what} to chat {chat}: {error}; skipped"
                    );
                    let backlog = &mut self.backlog;
                    link::note(&mut self.connection, note, &mut |e| backlog.push_back(e)).await?;
                    break;
                }
            }
        }
        Ok(())
    }

    /// Shows "typing…" in every target chat; a failure only costs the hint.
    async fn send_typing(&mut self) -> Result<(), BridgeError> {
        for chat in self.targets() {
            let send = self.api.send_typing(chat);
            let backlog = &mut self.backlog;
            let sent =
                link::beside(&mut self.connection, send, &mut |e| backlog.push_back(e)).await?;
            match sent {
                Ok(()) => {}
                Err(error) if error.failure() == Failure::Unauthorized => {
                    return Err(BridgeError::Unauthorized {
                        error,
                        env: self.config.token_env.clone(),
                    })
                }
                Err(error) => tracing::debug!("typing in chat {chat}: {error}"),
            }
        }
        Ok(())
    }

    async fn save_cursor(&mut self) -> Result<(), BridgeError> {
        let backlog = &mut self.backlog;
        let value = self.cursor.encode();
        link::set_state(&mut self.connection, CURSOR_STATE, value, &mut |e| {
            backlog.push_back(e)
        })
        .await?;
        self.unsaved = false;
        Ok(())
    }
}

/// Sends one part to one chat: in the configured markup, falling back to
/// plain text when Telegram cannot parse it; waiting out flood control;
/// retrying other trouble with backoff until it goes through.
async fn send_part(
    api: &Api,
    config: &TelegramConfig,
    chat: i64,
    part: &str,
) -> Result<Delivery, BridgeError> {
    let mut markup = config.parse_mode == ParseMode::Html;
    let mut backoff = Backoff::default();
    loop {
        let result = if markup {
            api.send_message(chat, &to_html(part), Some("HTML")).await
        } else {
            api.send_message(chat, part, None).await
        };
        let Err(error) = result else {
            return Ok(Delivery::Sent);
        };
        match error.failure() {
            Failure::Markup if markup => {
                tracing::info!("Telegram could not parse the markup ({error}); sending plain text");
                markup = false;
            }
            Failure::Wait(wait) => {
                tracing::info!("Telegram asks to wait {wait:?} before sending");
                tokio::time::sleep(wait).await;
            }
            Failure::Unauthorized => {
                return Err(BridgeError::Unauthorized {
                    error,
                    env: config.token_env.clone(),
                })
            }
            Failure::Permanent | Failure::Markup => return Ok(Delivery::Undeliverable(error)),
            Failure::Transient => {
                let wait = backoff.next_wait();
                tracing::warn!("sending to chat {chat} failed: {error}; trying again in {wait:?}");
                tokio::time::sleep(wait).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::{Kind, Message};
    use std::path::Path;

    fn event(kind: Kind, source: &str, text: &str) -> Event {
        Event::message(&Message {
            agent: "hearth".into(),
            id: 3,
            kind,
            source: source.into(),
            text: text.into(),
            status: None,
            at: String::new(),
            answers: Vec::new(),
        })
    }

    fn config(send: &str) -> TelegramConfig {
        let text = format!("[telegram]\nallow = [1]\nsend = {send}\n");
        TelegramConfig::parse(Path::new("c"), &text).unwrap()
    }

    #[test]
    fn replies_always_go_out_and_user_messages_never() {
        let none = config("[]");
        assert_eq!(
            outgoing_text(&event(Kind::Reply, "hearth", "Hi."), &none).as_deref(),
            Some("Hi.")
        );
        let all = config("[\"echo\", \"work\", \"note\", \"error\"]");
        for source in ["telegram", "terminal"] {
            assert_eq!(
                outgoing_text(&event(Kind::User, source, "mine"), &all),
                None
            );
        }
        assert_eq!(
            outgoing_text(&event(Kind::Tool, "hearth", "ls"), &all),
            None
        );
        assert_eq!(
            outgoing_text(&event(Kind::Reply, "hearth", "  \n"), &all),
            None
        );
    }

    #[test]
    fn echoes_work_notes_and_errors_go_out_as_configured() {
        let all = config("[\"echo\", \"work\", \"note\", \"error\"]");
        let none = config("[]");
        for kind in [Kind::Echo, Kind::Work] {
            assert_eq!(
                outgoing_text(&event(kind, "hearth", "x"), &all).as_deref(),
                Some("x")
            );
            assert_eq!(outgoing_text(&event(kind, "hearth", "x"), &none), None);
        }
        assert_eq!(
            outgoing_text(&event(Kind::Note, "hearthd", "restarted"), &all).as_deref(),
            Some("note: restarted")
        );
        assert_eq!(
            outgoing_text(&event(Kind::Note, "telegram", "could not deliver"), &all),
            None,
            "the bridge's own notes stay home"
        );
        let error = Event::signal(EventKind::Error, "hearth", Some("no model".into()));
        assert_eq!(
            outgoing_text(&error, &all).as_deref(),
            Some("error: no model")
        );
        assert_eq!(outgoing_text(&error, &none), None);
        let busy = Event::signal(EventKind::Busy, "hearth", None);
        assert_eq!(outgoing_text(&busy, &all), None);
    }

    #[test]
    fn the_cursor_reads_back_what_it_stores() {
        for cursor in [Cursor::Start, Cursor::After(0), Cursor::After(41)] {
            assert_eq!(Cursor::parse(&cursor.encode()), Some(cursor));
        }
        assert_eq!(Cursor::parse("-1"), None);
        assert!(Cursor::After(5).covers(5) && !Cursor::After(5).covers(6));
        assert!(!Cursor::Start.covers(0));
    }
}
