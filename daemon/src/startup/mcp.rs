//! The `[[mcp]]` servers: their tables checked and their supervisors
//! started in the background; start-up never waits for them.

use super::error::StartError;
use super::secrets::find;
use crate::config::Config;
use crate::tools::mcp::{Context, Mcp};
use crate::tools::Processes;
use hearth_protocol::home::Home;
use tokio::sync::watch;

/// The `[[mcp]]` tables, and that the servers `[[agents]]` name exist.
pub fn check(config: &Config, home: &Home) -> Result<(), StartError> {
    let agents = config
        .agents
        .iter()
        .map(|agent| (agent.name.as_str(), agent.mcp.as_slice()));
    crate::tools::mcp::check_config(&config.mcp, agents).map_err(|source| StartError::Mcp {
        path: home.config_file(),
        source,
    })
}

/// Starts every server (they stop with `stop`) and returns at once: the
/// socket must answer whatever the servers do. Each server's tools join
/// when it has listed them; the agents' first turns wait for each server's
/// first attempt ([`Mcp::settled`], bounded by its timeout), so the first
/// turn offers the same tools as at every start.
pub fn start(
    config: &Config,
    home: &Home,
    processes: &Processes,
    stop: watch::Receiver<bool>,
) -> Mcp {
    let secrets = home.secrets_file();
    let context = Context {
        processes: processes.clone(),
        cwd: home.config_dir.clone(),
        lookup: Box::new(move |name: &str| find(&secrets, name)),
        http: reqwest::Client::new(),
    };
    let mcp = Mcp::start(&config.mcp, context, stop);
    let settling = mcp.clone();
    tokio::spawn(async move {
        settling.settled().await;
        for server in settling.snapshots() {
            match &server.last_error {
                Some(why) => tracing::warn!(mcp = %server.name, "not started: {why}"),
                None => tracing::info!(
                    mcp = %server.name,
                    "{} tool(s) offered, {} skipped",
                    server.offer.tools.len(),
                    server.offer.skipped.len()
                ),
            }
        }
    });
    mcp
}
