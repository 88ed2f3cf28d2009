//! The daemon's life: start on a home, serve until told to stop, stop cleanly.
//!
//! [`run`] is the start-up as a list of steps, in the order the README
//! tells them; each step's code lives in `startup/`, in a file of its own.
//! Then it serves until told to stop (SIGTERM, SIGINT or a `stop` frame),
//! reading its configuration again on SIGHUP or a `reload` frame
//! (`reload.rs` says what applies live), and stops: its bridges, every
//! connection with a close frame, the loops, what tools left running.

use crate::approvals::Approvals;
use crate::config::Config;
use crate::images::ImageStore;
use crate::log::Log;
use crate::server::{self, Control, ReloadOutcome, Shared};
use crate::socket::SocketCheck;
use crate::startup::agents::{Agents, Starter};
use crate::startup::models::{self, Models};
use crate::startup::{checks, listen, lock, mcp, owner_key, private_dir, prompts, secrets};
use crate::tools::Processes;
use crate::usage::{Meter, Prices};
use hearth_protocol::home::Home;
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};

pub use crate::startup::StartError;

/// Events the broadcast holds for receivers that have not taken them yet.
/// Each connection's pump takes them at once into its own bounded queue,
/// and one that falls further behind is caught up from the log. The slots
/// are allocated up front (an event is about 300 bytes): 4,096 held 1.3 MB
/// of an idle daemon's memory.
const EVENT_BUFFER: usize = 1024;

/// The configuration, read and checked as start-up does before it opens
/// anything: `config.toml` (its syntax and values), `secrets.env` (private),
/// the agents' names, the `[[mcp]]` tables and the WhatsApp contacts.
/// `hearthd --check-config` runs this alone, so that `hearth restart`
/// refuses a broken file while the running daemon still runs.
pub fn read_configuration(
    home: &Home,
) -> Result<(Config, Option<crate::tools::WhatsAppContacts>), StartError> {
    let config = Config::load(&home.config_file())?;
    secrets::check_file(&home.secrets_file())?;
    checks::agent_names(&config)?;
    mcp::check(&config, home)?;
    let whatsapp = checks::whatsapp_contacts(&config, home)?;
    Ok((config, whatsapp))
}

