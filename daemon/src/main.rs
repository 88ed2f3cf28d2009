//! `hearthd`: the hearth daemon, in the foreground. A service manager (or
//! `hearth`) puts it in the background.

use clap::Parser;
use hearth_protocol::exit::EXIT_CONFIG_CODE;
use hearth_protocol::home::Home;
use std::io::{IsTerminal, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "hearthd",
    version,
    about = "The hearth daemon: one agent, its log, its socket"
)]
struct Args {
    /// One folder for config.toml, hearth.db, hearth.sock and the agents'
    /// prompts; the XDG folders when absent.
    #[arg(long, env = "HEARTH_HOME", global = true)]
    home: Option<PathBuf>,
    /// Append the daemon's log to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
    /// Check the home's log instead of serving it: its chain of hashes (was
    /// any message changed after it was written?) and the database's
    /// integrity. Read-only; works while a daemon runs. Exits 1 on a problem.
    #[arg(long)]
    verify: bool,
    /// Check the configuration as start-up would, without starting: exits 0
    /// when it would start, 78 with what is wrong when it would not.
    /// `hearth restart` asks this before it stops the running daemon.
    #[arg(long)]
    check_config: bool,
}

fn main() {
    let mut argv = std::env::args_os();
    match argv.nth(1) {
        Some(mode) if mode == hearth_daemon::tools::keeper::KEEPER_ARG => {
            hearth_daemon::tools::keeper::run(argv.collect())
        }
        Some(mode) if mode == hearth_daemon::documents::reader::READER_ARG => {
            hearth_daemon::documents::reader::run(argv.collect())
        }
        _ => {}
    }
    // No other process of this user may read hearthd's memory or
    // environment through /proc or ptrace (its keys are there); children
    // start dumpable again at exec, so this protects hearthd alone.
    // SAFETY: prctl has no memory effects.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong) };
    raise_descriptor_limit();
    // Tool commands run under a keeper, hearthd's own binary in its keeper
    // mode, so nothing a tool starts outlives its call; PDFs are read by
    // the same binary in its reader mode, a process with its own limits.
    match std::env::current_exe() {
        Ok(exe) => {
            hearth_daemon::documents::reader::use_reader(exe.clone());
            hearth_daemon::tools::use_keeper(exe);
        }
        Err(err) => eprintln!("hearthd: cannot find its own binary ({err}); tool commands run without a keeper, and a process that leaves its group may outlive its call; PDFs are refused"),
    }
    // Before anything is created: the database, its WAL, the log, the
    // socket, images and backups are private whatever umask started us.
    hearth_daemon::private::restrict_umask();
    let args = Args::parse();
    let home = Home::resolve(args.home.as_deref());
    if args.verify {
        std::process::exit(verify(&home));
    }
    // The time zone must be set before any thread starts: local times
    // (schedules, the agent's clock) follow `TZ`. A broken config is reported
    // by `run`, with its line.
    if let Ok(config) = hearth_daemon::config::Config::load(&home.config_file()) {
        if let Some(zone) = &config.agent.timezone {
            if !hearth_daemon::config::is_iana_zone(zone) {
                eprintln!("hearthd: unknown time zone `{zone}` in [agent] timezone (expected an IANA name such as Europe/Paris)");
                std::process::exit(EXIT_CONFIG_CODE);
            }
            std::env::set_var("TZ", zone);
        }
    }
    if args.check_config {
        std::process::exit(check_config(&home));
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("hearthd: cannot start the runtime: {err}");
            std::process::exit(1);
        }
    };
    runtime.block_on(serve(args, home));
    // Work left on blocking threads (a page's reduction, a backup's copy)
    // is not waited for past a short grace: a stop stays prompt whatever
    // runs there, and what was acknowledged is already durable.
    runtime.shutdown_timeout(STOP_GRACE);
}

/// How long a stop waits for work on blocking threads to end.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

