//! The machine the benchmark ran on, and the markdown section it prints:
//! a summary table against the goals, then one table per measure.

use crate::appends::Rate;
use crate::fanout::{self, FanOut, Frame};
use crate::process::{Bins, Memory};
use anyhow::Result;
use std::path::Path;
use std::time::Duration;

/// The goals of issue 8.
const GOAL_MEMORY_MB: f64 = 15.0;
const GOAL_START_MS: f64 = 50.0;
const GOAL_RATIO: f64 = 10.0;
const GOAL_P99_MS: f64 = 5.0;

/// What the machine is, read where `nproc`, `free` and `uname` read it.
pub struct Machine {
    cores: usize,
    cpu: String,
    memory_kib: u64,
    kernel: String,
    /// The filesystem of the temporary homes: what an fsync costs.
    filesystem: String,
    load: String,
}

impl Machine {
    pub fn read(temp: &Path) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        Machine {
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu: field(&cpuinfo, "model name").unwrap_or_else(|| "unknown".into()),
            memory_kib: field(&meminfo, "MemTotal")
                .and_then(|value| value.trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into()),
            filesystem: filesystem_of(temp),
            load: Machine::load_average(),
        }
    }

    /// The 1-, 5- and 15-minute load averages.
    pub fn load_average() -> String {
        std::fs::read_to_string("/proc/loadavg")
            .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "unknown".into())
    }
}

/// The value of the first `name: value` line.
fn field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_string())
    })
}