/// Runs the daemon on `home` until `shutdown` completes or a client asks
/// it to stop; each message on `hangups` (SIGHUP) reads the configuration
/// again. Call [`crate::private::restrict_umask`] first.
///
/// Start-up takes the home's lock (a second daemon on the same home refuses
/// to start, naming the one that runs), tightens a home others could read,
/// reads the configuration (a broken file stops the start with the
/// file, line and what is wrong), opens the log, writes each agent's default
/// prompt on first start, checks the secrets, starts the MCP servers in the
/// background (never waiting for them), starts the agents' loops (which
/// continue any turn a crash cut off), writes a fresh owner key, replaces a
/// stale socket and listens on a fresh, private one, serves clients and
/// starts the bridges.
pub async fn run(
    home: Home,
    shutdown: impl Future<Output = ()>,
    mut hangups: mpsc::Receiver<()>,
) -> Result<(), StartError> {
    for dir in [&home.config_dir, &home.data_dir, &home.runtime_dir] {
        private_dir(dir)?;
    }
    let _lock = lock::take(&home.lock_file())?;
    for tightened in crate::private::tighten(&home) {
        tracing::warn!("others could use {tightened}; made it private");
    }
    let (mut config, whatsapp) = read_configuration(&home)?;
    let running_tables = crate::reload::tables_of(&home.config_file());
    crate::redact::hold(secrets::values(&config, &home.secrets_file()));
    let (events, _) = broadcast::channel(EVENT_BUFFER);
    let log = Log::open(&home.database(), events.clone())?;
    models::use_local_when_none(&mut config, &log).await?;
    models::learn_served_window(&mut config).await;
    prompts::write_defaults(&home, &config)?;

    let models = Models::new(&config, &home);
    let model = models.top(&home);
    let processes = Processes::new();
    let (stop_mcp, mcp_stopped) = watch::channel(false);
    let mcp = mcp::start(&config, &home, &processes, mcp_stopped);
    let images = ImageStore::new(&home.data_dir);
    let media = crate::media::MediaStore::new(&home.data_dir, images.clone());
    // One registry for every agent: any client may answer any request.
    let approvals = Approvals::new(config.approvals.clone(), log.clone(), events.clone());
    // One meter for every agent: the budget is the daemon's.
    let meter = Meter::new(
        log.clone(),
        &config.agent.name,
        Prices::new(&config.prices),
        config.budget,
        home.config_file(),
    );
    let transcripts = match &config.transcription {
        Some(transcription) => {
            crate::transcription::Pending::new(Duration::from_secs(transcription.wait_secs))
        }
        None => crate::transcription::Pending::default(),
    };
    let starter = Starter {
        home: &home,
        config: &config,
        log: &log,
        events: &events,
        processes: &processes,
        approvals: &approvals,
        images: &images,
        media: &media,
        models: &models,
        mcp: &mcp,
        meter: &meter,
        transcripts: &transcripts,
    };
    let Agents {
        loops,
        top,
        by_name,
        fits,
        workdirs,
    } = starter.start_all(model, whatsapp).await?;
    let transcriber =
        start_transcriber(&config, &home, &log, &media, &meter, &transcripts, &by_name).await?;

    let tcp = listen::tcp(&config, &home).await?;
    let socket = home.socket();
    // Before the socket: a client that finds the socket finds the page too.
    let web = crate::server::web::Web::bind(&config.web, &log).await?;
    // Before the socket: a client that finds the socket finds the key too.
    let owner_key = owner_key::write_fresh(&home)?;
    let socket_check = SocketCheck::default();
    let unix = listen::unix(&socket, socket_check.clone())?;

    let (stop, stopped) = watch::channel(false);
    let (control, mut controls) = mpsc::channel(16);
    let (closing, _) = watch::channel(None);
    // The loops take their first turn once each MCP server's first attempt
    // has ended (bounded by its timeout), so it offers the same tools as at
    // every start; the socket answers meanwhile, and messages wait logged.
    let agent_tasks: Vec<_> = loops
        .into_iter()
        .map(|agent_loop| {
            let (mcp, stopped) = (mcp.clone(), stopped.clone());
            tokio::spawn(async move {
                let mut stopping = stopped.clone();
                let stopped_first = async move {
                    // The guard `wait_for` returns is dropped here.
                    let _ = stopping.wait_for(|stop| *stop).await;
                };
                tokio::select! {
                    () = mcp.settled() => {}
                    () = stopped_first => return Ok(()),
                }
                agent_loop.run(stopped).await
            })
        })
        .collect();
    let shared = Arc::new(Shared {
        log,
        events,
        agent: top,
        agents: by_name,
        clients: AtomicU64::new(0),
        client_left: Default::default(),
        started: std::time::Instant::now(),
        approvals,
        images,
        media,
        transcriber,
        mcp,
        web: web.as_ref().map(|(_, web)| web.clone()),
        meter: meter.clone(),
        control,
        closing,
        database: home.database(),
        tool_reach: crate::tools::reach::ToolReach::new(
            &workdirs,
            &[&home.config_dir, &home.data_dir, &home.runtime_dir],
        ),
        bridges: Default::default(),
        owner_key,
    });
    let mut server_tasks = vec![tokio::spawn(server::serve(
        unix,
        shared.clone(),
        stopped.clone(),
    ))];
    if let Some((listener, web)) = web {
        let serve = crate::server::web::serve(listener, web, shared.clone(), stopped.clone());
        server_tasks.push(tokio::spawn(serve));
    }
    if let Some(tcp) = tcp {
        server_tasks.push(tokio::spawn(server::serve(tcp, shared.clone(), stopped)));
    }
    // Bridges are clients: they start once the socket listens.
    let mut bridges = crate::bridges::start(&config, &home, shared.bridges.clone());

    let mut running = Running {
        home: &home,
        keys: crate::startup::models::key_digest(&config, &home),
        config,
        tables: running_tables,
        fits,
        shared: &shared,
        meter: &meter,
    };
    tokio::pin!(shutdown);
    let restart = loop {
        tokio::select! {
            () = &mut shutdown => break false,
            Some(()) = hangups.recv() => {
                socket_check.now();
                let _ = running.reload(&mut bridges).await;
            }
            Some(control) = controls.recv() => match control {
                Control::Stop { restart } => break restart,
                Control::Reload(reply) => {
                    socket_check.now();
                    let _ = reply.send(running.reload(&mut bridges).await);
                }
            },
        }
    };
    tracing::info!("stopping{}", if restart { " to restart" } else { "" });
    bridges.stop().await;
    let _ = stop.send(true);
    for task in server_tasks {
        let _ = task.await;
    }
    // Every client is told why its connection ends.
    let reason = if restart {
        hearth_protocol::CLOSE_RESTARTING
    } else {
        hearth_protocol::CLOSE_STOPPING
    };
    shared.close_all(reason, Duration::from_secs(2)).await;
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

/// What a reload compares with and changes: the configuration that runs.
struct Running<'a> {
    home: &'a Home,
    config: Config,
    /// The running file's tables: those a reload applied are the new
    /// file's, the others stay as they started, so the next reload still
    /// names them as waiting for a restart.
    tables: toml::Table,
    /// A digest of the model keys the agents' models were opened with: a
    /// reload that finds other keys (`secrets.env` fixed) opens them again.
    keys: [u8; 32],
    /// What each agent sends besides its memory: a new model must fit it.
    fits: std::collections::BTreeMap<String, crate::startup::Fit>,
    shared: &'a Shared,
    meter: &'a Meter,
}

