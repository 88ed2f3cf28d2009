//! Durable appends per second: hearth's grouped commits against one
//! transaction per append, on the same schema, filesystem and pragmas (WAL,
//! `synchronous = FULL`). Every append counts only once it is durable: a
//! `Log::append` returns, and a submit is acknowledged, after the commit.

use crate::process::{Bins, Daemon, Model, DEADLINE};
use anyhow::{bail, Context, Result};
use hearth_client::Connection;
use hearth_daemon::log::{Log, NewMessage};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, Kind, ServerFrame};
use rusqlite::params;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

/// Appends done in a measured time.
#[derive(Debug, Clone, Copy)]
pub struct Rate {
    pub appends: usize,
    pub elapsed: Duration,
}

impl Rate {
    pub fn per_second(&self) -> f64 {
        self.appends as f64 / self.elapsed.as_secs_f64()
    }
}

/// The text of the `n`th benchmark message: about a chat line's length.
fn text(n: usize) -> String {
    format!("benchmark message {n}: a line about as long as a short chat message")
}

/// Creates the log's schema at `path` with hearth's own `Log::open`, then
/// lets its writer go, so the baseline writes the very same tables.
async fn create_schema(path: &Path) -> Result<()> {
    let (events, _) = broadcast::channel(16);
    let log = Log::open(path, events)?;
    log.next_id("bench").await?;
    Ok(())
}

/// The baseline: a plain rusqlite loop, WAL and `synchronous = FULL`, one
/// transaction per append, doing what hearth's append does (the next id,
/// the insert with its time).
pub async fn one_transaction_each(dir: &Path, count: usize) -> Result<Rate> {
    let path = dir.join(format!("baseline-{count}.db"));
    create_schema(&path).await?;
    tokio::task::spawn_blocking(move || -> Result<Rate> {
        let mut connection = rusqlite::Connection::open(&path)?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "FULL")?;
        connection.busy_timeout(Duration::from_secs(5))?;
        let started = Instant::now();
        for n in 0..count {
            let tx = connection.transaction()?;
            {
                let id: i64 = tx
                    .prepare_cached(
                        "SELECT COALESCE(MAX(id), -1) + 1 FROM messages WHERE agent = ?1",
                    )?
                    .query_row(params!["bench"], |row| row.get(0))?;
                let at = chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
                tx.prepare_cached(
                    "INSERT INTO messages (agent, id, kind, source, text, status, at, data, key)
                     VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, NULL, NULL)",
                )?
                .execute(params!["bench", id, "user", "bench", text(n), at])?;
            }
            tx.commit()?;
        }
        Ok(Rate {
            appends: count,
            elapsed: started.elapsed(),
        })
    })
    .await?
}

/// `Log::append` from `tasks` concurrent tasks, `count` appends in all; the
/// log's writer groups what arrives together into one transaction.
pub async fn grouped(dir: &Path, tasks: usize, count: usize) -> Result<Rate> {
    let path = dir.join(format!("grouped-{tasks}-{count}.db"));
    let (events, _) = broadcast::channel(16);
    let log = Log::open(&path, events)?;
    log.next_id("bench").await?;
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    for task in 0..tasks {
        let log = log.clone();
        let share = count / tasks + usize::from(task < count % tasks);
        running.spawn(async move {
            for n in 0..share {
                let message = NewMessage::new(Kind::User, "bench", text(task * count + n));
                log.append("bench", message).await?;
            }
            Ok::<_, anyhow::Error>(())
        });
    }
    while let Some(done) = running.join_next().await {
        done??;
    }
    let elapsed = started.elapsed();
    let logged = log.next_id("bench").await?;
    if logged != count as u64 {
        bail!("{logged} messages logged, {count} appended");
    }
    Ok(Rate {
        appends: count,
        elapsed,
    })
}

/// Submits `count` user messages in all through `connections`, each one
/// waiting for its ack before the next (every client also reads every
/// event, as clients do). Returns the rate and the connections.
pub async fn submit_through(
    connections: Vec<Connection>,
    count: usize,
) -> Result<(Rate, Vec<Connection>)> {
    let clients = connections.len();
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    for (client, mut connection) in connections.into_iter().enumerate() {
        let share = count / clients + usize::from(client < count % clients);
        running.spawn(async move {
            for n in 0..share {
                let frame = submit(text(client * count + n))?;
                acknowledged(&mut connection, &frame).await?;
            }
            Ok::<_, anyhow::Error>(connection)
        });
    }
    let mut connections = Vec::with_capacity(clients);
    while let Some(done) = running.join_next().await {
        connections.push(done??);
    }
    let rate = Rate {
        appends: count,
        elapsed: started.elapsed(),
    };
    Ok((rate, connections))
}

/// A user message from source `bench`, with no key. Built from its JSON,
/// so the bench keeps compiling as optional fields join the frame.
pub fn submit(text: String) -> Result<ClientFrame> {
    let json = serde_json::json!({ "type": "submit", "text": text, "source": "bench" });
    Ok(serde_json::from_value(json)?)
}

/// Sends a submit and reads until its ack, passing over the events that
/// arrive meanwhile. (`Connection::request` takes a callback that cannot move
/// between threads; this can, so submitters run as spawned tasks.)
pub async fn acknowledged(connection: &mut Connection, frame: &ClientFrame) -> Result<u64> {
    connection.send(frame).await?;
    let wait = async {
        loop {
            match connection.next().await? {
                None => bail!("the daemon closed the connection"),
                Some(ServerFrame::Event(_)) => continue,
                Some(ServerFrame::Ack {
                    id,
                    duplicate: false,
                }) => return Ok(id),
                Some(other) => bail!("expected an ack, got {}", other.encode()),
            }
        }
    };
    tokio::time::timeout(DEADLINE, wait)
        .await
        .context("no ack in time")?
}

/// Opens `clients` greeted connections to the daemon of `home`.
pub async fn connect(home: &Home, clients: usize, name: &str) -> Result<Vec<Connection>> {
    let mut connections = Vec::with_capacity(clients);
    for n in 0..clients {
        let (connection, _) = Connection::open(home, &format!("{name}-{n}"), None).await?;
        connections.push(connection);
    }
    Ok(connections)
}

/// Submits over the real protocol from `clients` clients to a fresh daemon
/// with no model (each submit wakes the agent, whose turn ends at once with
/// a note, as it does until a model is configured).
pub async fn protocol(bins: &Bins, dir: &Path, clients: usize, count: usize) -> Result<Rate> {
    let home = dir.join(format!("protocol-{clients}"));
    std::fs::create_dir_all(&home)?;
    Model::None.write(&home)?;
    let (daemon, _) = Daemon::start(bins, &home).await?;
    let connections = connect(daemon.home(), clients, "submitter").await?;
    let (rate, connections) = submit_through(connections, count).await?;
    for connection in connections {
        connection.close().await;
    }
    daemon.settle().await?;
    daemon.stop()?;
    Ok(rate)
}
