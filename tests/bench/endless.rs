//! The endless-conversation benchmark: does a daemon on a long history
//! stay as small and as quick as on a short one?
//!
//! For each size (10,000, 100,000 and 1,000,000 messages unless others are
//! named) it builds a synthetic history through the log's own API, in
//! groups of [`GROUP`] messages per transaction (mostly chat, some tool
//! outputs and pastes, a finished turn per group), lets the memory keeper
//! build its tree and views over it (no memory model: mechanical lines and
//! merges), then measures a real release `hearthd` started on that home
//! and the library's request build, and prints each figure with its ratio
//! to the first size's.
//!
//! Run `cargo build --release` first, then `cargo bench --bench endless
//! [-- SIZE…]`; `tests/bench/bench-endless.sh` does both and writes the section
//! into BENCHMARKS.md.

// A benchmark stops at the first failure: unwrap and expect name what failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

// The launching and measuring of `hearthd` is the daemon benchmark's.
#[path = "daemon/process.rs"]
#[allow(dead_code)]
mod process;

use anyhow::{bail, Context, Result};
use hearth_daemon::activity::ActivityBoard;
use hearth_daemon::layout::Layout;
use hearth_daemon::log::{Log, NewMessage};
use hearth_daemon::memory::{Memory, MemoryConfig};
use hearth_daemon::request::{self, NoImages, TurnContext};
use hearth_daemon::usage::{Budget, Meter, Prices};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, Kind, ServerFrame};
use process::{Bins, Daemon, Model};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Messages per transaction while the history is built.
const GROUP: u64 = 1_000;
/// Launches timed per size; the median is reported.
const LAUNCHES: usize = 3;
/// Repeats of each timed request; the median is reported.
const REPEATS: usize = 5;
const AGENT: &str = "hearth";
/// The folder to build the homes in and keep them, when set; a home kept
/// there by an earlier run is measured again without being built again.
const KEEP_HOMES: &str = "HEARTH_BENCH_HOMES";

/// What one size measured.
struct Figures {
    messages: u64,
    text_bytes: u64,
    disk_bytes: u64,
    build: Duration,
    anon: u64,
    rss: u64,
    start: Duration,
    history: Duration,
    since: Duration,
    status: Duration,
    search_rare: Duration,
    search_common: Duration,
    memory_view: Duration,
    catch_up: Duration,
    request: Duration,
    held: u64,
    backup: Duration,
    backup_bytes: u64,
    /// The same backup brought up to date after [`NEW_SINCE_BACKUP`] notes.
    backup_update: Duration,
}

/// The notes logged between a backup and its update: a day's worth of a
/// quiet conversation.
const NEW_SINCE_BACKUP: u64 = 100;

#[tokio::main]
async fn main() -> Result<()> {
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|arg| arg.replace('_', "").parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 100_000, 1_000_000]
    } else {
        sizes
    };
    let bins = Bins::release()?;
    let dir = tempfile::tempdir().context("a temporary folder")?;
    // Homes to look into afterwards (`sqlite3`, `EXPLAIN QUERY PLAN`) are
    // built in this folder and kept.
    let kept = std::env::var_os(KEEP_HOMES).map(std::path::PathBuf::from);
    let mut all = Vec::new();
    for &size in &sizes {
        eprintln!("endless bench: {size} messages");
        let home = kept
            .as_deref()
            .unwrap_or(dir.path())
            .join(format!("home-{size}"));
        std::fs::create_dir_all(&home)?;
        let figures = measure(&bins, &home, size).await?;
        if kept.is_none() {
            std::fs::remove_dir_all(&home).ok();
        }
        all.push(figures);
    }
    print!("{}", render(&all));
    Ok(())
}

