//! Event fan-out latency: from a submit leaving the bench process until each
//! attached client has read the message's event, over the real Unix socket
//! to a real `hearthd`. Submitter and receivers live in this process, so one
//! clock times both ends.
//!
//! The daemon broadcasts a message only once it is durable, so each figure
//! includes the commit (fsync) as well as the daemon's and this process's
//! scheduling on a machine they share.

use crate::appends::{acknowledged, submit};
use crate::process::{cpu_time, Bins, Daemon, Model, DEADLINE};
use anyhow::{Context, Result};
use hearth_client::Connection;
use hearth_protocol::{ClientFrame, EventKind, ServerFrame};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Submits before measuring, so connections and caches are warm.
const WARM_UP: usize = 10;

/// The pause between one message's last receipt and the next submit, so
/// samples measure one message at a time rather than a queue.
pub const GAP: Duration = Duration::from_millis(3);

/// What the submitter sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A `note`: logged and broadcast, and it starts no turn, so the figure
    /// is the path from a durable append to every client alone.
    Note,
    /// A user message: it also wakes the agent, whose turn (no model
    /// configured) ends at once, adding `busy`, a note, `error` and `idle`
    /// to what every client is sent.
    Submit,
}

impl Frame {
    fn frame(self, text: String) -> Result<ClientFrame> {
        match self {
            Frame::Note => Ok(ClientFrame::Note {
                text,
                source: "bench".into(),
            }),
            Frame::Submit => submit(text),
        }
    }

    fn event_kind(self) -> EventKind {
        match self {
            Frame::Note => EventKind::Note,
            Frame::Submit => EventKind::User,
        }
    }
}

/// What one count of clients measured.
pub struct FanOut {
    pub kind: Frame,
    pub clients: usize,
    /// One per (message, receiver), sorted.
    pub latencies: Vec<Duration>,
    /// CPU time per timed message: the daemon's (log, broadcast, one frame
    /// per client) and this process's (submitter and receivers).
    pub daemon_cpu: Duration,
    pub bench_cpu: Duration,
}

/// Times `samples` messages, each to every one of `clients` receivers.
pub async fn measure(
    bins: &Bins,
    dir: &Path,
    kind: Frame,
    clients: usize,
    samples: usize,
) -> Result<FanOut> {
    let home = dir.join(format!("fanout-{kind:?}-{clients}"));
    std::fs::create_dir_all(&home)?;
    Model::None.write(&home)?;
    let (daemon, _) = Daemon::start(bins, &home).await?;
    let clock = Instant::now();
    let total = WARM_UP + samples;
    // When each message was submitted, in nanoseconds on `clock`.
    let submitted: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
    let (receipts, mut received) = mpsc::unbounded_channel::<(usize, Duration)>();
    let mut receivers = tokio::task::JoinSet::new();
    for n in 0..clients {
        let (connection, _) =
            Connection::open(daemon.home(), &format!("receiver-{n}"), None).await?;
        receivers.spawn(receive(
            connection,
            kind.event_kind(),
            clock,
            submitted.clone(),
            receipts.clone(),
        ));
    }
    drop(receipts);
    let (mut submitter, _) = Connection::open(daemon.home(), "submitter", None).await?;

    let mut latencies = Vec::with_capacity(samples * clients);
    let mut cpu_before = (Duration::ZERO, Duration::ZERO);
    for seq in 0..total {
        if seq == WARM_UP {
            cpu_before = (daemon.cpu()?, cpu_time(std::process::id())?);
        }
        let frame = kind.frame(format!("fanout {seq}"))?;
        submitted[seq].store(clock.elapsed().as_nanos() as u64, Ordering::Release);
        acknowledged(&mut submitter, &frame).await?;
        let mut got = 0;
        while got < clients {
            let (of, latency) = tokio::time::timeout(DEADLINE, received.recv())
                .await
                .context("a receiver did not get its event in time")?
                .context("every receiver stopped")?;
            if of == seq {
                got += 1;
                if seq >= WARM_UP {
                    latencies.push(latency);
                }
            }
        }
        tokio::time::sleep(GAP).await;
    }
    let timed = samples.max(1) as u32;
    let daemon_cpu = daemon.cpu()?.saturating_sub(cpu_before.0) / timed;
    let bench_cpu = cpu_time(std::process::id())?.saturating_sub(cpu_before.1) / timed;
    receivers.abort_all();
    submitter.close().await;
    daemon.settle().await?;
    daemon.stop()?;
    latencies.sort();
    Ok(FanOut {
        kind,
        clients,
        latencies,
        daemon_cpu,
        bench_cpu,
    })
}

/// Reads every frame; for each `fanout N` message of `kind`, reports how long after
/// its submit it arrived.
async fn receive(
    mut connection: Connection,
    kind: EventKind,
    clock: Instant,
    submitted: Arc<Vec<AtomicU64>>,
    receipts: mpsc::UnboundedSender<(usize, Duration)>,
) {
    while let Ok(Some(frame)) = connection.next().await {
        let now = clock.elapsed();
        let ServerFrame::Event(event) = frame else {
            continue;
        };
        if event.kind != kind {
            continue;
        }
        let seq = event
            .text
            .as_deref()
            .and_then(|text| text.strip_prefix("fanout "))
            .and_then(|seq| seq.parse::<usize>().ok());
        let Some(seq) = seq.filter(|seq| *seq < submitted.len()) else {
            continue;
        };
        let at = Duration::from_nanos(submitted[seq].load(Ordering::Acquire));
        if receipts.send((seq, now.saturating_sub(at))).is_err() {
            return;
        }
    }
}

/// The nearest-rank percentile `p` (0–100) of sorted `values`.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}