impl Running<'_> {
    /// Reads `config.toml` again and applies what can change live (see
    /// `reload.rs`); the answer to `reload` and SIGHUP. A file that does not
    /// parse, or whose model an agent's layout does not fit (as checked at
    /// start), changes nothing.
    async fn reload(&mut self, bridges: &mut crate::bridges::Bridges) -> ReloadOutcome {
        let home = self.home;
        let refused = |err: &dyn std::fmt::Display| {
            let err = err.to_string();
            let err = err.trim_end_matches('.');
            let why = format!("{err}; hearthd keeps the configuration it runs");
            tracing::warn!("config.toml was not reloaded: {why}");
            why
        };
        let mut reread = crate::reload::reread(&home.config_file(), &self.tables)
            .map_err(|err| refused(&err))?;
        // The window a local server serves, asked as at start, so models
        // rebuilt below are sized to it.
        models::learn_served_window(&mut reread.config).await;
        let new = &reread.config;
        if reread.changed("mcp") {
            // The agents' own lists of servers change only with a restart.
            let agents = self
                .config
                .agents
                .iter()
                .map(|agent| (agent.name.as_str(), agent.mcp.as_slice()));
            crate::tools::mcp::check_config(&new.mcp, agents)
                .map_err(|err| refused(&format!("{}: {err}", home.config_file().display())))?;
        }
        // A key fixed in `secrets.env` applies like a changed [model].
        let keys = crate::startup::models::key_digest(new, home);
        let new_keys = keys != self.keys;
        let mut applied = reread.applied.clone();
        if new_keys {
            crate::redact::hold(secrets::values(new, &home.secrets_file()));
            applied.push("the model's key".to_string());
        }
        let model_changed = reread.changed("model") || new_keys;
        let memory = model_changed || reread.changed("memory");
        if memory || reread.changed("limits") {
            let models = Models::new(new, home);
            let mut updates = Vec::new();
            for handle in self.shared.agents.values() {
                let mut settings = handle.settings();
                let child = new
                    .agents
                    .iter()
                    .chain(&self.config.agents)
                    .find(|child| child.name == handle.name);
                let name = child.and_then(|child| child.model.as_ref());
                // Unchanged, [model] names the memory model as it runs.
                let compactor = models.memory(&new.memory, name);
                if model_changed {
                    settings.model = models.named(name);
                }
                settings.limits = new.limits.clone();
                if let Some(fit) = self.fits.get(&handle.name) {
                    let own_bytes = new.limits.tool_output_chars;
                    let memory = compactor.as_ref().map(|memory| &memory.model);
                    fit.check(settings.model.as_ref(), memory, own_bytes)
                        .map_err(|err| refused(&err))?;
                }
                updates.push((handle, settings, compactor));
            }
            // Every agent fits: the new model and limits apply to all.
            for (handle, settings, compactor) in updates {
                if memory {
                    handle.memory.set_model(compactor);
                }
                handle.update(settings);
            }
            self.config.model = new.model.clone();
            self.config.memory = new.memory.clone();
            self.config.limits = new.limits.clone();
            self.keys = keys;
        }
        let config = &mut self.config;
        if reread.changed("budget") || reread.changed("prices") {
            self.meter.update(Prices::new(&new.prices), new.budget);
            config.budget = new.budget;
            config.prices = new.prices.clone();
        }
        if reread.changed("approvals") {
            self.shared.approvals.update(new.approvals.clone());
            config.approvals = new.approvals.clone();
        }
        let changed_bridges: Vec<String> = [
            "telegram", "whatsapp", "signal", "email", "discord", "matrix",
        ]
        .into_iter()
        .filter(|name| reread.changed(name))
        .map(str::to_string)
        .collect();
        if !changed_bridges.is_empty() {
            config.telegram = new.telegram.clone();
            config.whatsapp = new.whatsapp.clone();
            config.signal = new.signal.clone();
            config.email = new.email.clone();
            config.discord = new.discord.clone();
            config.matrix = new.matrix.clone();
            bridges.restart(&changed_bridges, config, home).await;
        }
        if reread.changed("mcp") {
            let reloaded = self.shared.mcp.reload(&new.mcp).await;
            tracing::info!(
                "MCP servers started: {}; restarted: {}; stopped: {}",
                list_or_none(&reloaded.started),
                list_or_none(&reloaded.restarted),
                list_or_none(&reloaded.stopped)
            );
            config.mcp = new.mcp.clone();
        }
        for name in &reread.applied {
            match reread.tables.get(name) {
                Some(value) => self.tables.insert(name.clone(), value.clone()),
                None => self.tables.remove(name),
            };
        }
        tracing::info!(
            "reloaded {}: applied {}; waiting for a restart: {}",
            home.config_file().display(),
            list_or_none(&applied),
            list_or_none(&reread.needs_restart)
        );
        Ok((applied, reread.needs_restart))
    }
}