async fn measure(bins: &Bins, home: &Path, size: u64) -> Result<Figures> {
    Model::None.write(home)?;
    let database = Home::at(home).database();
    std::fs::create_dir_all(database.parent().context("the database's folder")?)?;
    // A kept home built before is measured again as it is: sizes can then
    // be measured one after the other, under the same load.
    let marker = home.join("bench-built");
    let (text_bytes, build) = match std::fs::read_to_string(&marker) {
        Ok(kept) => {
            let (bytes, secs) = kept
                .trim()
                .split_once(' ')
                .context("a bench-built marker")?;
            (bytes.parse()?, Duration::from_secs_f64(secs.parse()?))
        }
        Err(_) => {
            let built = Instant::now();
            let text_bytes = build(&database, size).await?;
            let build = built.elapsed();
            std::fs::write(&marker, format!("{text_bytes} {}", build.as_secs_f64()))?;
            (text_bytes, build)
        }
    };

    let mut starts = Vec::new();
    let mut disk_bytes = 0;
    for _ in 1..LAUNCHES {
        let (daemon, ready) = Daemon::start(bins, home).await?;
        starts.push(ready);
        daemon.stop()?;
        // On disk as a stopped hearthd leaves it: its WAL checkpointed
        // (the builder's keeper may still hold the log as `build` returns).
        disk_bytes = disk(&database);
    }
    let (daemon, ready) = Daemon::start(bins, home).await?;
    starts.push(ready);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let memory = daemon.memory()?;
    let history = timed(|| history_page(daemon.home())).await?;
    let since = timed(|| log_since(bins, home, size)).await?;
    let status = timed(|| ask(daemon.home(), ClientFrame::Status, None)).await?;
    let search_rare = timed(|| ask(daemon.home(), search(RARE), None)).await?;
    let search_common = timed(|| ask(daemon.home(), search("kettle"), None)).await?;
    let memory_view = timed(|| ask(daemon.home(), ClientFrame::Memory, None)).await?;
    let catch_up = timed(|| ask(daemon.home(), ClientFrame::Status, Some(size - 51))).await?;
    let target = home.join("backup.db");
    let copied = Instant::now();
    backup(bins, home, &target)?;
    let whole = copied.elapsed();
    let backup_bytes = std::fs::metadata(&target)?.len();
    for n in 0..NEW_SINCE_BACKUP {
        let note = ClientFrame::Note {
            text: format!("a note after the backup, number {n}"),
            source: "bench".into(),
        };
        ask(daemon.home(), note, None).await?;
    }
    let updated = Instant::now();
    backup(bins, home, &target)?;
    let backup_update = updated.elapsed();
    std::fs::remove_file(&target)?;
    daemon.stop()?;
    let (request, held) = request_build(&database).await?;
    Ok(Figures {
        messages: size,
        text_bytes,
        disk_bytes,
        build,
        anon: memory.anon,
        rss: memory.rss,
        start: median(starts),
        history,
        since,
        status,
        search_rare,
        search_common,
        memory_view,
        catch_up,
        request,
        held,
        backup: whole,
        backup_bytes,
        backup_update,
    })
}

/// A word that one message in [`RARE_EVERY`] holds: what a search for
/// something said once looks for.
const RARE: &str = "zeppelin";
const RARE_EVERY: u64 = 100_003;

/// A message's text: chat mostly, a tool output one in twelve, a paste one
/// in fifty, the [`RARE`] word one in [`RARE_EVERY`]; returns its kind and
/// text. Deterministic in `n`.
fn message(n: u64) -> (Kind, &'static str, String) {
    if n % RARE_EVERY == 7 {
        return (
            Kind::User,
            "terminal",
            format!("{n}: the {RARE} tickets for the harvest"),
        );
    }
    const WORDS: [&str; 16] = [
        "kettle", "garden", "invoice", "tuesday", "plumber", "ticket", "review", "cellar",
        "bicycle", "lantern", "harvest", "meeting", "station", "parcel", "ledger", "window",
    ];
    let words = |count: u64, salt: u64| -> String {
        (0..count)
            .map(|i| WORDS[((n * 7 + i * 13 + salt) % 16) as usize])
            .collect::<Vec<_>>()
            .join(" ")
    };
    match n % 50 {
        0 => (
            Kind::User,
            "terminal",
            format!("paste {n}:\n{}", words(600, 1)),
        ),
        5 | 17 | 29 | 41 => (
            Kind::Tool,
            "shell",
            format!("output {n}: {}", words(220, 2)),
        ),
        k if k % 2 == 0 => (
            Kind::User,
            "terminal",
            format!("{n}: {}", words(12 + n % 25, 3)),
        ),
        _ => (
            Kind::Reply,
            "hearthd",
            format!("{n}: {}", words(20 + n % 40, 4)),
        ),
    }
}

/// Builds the history: `size` messages in groups, each group a finished
/// turn, then the keeper's tree and views over all of it. Returns the
/// bytes of text logged.
async fn build(database: &Path, size: u64) -> Result<u64> {
    let (events, _) = tokio::sync::broadcast::channel(1024);
    let log = Log::open(database, events.clone())?;
    let mut text_bytes = 0;
    let mut taken = None;
    for group in (0..size).step_by(GROUP as usize) {
        let messages: Vec<NewMessage> = (group..(group + GROUP).min(size))
            .map(|n| {
                let (kind, source, text) = message(n);
                text_bytes += text.len() as u64;
                NewMessage::new(kind, source, text)
            })
            .collect();
        log.append_all(AGENT, messages).await?;
        if let Some(turn) = log.begin_turn(AGENT, taken).await? {
            taken = Some(turn.taken_through);
            log.finish_turn(AGENT, turn, Vec::new()).await?;
        }
    }
    let memory = keeper(&log, &events, database)?;
    let memory = Memory::start(log.clone(), memory).await?;
    memory.settle(size, Vec::new()).await?;
    Ok(text_bytes)
}

