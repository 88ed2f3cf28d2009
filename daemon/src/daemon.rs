//! The daemon's life: start on a home, serve until told to stop, stop cleanly.
//!
//! [`run`] is the start-up as a list of steps, in the order the README
//! tells them; each step's code lives in `startup/`, in a file of its own.

use crate::approvals::Approvals;
use crate::config::Config;
use crate::images::ImageStore;
use crate::log::Log;
use crate::server::{self, Shared};
use crate::startup::agents::{Agents, Starter};
use crate::startup::models::{self, Models};
use crate::startup::{checks, listen, lock, mcp, private_dir, prompts, secrets};
use crate::tools::Processes;
use hearth_protocol::home::Home;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, watch};

pub use crate::startup::StartError;

/// Events buffered per client before a slow one is caught up from the log.
const EVENT_BUFFER: usize = 4096;

/// Runs the daemon on `home` until `shutdown` completes.
///
/// Start-up takes the home's lock (a second daemon on the same home refuses
/// to start), reads the configuration (a broken file stops the start with the
/// file, line and what is wrong), opens the log, writes each agent's default
/// prompt on first start, checks the secrets, starts the MCP servers and
/// waits for their tool lists, starts the agents' loops (which
/// continue any turn a crash cut off), replaces a stale socket and listens on
/// a fresh one with mode 0600, serves clients and starts the bridges.
pub async fn run(home: Home, shutdown: impl Future<Output = ()>) -> Result<(), StartError> {
    for dir in [&home.config_dir, &home.data_dir, &home.runtime_dir] {
        private_dir(dir)?;
    }
    let _lock = lock::take(&home.lock_file())?;
    let mut config = Config::load(&home.config_file())?;
    secrets::check_file(&home.secrets_file())?;
    crate::redact::hold(secrets::values(&config, &home.secrets_file()));
    checks::agent_names(&config)?;
    mcp::check(&config, &home)?;
    let whatsapp = checks::whatsapp_contacts(&config, &home)?;
    let (events, _) = broadcast::channel(EVENT_BUFFER);
    let log = Log::open(&home.database(), events.clone())?;
    models::use_local_when_none(&mut config, &log).await?;
    prompts::write_defaults(&home, &config)?;

    let models = Models::new(&config, &home);
    let model = models.top(&home);
    let model_label = model.as_ref().map(crate::model::Model::label);
    let processes = Processes::new();
    let (stop_mcp, mcp_stopped) = watch::channel(false);
    let mcp = mcp::start(&config, &home, &processes, mcp_stopped).await;
    let images = ImageStore::new(&home.data_dir);
    // One registry for every agent: any client may answer any request.
    let approvals = Approvals::new(config.approvals.clone(), log.clone(), events.clone());
    let starter = Starter {
        home: &home,
        config: &config,
        log: &log,
        events: &events,
        processes: &processes,
        approvals: &approvals,
        images: &images,
        models: &models,
        mcp: &mcp,
    };
    let Agents {
        loops,
        top,
        by_name,
    } = starter.start_all(model, whatsapp).await?;

    let tcp = listen::tcp(&config, &home).await?;
    let socket = home.socket();
    // Before the socket: a client that finds the socket finds the page too.
    let web = crate::web::Web::bind(&config.web, &log).await?;
    let unix = listen::unix(&socket)?;

    let (stop, stopped) = watch::channel(false);
    let agent_tasks: Vec<_> = loops
        .into_iter()
        .map(|agent_loop| tokio::spawn(agent_loop.run(stopped.clone())))
        .collect();
    let shared = Arc::new(Shared {
        log,
        events,
        agent: top,
        agents: by_name,
        model: model_label,
        clients: AtomicU64::new(0),
        started: std::time::Instant::now(),
        approvals,
        images,
        mcp,
        web: web.as_ref().map(|(_, web)| web.clone()),
        budget: config.budget,
    });
    let mut server_tasks = vec![tokio::spawn(server::serve(
        unix,
        shared.clone(),
        stopped.clone(),
    ))];
    if let Some((listener, web)) = web {
        let serve = crate::web::serve(listener, web, shared.clone(), stopped.clone());
        server_tasks.push(tokio::spawn(serve));
    }
    if let Some(tcp) = tcp {
        server_tasks.push(tokio::spawn(server::serve(tcp, shared, stopped)));
    }
    // Bridges are clients: they start once the socket listens.
    let bridges = crate::bridges::start(&config, &home);

    shutdown.await;
    tracing::info!("stopping");
    bridges.stop().await;
    let _ = stop.send(true);
    for task in server_tasks {
        let _ = task.await;
    }
    // The loops stop at once; a turn they cut off continues at the next start.
    for task in agent_tasks {
        let _ = tokio::time::timeout(Duration::from_secs(10), task).await;
    }
    // The MCP servers' supervisors stop restarting them; their children
    // die with the rest below.
    let _ = stop_mcp.send(true);
    // Stopping the loop dropped a running tool, which killed its processes;
    // whatever is still listed dies here, so no child outlives the daemon.
    processes.kill_all(Duration::from_secs(5)).await;
    let _ = std::fs::remove_file(&socket);
    Ok(())
}
