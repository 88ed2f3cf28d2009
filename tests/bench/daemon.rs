//! The daemon benchmark: a real release `hearthd` measured from outside —
//! resident memory, time until the socket answers a hello, binary sizes,
//! durable appends per second with grouped commits against one transaction
//! per append, and event fan-out latency at 1, 10 and 100 clients. Prints a
//! markdown section.
//!
//! It builds nothing: run `cargo build --release` first, then
//! `cargo bench --bench daemon [-- PART… ] [-- quick]`, where a PART is
//! `start`, `memory`, `appends` or `fanout` (all when none is named) and
//! `quick` does a tenth of the work, for trying it out.
//! `tests/bench/bench-daemon.sh` builds, runs every part and writes the section
//! into BENCHMARKS.md.
//!
//! - `daemon/process.rs`: launching, timing, measuring and stopping `hearthd`.
//! - `daemon/appends.rs`: the baseline, `Log::append` and protocol submits.
//! - `daemon/fanout.rs`: submit-to-receipt latency across clients.
//! - `daemon/report.rs`: the machine, and the markdown.

// A benchmark stops at the first failure: unwrap and expect name what failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// A bench's root looks for modules beside it; these live in `daemon/`.
#[path = "daemon/appends.rs"]
mod appends;
#[path = "daemon/fanout.rs"]
mod fanout;
#[path = "daemon/process.rs"]
mod process;
#[path = "daemon/report.rs"]
mod report;

use anyhow::{Context, Result};
use appends::Rate;
use process::{Bins, Daemon, Memory, Model};
use report::{Machine, Report};
use std::path::Path;
use std::time::Duration;

/// Launches timed for the start-up figure, per kind of home.
const LAUNCHES: usize = 25;
/// Messages submitted before the loaded memory figure, and the clients
/// attached meanwhile.
const LOADED_MESSAGES: usize = 10_000;
const LOADED_CLIENTS: usize = 3;
/// Baseline appends (one transaction each) per round, and the rounds of
/// baseline and grouped runs, interleaved so drift hits both.
const BASELINE_APPENDS: usize = 2_000;
const ROUNDS: usize = 3;
/// Concurrent `Log::append` tasks, and the appends they make in all.
const TASKS: [(usize, usize); 3] = [(1, 2_000), (10, 10_000), (100, 20_000)];
/// Protocol clients submitting concurrently, and the submits they make in all.
const SUBMITTERS: [(usize, usize); 3] = [(1, 2_000), (10, 10_000), (100, 10_000)];
/// Receiving clients, and the messages timed for each count.
const FAN_OUT: [(usize, usize); 3] = [(1, 500), (10, 300), (100, 200)];

/// What a run measures: every part unless some are named.
struct Parts {
    start: bool,
    memory: bool,
    appends: bool,
    fanout: bool,
    /// A tenth of the work.
    quick: bool,
}

impl Parts {
    fn from_args() -> Parts {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let named = |part: &str| args.iter().any(|arg| arg == part);
        let all = !["start", "memory", "appends", "fanout"]
            .iter()
            .any(|part| named(part));
        Parts {
            start: all || named("start"),
            memory: all || named("memory"),
            appends: all || named("appends"),
            fanout: all || named("fanout"),
            quick: named("quick"),
        }
    }

