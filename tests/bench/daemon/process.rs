//! Real `hearthd` processes for the benchmark: launched on a home folder,
//! timed until a hello is answered, measured through `/proc/PID/status`,
//! stopped with SIGTERM.

use anyhow::{bail, Context, Result};
use hearth_client::Connection;
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ServerFrame, Status};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long anything may take before the benchmark gives up.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// How often a launch is probed for a listening socket.
const PROBE_EVERY: Duration = Duration::from_millis(1);

/// The release binaries, found under the target folder; built beforehand.
#[derive(Debug, Clone)]
pub struct Bins {
    pub hearthd: PathBuf,
    pub hearth: PathBuf,
}

impl Bins {
    /// `CARGO_TARGET_DIR/release` when set, else `target/release` of this
    /// package. Refuses when a binary is missing.
    pub fn release() -> Result<Bins> {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
        let dir = target.join("release");
        let bins = Bins {
            hearthd: dir.join("hearthd"),
            hearth: dir.join("hearth"),
        };
        for bin in [&bins.hearthd, &bins.hearth] {
            if !bin.is_file() {
                bail!(
                    "{} is missing: run `cargo build --release` first (tests/bench/bench-daemon.sh does)",
                    bin.display()
                );
            }
        }
        Ok(bins)
    }
}

/// A home's configuration for a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// No `[model]`: turns end at once with a note saying how to set one.
    None,
    /// A `[model]` on a local address that is never contacted: the daemon
    /// builds its HTTP client as it would for a real provider.
    Configured,
}

impl Model {
    /// Writes (or replaces) the home's `config.toml`.
    pub fn write(self, home: &Path) -> Result<()> {
        let path = Home::at(home).config_file();
        let text = match self {
            Model::None => String::new(),
            Model::Configured => "[model]\nprovider = \"openai-chat\"\nmodel = \"bench-model\"\n\
                 base_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"HEARTH_BENCH_KEY\"\n"
                .to_string(),
        };
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    }
}

/// Resident memory of a process, from `/proc/PID/status`, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss: u64,
    /// `VmHWM`: the most that was ever resident.
    pub hwm: u64,
    /// `RssAnon`: the part of `VmRSS` that is the process's own (heap,
    /// stacks) rather than mapped files (the binary's code, libc).
    pub anon: u64,
}

/// A running `hearthd`; killed when dropped.
pub struct Daemon {
    child: Child,
    /// Where clients find it: its socket and owner key.
    home: Home,
    stderr: PathBuf,
}

impl Daemon {
    /// Launches `hearthd` on `home` and returns once the socket answers a
    /// hello with `welcome`, with the time from launch until then.
    ///
    /// No Ollama probe (`HEARTH_OLLAMA_URL=off`): nothing leaves the machine.
    pub async fn start(bins: &Bins, home: &Path) -> Result<(Daemon, Duration)> {
        let stderr = home.join("bench-hearthd.stderr");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr)
            .with_context(|| format!("opening {}", stderr.display()))?;
        let launched = Instant::now();
        let child = Command::new(&bins.hearthd)
            .arg("--home")
            .arg(home)
            .env_remove("HEARTH_HOME")
            .env("HEARTH_OLLAMA_URL", "off")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("launching {}", bins.hearthd.display()))?;
        let mut daemon = Daemon {
            child,
            home: Home::at(home),
            stderr,
        };
        loop {
            if let Ok((connection, _)) = Connection::open(&daemon.home, "bench-probe", None).await {
                let ready = launched.elapsed();
                connection.close().await;
                return Ok((daemon, ready));
            }
            if let Some(status) = daemon.child.try_wait()? {
                bail!(
                    "hearthd exited ({status}) before it listened:\n{}",
                    daemon.log()
                );
            }
            if launched.elapsed() > DEADLINE {
                bail!("hearthd did not answer a hello in time:\n{}", daemon.log());
            }
            tokio::time::sleep(PROBE_EVERY).await;
        }
    }

    pub fn home(&self) -> &Home {
        &self.home
    }

    /// What the daemon wrote to stderr, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Resident memory now and at its peak.
    pub fn memory(&self) -> Result<Memory> {
        let path = format!("/proc/{}/status", self.child.id());
        let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        let field = |name: &str| -> Result<u64> {
            let line = status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .with_context(|| format!("{path} has no {name}"))?;
            let kib: u64 = line
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .with_context(|| format!("{path}: {name}{line}"))?;
            Ok(kib * 1024)
        };
        Ok(Memory {
            rss: field("VmRSS:")?,
            hwm: field("VmHWM:")?,
            anon: field("RssAnon:")?,
        })
    }

    /// The CPU time all of the daemon's threads have used so far.
    pub fn cpu(&self) -> Result<Duration> {
        cpu_time(self.child.id())
    }

    /// Waits until the agent is idle with nothing waiting; returns its status.
    pub async fn settle(&self) -> Result<Status> {
        let started = Instant::now();
        let (mut connection, _) = Connection::open(&self.home, "bench-status", None).await?;
        loop {
            let answer = connection
                .request(&ClientFrame::Status, &mut |_| {})
                .await?;
            let ServerFrame::Status(status) = answer else {
                bail!("expected a status frame, got {}", answer.encode());
            };
            if !status.busy && status.waiting == 0 {
                connection.close().await;
                return Ok(*status);
            }
            if started.elapsed() > DEADLINE {
                bail!("the agent did not settle in time: {status:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM, then waits for the exit; a clean stop removes the socket.
    pub fn stop(mut self) -> Result<()> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status()?;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("hearthd exited with {status}:\n{}", self.log());
        }
        Ok(())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        // After `stop` the child is already reaped and these do nothing.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The CPU time (user and system) process `pid` has used so far, threads
/// that ended included: fields 14 and 15 of `/proc/PID/stat`, in clock ticks
/// (`getconf CLK_TCK`, 100 on Linux), so to 10 ms.
pub fn cpu_time(pid: u32) -> Result<Duration> {
    static TICKS_PER_SECOND: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let ticks_per_second = *TICKS_PER_SECOND.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .filter(|ticks| *ticks > 0)
            .unwrap_or(100)
    });
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
    // The command name (field 2) is in parentheses and may hold spaces.
    let after_name = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .with_context(|| format!("{path}: no command name"))?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `after_name` starts at field 3, so fields 14 and 15 are at 11 and 12.
    let ticks = |n: usize| -> Result<u64> {
        fields
            .get(n)
            .and_then(|field| field.parse().ok())
            .with_context(|| format!("{path}: field {}", n + 3))
    };
    let total = ticks(11)? + ticks(12)?;
    Ok(Duration::from_nanos(
        total * 1_000_000_000 / ticks_per_second,
    ))
}