/// Raises the soft limit on open descriptors to the hard one: every client
/// and every model request holds one, and the common soft default (1,024)
/// is small for a daemon.
fn raise_descriptor_limit() {
    // SAFETY: getrlimit and setrlimit fill in and read a plain C struct.
    unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// `hearthd --check-config`: says whether the configuration would start;
/// the exit code.
fn check_config(home: &Home) -> i32 {
    match hearth_daemon::daemon::read_configuration(home) {
        Ok(_) => {
            println!("{}: ok", home.config_file().display());
            0
        }
        Err(err) => {
            eprintln!("{err}");
            if err.is_config() {
                EXIT_CONFIG_CODE
            } else {
                1
            }
        }
    }
}

/// `hearthd --verify`: prints what the check found; the exit code.
fn verify(home: &Home) -> i32 {
    let database = home.database();
    match hearth_daemon::log::chain::verify_file(&database) {
        Ok(report) if report.is_ok() => {
            println!(
                "{}: ok — {} messages, each linked to the one before; the pinned facts match their record; the database's integrity check passed",
                database.display(),
                report.checked
            );
            0
        }
        Ok(report) => {
            for problem in &report.problems {
                println!("{}: {problem}", database.display());
            }
            println!("restore a backup made before the change (see docs/scripts.md: Backups and restoring) or keep the log as it is; hearthd runs either way");
            1
        }
        Err(err) => {
            eprintln!("hearthd --verify: {err}");
            1
        }
    }
}

async fn serve(args: Args, home: Home) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // A log line that cannot be written (a full disk under hearthd.log) is
    // lost, not reported on stderr: that report is written with
    // `eprintln!`, which panics when stderr is the same full disk, and a
    // panic on the log's writer thread stopped the daemon (exit 101).
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .log_internal_errors(false);
    match &args.log_file {
        Some(path) => {
            let file = match std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path)
            {
                Ok(file) => file,
                Err(err) => {
                    eprintln!(
                        "hearthd: cannot open the log file {}: {err}",
                        path.display()
                    );
                    std::process::exit(1);
                }
            };
            subscriber
                .with_ansi(false)
                .with_writer(Masked(std::sync::Mutex::new(file)))
                .init();
        }
        // Colours only for a person's terminal: `hearth` points stderr at
        // hearthd.log, which must stay plain text.
        None => subscriber
            .with_ansi(std::io::stderr().is_terminal())
            .with_writer(Masked(std::io::stderr))
            .init(),
    }
    if let Err(err) = hearth_daemon::daemon::run(home, stop_signal(), hangups()).await {
        // Not `eprintln!`, which panics when stderr cannot be written.
        let _ = writeln!(std::io::stderr(), "hearthd: {err}");
        // A configuration to fix: a service manager must not start it again and again.
        std::process::exit(if err.is_config() { EXIT_CONFIG_CODE } else { 1 });
    }
}

/// One message per SIGHUP: read the configuration again. The handler is
/// installed at once, so an early SIGHUP never kills the daemon.
fn hangups() -> tokio::sync::mpsc::Receiver<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let (tell, hangups) = tokio::sync::mpsc::channel(4);
    match signal(SignalKind::hangup()) {
        Ok(mut hangup) => {
            tokio::spawn(async move {
                while hangup.recv().await.is_some() {
                    // A full queue already holds a reload to come.
                    let _ = tell.try_send(());
                }
            });
        }
        Err(err) => {
            let _ = writeln!(
                std::io::stderr(),
                "hearthd: cannot watch for SIGHUP ({err}); use `hearth reload`"
            );
        }
    }
    hangups
}

/// Completes on SIGTERM or SIGINT. The handlers are installed at once, not
/// when the future is first polled (the daemon awaits it only once it
/// listens), so a stop that comes early is a clean stop too.
fn stop_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        let (Ok(mut term), Ok(mut int)) = handlers else {
            // Without signal handlers the daemon can still be killed; run until then.
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}

/// The daemon's log lines with every key masked ([`hearth_daemon::redact`]):
/// a key in an error body or a model answer never reaches stderr or the
/// log file.
struct Masked<M>(M);

impl<'a, M: tracing_subscriber::fmt::MakeWriter<'a>> tracing_subscriber::fmt::MakeWriter<'a>
    for Masked<M>
{
    type Writer = MaskedWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        MaskedWriter(self.0.make_writer())
    }
}

struct MaskedWriter<W>(W);

impl<W: std::io::Write> std::io::Write for MaskedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0
            .write_all(hearth_daemon::redact::mask(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}
