//! The state a fake keeps and the signal it gives when that state changes:
//! what the fakes of Telegram, WhatsApp's Graph API, signal-cli and Discord
//! share, so that each waits for its calls the same way.

use crate::harness::DEADLINE;
use std::fmt::Debug;
use std::sync::{Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// A fake's state under a lock, and a count bumped on every change for
/// the waits (of tests and of held requests) to wake on.
pub struct Watched<S> {
    state: Mutex<S>,
    changed: watch::Sender<u64>,
}

impl<S> Watched<S> {
    pub fn new(state: S) -> Watched<S> {
        Watched {
            state: Mutex::new(state),
            changed: watch::channel(0).0,
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, S> {
        // Every change under the lock is a single step; a panicking test
        // cannot leave it half done.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes every wait: the state changed.
    pub fn bump(&self) {
        self.changed.send_modify(|count| *count += 1);
    }

    /// A receiver that wakes on every [`Watched::bump`] after this call.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Waits until `done` holds for what `look` takes from the state, and
    /// returns that.
    ///
    /// # Panics
    /// After [`DEADLINE`], naming `fake` and `what` and showing what `look`
    /// takes.
    pub async fn wait_until<T: Debug>(
        &self,
        fake: &str,
        what: &str,
        look: impl Fn(&S) -> T,
        done: impl Fn(&T) -> bool,
    ) -> T {
        let mut changed = self.subscribe();
        let waited = tokio::time::timeout(DEADLINE, async {
            loop {
                let seen = look(&self.lock());
                if done(&seen) {
                    return seen;
                }
                // Errs only if the sender is dropped, which `self` prevents.
                let _ = changed.changed().await;
            }
        })
        .await;
        match waited {
            Ok(seen) => seen,
            Err(_) => panic!(
                "{fake}: waited in vain for {what}; calls: {:#?}",
                look(&self.lock())
            ),
        }
    }
}
