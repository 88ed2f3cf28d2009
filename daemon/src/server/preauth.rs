//! Bounds on connections that have not said hello yet, so that nobody
//! unauthenticated can starve the owner of descriptors, memory or CPU.
//!
//! - A connection must finish the WebSocket handshake and an acceptable
//!   hello within [`hello_deadline`] (10 s), or it is closed; the web port
//!   gives each HTTP request the same time.
//! - Each door (the Unix socket, the TCP listener, the web port) keeps its
//!   own set of waiting connections: at most [`PENDING_PER_LISTENER`], and
//!   fewer when the descriptor limit is low ([`door_capacity`]), so that
//!   the waiting connections of all doors together never hold more than
//!   three eighths of the process's descriptors: the rest stay for the
//!   daemon's own files and the owner's socket.
//! - Over TCP and the web port at most [`PENDING_PER_ADDRESS`] per address
//!   (an IPv6 address counts by its /64) wait at once.
//! - A full set never refuses the newcomer: it closes its oldest waiting
//!   connection (of the same address when that address is full), so that
//!   silent connections cannot keep the owner's hello out; the owner's
//!   client says hello at once, a stranger's silent one waits its turn out.
//! - Before its hello a connection may send at most [`PREAUTH_BYTES`]: a
//!   large frame from a stranger is never buffered whole.
//! - Accept errors (out of descriptors) back off instead of spinning, and
//!   are logged once per burst.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::oneshot;

/// Connections per door that may wait for their hello at once.
pub const PENDING_PER_LISTENER: usize = 64;
/// Connections per address that may wait for their hello at once.
pub const PENDING_PER_ADDRESS: usize = 8;
/// Bytes a connection may send before its hello is accepted.
pub const PREAUTH_BYTES: usize = 64 * 1024;
/// A door's waiting connections hold at most one descriptor in this many:
/// three doors hold at most three eighths.
const DESCRIPTORS_PER_WAITING: usize = 8;

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

/// How many connections a door may keep waiting with `descriptors` open
/// files allowed: [`PENDING_PER_LISTENER`], less under a low limit, at
/// least one.
pub fn door_capacity(descriptors: u64) -> usize {
    let share = usize::try_from(descriptors).unwrap_or(usize::MAX) / DESCRIPTORS_PER_WAITING;
    share.clamp(1, PENDING_PER_LISTENER)
}