fn keeper(
    log: &Log,
    events: &tokio::sync::broadcast::Sender<hearth_protocol::Event>,
    database: &Path,
) -> Result<MemoryConfig> {
    let dir = database.parent().context("the database's folder")?;
    Ok(MemoryConfig {
        agent: AGENT.into(),
        layout: Layout::find("default")?,
        model: None,
        prompt_file: dir.join("bench-prompt.md"),
        tools: std::sync::Arc::new(Vec::new),
        events: events.clone(),
        meter: Meter::new(
            log.clone(),
            AGENT,
            Prices::default(),
            Budget::default(),
            dir.join("bench-config.toml"),
        ),
        activity: ActivityBoard::new(AGENT, events.clone()),
    })
}

/// A turn's request build on a keeper started on the history: one more
/// user message, the view settled through it, the log read from it, the
/// request built; the median of [`REPEATS`] such turns, one after the
/// other. Returns the time and the lines the keeper holds then.
async fn request_build(database: &Path) -> Result<(Duration, u64)> {
    let (events, _) = tokio::sync::broadcast::channel(1024);
    let log = Log::open(database, events.clone())?;
    let memory = Memory::start(log.clone(), keeper(&log, &events, database)?).await?;
    let layout = Layout::find("default")?;
    let carries = BTreeMap::new();
    let mut times = Vec::new();
    let mut id = 0;
    for _ in 0..REPEATS {
        id = log
            .append(
                AGENT,
                NewMessage::new(Kind::User, "terminal", "and the kettle?"),
            )
            .await?
            .id;
        let started = Instant::now();
        let view = memory.settle(id, Vec::new()).await?;
        let entries = log.range(AGENT, id, u64::MAX, 100).await?;
        let built = request::build(&TurnContext {
            instructions: "You are hearth.",
            tools: &[],
            view: &view,
            log: &entries,
            turn: hearth_daemon::log::TurnRecord {
                seq: 0,
                start_id: id + 1,
                taken_after: id.checked_sub(1),
                taken_through: id,
            },
            state: "Local time: now",
            block_lines: layout.block_lines,
            cache_key: None,
            carries: &carries,
            images: &NoImages,
            huge_message: layout.huge_limit(),
        });
        times.push(started.elapsed());
        if built.request.items.is_empty() {
            bail!("the request is empty");
        }
    }
    // Asked twice: the gauge is published after the first answer.
    memory.settle(id, Vec::new()).await?;
    Ok((median(times), memory.gauge().held))
}

/// The median of several runs of `run`.
async fn timed<F, Fut>(mut run: F) -> Result<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let mut times = Vec::new();
    for _ in 0..REPEATS {
        let started = Instant::now();
        run().await?;
        times.push(started.elapsed());
    }
    Ok(median(times))
}

/// The newest page of 50 messages over the protocol, as `hearth history`
/// asks for it.
async fn history_page(home: &Home) -> Result<()> {
    let (mut connection, _) = hearth_client::Connection::open(home, "bench-history", None).await?;
    let answer = connection
        .request(
            &ClientFrame::History {
                before: None,
                limit: Some(50),
            },
            &mut |_| {},
        )
        .await?;
    connection.close().await;
    match answer {
        ServerFrame::History { messages } if messages.len() == 50 => Ok(()),
        other => bail!("expected a page of 50 messages, got {}", other.encode()),
    }
}

/// A search for `words` as `hearth search` asks for it.
fn search(words: &str) -> ClientFrame {
    ClientFrame::Search {
        query: words.to_string(),
        before: None,
        after: None,
        kind: None,
        source: None,
        limit: None,
    }
}

/// One request over a fresh connection, as a command sends it: connect
/// (catching up every message after `since`, when given), ask, read the
/// answer. Refuses an error frame, and a catch-up short of 50 messages.
async fn ask(home: &Home, frame: ClientFrame, since: Option<u64>) -> Result<()> {
    let (mut connection, _) = hearth_client::Connection::open(home, "bench-ask", since).await?;
    let mut caught_up = 0;
    let answer = connection.request(&frame, &mut |_| caught_up += 1).await?;
    connection.close().await;
    if since.is_some() && caught_up < 50 {
        bail!("caught up {caught_up} messages, expected 50");
    }
    match answer {
        ServerFrame::Error { .. } => bail!("{} answered {}", frame.encode(), answer.encode()),
        ServerFrame::SearchResults { hits } if hits.is_empty() => {
            bail!("{} found nothing", frame.encode())
        }
        _ => Ok(()),
    }
}

