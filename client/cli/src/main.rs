//! `hearth`: attach to the agent in the terminal, or script it.
//!
//! Parses the command line, sets up tracing and calls into hearth-cli:
//! `terminal::run` for the interactive client, `commands` and its neighbours
//! for the rest; and into hearth-bridges: `telegram::run` and `whatsapp::run`.

mod discord_flags;
mod matrix_flags;

use clap::{Parser, Subcommand};
use hearth_bridges::bridge::EXIT_CONFIG;
use hearth_bridges::{discord, email, matrix, signal, telegram, whatsapp};
use hearth_cli::commands::{self, SendRequest};
use hearth_cli::inbox::{self, ScheduleCommand};
use hearth_cli::log::{self as log_command, Bound, Filter, LogRequest};
use hearth_cli::memory::{self, MemoryCommand, SearchRequest};
use hearth_cli::web::WebCommand;
use hearth_cli::{life, service, stats, terminal};
use hearth_client::CommandError;
use hearth_protocol::home::Home;
use hearth_protocol::Kind;
use std::path::PathBuf;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

/// `hearth setup`'s flags.
mod setup_args;
use setup_args::SetupArgs;

/// Talk to your hearth agent. With no command, attach in this terminal
/// (starting hearthd when it is not running); the commands serve scripts and
/// never start it.
#[derive(Parser)]
#[command(name = "hearth", version)]
struct Cli {
    /// The home folder holding config, database and socket [default: the XDG folders]
    #[arg(long, global = true, env = "HEARTH_HOME", value_name = "DIR")]
    home: Option<PathBuf>,

    /// Talk to this agent (a subagent's name) instead of the top agent
    #[arg(long, global = true, value_name = "NAME")]
    agent: Option<String>,

    #[command(subcommand)]
    command: Option<Subcommands>,
}

