//! What an agent's loop reads: one closed set of [`Input`]s from one place
//! (the [`Inbox`]), like the memory keeper's.
//!
//! The rest of the daemon holds an [`AgentInputs`] to ring the loop: a
//! message was logged for it (wake), the person wants the running turn
//! stopped (interrupt). The pair is made before the agent itself, so a
//! parent and its children can hold each other's from the start. The loop
//! says back whether a turn runs (`busy`), which `status` shows and which
//! an interrupt needs: there is nothing to interrupt between turns.

use chrono::{DateTime, Utc};
use tokio::sync::{mpsc, watch};

/// One thing an agent's loop wakes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A message was logged for it: a turn may be due.
    Wake,
    /// Stop the running turn.
    Interrupt,
    /// A schedule is due.
    Due,
    /// The daemon stops.
    Stop,
}

/// Reaches one agent's loop. Cheap to clone.
#[derive(Clone)]
pub struct AgentInputs {
    inputs: mpsc::UnboundedSender<Input>,
    busy: watch::Receiver<bool>,
}

/// The loop's side: its inputs, and where it says whether a turn runs.
pub struct Inbox {
    inputs: mpsc::UnboundedReceiver<Input>,
    /// Kept so that `recv` never ends: a loop without anyone to ring it
    /// still serves its schedules until the daemon stops.
    _open: mpsc::UnboundedSender<Input>,
    busy: watch::Sender<bool>,
}

/// A loop's inputs: the side to hand out and the side the loop reads.
pub fn channel() -> (AgentInputs, Inbox) {
    let (send, inputs) = mpsc::unbounded_channel();
    let (busy, busy_rx) = watch::channel(false);
    let handle = AgentInputs {
        inputs: send.clone(),
        busy: busy_rx,
    };
    let inbox = Inbox {
        inputs,
        _open: send,
        busy,
    };
    (handle, inbox)
}

impl AgentInputs {
    /// A message was logged for the agent.
    pub fn wake(&self) {
        let _ = self.inputs.send(Input::Wake);
    }

    /// Interrupts the running turn; returns whether one was running.
    pub fn interrupt(&self) -> bool {
        let busy = self.is_busy();
        if busy {
            let _ = self.inputs.send(Input::Interrupt);
        }
        busy
    }

    pub fn is_busy(&self) -> bool {
        *self.busy.borrow()
    }
}

impl Inbox {
    /// The next input: what was sent, the daemon's stop (`shutdown` true
    /// or gone), or `due` come. Inputs sent while the loop was busy
    /// elsewhere are read together: an interrupt among them wins, and any
    /// number of wakes are one.
    pub async fn next(
        &mut self,
        shutdown: &mut watch::Receiver<bool>,
        due: Option<DateTime<Utc>>,
    ) -> Input {
        loop {
            if *shutdown.borrow_and_update() {
                return Input::Stop;
            }
            tokio::select! {
                Some(input) = self.inputs.recv() => return self.with_queued(input),
                changed = shutdown.changed() => {
                    if changed.is_err() {
                        return Input::Stop;
                    }
                }
                () = until(due) => return Input::Due,
            }
        }
    }

    /// Forgets what was sent before now: an interrupt sent before a turn
    /// began is not for it, and the turn takes what the wakes were for.
    pub fn forget(&mut self) {
        while self.inputs.try_recv().is_ok() {}
    }

    /// Says whether a turn runs.
    pub fn set_busy(&self, busy: bool) {
        let _ = self.busy.send(busy);
    }

    fn with_queued(&mut self, first: Input) -> Input {
        let mut input = first;
        while let Ok(next) = self.inputs.try_recv() {
            if input != Input::Interrupt {
                input = next;
            }
        }
        input
    }
}

/// Completes when `at` has come (never, for none).
async fn until(at: Option<DateTime<Utc>>) {
    match at {
        Some(at) => {
            let wait = (at - Utc::now()).to_std().unwrap_or_default();
            tokio::time::sleep(wait).await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_sent_together_are_one_and_an_interrupt_among_them_wins() {
        let (handle, mut inbox) = channel();
        let (_stop, mut shutdown) = watch::channel(false);
        handle.wake();
        handle.wake();
        assert_eq!(inbox.next(&mut shutdown, None).await, Input::Wake);

        assert!(!handle.interrupt(), "nothing to interrupt between turns");
        inbox.set_busy(true);
        handle.wake();
        assert!(handle.interrupt());
        handle.wake();
        assert_eq!(inbox.next(&mut shutdown, None).await, Input::Interrupt);

        handle.interrupt();
        inbox.forget();
        let past = Utc::now() - chrono::Duration::seconds(1);
        assert_eq!(inbox.next(&mut shutdown, Some(past)).await, Input::Due);
    }

    #[tokio::test]
    async fn the_daemons_stop_is_an_input_too() {
        let (_handle, mut inbox) = channel();
        let (stop, mut shutdown) = watch::channel(false);
        stop.send(true).unwrap();
        assert_eq!(inbox.next(&mut shutdown, None).await, Input::Stop);
        let (stop, mut shutdown) = watch::channel(false);
        drop(stop);
        assert_eq!(inbox.next(&mut shutdown, None).await, Input::Stop);
    }
}
