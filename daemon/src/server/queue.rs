//! One client's live events, held in a queue bounded in bytes.
//!
//! The log's events go out on one broadcast channel. A connection does not
//! read it directly: a pump task takes every event as it comes (so the
//! channel never waits on a slow client) into this connection's queue, and
//! the connection sends from the queue as fast as its client reads. When
//! what waits passes [`MAX_QUEUED_BYTES`], the queue is emptied and marked
//! behind; the connection then catches its client up from the log, as it
//! does when the broadcast itself is lagged. A client that never reads
//! thus holds at most that much of the daemon's memory, whatever is sent.
//!
//! Every queue's bytes add up in [`queued_bytes`], which `status` reports.

use hearth_protocol::{Event, EventKind};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, Notify};

/// The most bytes of events one client's queue holds.
pub const MAX_QUEUED_BYTES: usize = 4 * 1024 * 1024;

/// Bytes of events held for all clients now.
static QUEUED: AtomicU64 = AtomicU64::new(0);

/// Bytes of events held in every client's queue now.
pub fn queued_bytes() -> u64 {
    QUEUED.load(Ordering::Relaxed)
}

/// What the connection takes from its queue next.
// Nearly every value is an event: boxing it would allocate for each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Next {
    Event(Event),
    /// Events were dropped: catch up from the log.
    Behind,
    /// The daemon's events have ended.
    Closed,
}

/// One connection's queue, fed by its pump until dropped.
pub struct EventQueue {
    inner: Arc<Inner>,
    pump: tokio::task::JoinHandle<()>,
}

struct Inner {
    state: Mutex<State>,
    ready: Notify,
}

#[derive(Default)]
struct State {
    events: VecDeque<(Event, usize)>,
    bytes: usize,
    behind: bool,
    closed: bool,
}

impl State {
    fn clear(&mut self) {
        self.events.clear();
        QUEUED.fetch_sub(self.bytes as u64, Ordering::Relaxed);
        self.bytes = 0;
    }
}

impl EventQueue {
    /// Starts taking `receiver`'s events for a client of `agent`: its own
    /// agent's, and every approval (a subagent's reaches no one otherwise).
    pub fn start(mut receiver: broadcast::Receiver<Event>, agent: String) -> EventQueue {
        let inner = Arc::new(Inner {
            state: Mutex::new(State::default()),
            ready: Notify::new(),
        });
        let pumped = inner.clone();
        let pump = tokio::spawn(async move {
            loop {
                let received = receiver.recv().await;
                let mut state = pumped.lock();
                match received {
                    Ok(event) => {
                        if event.agent != agent && event.kind != EventKind::Approval {
                            continue;
                        }
                        let size = weight(&event);
                        if state.behind || state.bytes + size > MAX_QUEUED_BYTES {
                            state.clear();
                            state.behind = true;
                        } else {
                            state.bytes += size;
                            QUEUED.fetch_add(size as u64, Ordering::Relaxed);
                            state.events.push_back((event, size));
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        state.clear();
                        state.behind = true;
                    }
                    Err(broadcast::error::RecvError::Closed) => state.closed = true,
                }
                let closed = state.closed;
                drop(state);
                pumped.ready.notify_one();
                if closed {
                    return;
                }
            }
        });
        EventQueue { inner, pump }
    }

    /// The next event, or word that some were dropped or that there will
    /// be no more. Cancel-safe: nothing is taken until it is returned.
    pub async fn next(&self) -> Next {
        loop {
            let ready = self.inner.ready.notified();
            {
                let mut state = self.inner.lock();
                if state.behind {
                    state.behind = false;
                    return Next::Behind;
                }
                if let Some((event, size)) = state.events.pop_front() {
                    state.bytes -= size;
                    QUEUED.fetch_sub(size as u64, Ordering::Relaxed);
                    return Next::Event(event);
                }
                if state.closed {
                    return Next::Closed;
                }
            }
            ready.await;
        }
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        self.pump.abort();
        self.inner.lock().clear();
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves a queue that is still whole.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// About how many bytes `event` holds: its texts, and a little for the rest.
fn weight(event: &Event) -> usize {
    let text = |text: &Option<String>| text.as_ref().map_or(0, String::len);
    let approval = event.approval.as_ref().map_or(0, |approval| {
        approval.arguments.len() + approval.tool.len() + 64
    });
    256 + event.agent.len()
        + text(&event.text)
        + text(&event.source)
        + text(&event.client)
        + event.answers.len() * 8
        + event.images.len() * 128
        + approval
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(agent: &str, text: &str) -> Event {
        Event::signal(EventKind::Delta, agent, Some(text.to_string()))
    }

    #[tokio::test]
    async fn events_wait_in_order_and_others_agents_are_left_out() {
        let (sender, receiver) = broadcast::channel(16);
        let queue = EventQueue::start(receiver, "main".into());
        sender.send(message("main", "one")).unwrap();
        sender.send(message("other", "not mine")).unwrap();
        sender.send(message("main", "two")).unwrap();
        for wanted in ["one", "two"] {
            match queue.next().await {
                Next::Event(event) => assert_eq!(event.text.as_deref(), Some(wanted)),
                other => panic!("expected an event, got {other:?}"),
            }
        }
        drop(sender);
        assert!(matches!(queue.next().await, Next::Closed));
    }

    /// Issue 18: a client that never reads holds at most the bound; past
    /// it, its events are dropped and it is told to catch up.
    #[tokio::test]
    async fn a_queue_past_its_bound_is_emptied_and_behind() {
        let (sender, receiver) = broadcast::channel(1024);
        let queue = EventQueue::start(receiver, "main".into());
        let big = "x".repeat(1024 * 1024);
        for _ in 0..10 {
            sender.send(message("main", &big)).unwrap();
        }
        sender.send(message("main", "after")).unwrap();
        // The pump has taken everything once the last event is queued.
        loop {
            tokio::task::yield_now().await;
            let state = queue.inner.lock();
            if state.behind && state.events.is_empty() && sender.is_empty() {
                assert!(state.bytes <= MAX_QUEUED_BYTES);
                break;
            }
        }
        assert!(matches!(queue.next().await, Next::Behind));
        drop(queue);
    }
}