    fn scale(&self, n: usize) -> usize {
        if self.quick {
            (n / 10).max(3)
        } else {
            n
        }
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let parts = Parts::from_args();
    let bins = Bins::release()?;
    let dir = tempfile::tempdir().context("a temporary folder")?;
    let machine = Machine::read(dir.path());
    let mut report = Report::default();
    report.sizes(&bins)?;
    if parts.start {
        start_up(&parts, &bins, dir.path(), &mut report).await?;
    }
    if parts.memory {
        memory(&parts, &bins, dir.path(), &mut report).await?;
    }
    if parts.appends {
        durable_appends(&parts, &bins, dir.path(), &mut report).await?;
    }
    if parts.fanout {
        fan_out(&parts, &bins, dir.path(), &mut report).await?;
    }
    print!(
        "{}",
        report.render(&machine, &Machine::load_average(), parts.quick)
    );
    Ok(())
}

/// Launch until a hello is answered: on fresh homes, and restarting a home
/// that holds a loaded log.
async fn start_up(parts: &Parts, bins: &Bins, dir: &Path, report: &mut Report) -> Result<()> {
    eprintln!("daemon bench: start-up on fresh homes");
    let launches = parts.scale(LAUNCHES);
    let mut fresh = Vec::new();
    for n in 0..launches {
        let home = dir.join(format!("fresh-{n}"));
        std::fs::create_dir_all(&home)?;
        Model::Configured.write(&home)?;
        let (daemon, ready) = Daemon::start(bins, &home).await?;
        fresh.push(ready);
        daemon.stop()?;
    }
    eprintln!("daemon bench: start-up on a loaded home");
    let home = dir.join("restarted");
    std::fs::create_dir_all(&home)?;
    Model::None.write(&home)?;
    let (daemon, _) = Daemon::start(bins, &home).await?;
    let clients = appends::connect(daemon.home(), 1, "loader").await?;
    appends::submit_through(clients, parts.scale(LOADED_MESSAGES)).await?;
    let logged = daemon.settle().await?.last_id.map_or(0, |id| id + 1);
    daemon.stop()?;
    Model::Configured.write(&home)?;
    let mut restarts = Vec::new();
    for _ in 0..launches {
        let (daemon, ready) = Daemon::start(bins, &home).await?;
        restarts.push(ready);
        daemon.stop()?;
    }
    report.start_up(&fresh, &restarts, logged);
    Ok(())
}

/// Resident memory idle after start, and idle again after a load of
/// submits from attached clients.
async fn memory(parts: &Parts, bins: &Bins, dir: &Path, report: &mut Report) -> Result<()> {
    eprintln!("daemon bench: idle memory after start");
    let idle_with_model = idle_memory(bins, &dir.join("idle-model"), Model::Configured).await?;
    let home = dir.join("loaded");
    std::fs::create_dir_all(&home)?;
    Model::None.write(&home)?;
    let (daemon, _) = Daemon::start(bins, &home).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle = daemon.memory()?;
    let submits = parts.scale(LOADED_MESSAGES);
    eprintln!("daemon bench: memory under {submits} submits");
    let clients = appends::connect(daemon.home(), LOADED_CLIENTS, "loaded").await?;
    let (rate, clients) = appends::submit_through(clients, submits).await?;
    // The clients stay attached, reading whatever the daemon sends.
    let readers: Vec<_> = clients
        .into_iter()
        .map(|mut connection| {
            tokio::spawn(async move { while let Ok(Some(_)) = connection.next().await {} })
        })
        .collect();
    let status = daemon.settle().await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let loaded = daemon.memory()?;
    for reader in readers {
        reader.abort();
    }
    daemon.stop()?;
    let logged = status.last_id.map_or(0, |id| id + 1);
    report.memory(report::MemoryRun {
        idle,
        idle_with_model,
        loaded,
        submits,
        clients: LOADED_CLIENTS,
        logged,
        rate,
    });
    Ok(())
}

/// A home's idle daemon, one second after it answered its first hello.
async fn idle_memory(bins: &Bins, home: &Path, model: Model) -> Result<Memory> {
    std::fs::create_dir_all(home)?;
    model.write(home)?;
    let (daemon, _) = Daemon::start(bins, home).await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let memory = daemon.memory()?;
    daemon.stop()?;
    Ok(memory)
}

/// The baseline and `Log::append` interleaved over rounds, then submits over
/// the socket.
async fn durable_appends(
    parts: &Parts,
    bins: &Bins,
    dir: &Path,
    report: &mut Report,
) -> Result<()> {
    eprintln!("daemon bench: durable appends");
    let mut baseline = Vec::new();
    let mut grouped: Vec<Vec<Rate>> = vec![Vec::new(); TASKS.len()];
    for round in 0..ROUNDS {
        let round_dir = dir.join(format!("appends-{round}"));
        std::fs::create_dir_all(&round_dir)?;
        let count = parts.scale(BASELINE_APPENDS);
        baseline.push(appends::one_transaction_each(&round_dir, count).await?);
        for (slot, (tasks, count)) in TASKS.iter().enumerate() {
            let rate = appends::grouped(&round_dir, *tasks, parts.scale(*count)).await?;
            grouped[slot].push(rate);
        }
    }
    let mut submitted = Vec::new();
    for (clients, count) in SUBMITTERS {
        eprintln!("daemon bench: submits from {clients} clients");
        let rate = appends::protocol(bins, dir, clients, parts.scale(count)).await?;
        submitted.push((clients, rate));
    }
    let grouped: Vec<(usize, Vec<Rate>)> =
        TASKS.iter().map(|(tasks, _)| *tasks).zip(grouped).collect();
    report.appends(&baseline, &grouped, &submitted);
    Ok(())
}

/// Latencies from submit to receipt at each count of clients: for notes
/// (which start no turn) and for user messages.
async fn fan_out(parts: &Parts, bins: &Bins, dir: &Path, report: &mut Report) -> Result<()> {
    let mut runs = Vec::new();
    for (clients, samples) in FAN_OUT {
        for kind in [fanout::Frame::Note, fanout::Frame::Submit] {
            eprintln!("daemon bench: fan-out of {kind:?} to {clients} clients");
            runs.push(fanout::measure(bins, dir, kind, clients, parts.scale(samples)).await?);
        }
    }
    report.fan_out(&runs);
    Ok(())
}
