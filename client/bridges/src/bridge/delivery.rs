//! Delivery: the agent's messages out to the platform, in log order, from a
//! cursor kept in the daemon, and a sign that the agent works while it does.
//!
//! The cursor (the id of the last message delivered or skipped) is stored in
//! the daemon after each send, and a restarted bridge says
//! `hello {since: cursor}`. A crash between a send and storing the cursor
//! repeats that one message; nothing is lost. User messages are never sent:
//! the chat shows the person's own words already, and mirroring what was
//! typed elsewhere would read as if the owner had said it there.
//!
//! A tool message with an outbox addressed to the bridge (`whatsapp_send`)
//! is sent to the one person it names, under the same cursor.
//!
//! [`Feed`] is the daemon's side, the same for every bridge; a
//! [`Courier`] is the platform's side: who gets what, and how one send goes
//! (see `courier.rs`, which holds the one sending loop).

use super::config::Outgoing;
use super::courier::{self, Courier};
use super::link::{self, LinkError};
use hearth_client::images::{self, ImageFileError};
use hearth_client::{connect_running, LogWalk};
use hearth_client::{ConnectError, Connection};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, Event, EventKind, Outbox, ServerFrame};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::{interval, MissedTickBehavior};

/// How long a stopping bridge gives delivery to finish the event under way.
const FINISH_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a bridge's halves until one fails or `shutdown` completes:
/// `delivery` (a [`Feed::run`] with the receiver of `stop`) and `others`
/// (the inbound half, a webhook server). At shutdown the others are dropped
/// (what they took is acknowledged only once the daemon has it, so the
/// platform delivers it again), and delivery is told to stop and given a
/// moment to finish the event under way, so that a message sent has its
/// cursor stored.
pub async fn run_halves<E>(
    delivery: impl Future<Output = Result<(), E>>,
    others: impl Future<Output = Result<Infallible, E>>,
    shutdown: impl Future<Output = ()>,
    stop: watch::Sender<bool>,
) -> Result<(), E> {
    let mut delivery = std::pin::pin!(delivery);
    tokio::select! {
        result = others => return result.map(|never| match never {}),
        result = &mut delivery => return result,
        () = shutdown => {}
    }
    let _ = stop.send(true);
    match tokio::time::timeout(FINISH_TIMEOUT, delivery).await {
        Ok(result) => result,
        Err(_) => {
            tracing::warn!("delivery did not finish within {FINISH_TIMEOUT:?}; stopping anyway");
            Ok(())
        }
    }
}

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

/// The text that goes out for an event, if any (pure): replies always;
/// echoes, work reports, notes and errors when `send` names them; never a
/// note of the bridge itself (`own_source`), since one about a failed
/// delivery would otherwise be delivered, fail again and be noted again;
/// never a message imported from another agent's history (`hearth
/// import`), which was said there long ago, nor a quiet reply (a
/// heartbeat's "nothing to do").
pub fn outgoing_text(event: &Event, send: &[Outgoing], own_source: &str) -> Option<String> {
    let quiet = [
        hearth_protocol::MessageStatus::Imported.as_str(),
        hearth_protocol::MessageStatus::Quiet.as_str(),
    ];
    if event
        .status
        .as_deref()
        .is_some_and(|status| quiet.contains(&status))
    {
        return None;
    }
    let sends = |kind| send.contains(&kind);
    let text = event.text.as_deref().unwrap_or_default().trim();
    let text = match event.kind {
        // A cut or refused reply goes out with the line that says so.
        EventKind::Reply => hearth_protocol::ending::shown(text, event.status.as_deref()),
        EventKind::Echo if sends(Outgoing::Echo) => text.to_string(),
        EventKind::Work if sends(Outgoing::Work) => text.to_string(),
        EventKind::Note if sends(Outgoing::Note) && event.source.as_deref() != Some(own_source) => {
            format!("note: {text}")
        }
        EventKind::Error if sends(Outgoing::Error) => format!("error: {text}"),
        _ => return None,
    };
    (!text.trim().is_empty()).then_some(text)
}

/// The daemon's side of delivery: a connection that follows the log from
/// the stored cursor.
pub struct Feed {
    /// Says `hello {since: cursor}`; its events are what goes out.
    connection: Connection,
    /// The bridge's name as a message source (`telegram`), for its notes.
    source: &'static str,
    /// The name of the state holding the cursor (`telegram.cursor`).
    cursor_state: &'static str,
    cursor: Cursor,
    /// The cursor moved past skipped messages and is not stored yet; it is
    /// stored before the feed waits again, so a restart does not re-read them.
    unsaved: bool,
    /// Events read while a request or a send was under way, in order.
    backlog: VecDeque<Event>,
    /// Between `busy` and `idle`: the sign that the agent works is shown.
    busy: bool,
}

