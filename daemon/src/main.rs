//! `hearthd`: the hearth daemon, in the foreground. A service manager (or
//! `hearth`) puts it in the background.

use clap::Parser;
use hearth_protocol::home::Home;
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
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let home = Home::resolve(args.home.as_deref());
    if let Err(err) = hearth_daemon::daemon::run(home, stop_signal()).await {
        eprintln!("hearthd: {err}");
        std::process::exit(1);
    }
}

/// Completes on SIGTERM or SIGINT.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without signal handlers the daemon can still be killed; run until then.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