#[derive(Subcommand)]
enum Subcommands {
    /// Send a message; prints its id once it is durable (`duplicate ID` for a key used before)
    Send {
        /// The message, as words joined by spaces (use `--` before words that start with `-`); `-`, or none with stdin a pipe: read from stdin
        #[arg(value_name = "TEXT")]
        words: Vec<String>,
        /// Attach an image file (PNG, JPEG, GIF or WebP, at most 10 MB); may be repeated
        #[arg(long, value_name = "FILE")]
        image: Vec<PathBuf>,
        /// Attach a document (PDF, .txt, .md, .csv) or audio (.ogg, .mp3, .m4a, .wav, …; transcribed), at most 20 MB; may be repeated
        #[arg(long, value_name = "FILE")]
        file: Vec<PathBuf>,
        /// Where the message says it came from
        #[arg(long, default_value = "script")]
        source: String,
        /// An idempotency key: a message sent again with the same key is logged once
        #[arg(long)]
        key: Option<String>,
        /// Wait for the turn that takes the message; print only its reply on stdout (exit 0), or its error on stderr (exit 1); the id goes to stderr
        #[arg(long)]
        wait: bool,
        /// With --wait, print the id on stdout too, on the line before the reply
        #[arg(long, requires = "wait")]
        id: bool,
    },
    /// Print messages of the log, oldest first
    Log {
        /// At most N messages [default: 50, or all with --since]
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        /// Only messages with an id greater than ID
        #[arg(long, value_name = "ID")]
        since: Option<u64>,
        /// Only messages whose text holds these words (case ignored)
        #[arg(long, value_name = "WORDS")]
        grep: Option<String>,
        /// Only messages of this kind: user, reply, echo, tool, note or work (may be repeated)
        #[arg(long, value_parser = log_command::kind)]
        kind: Vec<Kind>,
        /// Only messages from this source (terminal, telegram, script, schedule, …)
        #[arg(long)]
        source: Option<String>,
        /// Only messages written at or after this local date or time (2026-11-30, "2026-11-30 18:00")
        #[arg(long, value_name = "DATE", value_parser = |text: &str| log_command::bound(text, false))]
        since_date: Option<Bound>,
        /// Only messages written before this local time, or on or before this date (a date takes its whole day in)
        #[arg(long, value_name = "DATE", value_parser = |text: &str| log_command::bound(text, true))]
        until_date: Option<Bound>,
        /// One JSON object per line: id, kind, source, text, status, at
        #[arg(long)]
        json: bool,
    },
    /// Print the agent's status
    Status {
        /// The status frame as JSON
        #[arg(long)]
        json: bool,
    },
    /// List the MCP servers: their state, tools and last error
    Mcp {
        /// The mcp frame as JSON
        #[arg(long)]
        json: bool,
    },
    /// List the skills the agent finds (SKILL.md folders), whether you installed each, and why any was refused
    Skills {
        #[command(subcommand)]
        action: Option<SkillsAction>,
    },
    /// End the running turn, if any
    Interrupt,
    /// Transcribe the voice note of message ID again (after a failure)
    Transcribe {
        #[arg(value_name = "ID")]
        id: u64,
    },
    /// Push an event from another program; the same key is processed once
    Notify {
        /// The event's idempotency key (a message id, a build number, …)
        #[arg(long)]
        key: String,
        /// Where the event comes from
        #[arg(long, default_value = "notify")]
        source: String,
        #[arg(required = true, value_name = "TEXT")]
        words: Vec<String>,
    },
    /// List, add or remove schedules
    Schedule {
        #[command(subcommand)]
        action: ScheduleAction,
    },
    /// Model requests, tokens and cost per day and agent
    Stats {
        /// The last N days, today included
        #[arg(long, value_name = "N", default_value_t = stats::DEFAULT_DAYS)]
        days: u32,
        /// One JSON object per line: day, agent, requests, tokens, cached_share, cost_usd
        #[arg(long)]
        json: bool,
    },
    /// Search the agent's whole memory (every message and summary line) by words
    Search {
        /// The words to look for; "a phrase" in quotes matches as a phrase
        #[arg(required = true, value_name = "QUERY")]
        words: Vec<String>,
        /// Only what was written before this local date or time (2026-11-30, "2026-11-30 18:00")
        #[arg(long, value_name = "DATE")]
        before: Option<String>,
        /// Only what was written at or after this local date or time
        #[arg(long, value_name = "DATE")]
        after: Option<String>,
        /// Only messages of this kind (user, reply, echo, tool, note, work), or `line` for summary lines
        #[arg(long)]
        kind: Option<String>,
        /// Only messages from this source (terminal, telegram, …)
        #[arg(long)]
        source: Option<String>,
        /// At most N hits [default: 10]
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        /// One JSON object per hit: id, n, kind, source, at, snippet
        #[arg(long)]
        json: bool,
    },
    /// Print the agent's memory as its last turn saw it: one line per node (ID+N, dates, line)
    Memory {
        #[command(subcommand)]
        action: Option<MemoryAction>,
        /// The view as one JSON object
        #[arg(long)]
        json: bool,
    },
    /// Bring your history from another agent into the log (through the running daemon), with its times; each message once however often it runs
    Import {
        /// The agent it comes from: openclaw (its sessions folder of *.jsonl transcripts) or hermes (its home, or state.db)
        #[arg(value_enum)]
        from: ImportFrom,
        /// The store: for openclaw e.g. ~/.openclaw/agents/main/sessions; for hermes ~/.hermes
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// Say what would be imported (per session, user and reply, the times), and write nothing
        #[arg(long)]
        dry_run: bool,
        /// Import even into a log that already has newer messages (the history then comes after them)
        #[arg(long)]
        force: bool,
    },
    /// Write a consistent copy of the database to FILE while the daemon runs
    Backup {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Check that the log was not changed after it was written (its chain of hashes) and the database's integrity; works with the daemon stopped too
    Verify,
    /// The browser client (the web table of config.toml): print a one-time login link
    Web {
        #[command(subcommand)]
        action: Option<WebAction>,
    },
    /// Write a working config.toml and secrets.env: a model proved by one request, then Telegram, Signal and Discord (paired by code), email, Matrix and the service; every question has a flag
    Setup(Box<SetupArgs>),
    /// Sign in with your ChatGPT plan (the `chatgpt` provider): in a browser, or with --device on a machine without one
    Login {
        #[arg(value_enum)]
        service: SignInService,
        /// Sign in with a code entered in a browser on any device (for a server without a browser)
        #[arg(long)]
        device: bool,
        /// Print the sign-in address without opening a browser
        #[arg(long)]
        no_browser: bool,
        /// The port of the local callback [default: 1455, else 1457]
        #[arg(long, value_name = "PORT", conflicts_with = "device")]
        callback_port: Option<u16>,
    },
    /// Sign out: forget the stored ChatGPT sign-in
    Logout {
        #[arg(value_enum)]
        service: SignInService,
    },
    /// Run hearthd as a service
    Service {
        #[command(subcommand)]
        action: ServiceAction,
    },
    /// Stop the daemon cleanly and wait until it has exited
    Stop,
    /// Stop the daemon and start it again, waiting until the new one answers (a service is restarted by systemd)
    Restart,
    /// Read config.toml again and apply what can change live (the daemon keeps its configuration if the file is broken)
    Reload,
    /// Install the newest release in place of these programs (its signature checked), then restart the daemon
    Update {
        /// Only say whether a newer release is out, and what changed
        #[arg(long)]
        check: bool,
        /// Install the newest release even when it is the version that runs
        #[arg(long)]
        force: bool,
    },
    /// Run the Telegram bridge: relay the allowed users' messages to the agent and its replies back (hearthd starts it when config.toml has a [telegram] table)
    Telegram,
    /// Run the WhatsApp bridge: the allowed numbers' messages in, the agent's replies back (hearthd starts it when config.toml has a [whatsapp] table)
    Whatsapp {
        #[command(subcommand)]
        action: Option<WhatsappAction>,
    },
    /// Run the Signal bridge through signal-cli: the allowed numbers' messages in, the agent's replies back (hearthd starts it when config.toml has a [signal] table)
    Signal,
    /// Run the email bridge: the allowed addresses' verified mail in over IMAP, the agent's replies back over SMTP (hearthd starts it when config.toml has an [email] table)
    Email,
    /// Run the Discord bridge: a bot that relays the allowed users' direct messages (and one allowlisted channel) to the agent and its replies back (hearthd starts it when config.toml has a [discord] table)
    Discord,
    /// Run the Matrix bridge (end-to-end encrypted, through hearth-matrix): the allowed users' messages in, the agent's replies back (hearthd starts it when config.toml has a [matrix] table)
    Matrix,
}

/// What `hearth login` signs in to.
#[derive(Clone, Copy, clap::ValueEnum)]
enum SignInService {
    /// A ChatGPT plan, as OpenAI's Codex client uses it
    Chatgpt,
}

#[derive(Subcommand)]
enum WhatsappAction {
    /// Link a personal WhatsApp account as a device of it (backend = "web"): shows the QR code to scan with the phone
    Link,
}

#[derive(Subcommand)]
enum ScheduleAction {
    /// The active schedules, soonest first: id, next firing, how it repeats, text
    List,
    /// Deliver TEXT at WHEN: `07:30`, `9am`, `tomorrow 9am`, `monday 8:00`, `in 20 minutes`, `2026-12-24 18:00`, or 5 cron fields (`"0 9 * * 1-5"`, quoted so the shell leaves `*` alone); the leading words that read as a time are WHEN, the rest TEXT
    Add {
        #[arg(required = true, num_args = 2.., value_name = "WHEN TEXT")]
        words: Vec<String>,
    },
    /// Cancel schedule ID
    Rm { id: i64 },
}

#[derive(Subcommand)]
enum MemoryAction {
    /// Node ID+N (as the view names it; a message id alone for the message) and what it was made from
    Show {
        #[arg(value_name = "ID+N")]
        node: String,
        #[arg(long)]
        json: bool,
    },
    /// The pinned facts the agent keeps in view; add or remove one
    Facts {
        #[command(subcommand)]
        change: Option<FactsAction>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum FactsAction {
    /// Pin a fact (one line)
    Add {
        #[arg(required = true, value_name = "FACT")]
        words: Vec<String>,
    },
    /// Unpin a fact: its number, its text, or words found in it alone
    Rm {
        #[arg(required = true, value_name = "FACT")]
        words: Vec<String>,
    },
}

#[derive(Subcommand)]
enum WebAction {
    /// The browsers logged in, with their ids
    Sessions,
    /// Log browser session ID out at once
    Revoke { id: i64 },
}

#[derive(Subcommand)]
enum SkillsAction {
    /// Install a skill as your own (after asking): a folder with a SKILL.md, a SKILL.md, or its http(s) URL; into the home's skills folder, or with --agent the agent's
    Install {
        #[arg(value_name = "PATH|URL")]
        source: String,
        /// Install without asking
        #[arg(long)]
        yes: bool,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ImportFrom {
    Openclaw,
    Hermes,
}

#[derive(Subcommand)]
enum ServiceAction {
    /// Write a systemd user unit for the installed hearthd, and enable and start it where systemd answers
    Install {
        /// Replace a unit that runs hearthd for another home
        #[arg(long)]
        force: bool,
    },
    /// Stop and disable the service and remove its unit
    Uninstall,
    /// Whether the unit is installed, what systemd says, and which daemon runs
    Status,
}

/// The exit code of a command line that cannot work, as clap's own errors
/// use it. The others: 0 done, 1 refused or failed, 78 ([`EXIT_CONFIG`]) a
/// configuration that cannot work.
const EXIT_USAGE: u8 = 2;
/// Stopped by Ctrl-C, as a shell reports it (128 + SIGINT).
const EXIT_INTERRUPTED: u8 = 130;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    // Whatever this process creates in the home (the data folder and
    // hearthd.log when it starts the daemon, a bridge's lock and session)
    // is private, whatever umask it was started with.
    // SAFETY: `umask` only sets the process's file mode mask; it cannot fail.
    unsafe {
        libc::umask(0o077);
    }
    let cli = Cli::parse();
    // The bridge is a service whose output goes to hearthd's log: it says
    // what it does. The interactive commands stay quiet.
    let level = match cli.command {
        Some(
            Subcommands::Telegram
            | Subcommands::Signal
            | Subcommands::Email
            | Subcommands::Discord
            | Subcommands::Matrix
            | Subcommands::Whatsapp { action: None },
        ) => "info",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level)),
        )
        // hearthd points a bridge's stderr at its log: plain text there.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
    match run(cli).await {
        Ok(code) => code,
        Err(err) => {
            // `hearth log | head` closing the pipe early is not a failure.
            if let Some(CommandError::Output(io)) = err.downcast_ref::<CommandError>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("hearth: {err:#}");
            // Nothing to send is a usage error, as clap's own are (exit 2).
            if let Some(setup) = err.downcast_ref::<hearth_cli::setup::SetupError>() {
                if setup.interrupted() {
                    return ExitCode::from(EXIT_INTERRUPTED);
                }
            }
            match err.downcast_ref::<CommandError>() {
                Some(CommandError::NothingToSend) => ExitCode::from(EXIT_USAGE),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let agent = cli.agent.as_deref();
    let explicit_home = cli.home.filter(|dir| !dir.as_os_str().is_empty());
    let home = Home::resolve(explicit_home.as_deref());
    let mut stdout = std::io::stdout();
    let code = match cli.command {
        None => {
            terminal::run(&home, explicit_home.as_deref(), agent).await?;
            ExitCode::SUCCESS
        }
        Some(Subcommands::Send {
            words,
            image,
            file,
            source,
            key,
            wait,
            id,
        }) => {
            let stdin = std::io::stdin();
            let piped = !std::io::IsTerminal::is_terminal(&stdin);
            let text = commands::message_text(
                &words,
                !image.is_empty() || !file.is_empty(),
                &mut stdin.lock(),
                !piped,
            )?;
            let request = SendRequest {
                text,
                source,
                key,
                wait,
                print_id: id,
                images: image,
                files: file,
            };
            commands::send(&home, agent, request, &mut stdout).await?
        }
        Some(Subcommands::Log {
            limit,
            since,
            grep,
            kind,
            source,
            since_date,
            until_date,
            json,
        }) => {
            let filter = Filter {
                grep: grep.filter(|words| !words.is_empty()),
                kinds: kind,
                source,
                since: since_date,
                until: until_date,
            };
            let request = LogRequest {
                limit,
                since,
                filter,
                json,
            };
            log_command::log(&home, agent, request, &mut stdout).await?
        }
        Some(Subcommands::Status { json }) => {
            commands::status(&home, agent, json, &mut stdout).await?
        }
        Some(Subcommands::Skills { action: None }) => {
            hearth_cli::skills::list(&home, agent, &mut stdout)?
        }
        Some(Subcommands::Skills {
            action: Some(SkillsAction::Install { source, yes }),
        }) => {
            let request = hearth_cli::skills::InstallRequest {
                source,
                agent: agent.map(str::to_string),
                yes,
            };
            let mut answers = std::io::stdin().lock();
            hearth_cli::skills::install(&home, request, &mut answers, &mut stdout).await?
        }
        Some(Subcommands::Interrupt) => commands::interrupt(&home, agent, &mut stdout).await?,
        Some(Subcommands::Transcribe { id }) => {
            commands::transcribe(&home, agent, id, &mut stdout).await?
        }
        Some(Subcommands::Mcp { json }) => hearth_cli::mcp::mcp(&home, json, &mut stdout).await?,
        Some(Subcommands::Notify { key, source, words }) => {
            let text = commands::join_words(&words).ok_or(CommandError::NothingToSend)?;
            inbox::notify(&home, agent, key, text, source, &mut stdout).await?
        }
        Some(Subcommands::Schedule { action }) => {
            let command = match action {
                ScheduleAction::List => ScheduleCommand::List,
                ScheduleAction::Add { words } => ScheduleCommand::Add { words },
                ScheduleAction::Rm { id } => ScheduleCommand::Remove { id },
            };
            inbox::schedule(&home, agent, command, &mut stdout).await?
        }
        Some(Subcommands::Stats { days, json }) => {
            stats::stats(&home, agent, days, json, &mut stdout).await?
        }
        Some(Subcommands::Import {
            from,
            path,
            dry_run,
            force,
        }) => {
            let peer = match from {
                ImportFrom::Openclaw => hearth_cli::import::Peer::OpenClaw,
                ImportFrom::Hermes => hearth_cli::import::Peer::Hermes,
            };
            let request = hearth_cli::import::ImportRequest {
                peer,
                path,
                dry_run,
                force,
            };
            hearth_cli::import::import(&home, agent, request, &mut stdout).await?
        }
        Some(Subcommands::Backup { file }) => {
            service::backup(&home, agent, &file, &mut stdout).await?
        }
        Some(Subcommands::Verify) => hearth_cli::launch::verify(explicit_home.as_deref())?,
        Some(Subcommands::Search {
            words,
            before,
            after,
            kind,
            source,
            limit,
            json,
        }) => {
            let request = SearchRequest {
                query: commands::join_words(&words).ok_or(CommandError::NothingToSend)?,
                before,
                after,
                kind,
                source,
                limit,
                json,
            };
            memory::search(&home, agent, request, &mut stdout).await?
        }
        Some(Subcommands::Memory { action, json }) => {
            let command = match action {
                None => MemoryCommand::View { json },
                Some(MemoryAction::Show { node, json: own }) => MemoryCommand::Show {
                    node,
                    json: json || own,
                },
                Some(MemoryAction::Facts { change, json: own }) => {
                    let words = |words: Vec<String>| commands::join_words(&words);
                    let (add, remove) = match change {
                        None => (None, None),
                        Some(FactsAction::Add { words: w }) => (words(w), None),
                        Some(FactsAction::Rm { words: w }) => (None, words(w)),
                    };
                    MemoryCommand::Facts {
                        add,
                        remove,
                        json: json || own,
                    }
                }
            };
            memory::memory(&home, agent, command, &mut stdout).await?
        }
        Some(Subcommands::Web { action }) => {
            let command = match action {
                None => WebCommand::Login,
                Some(WebAction::Sessions) => WebCommand::Sessions,
                Some(WebAction::Revoke { id }) => WebCommand::Revoke(id),
            };
            hearth_cli::web::web(&home, command, &mut stdout).await?
        }
        Some(Subcommands::Setup(args)) => {
            let options = (*args).options();
            hearth_cli::setup::run(&home, explicit_home.as_deref(), options, &mut stdout).await?
        }
        Some(Subcommands::Login {
            service: SignInService::Chatgpt,
            device,
            no_browser,
            callback_port,
        }) => {
            let options = hearth_cli::login::LoginOptions {
                device,
                open_browser: !no_browser,
                port: callback_port,
            };
            hearth_cli::login::login(&home, &options, &mut stdout).await?;
            ExitCode::SUCCESS
        }
        Some(Subcommands::Logout {
            service: SignInService::Chatgpt,
        }) => {
            hearth_cli::login::logout(&home, &mut stdout)?;
            ExitCode::SUCCESS
        }
        Some(Subcommands::Service { action }) => match action {
            ServiceAction::Install { force } => {
                service::install(&home, explicit_home.as_deref(), force, &mut stdout).await?
            }
            ServiceAction::Uninstall => service::uninstall(&mut stdout).await?,
            ServiceAction::Status => service::status(&home, &mut stdout).await?,
        },
        Some(Subcommands::Stop) => life::stop(&home, &mut stdout).await?,
        Some(Subcommands::Restart) => {
            life::restart(&home, explicit_home.as_deref(), &mut stdout).await?
        }
        Some(Subcommands::Reload) => life::reload(&home, &mut stdout).await?,
        Some(Subcommands::Update { check, force }) => {
            let request = hearth_cli::update::UpdateRequest { check, force };
            hearth_cli::update::update(&home, explicit_home.as_deref(), request, &mut stdout)
                .await?
        }
        Some(Subcommands::Telegram) => match telegram::run(&home, stop_signal()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => bridge_failed("telegram", &err, err.is_config()),
        },
        Some(Subcommands::Signal) => match signal::run(&home, stop_signal()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => bridge_failed("signal", &err, err.is_config()),
        },
        Some(Subcommands::Email) => match email::run(&home, stop_signal()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => bridge_failed("email", &err, err.is_config()),
        },
        Some(Subcommands::Discord) => match discord::run(&home, stop_signal()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => bridge_failed("discord", &err, err.is_config()),
        },
        Some(Subcommands::Matrix) => match matrix::run(&home, stop_signal()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => bridge_failed("matrix", &err, err.is_config()),
        },
        Some(Subcommands::Whatsapp { action: None }) => {
            match whatsapp::run(&home, stop_signal()).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(err) => bridge_failed("whatsapp", &err, err.is_config()),
            }
        }
        Some(Subcommands::Whatsapp {
            action: Some(WhatsappAction::Link),
        }) => match whatsapp::link(&home, &mut stdout).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => bridge_failed("whatsapp link", &err, err.is_config()),
        },
    };
    Ok(code)
}

/// Says why a bridge stopped; a configuration that cannot work exits with
/// [`EXIT_CONFIG`], so hearthd does not start it again and again.
fn bridge_failed(name: &str, err: &dyn std::fmt::Display, is_config: bool) -> ExitCode {
    eprintln!("hearth {name}: {err}");
    if is_config {
        ExitCode::from(EXIT_CONFIG)
    } else {
        ExitCode::FAILURE
    }
}

/// Completes on SIGTERM or SIGINT, so the bridge stops between two steps.
/// The handlers are installed at once, not when the future is first polled
/// (after start-up), so a stop that comes early is a clean stop too.
fn stop_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        let (Ok(mut term), Ok(mut int)) = handlers else {
            // Without handlers the default actions still stop the process.
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    }
}