impl Feed {
    /// Connects (as client `client`) from where delivery stands. With no
    /// stored cursor (the first run on this home) delivery starts after the
    /// log's newest message, and that is stored at once.
    pub async fn start(
        home: &Home,
        client: &str,
        source: &'static str,
        cursor_state: &'static str,
        stored: Option<Cursor>,
    ) -> Result<Feed, LinkError> {
        let since = match stored {
            Some(Cursor::After(id)) => Some(id),
            _ => None,
        };
        let (connection, welcome) = connect_running(home, None, client, since).await?;
        let mut feed = Feed {
            connection,
            source,
            cursor_state,
            cursor: stored.unwrap_or(Cursor::Start),
            unsaved: false,
            backlog: VecDeque::new(),
            busy: welcome.busy,
        };
        match stored {
            Some(Cursor::After(_)) => {}
            Some(Cursor::Start) => feed.read_log_through(welcome.last_id).await?,
            None => {
                feed.cursor = welcome.last_id.map_or(Cursor::Start, Cursor::After);
                feed.save_cursor().await?;
            }
        }
        Ok(feed)
    }

    /// Queues every message up to `last` (`hello` cannot ask for the log
    /// from id 0), ahead of the live events that arrive meanwhile.
    async fn read_log_through(&mut self, last: Option<u64>) -> Result<(), LinkError> {
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
                other => return Err(LinkError::Unexpected(other.encode())),
            }
        }
        let logged = walk.into_messages().into_iter().filter(|m| m.id <= last);
        self.backlog
            .extend(logged.map(|message| Event::message(&message)));
        self.backlog.extend(live);
        Ok(())
    }

    /// Delivers through `courier` until something fails for good, or until
    /// `stop` turns true: then it returns between two events, never in the
    /// middle of one, so a send is always followed by storing the cursor
    /// and a clean stop repeats nothing.
    pub async fn run<C: Courier>(
        mut self,
        courier: &mut C,
        mut stop: watch::Receiver<bool>,
    ) -> Result<(), C::Error> {
        let mut unstoppable = false;
        // The first tick is at once: a turn already running shows the sign.
        let mut busy_sign = interval(courier.busy_every());
        busy_sign.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            if *stop.borrow() {
                if self.unsaved {
                    self.save_cursor().await?;
                }
                return Ok(());
            }
            if let Some(event) = self.backlog.pop_front() {
                if event.kind == EventKind::Busy {
                    busy_sign.reset();
                }
                self.take(courier, event).await?;
                continue;
            }
            if self.unsaved {
                self.save_cursor().await?;
                continue;
            }
            tokio::select! {
                frame = self.connection.next() => match frame.map_err(LinkError::from)? {
                    None => return Err(LinkError::from(ConnectError::Closed).into()),
                    Some(ServerFrame::Event(event)) => self.backlog.push_back(event),
                    Some(other) => tracing::warn!("unexpected frame from hearthd: {}", other.encode()),
                },
                _ = busy_sign.tick(), if self.busy => courier.show_busy(&mut self).await?,
                changed = stop.changed(), if !unstoppable => {
                    // Nobody can stop it any more: it runs until it fails.
                    unstoppable = changed.is_err();
                }
            }
        }
    }

    /// Acts on one event.
    async fn take<C: Courier>(&mut self, courier: &mut C, event: Event) -> Result<(), C::Error> {
        match event.kind {
            EventKind::Busy => {
                self.busy = true;
                return courier.show_busy(self).await;
            }
            EventKind::Idle => self.busy = false,
            EventKind::Approval => return courier.ask_approval(self, &event).await,
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
        let text = outgoing_text(&event, courier.send_list(), self.source);
        let mut delivered = match text {
            Some(text) if !courier.recipients().is_empty() => {
                courier.deliver(self, id, &text).await?;
                true
            }
            _ => false,
        };
        if let (Some(id), Some(outbox)) = (id, self.outbox_for_me(&event)) {
            courier::to_one(courier, self, id, &outbox.to, &outbox.text).await?;
            delivered = true;
        }
        let shown = self.show_images(courier, &event).await?;
        if let Some(id) = id {
            self.cursor = Cursor::After(id);
            self.unsaved = true;
            if delivered || shown {
                self.save_cursor().await?;
            }
        }
        Ok(())
    }

    /// The outbox of a tool call that succeeded and addressed this bridge.
    fn outbox_for_me(&self, event: &Event) -> Option<Outbox> {
        let outbox = event.outbox.as_ref()?;
        let ok = event.kind == EventKind::Tool && event.status.as_deref() == Some("ok");
        (ok && outbox.via == self.source).then(|| outbox.clone())
    }

    /// Sends the images a tool showed (`show_image`): fetched from the
    /// daemon, handed to the courier. An image that cannot be fetched is
    /// skipped with a note. Returns whether anything was sent.
    async fn show_images<C: Courier>(
        &mut self,
        courier: &mut C,
        event: &Event,
    ) -> Result<bool, C::Error> {
        if event.kind != EventKind::Tool
            || event.images.is_empty()
            || courier.recipients().is_empty()
        {
            return Ok(false);
        }
        for image in &event.images {
            let backlog = &mut self.backlog;
            let fetched = images::get(&mut self.connection, &image.sha256, &mut |frame| {
                if let ServerFrame::Event(event) = frame {
                    backlog.push_back(event);
                }
            })
            .await;
            match fetched {
                Ok(attachment) => {
                    courier::image_to_everyone(courier, self, image, &attachment).await?
                }
                Err(ImageFileError::Connection(err)) => return Err(LinkError::from(err).into()),
                Err(err) => {
                    let note = format!("{}: image {} not sent: {err}", self.source, image.label());
                    self.note(note).await?;
                }
            }
        }
        Ok(true)
    }

    /// The bridge's name as a message source (`telegram`): notes begin with it.
    pub fn source(&self) -> &'static str {
        self.source
    }

    /// Runs `work` (a send, a wait) while the connection keeps being read;
    /// the events read meanwhile are delivered after, in order.
    pub async fn beside<F: Future>(&mut self, work: F) -> Result<F::Output, LinkError> {
        let backlog = &mut self.backlog;
        link::beside(&mut self.connection, work, &mut |e| backlog.push_back(e)).await
    }

    /// Logs a note from the bridge (a message it could not deliver, say).
    pub async fn note(&mut self, text: String) -> Result<(), LinkError> {
        let backlog = &mut self.backlog;
        link::note(&mut self.connection, self.source, text, &mut |e| {
            backlog.push_back(e)
        })
        .await
    }

    async fn save_cursor(&mut self) -> Result<(), LinkError> {
        let backlog = &mut self.backlog;
        let value = self.cursor.encode();
        link::set_state(&mut self.connection, self.cursor_state, value, &mut |e| {
            backlog.push_back(e)
        })
        .await?;
        self.unsaved = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::{Kind, Message};

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
            images: Vec::new(),
            outbox: None,
            client: None,
            transcript_of: None,
        })
    }

    const ALL: [Outgoing; 4] = [
        Outgoing::Echo,
        Outgoing::Work,
        Outgoing::Note,
        Outgoing::Error,
    ];

    #[test]
    fn replies_always_go_out_and_user_messages_never() {
        assert_eq!(
            outgoing_text(&event(Kind::Reply, "hearth", "Hi."), &[], "telegram").as_deref(),
            Some("Hi.")
        );
        for source in ["telegram", "terminal"] {
            assert_eq!(
                outgoing_text(&event(Kind::User, source, "mine"), &ALL, "telegram"),
                None
            );
        }
        // Nor a voice note's transcript: the person knows what they said.
        let mut heard = event(Kind::User, "telegram", "[voice 0:42] hello");
        heard.transcript_of = Some(2);
        assert_eq!(outgoing_text(&heard, &ALL, "telegram"), None);
        assert_eq!(
            outgoing_text(&event(Kind::Tool, "hearth", "ls"), &ALL, "telegram"),
            None
        );
        assert_eq!(
            outgoing_text(&event(Kind::Reply, "hearth", "  \n"), &ALL, "telegram"),
            None
        );
        // Nor a reply imported from another agent's history.
        let mut imported = event(Kind::Reply, "openclaw", "said long ago");
        imported.status = Some("imported".into());
        assert_eq!(outgoing_text(&imported, &ALL, "telegram"), None);
    }

    #[test]
    fn echoes_work_notes_and_errors_go_out_as_configured() {
        for kind in [Kind::Echo, Kind::Work] {
            assert_eq!(
                outgoing_text(&event(kind, "hearth", "x"), &ALL, "telegram").as_deref(),
                Some("x")
            );
            assert_eq!(
                outgoing_text(&event(kind, "hearth", "x"), &[], "telegram"),
                None
            );
        }
        assert_eq!(
            outgoing_text(&event(Kind::Note, "hearthd", "restarted"), &ALL, "telegram").as_deref(),
            Some("note: restarted")
        );
        assert_eq!(
            outgoing_text(
                &event(Kind::Note, "whatsapp", "could not deliver"),
                &ALL,
                "whatsapp"
            ),
            None,
            "the bridge's own notes stay home"
        );
        let error = Event::signal(EventKind::Error, "hearth", Some("no model".into()));
        assert_eq!(
            outgoing_text(&error, &ALL, "telegram").as_deref(),
            Some("error: no model")
        );
        assert_eq!(outgoing_text(&error, &[], "telegram"), None);
        let busy = Event::signal(EventKind::Busy, "hearth", None);
        assert_eq!(outgoing_text(&busy, &ALL, "telegram"), None);
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