/// The process's descriptor limit (the soft one, which `open` obeys), read
/// at each accept so that a limit lowered meanwhile counts at once.
fn descriptor_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` writes one `rlimit` through a valid pointer.
    let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if read == 0 {
        limit.rlim_cur
    } else {
        // Unknown: assume the usual default rather than none.
        1024
    }
}

/// Which address a waiting connection counts under: an IPv4 address
/// itself, an IPv6 address by its /64 (one host often holds a whole /64).
pub fn counted_as(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

/// The waiting connections of one door.
#[derive(Default)]
pub struct Pending {
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    /// The next connection's number: numbers grow, so the first entry of
    /// `connections` is the oldest.
    next: u64,
    connections: BTreeMap<u64, Entry>,
}

struct Entry {
    address: Option<IpAddr>,
    /// Sent to close the connection to make room for a newer one.
    close: oneshot::Sender<()>,
}

impl Pending {
    /// A place for one more waiting connection from `address` (none for the
    /// Unix socket), and the signal that closes it should it be the oldest
    /// of a full set when another arrives. The newcomer is always admitted.
    pub fn admit(self: &Arc<Self>, address: Option<IpAddr>) -> (Admitted, Closed) {
        self.admit_within(address, door_capacity(descriptor_limit()))
    }

    fn admit_within(
        self: &Arc<Self>,
        address: Option<IpAddr>,
        capacity: usize,
    ) -> (Admitted, Closed) {
        let address = address.map(counted_as);
        let mut waiting = self.lock();
        let same_address = |entry: &Entry| address.is_some() && entry.address == address;
        if address.is_some()
            && waiting
                .connections
                .values()
                .filter(|e| same_address(e))
                .count()
                >= PENDING_PER_ADDRESS
        {
            let oldest = waiting
                .connections
                .iter()
                .find(|(_, entry)| same_address(entry))
                .map(|(&number, _)| number);
            waiting.close(oldest);
        }
        while waiting.connections.len() >= capacity {
            let oldest = waiting.connections.keys().next().copied();
            waiting.close(oldest);
        }
        let number = waiting.next;
        waiting.next += 1;
        let (close, closed) = oneshot::channel();
        waiting.connections.insert(number, Entry { address, close });
        let admitted = Admitted {
            pending: self.clone(),
            number,
            released: false,
        };
        (admitted, Closed(Some(closed)))
    }

    /// How many connections wait now.
    pub fn waiting(&self) -> usize {
        self.lock().connections.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        // Each change is one insert or removal; a panic cannot leave it half-made.
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn release(&self, number: u64) {
        self.lock().connections.remove(&number);
    }
}

impl Waiting {
    /// Closes connection `number` to make room.
    fn close(&mut self, number: Option<u64>) {
        if let Some(entry) = number.and_then(|number| self.connections.remove(&number)) {
            let _ = entry.close.send(());
        }
    }
}

/// Completes when the connection was closed to make room for a newer one;
/// never, once it said hello or left.
pub struct Closed(Option<oneshot::Receiver<()>>);

impl Future for Closed {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let Some(receiver) = self.0.as_mut() else {
            return Poll::Pending;
        };
        match Pin::new(receiver).poll(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(()),
            // Released: the sender is gone without a word, for good.
            Poll::Ready(Err(_)) => {
                self.0 = None;
                Poll::Pending
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

/// A waiting connection's place; given back when it said hello or left.
pub struct Admitted {
    pending: Arc<Pending>,
    number: u64,
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
            self.pending.release(self.number);
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

    /// Whether `closed` has completed: the connection was closed for room.
    fn was_closed(closed: &mut Closed) -> bool {
        let waker = std::task::Waker::noop();
        Pin::new(closed)
            .poll(&mut Context::from_waker(waker))
            .is_ready()
    }

    #[test]
    fn a_full_address_closes_its_own_oldest_and_admits_the_newcomer() {
        let pending = Arc::new(Pending::default());
        let stranger: IpAddr = "192.0.2.7".parse().unwrap();
        let owner: IpAddr = "192.0.2.8".parse().unwrap();
        let (owner_place, mut owner_closed) = pending.admit_within(Some(owner), 64);
        let mut held: Vec<(Admitted, Closed)> = (0..PENDING_PER_ADDRESS)
            .map(|_| pending.admit_within(Some(stranger), 64))
            .collect();
        let newest = pending.admit_within(Some(stranger), 64);
        assert!(was_closed(&mut held[0].1), "the address's oldest made room");
        assert!(!was_closed(&mut held[1].1));
        assert!(
            !was_closed(&mut owner_closed),
            "another address keeps its place"
        );
        assert_eq!(pending.waiting(), 1 + PENDING_PER_ADDRESS);
        drop((held, newest));
        owner_place.greeted();
        assert_eq!(pending.waiting(), 0);
        assert!(
            !was_closed(&mut owner_closed),
            "a greeted one is never closed"
        );
    }

    #[test]
    fn a_full_door_closes_its_oldest_and_admits_the_newcomer() {
        let pending = Arc::new(Pending::default());
        let mut unix: Vec<(Admitted, Closed)> = (0..PENDING_PER_LISTENER)
            .map(|_| pending.admit_within(None, PENDING_PER_LISTENER))
            .collect();
        let _owner = pending.admit_within(None, PENDING_PER_LISTENER);
        assert!(was_closed(&mut unix[0].1));
        assert!(!was_closed(&mut unix[1].1));
        assert_eq!(pending.waiting(), PENDING_PER_LISTENER);
        // Spread over many addresses, the same.
        let spread = Arc::new(Pending::default());
        let mut many: Vec<(Admitted, Closed)> = (0..PENDING_PER_LISTENER)
            .map(|n| {
                let address = IpAddr::from([127, 0, 0, n as u8 + 2]);
                spread.admit_within(Some(address), PENDING_PER_LISTENER)
            })
            .collect();
        let _owner = spread.admit_within(Some([127, 0, 0, 1].into()), PENDING_PER_LISTENER);
        assert!(was_closed(&mut many[0].1));
        assert_eq!(spread.waiting(), PENDING_PER_LISTENER);
    }

    #[test]
    fn waiting_connections_keep_most_descriptors_free() {
        assert_eq!(door_capacity(1_048_576), PENDING_PER_LISTENER);
        assert_eq!(door_capacity(1024), PENDING_PER_LISTENER);
        assert_eq!(door_capacity(256), 32);
        assert_eq!(door_capacity(3), 1);
        // Each door holds at most an eighth; three doors three eighths.
        for limit in [16u64, 100, 256, 513, 1024] {
            assert!(door_capacity(limit) as u64 * 8 <= limit, "{limit}");
        }
    }

    #[test]
    fn an_ipv6_host_counts_by_its_slash_64() {
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let other: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        assert_eq!(counted_as(one), counted_as(other));
        assert_ne!(
            counted_as(one),
            counted_as("2001:db8:1:3::1".parse().unwrap())
        );
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(counted_as(mapped), "192.0.2.1".parse::<IpAddr>().unwrap());
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