fn list_or_none(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".to_string()
    } else {
        names.join(", ")
    }
}

/// The transcriber, when `[transcription]` is configured, with the voice
/// notes a stop left untranscribed queued again.
async fn start_transcriber(
    config: &Config,
    home: &Home,
    log: &Log,
    media: &crate::media::MediaStore,
    meter: &Meter,
    pending: &crate::transcription::Pending,
    agents: &std::collections::BTreeMap<String, crate::turn::AgentHandle>,
) -> Result<Option<crate::transcription::Transcriber>, crate::log::LogError> {
    let Some(transcription) = &config.transcription else {
        return Ok(None);
    };
    let key = secrets::find(&home.secrets_file(), &transcription.api_key_env);
    tracing::info!(
        "voice notes are transcribed by {} at {}",
        transcription.model,
        transcription.endpoint()
    );
    let transcriber = crate::transcription::Transcriber::start(
        transcription.clone(),
        key,
        log.clone(),
        media.clone(),
        meter.clone(),
        pending.clone(),
        agents
            .iter()
            .map(|(name, agent)| (name.clone(), agent.inputs()))
            .collect(),
    );
    let resumed = transcriber.resume(log).await?;
    if resumed > 0 {
        tracing::info!(
            "{resumed} voice notes left untranscribed by the last stop are queued again"
        );
    }
    Ok(Some(transcriber))
}