/// The type of the filesystem holding `path` (the longest mount point).
fn filesystem_of(path: &Path) -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    mounts
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let (_, point, kind) = (parts.next()?, parts.next()?, parts.next()?);
            path.starts_with(point)
                .then(|| (point.len(), kind.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".into(), |(_, kind)| kind)
}

pub fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// The run whose rate is the median.
pub fn median_rate(rates: &[Rate]) -> Rate {
    let mut sorted = rates.to_vec();
    sorted.sort_by(|a, b| a.per_second().total_cmp(&b.per_second()));
    sorted.get(sorted.len() / 2).copied().unwrap_or(Rate {
        appends: 0,
        elapsed: Duration::from_secs(1),
    })
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn met(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "**missed**"
    }
}

/// `12345.6` as `12,346`.
fn thousands(value: f64) -> String {
    let digits = format!("{value:.0}");
    let mut out = String::new();
    for (n, c) in digits.chars().enumerate() {
        if n > 0 && (digits.len() - n) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The memory part's figures.
pub struct MemoryRun {
    pub idle: Memory,
    pub idle_with_model: Memory,
    pub loaded: Memory,
    pub submits: usize,
    pub clients: usize,
    /// Messages in the log afterwards (the submits and the daemon's notes).
    pub logged: u64,
    pub rate: Rate,
}

/// The markdown being gathered: summary rows and detail sections.
#[derive(Default)]
pub struct Report {
    rows: Vec<String>,
    details: String,
}

impl Report {
    fn row(&mut self, measure: &str, figure: String, goal: String) {
        self.rows.push(format!("| {measure} | {figure} | {goal} |"));
    }

    fn line(&mut self, line: impl AsRef<str>) {
        self.details.push_str(line.as_ref());
        self.details.push('\n');
    }

    pub fn render(&self, machine: &Machine, load_after: &str, quick: bool) -> String {
        let mut out = String::new();
        out.push_str("## Daemon: memory, start-up, size, appends, fan-out\n\n");
        out.push_str(
            "`tests/bench/bench-daemon.sh` runs `cargo build --release`, then `cargo bench --bench \
             daemon`, which measures the release binaries from outside (real processes, the real \
             Unix socket) and prints this section; `cargo bench --bench daemon -- fanout` (or \
             `start`, `memory`, `appends`) runs one part.\n\n",
        );
        out.push_str(&format!(
            "Machine: {} cores (`nproc`), {} (`/proc/cpuinfo`), {:.1} GiB memory, Linux {}; \
             temporary homes on {}. Run on {}; load average {} at the start and {} at the end: \
             the machine was shared with other sessions' builds and tests, so the figures are \
             noisy.{}\n\n",
            machine.cores,
            machine.cpu,
            machine.memory_kib as f64 / 1024.0 / 1024.0,
            machine.kernel,
            machine.filesystem,
            chrono::Local::now().format("%Y-%m-%d"),
            machine.load,
            load_after,
            if quick {
                " **Quick run: a tenth of the work.**"
            } else {
                ""
            },
        ));
        out.push_str("| Measure | Figure | Goal |\n|---|---|---|\n");
        for row in &self.rows {
            out.push_str(row);
            out.push('\n');
        }
        out.push_str(
            "\nFor context, OpenClaw's own sweep reports a 581 MB peak resident memory: their \
             figure, not measured here. Request build time and the prompt-cache figures are in \
             the memory benchmark's section of this file.\n\n",
        );
        out.push_str(&self.details);
        out.push_str(
            "Every daemon runs on its own temporary home with `HEARTH_OLLAMA_URL=off` and \
             `RUST_LOG=info`; nothing leaves the machine. No test asserts these times, and \
             `cargo test` does not build this bench.\n",
        );
        out
    }

    pub fn sizes(&mut self, bins: &Bins) -> Result<()> {
        let sizes = [
            ("hearthd", std::fs::metadata(&bins.hearthd)?.len()),
            ("hearth", std::fs::metadata(&bins.hearth)?.len()),
        ];
        self.row(
            "Release binaries `hearthd`, `hearth` (thin LTO, stripped)",
            format!("{:.1} MB, {:.1} MB", mb(sizes[0].1), mb(sizes[1].1)),
            "—".into(),
        );
        self.line("### Binary size");
        self.line("");
        self.line("Profile `release` of the root Cargo.toml: thin LTO, 4 codegen units, stripped.");
        self.line("");
        self.line("| Binary | Bytes | MB |");
        self.line("|---|---|---|");
        for (name, bytes) in sizes {
            self.line(format!(
                "| `{name}` | {} | {:.1} |",
                thousands(bytes as f64),
                mb(bytes)
            ));
        }
        self.line("");
        Ok(())
    }

    pub fn start_up(&mut self, fresh: &[Duration], restarts: &[Duration], logged: u64) {
        for (what, values) in [
            ("a fresh home".to_string(), fresh),
            (
                format!(
                    "a restart with {} messages in the log",
                    thousands(logged as f64)
                ),
                restarts,
            ),
        ] {
            let median_ms = ms(median(values));
            self.row(
                &format!(
                    "Launch until the socket answers a hello, median of {}: {what}",
                    values.len()
                ),
                format!("{median_ms:.1} ms"),
                format!(
                    "under {GOAL_START_MS} ms: {}",
                    met(median_ms < GOAL_START_MS)
                ),
            );
        }
        self.line("### Launch until the socket answers a hello");
        self.line("");
        self.line(
            "From spawning the release `hearthd` until a client's hello on the Unix socket is \
             answered with `welcome` (the bench tries to connect every millisecond). A `[model]` \
             is configured, as it usually is (its address is never contacted).",
        );
        self.line("");
        self.line("| Home | Launches | Min | Median | Max |");
        self.line("|---|---|---|---|---|");
        for (what, values) in [
            (
                "fresh: creates the database and the prompt".to_string(),
                fresh,
            ),
            (
                format!("restart, {} messages in the log", thousands(logged as f64)),
                restarts,
            ),
        ] {
            let mut sorted = values.to_vec();
            sorted.sort();
            self.line(format!(
                "| {what} | {} | {:.1} ms | {:.1} ms | {:.1} ms |",
                sorted.len(),
                ms(sorted.first().copied().unwrap_or_default()),
                ms(median(&sorted)),
                ms(sorted.last().copied().unwrap_or_default()),
            ));
        }
        self.line("");
    }

    pub fn memory(&mut self, run: MemoryRun) {
        let idle = mb(run.idle.rss).max(mb(run.idle_with_model.rss));
        self.row(
            "Resident memory idle after start (VmRSS): no model; a `[model]` configured",
            format!(
                "{:.1} MB; {:.1} MB",
                mb(run.idle.rss),
                mb(run.idle_with_model.rss)
            ),
            format!("under {GOAL_MEMORY_MB} MB: {}", met(idle < GOAL_MEMORY_MB)),
        );
        self.row(
            &format!(
                "Resident memory idle after {} submits, {} clients attached (VmRSS; peak VmHWM)",
                thousands(run.submits as f64),
                run.clients
            ),
            format!(
                "{:.1} MB ({:.1} MB)",
                mb(run.loaded.rss),
                mb(run.loaded.hwm)
            ),
            format!(
                "under {GOAL_MEMORY_MB} MB: {}",
                met(mb(run.loaded.rss) < GOAL_MEMORY_MB)
            ),
        );
        self.line("### Resident memory");
        self.line("");
        self.line(
            "`VmRSS`, `VmHWM` and `RssAnon` from `/proc/PID/status` of the release `hearthd`: \
             one second after it answered a hello, and two seconds after the agent went idle \
             following the submits. `VmRSS` counts the pages of the binary's code and of libc \
             that are mapped in (`RssFile`, shared and clean) as well as the process's own \
             memory (`RssAnon`).",
        );
        self.line("");
        self.line("| When | VmRSS | VmHWM (peak so far) | RssAnon (heap and stacks) |");
        self.line("|---|---|---|---|");
        for (when, memory) in [
            ("Idle after start, no model".to_string(), run.idle),
            (
                "Idle after start, a `[model]` configured (HTTP client built, never contacted)"
                    .to_string(),
                run.idle_with_model,
            ),
            (
                format!(
                    "Idle after {} submits from {} attached clients ({} messages in the log)",
                    thousands(run.submits as f64),
                    run.clients,
                    thousands(run.logged as f64)
                ),
                run.loaded,
            ),
        ] {
            self.line(format!(
                "| {when} | {:.1} MB | {:.1} MB | {:.1} MB |",
                mb(memory.rss),
                mb(memory.hwm),
                mb(memory.anon)
            ));
        }
        self.line("");
        let grown = run.loaded.anon.saturating_sub(run.idle.anon);
        self.line(format!(
            "`RssAnon` grew by {:.1} MB over the submits: about {} bytes per message in the log.",
            mb(grown),
            thousands(grown as f64 / run.logged.max(1) as f64),
        ));
        self.line("");
        self.line(format!(
            "The submits took {:.1} s ({} /s). With no model a woken agent's turn ends at once \
             with a note (turns take what waits, so there are far fewer turns than submits), and \
             summaries are mechanical lines: the figure is the daemon's own footprint — log, \
             memory tree and view, socket — without a provider's responses in flight.",
            run.rate.elapsed.as_secs_f64(),
            thousands(run.rate.per_second()),
        ));
        self.line("");
    }

    pub fn appends(
        &mut self,
        baseline: &[Rate],
        grouped: &[(usize, Vec<Rate>)],
        submitted: &[(usize, Rate)],
    ) {
        let base = median_rate(baseline);
        let ratio = |rate: &Rate| rate.per_second() / base.per_second();
        if let Some((tasks, rates)) = grouped.last() {
            let rate = median_rate(rates);
            self.row(
                &format!(
                    "Durable appends/s with grouped commits, `Log::append` from {tasks} tasks"
                ),
                format!(
                    "{} /s = **{:.1}×** one transaction per append ({} /s)",
                    thousands(rate.per_second()),
                    ratio(&rate),
                    thousands(base.per_second())
                ),
                format!(
                    "at least {GOAL_RATIO}×: {}",
                    met(ratio(&rate) >= GOAL_RATIO)
                ),
            );
        }
        let over_socket: Vec<String> = submitted
            .iter()
            .filter(|(clients, _)| *clients > 1)
            .map(|(clients, rate)| {
                format!(
                    "{clients} clients {} /s = **{:.1}×**",
                    thousands(rate.per_second()),
                    ratio(rate)
                )
            })
            .collect();
        let best = submitted
            .iter()
            .map(|(_, rate)| ratio(rate))
            .fold(0.0, f64::max);
        self.row(
            "Durable appends/s, user messages submitted over the socket, each client waiting for its ack",
            over_socket.join("; "),
            format!("at least {GOAL_RATIO}×: {}", met(best >= GOAL_RATIO)),
        );

        self.line("### Durable appends per second");
        self.line("");
        self.line(
            "The same schema (created by `Log::open`), filesystem and pragmas (WAL, \
             `synchronous = FULL`) throughout; an append counts once it is durable (`Log::append` \
             returns, or the daemon acknowledges a submit, only after the commit). The baseline \
             and the `Log::append` runs are interleaved over rounds; the median round is shown, \
             and every ratio is against the baseline's median.",
        );
        self.line("");
        self.line("| Writer | Appends | Rate (median) | Range over rounds | × baseline |");
        self.line("|---|---|---|---|---|");
        let range = |rates: &[Rate]| {
            let low = rates
                .iter()
                .map(Rate::per_second)
                .fold(f64::INFINITY, f64::min);
            let high = rates.iter().map(Rate::per_second).fold(0.0, f64::max);
            format!("{}–{} /s", thousands(low), thousands(high))
        };
        self.line(format!(
            "| Baseline: a rusqlite loop, one transaction per append | {} | {} /s | {} | 1.0 |",
            thousands(base.appends as f64),
            thousands(base.per_second()),
            range(baseline),
        ));
        for (tasks, rates) in grouped {
            let rate = median_rate(rates);
            self.line(format!(
                "| `Log::append` from {tasks} task{} (grouped commits, up to 256 jobs a transaction) | {} | {} /s | {} | {:.1} |",
                if *tasks == 1 { "" } else { "s" },
                thousands(rate.appends as f64),
                thousands(rate.per_second()),
                range(rates),
                ratio(&rate),
            ));
        }
        for (clients, rate) in submitted {
            self.line(format!(
                "| `submit` over the Unix socket from {clients} client{}, each waiting for its ack | {} | {} /s | one run | {:.1} |",
                if *clients == 1 { "" } else { "s" },
                thousands(rate.appends as f64),
                thousands(rate.per_second()),
                ratio(rate),
            ));
        }
        self.line("");
        self.line(
            "Over the socket every client also reads every event (each message goes to every \
             attached client, so 100 clients mean 100 frames per message), and each submit wakes \
             the agent, whose turn (no model configured) ends at once with a note: the daemon and \
             the bench process share the two cores with all of that.",
        );
        self.line("");
    }

    pub fn fan_out(&mut self, runs: &[FanOut]) {
        let most = runs.iter().map(|run| run.clients).max().unwrap_or(0);
        for run in runs.iter().filter(|run| run.clients == most) {
            let p99 = ms(fanout::percentile(&run.latencies, 99.0));
            self.row(
                &format!(
                    "Event fan-out, submit to receipt at {} clients, p50 / p99: {}",
                    run.clients,
                    describe(run.kind)
                ),
                format!(
                    "{:.2} ms / {p99:.2} ms",
                    ms(fanout::percentile(&run.latencies, 50.0))
                ),
                format!("p99 under {GOAL_P99_MS} ms: {}", met(p99 < GOAL_P99_MS)),
            );
        }
        self.line("### Event fan-out latency");
        self.line("");
        self.line(format!(
            "One submitter and N receiving clients in the bench process, over the Unix socket to a \
             fresh release `hearthd` for each row; one message at a time ({} ms after the last \
             receipt), timed from just before the frame is sent until each receiver has decoded \
             the event. Events are broadcast once the message is durable, so every figure includes \
             the commit and its fsync. A note starts no turn, so its rows are the broadcast path \
             alone; a user message also wakes the agent, whose turn (no model configured) ends at \
             once and sends `busy`, a note, `error` and `idle` to every client meanwhile. CPU per \
             message is user and system time (`/proc/PID/stat`, to 10 ms) over the timed messages, \
             divided by their number: unlike the latencies, it hardly depends on what else the \
             machine runs.",
            fanout::GAP.as_millis()
        ));
        self.line("");
        self.line("| Frame | Clients | Latencies | p50 | p99 | Max | hearthd CPU per message | bench CPU per message |");
        self.line("|---|---|---|---|---|---|---|---|");
        for run in runs {
            self.line(format!(
                "| {} | {} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms |",
                describe(run.kind),
                run.clients,
                thousands(run.latencies.len() as f64),
                ms(fanout::percentile(&run.latencies, 50.0)),
                ms(fanout::percentile(&run.latencies, 99.0)),
                ms(run.latencies.last().copied().unwrap_or_default()),
                ms(run.daemon_cpu),
                ms(run.bench_cpu),
            ));
        }
        self.line("");
    }
}

fn describe(kind: Frame) -> &'static str {
    match kind {
        Frame::Note => "`note` (no turn)",
        Frame::Submit => "`submit` (a user message, wakes the agent)",
    }
}