/// `hearth log --since` the last 50 messages: the command a person runs.
async fn log_since(bins: &Bins, home: &Path, size: u64) -> Result<()> {
    let output = Command::new(&bins.hearth)
        .arg("--home")
        .arg(home)
        // `--since ID` prints the messages after ID.
        .args(["log", "--since", &(size - 51).to_string()])
        .env_remove("HEARTH_HOME")
        .output()?;
    let lines = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.starts_with('#'))
        .count();
    if !output.status.success() || lines < 50 {
        bail!(
            "hearth log --since: {} with {lines} messages: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

fn backup(bins: &Bins, home: &Path, target: &Path) -> Result<()> {
    let output = Command::new(&bins.hearth)
        .arg("--home")
        .arg(home)
        .arg("backup")
        .arg(target)
        .env_remove("HEARTH_HOME")
        .output()?;
    if !output.status.success() {
        bail!("hearth backup: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(())
}

/// The database and its write-ahead log, in bytes.
fn disk(database: &Path) -> u64 {
    let size = |path: &Path| std::fs::metadata(path).map_or(0, |meta| meta.len());
    let mut wal = database.as_os_str().to_owned();
    wal.push("-wal");
    size(database) + size(Path::new(&wal))
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The markdown section: one row per measure, a column per size, each
/// figure with its ratio to the first size's.
fn render(all: &[Figures]) -> String {
    let Some(first) = all.first() else {
        return String::new();
    };
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let ms = |time: Duration| time.as_secs_f64() * 1e3;
    type Row<'a> = (&'a str, Box<dyn Fn(&Figures) -> f64 + 'a>, &'a str);
    let rows: Vec<Row> = vec![
        (
            "hearthd RssAnon, idle after start",
            Box::new(|f| mb(f.anon)),
            "MB",
        ),
        (
            "hearthd VmRSS, idle after start",
            Box::new(|f| mb(f.rss)),
            "MB",
        ),
        (
            "start until the socket answers",
            Box::new(|f| ms(f.start)),
            "ms",
        ),
        ("`history` page of 50", Box::new(|f| ms(f.history)), "ms"),
        (
            "`hearth log --since` the last 50",
            Box::new(|f| ms(f.since)),
            "ms",
        ),
        ("`status`", Box::new(|f| ms(f.status)), "ms"),
        (
            "`search` a rare word (one message in 100,003)",
            Box::new(|f| ms(f.search_rare)),
            "ms",
        ),
        (
            "`search` a common word (in most messages)",
            Box::new(|f| ms(f.search_common)),
            "ms",
        ),
        ("`memory` (the view)", Box::new(|f| ms(f.memory_view)), "ms"),
        (
            "a client catching up the last 50 (`since`), then `status`",
            Box::new(|f| ms(f.catch_up)),
            "ms",
        ),
        (
            "a turn's request build (view settled, request built)",
            Box::new(|f| ms(f.request)),
            "ms",
        ),
        (
            "lines the keeper holds after it",
            Box::new(|f| f.held as f64),
            "lines",
        ),
        (
            "`hearth backup` to a new file",
            Box::new(|f| ms(f.backup)),
            "ms",
        ),
        (
            "`hearth backup` into the earlier backup, 100 notes later",
            Box::new(|f| ms(f.backup_update)),
            "ms",
        ),
        (
            "backup per MB copied",
            Box::new(|f| ms(f.backup) / mb(f.backup_bytes).max(1e-9)),
            "ms/MB",
        ),
        (
            "bytes on disk per byte of text",
            Box::new(|f| f.disk_bytes as f64 / f.text_bytes.max(1) as f64),
            "×",
        ),
    ];
    let mut out = String::from("| measure |");
    for figures in all {
        out.push_str(&format!(" {} messages |", figures.messages));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(all.len()));
    out.push('\n');
    for (name, value, unit) in &rows {
        out.push_str(&format!("| {name} |"));
        let base = value(first);
        for figures in all {
            let v = value(figures);
            let ratio = if base > 0.0 { v / base } else { f64::NAN };
            out.push_str(&format!(" {v:.2} {unit} ({ratio:.2}×) |"));
        }
        out.push('\n');
    }
    out.push_str("\nBuilt in: ");
    let built: Vec<String> = all
        .iter()
        .map(|f| {
            format!(
                "{} messages ({:.0} MB of text) in {:.0} s",
                f.messages,
                mb(f.text_bytes),
                f.build.as_secs_f64()
            )
        })
        .collect();
    out.push_str(&built.join(", "));
    out.push_str(".\n");
    out
}
