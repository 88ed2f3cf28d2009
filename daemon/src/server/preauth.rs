//! Bounds on connections that have not said hello yet, so that nobody
//! unauthenticated can starve the owner of descriptors, memory or CPU.
//!
//! - A connection must finish the WebSocket handshake and an acceptable
//!   hello within [`hello_deadline`] (10 s), or it is closed.
//! - At most [`PENDING_PER_LISTENER`] connections per listener, and over TCP
//!   [`PENDING_PER_ADDRESS`] per address, may be waiting for their hello;
//!   one more is closed at once. The Unix socket and the TCP listener count
//!   apart, so a flood over TCP never locks the owner out of the socket.
//! - Before its hello a connection may send at most [`PREAUTH_BYTES`]: a
//!   large frame from a stranger is never buffered whole.
//! - Accept errors (out of descriptors) back off instead of spinning, and
//!   are logged once per burst.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Connections per listener that may wait for their hello at once.
pub const PENDING_PER_LISTENER: usize = 64;
/// Connections per TCP address that may wait for their hello at once.
pub const PENDING_PER_ADDRESS: usize = 8;
/// Bytes a connection may send before its hello is accepted.
pub const PREAUTH_BYTES: usize = 64 * 1024;

/// A test hook, not a setting: `HEARTH_TEST_HELLO_DEADLINE_MS` shortens the
/// deadline so the tests of it need not wait ten seconds.
pub const TEST_HELLO_DEADLINE_ENV: &str = "HEARTH_TEST_HELLO_DEADLINE_MS";

/// How long a connection has for its handshake and hello.
pub fn hello_deadline() -> Duration {
    std::env::var(TEST_HELLO_DEADLINE_ENV)
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis)
}

/// The waiting connections of one listener.
#[derive(Default)]
pub struct Pending {
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    total: usize,
    by_address: HashMap<IpAddr, usize>,
}

impl Pending {
    /// A place for one more waiting connection from `address` (none for the
    /// Unix socket), or `None` when the listener or the address is full.
    pub fn admit(self: &Arc<Self>, address: Option<IpAddr>) -> Option<Admitted> {
        let mut waiting = self.lock();
        if waiting.total >= PENDING_PER_LISTENER {
            return None;
        }
        if let Some(address) = address {
            let count = waiting.by_address.entry(address).or_insert(0);
            if *count >= PENDING_PER_ADDRESS {
                return None;
            }
            *count += 1;
        }
        waiting.total += 1;
        Some(Admitted {
            pending: self.clone(),
            address,
            released: false,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        // Each change is a counter step; a panic cannot leave it half-made.
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn release(&self, address: Option<IpAddr>) {
        let mut waiting = self.lock();
        waiting.total = waiting.total.saturating_sub(1);
        if let Some(address) = address {
            if let Some(count) = waiting.by_address.get_mut(&address) {
                *count -= 1;
                if *count == 0 {
                    waiting.by_address.remove(&address);
                }
            }
        }
    }
}

/// A waiting connection's place; given back when it said hello or left.
pub struct Admitted {
    pending: Arc<Pending>,
    address: Option<IpAddr>,
    released: bool,
}

impl Admitted {
    /// The connection said hello: it no longer counts as waiting.
    pub fn greeted(mut self) {
        self.give_back();
    }

    fn give_back(&mut self) {
        if !self.released {
            self.released = true;
            self.pending.release(self.address);
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.give_back();
    }
}

/// A byte stream that fails a read once more than its budget was read,
/// until the budget is lifted (after the hello).
pub struct Budgeted<S> {
    inner: S,
    remaining: Arc<AtomicUsize>,
}

/// Lifts a [`Budgeted`] stream's budget.
#[derive(Clone)]
pub struct Budget(Arc<AtomicUsize>);

impl Budget {
    pub fn lift(&self) {
        self.0.store(usize::MAX, Ordering::Relaxed);
    }
}

impl<S> Budgeted<S> {
    pub fn new(inner: S, bytes: usize) -> (Self, Budget) {
        let remaining = Arc::new(AtomicUsize::new(bytes));
        let budget = Budget(remaining.clone());
        (Budgeted { inner, remaining }, budget)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Budgeted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let remaining = self.remaining.load(Ordering::Relaxed);
        if remaining == 0 {
            return Poll::Ready(Err(io::Error::other(
                "too many bytes before hello; the connection is closed",
            )));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if remaining != usize::MAX {
            let read = buf.filled().len() - before;
            let _ = self
                .remaining
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                    (left != usize::MAX).then(|| left.saturating_sub(read))
                });
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Budgeted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The wait before the next accept after `failures` accept errors in a
/// row: from 50 ms, doubling, at most 2 s.
pub fn accept_backoff(failures: u32) -> Duration {
    Duration::from_millis(50u64.saturating_mul(1 << failures.min(6))).min(Duration::from_secs(2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn a_listener_and_an_address_admit_only_so_many() {
        let pending = Arc::new(Pending::default());
        let address: IpAddr = "192.0.2.7".parse().unwrap();
        let held: Vec<Admitted> = (0..PENDING_PER_ADDRESS)
            .map(|_| pending.admit(Some(address)).unwrap())
            .collect();
        assert!(
            pending.admit(Some(address)).is_none(),
            "the address is full"
        );
        assert!(pending.admit(Some("192.0.2.8".parse().unwrap())).is_some());
        drop(held);
        let unix: Vec<Admitted> = (0..PENDING_PER_LISTENER)
            .map(|_| pending.admit(None).unwrap())
            .collect();
        assert!(pending.admit(None).is_none(), "the listener is full");
        for admitted in unix {
            admitted.greeted();
        }
        assert!(
            pending.admit(None).is_some(),
            "greeted ones no longer count"
        );
    }

    #[tokio::test]
    async fn a_stream_fails_past_its_budget_until_lifted() {
        let data = vec![7u8; 1000];
        let (mut stream, budget) = Budgeted::new(&data[..], 100);
        let mut buf = vec![0u8; 1000];
        let first = stream.read(&mut buf).await.unwrap();
        assert!(first > 0);
        assert!(stream.read(&mut buf).await.is_err());
        budget.lift();
        let (mut lifted, budget) = Budgeted::new(&data[..], 10);
        budget.lift();
        let mut all = Vec::new();
        lifted.read_to_end(&mut all).await.unwrap();
        assert_eq!(all.len(), 1000);
    }

    #[test]
    fn accept_errors_back_off_up_to_two_seconds() {
        assert_eq!(accept_backoff(0), Duration::from_millis(50));
        assert_eq!(accept_backoff(1), Duration::from_millis(100));
        assert_eq!(accept_backoff(30), Duration::from_secs(2));
    }
}
