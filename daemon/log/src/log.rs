//! The log: one SQLite database that holds everything that must outlive a
//! restart, written by one thread.
//!
//! The `messages` table is append-only (triggers abort UPDATE, DELETE and
//! an INSERT that would replace a row); ids are dense per agent; each
//! message has a link in a tamper-evident chain (`log/chain.rs`), and a log
//! that vanished or shrank is refused at start. Beside it: `turns` (what each turn took and
//! whether it finished), `tool_calls` (calls running now, so a crash can log
//! them as interrupted), `nodes` and `views` (the memory's summary tree and
//! saved views, written by `memory/store.rs`), `schedules` and `notify`
//! (written by `schedule.rs`), `usage` and `budget_notes` (every model
//! request's tokens and cost, and the budget warnings sent; written by
//! `usage.rs`), `client_state` (a bridge's offsets and cursors), and the
//! memory's full-text index and pinned facts (`memory/search.rs`,
//! `memory/facts.rs`; the index is kept by triggers on `messages` and
//! `nodes`, in the transaction that writes them), `exposures` (when
//! calls that may bring outside words into files ran, `log/exposure.rs`),
//! and the record of the facts' changes, which the start checks with the
//! chain (`log/facts_record.rs`).
//!
//! Every operation is a job run on the writer thread. Jobs that arrive
//! together share one transaction (group commit); each job's answer is sent
//! only after that transaction is durable (and after the group's messages
//! were handed over whole to the daemon's own readers, [`Log::appended`]),
//! and the events of the messages it appended are broadcast in id order
//! right after. An append itself is in
//! `log/append.rs`.

use hearth_protocol::{Event, Kind, Message, MessageStatus};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, oneshot};

/// Jobs taken into one transaction at most: enough for every task that
/// waits while the last group's commit syncs (100 concurrent appenders, say)
/// to share the next one, rather than wait for a second sync.
const GROUP_COMMIT: usize = 256;

/// How many groups of appended messages [`Log::appended`] keeps for a
/// receiver that is behind.
pub const ENTRIES_BEHIND: usize = 64;

/// Read-only connections (searches) open at once; the others wait.
pub const READERS: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("the log database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the log's writer thread has stopped")]
    Stopped,
    #[error("the log could not commit: {0}")]
    Commit(String),
    #[error("the database was written by a newer hearth (schema {found}; this hearthd knows up to {known}); run the newer hearthd")]
    NewerSchema { found: i64, known: i64 },
    #[error("cannot open the log at {path}: {message}")]
    Open { path: String, message: String },
    #[error("{0}")]
    Shrank(#[from] Box<chain::Shrank>),
}

/// A message to append; the log gives it its id and time.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub kind: Kind,
    pub source: String,
    pub text: String,
    /// How the call or run a `tool` or `work` message reports ended.
    pub status: Option<MessageStatus>,
    /// Machine details kept beside the text: a reply's answered ids, a tool
    /// call's name, arguments and output, the chain step of an echo.
    pub data: MessageData,
    /// An idempotency key; the same key again is not appended twice.
    pub key: Option<String>,
    /// When it was written, if not now: an imported message's original
    /// time, RFC 3339 in local time (`log/import.rs`, which keeps the log's
    /// times growing with its ids).
    pub at: Option<String>,
}

/// The source of what the daemon itself logs: its notes (a failed or
/// interrupted turn, a budget warning, a schedule that could not fire).
pub const DAEMON_SOURCE: &str = "hearthd";

impl NewMessage {
    /// A note the daemon itself logs.
    pub fn daemon_note(text: impl Into<String>) -> NewMessage {
        NewMessage::new(Kind::Note, DAEMON_SOURCE, text)
    }

    pub fn new(kind: Kind, source: &str, text: impl Into<String>) -> NewMessage {
        NewMessage {
            kind,
            source: source.to_string(),
            text: text.into(),
            status: None,
            data: MessageData::default(),
            key: None,
            at: None,
        }
    }

    pub fn with_status(mut self, status: MessageStatus) -> NewMessage {
        self.status = Some(status);
        self
    }

    /// Keeps a message a tool left for a bridge to send (`whatsapp_send`)
    /// in the data, where clients read it as the message's `outbox`.
    pub fn with_outbox(mut self, outbox: Option<&hearth_protocol::Outbox>) -> NewMessage {
        self.data.outbox = outbox.cloned();
        self
    }

    pub fn with_data(mut self, data: MessageData) -> NewMessage {
        self.data = data;
        self
    }
}

/// A logged message with its machine details.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub message: Message,
    pub data: MessageData,
}

/// One turn's record: what it took and where its chain starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnRecord {
    pub seq: i64,
    /// The log's length when the turn started: its chain is logged from here.
    pub start_id: u64,
    /// It took the waiting messages after this id (none: from the start) …
    pub taken_after: Option<u64>,
    /// … up to and including this one.
    pub taken_through: u64,
}

/// A tool call that was running; logged as interrupted if a crash cut it off.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningCall {
    pub call_id: String,
    pub step: u32,
    pub name: String,
    pub arguments: String,
}

/// A job runs inside the group's transaction and returns what to do once the
/// transaction ends: deliver its answer, or the commit's failure.
struct Job {
    run: Run,
    /// Whether the job's answer waits for the commit to reach the disk
    /// (`synchronous = FULL`): every job but those that store what can be
    /// derived again from the log ([`Log::run_derived`]).
    durable: bool,
}
type Delivery = Box<dyn FnOnce(Result<(), String>) + Send>;
/// What a job does inside the group's transaction.
type Run = Box<dyn FnOnce(&Connection, &mut Appended) -> Delivery + Send>;

/// A handle to the writer thread. Cheap to clone.
#[derive(Clone)]
pub struct Log {
    // Declared before `_writer`: dropping the last handle drops the last
    // sender first, so the writer thread ends and can be joined.
    jobs: mpsc::Sender<Job>,
    /// The database file, for backups and reads through connections of
    /// their own.
    path: std::path::PathBuf,
    /// Read-only connections open at once (`Log::read`).
    readers: Arc<tokio::sync::Semaphore>,
    /// What the start's check of the chain found, for `hearth status`.
    chain_at_start: Arc<chain::Report>,
    /// The agents whose pinned facts the start found changed outside
    /// hearth: their facts are shown as untrusted until a change made
    /// through hearth stores them so (`memory/facts.rs`).
    facts_changed: Arc<Mutex<BTreeSet<String>>>,
    /// Each durable group's appended messages, whole and in order.
    entries: broadcast::Sender<Arc<Vec<Entry>>>,
    _writer: Arc<Writer>,
}

impl Log {
    /// Opens (creating if needed) the database and starts the writer thread.
    /// Appended messages are broadcast on `events` once durable.
    pub fn open(path: &Path, events: broadcast::Sender<Event>) -> Result<Log, LogError> {
        // Before the file is opened for writing: a vanished database must
        // not be created anew in silence.
        chain::guard(path)?;
        let connection = Connection::open(path).map_err(|err| LogError::Open {
            path: path.display().to_string(),
            message: err.to_string(),
        })?;
        prepare(&connection).map_err(|err| disk_full(path, err))?;
        limit_for_tests(&connection)?;
        let report = chain::check_at_start(&connection, path)?;
        for problem in &report.problems {
            tracing::error!(
                "the log's chain is broken: {problem}; run `hearth verify` for the whole log"
            );
        }
        chain::record(&connection, path);
        // A chain found broken is not anchored anew: the anchor that tells
        // of the change stays until someone decides (see ARCHITECTURE.md).
        let anchoring = report.is_ok();
        if anchoring {
            anchor::write(&connection, path);
        }
        let database = path.to_path_buf();
        let (jobs, receiver) = mpsc::channel::<Job>();
        let (entries, _) = broadcast::channel(ENTRIES_BEHIND);
        let sent = entries.clone();
        let thread = std::thread::Builder::new()
            .name("hearth-log".into())
            .spawn(move || {
                let anchor_to = anchoring.then_some(database.as_path());
                let connection = writer(connection, receiver, events, sent, anchor_to);
                chain::record(&connection, &database);
                if anchoring {
                    anchor::write(&connection, &database);
                }
            })
            .map_err(|err| LogError::Open {
                path: path.display().to_string(),
                message: err.to_string(),
            })?;
        Ok(Log {
            jobs,
            path: path.to_path_buf(),
            readers: Arc::new(tokio::sync::Semaphore::new(READERS)),
            facts_changed: Arc::new(Mutex::new(report.facts_changed.clone())),
            chain_at_start: Arc::new(report),
            entries,
            _writer: Arc::new(Writer {
                thread: Mutex::new(Some(thread)),
            }),
        })
    }

    /// Each durable group's appended messages from now on, whole (with
    /// their data) and in order, as they were written: what the daemon's
    /// own readers take instead of reading each new message back. A
    /// receiver that falls [`ENTRIES_BEHIND`] groups behind gets `Lagged`
    /// and reads the log.
    pub fn appended(&self) -> broadcast::Receiver<Arc<Vec<Entry>>> {
        self.entries.subscribe()
    }

    /// How many take the appended messages whole ([`Log::appended`]).
    pub fn readers_of_appended(&self) -> usize {
        self.entries.receiver_count()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What the chain check at start found.
    pub fn chain_at_start(&self) -> &chain::Report {
        &self.chain_at_start
    }

    /// The chain's state in words, for `hearth status`: what the start's
    /// check found when it found something, and the last `hearth verify`.
    pub fn chain_state(&self) -> String {
        let verified = anchor::last_verified(&self.path).map_or_else(
            || "never verified whole (`hearth verify`)".to_string(),
            |last| format!("last verified {last}"),
        );
        match self.chain_at_start.problems.first() {
            Some(problem) => format!("broken at start: {problem}; {verified}"),
            None => verified,
        }
    }

    /// Whether the start found `agent`'s pinned facts changed outside
    /// hearth, and no change through hearth has stored them since.
    pub fn facts_changed_outside(&self, agent: &str) -> bool {
        self.facts_changed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(agent)
    }

    /// A change through hearth stored `agent`'s facts, each one changed
    /// outside it marked untrusted: they are shown as stored from now on.
    pub fn facts_stored_marked(&self, agent: &str) {
        self.facts_changed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(agent);
    }

    /// Runs `job` on the writer thread inside a transaction and returns its
    /// answer once the transaction is durable.
    pub async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection, &mut Appended) -> Result<T, rusqlite::Error> + Send + 'static,
    ) -> Result<T, LogError> {
        self.send_job(job, true).await
    }

    /// Runs `job` as [`Log::run`] does, for writes of what the log's
    /// messages determine (the memory's lines and views): its answer comes
    /// once the transaction is committed, and a group of such jobs alone
    /// commits without syncing the disk. A stop or a crash of hearthd loses
    /// none of it (the WAL holds every commit); a power cut may lose the
    /// last such commits, never a message, and never one without the
    /// commits before it (the WAL is read back in order): what is lost is
    /// derived again from the log at the next start. The next durable
    /// commit syncs them with it.
    pub async fn run_derived<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection, &mut Appended) -> Result<T, rusqlite::Error> + Send + 'static,
    ) -> Result<T, LogError> {
        self.send_job(job, false).await
    }

    async fn send_job<T: Send + 'static>(
        &self,
        job: impl FnOnce(&Connection, &mut Appended) -> Result<T, rusqlite::Error> + Send + 'static,
        durable: bool,
    ) -> Result<T, LogError> {
        let (answer, receive) = oneshot::channel::<Result<T, LogError>>();
        let run: Run = Box::new(move |tx, appended| {
            // The job runs inside a savepoint so a failing job leaves the
            // others of its group intact. After some errors (a full disk,
            // I/O) SQLite rolls back the group's whole transaction; a job
            // run after that would commit on its own while its group fails,
            // so it is not run: it fails with its group.
            let result = if tx.is_autocommit() {
                Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
                    Some("the group's transaction was rolled back".into()),
                ))
            } else {
                Ok(())
            };
            // Cached statements: parsing these again for every job cost
            // as much as a small append.
            let savepoint = |sql: &str| tx.prepare_cached(sql)?.execute([]).map(|_| ());
            let result = result
                .and_then(|()| savepoint("SAVEPOINT job"))
                .and_then(|()| {
                    let mark = appended.mark();
                    let done = match job(tx, appended) {
                        Ok(value) => savepoint("RELEASE job").map(|()| value),
                        Err(err) => savepoint("ROLLBACK TO job")
                            .and_then(|()| savepoint("RELEASE job"))
                            .and(Err(err)),
                    };
                    if done.is_err() {
                        appended.roll_back_to(mark);
                    }
                    done
                });
            Box::new(move |committed: Result<(), String>| {
                let answer_value = match committed {
                    Ok(()) => result.map_err(LogError::from),
                    Err(message) => Err(LogError::Commit(message)),
                };
                let _ = answer.send(answer_value);
            })
        });
        self.jobs
            .send(Job { run, durable })
            .map_err(|_| LogError::Stopped)?;
        receive.await.map_err(|_| LogError::Stopped)?
    }

    /// Appends one message.
    pub async fn append(&self, agent: &str, message: NewMessage) -> Result<Message, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, appended| append(tx, &agent, message, appended))
            .await
    }

    /// Appends several messages in one transaction, in order (an import, or
    /// a replay's log); returns them as logged.
    pub async fn append_all(
        &self,
        agent: &str,
        messages: Vec<NewMessage>,
    ) -> Result<Vec<Message>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, appended| {
            messages
                .into_iter()
                .map(|message| append(tx, &agent, message, appended))
                .collect()
        })
        .await
    }

    /// Appends a user message with an optional idempotency key. Returns its id
    /// and whether the key had been seen (then nothing was appended).
    pub async fn submit(&self, agent: &str, message: NewMessage) -> Result<(u64, bool), LogError> {
        let agent = agent.to_string();
        self.run(move |tx, appended| {
            if let Some(key) = &message.key {
                let seen: Option<i64> = tx
                    .query_row(
                        "SELECT id FROM messages WHERE agent = ?1 AND key = ?2",
                        params![agent, key],
                        |row| row.get(0),
                    )
                    .optional()?;
                if let Some(id) = seen {
                    return Ok((id as u64, true));
                }
            }
            let logged = append(tx, &agent, message, appended)?;
            Ok((logged.id, false))
        })
        .await
    }

    /// The id the next message of `agent` will get.
    pub async fn next_id(&self, agent: &str) -> Result<u64, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| next_id(tx, &agent)).await
    }

    /// Up to `limit` messages with ids in `[from, to)`, oldest first.
    pub async fn range(
        &self,
        agent: &str,
        from: u64,
        to: u64,
        limit: u32,
    ) -> Result<Vec<Entry>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            let mut statement = tx.prepare_cached(
                "SELECT agent, id, kind, source, text, status, at, data FROM messages
                 WHERE agent = ?1 AND id >= ?2 AND id < ?3 ORDER BY id LIMIT ?4",
            )?;
            let rows = statement.query_map(
                params![agent, from as i64, to.min(i64::MAX as u64) as i64, limit],
                read_entry,
            )?;
            rows.collect()
        })
        .await
    }

    /// The page of up to `limit` messages before `before` (the newest when
    /// absent), oldest first.
    pub async fn page(
        &self,
        agent: &str,
        before: Option<u64>,
        limit: u32,
    ) -> Result<Vec<Message>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| {
            // Ids are below i64::MAX: a larger `before` (u64::MAX, say) is
            // past every id, not a negative number that matches none.
            let before = before.map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX));
            let mut statement = tx.prepare_cached(
                "SELECT agent, id, kind, source, text, status, at, data FROM messages
                 WHERE agent = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
            )?;
            let rows = statement.query_map(params![agent, before, limit], read_entry)?;
            let mut page = rows
                .map(|row| row.map(|entry| entry.message))
                .collect::<Result<Vec<_>, _>>()?;
            page.reverse();
            Ok(page)
        })
        .await
    }

    /// Ids of the user messages and reports after `after` (from the start
    /// when none) that wait for a turn.
    pub async fn waiting(&self, agent: &str, after: Option<u64>) -> Result<Vec<u64>, LogError> {
        let agent = agent.to_string();
        self.run(move |tx, _| waiting(tx, &agent, after)).await
    }

    /// Writes a consistent copy of the whole database to `path` while the
    /// daemon runs, or brings an earlier backup of this log there up to
    /// date with what is new (`log/backup.rs`); returns its size in bytes
    /// and, for an update, how many messages it took.
    pub async fn backup(&self, path: &Path) -> Result<(u64, backup::Backup), backup::Refused> {
        let source = self.path.clone();
        let target = path.to_path_buf();
        tokio::task::spawn_blocking(move || {
            let done = backup::backup(&source, &target)?;
            Ok((
                std::fs::metadata(&target).map(|m| m.len()).unwrap_or(0),
                done,
            ))
        })
        .await
        .map_err(|_| backup::Refused::Stopped)?
    }

    /// Runs `read` on a read-only connection of its own, on a blocking
    /// thread, never on the writer's: it reads what was committed when it
    /// began (WAL keeps that snapshot), and appends are acknowledged
    /// meanwhile. At most [`READERS`] run at once; more wait their turn
    /// here, not on the writer.
    pub async fn read<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, rusqlite::Error> + Send + 'static,
    ) -> Result<T, LogError> {
        let _permit = self
            .readers
            .acquire()
            .await
            .map_err(|_| LogError::Stopped)?;
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let connection = Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            connection.busy_timeout(std::time::Duration::from_secs(5))?;
            Ok(read(&connection)?)
        })
        .await
        .map_err(|_| LogError::Stopped)?
    }

    pub async fn get_state(&self, name: &str) -> Result<Option<String>, LogError> {
        let name = name.to_string();
        self.run(move |tx, _| {
            tx.query_row(
                "SELECT value FROM client_state WHERE name = ?1",
                params![name],
                |row| row.get(0),
            )
            .optional()
        })
        .await
    }

    pub async fn set_state(&self, name: &str, value: &str) -> Result<(), LogError> {
        let name = name.to_string();
        let value = value.to_string();
        self.run(move |tx, _| {
            tx.execute(
                "INSERT INTO client_state (name, value) VALUES (?1, ?2)
                 ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                params![name, value],
            )
            .map(|_| ())
        })
        .await
    }
}

/// The schema this binary writes. A database with a newer one is refused; an
/// older one is migrated forward at start.
///
/// - 1: the tables of `create`.
/// - 2: the full-text index of messages and lines (`memory/search.rs`),
///   filled from the tables on migration, and the pinned facts.
/// - 3: lines that repeat their message or their halves stored as a
///   length (`memory/store/lines.rs`), which an older hearthd would read
///   as empty lines.
///
/// Since 2, changes are migrations by name (`log/migrations.rs`), run once
/// and recorded, not version steps (3 only refuses older binaries).
pub const SCHEMA_VERSION: i64 = 3;

/// Sets the pragmas (WAL, and full sync so that an acknowledged write
/// survives a power cut, not only a crash) and brings the schema up to date.
fn prepare(connection: &Connection) -> Result<(), LogError> {
    // First, so that switching to WAL waits for a connection that is closing.
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    connection.pragma_update(None, "synchronous", "FULL")?;
    // A page cache of 1 MB, not SQLite's 2: appends touch the ends of the
    // B-trees, and the system's file cache serves the rest.
    connection.pragma_update(None, "cache_size", -1024)?;
    // The WAL is cut back to 4 MB after a checkpoint, rather than keeping
    // the largest size it ever reached on disk.
    connection.pragma_update(None, "journal_size_limit", 4 * 1024 * 1024)?;
    // Every statement an append runs stays prepared (rusqlite keeps 16 by
    // default, fewer than the writer's jobs use, so they were prepared anew).
    connection.set_prepared_statement_cache_capacity(64);
    let version: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(LogError::NewerSchema {
            found: version,
            known: SCHEMA_VERSION,
        });
    }
    // One transaction for the whole schema: never half a schema, and one
    // sync at a first start rather than one per table (~20 fsyncs, most of
    // a first start's time).
    let tx = connection.unchecked_transaction()?;
    create(&tx)?;
    migrations::create(&tx)?;
    words::create(&tx)?;
    facts_record::create_table(&tx)?;
    facts_record::create(&tx)?;
    // Migrations go here, by name: each runs once and is recorded.
    migrations::once(&tx, chain::WITHOUT_ROWID, |tx| {
        chain::rebuild_without_rowid(tx, create)
    })?;
    let linked = chain::link_unchained(&tx)?;
    if linked > 0 {
        tracing::info!("linked {linked} existing messages into the log's chain");
    }
    let index = words::WORDS_WITHOUT_COPIES;
    if migrations::once(&tx, index, words::migrate)? && version > 0 {
        tracing::info!("the search index was rebuilt without copies of the texts ({index})");
    }
    migrations::once(&tx, schema::VOICE_NOTES_INDEXED, schema::index_voice_notes)?;
    exposure::close_left_open(&tx, now_ns())?;
    migrations::once(&tx, facts_record::RECORDED, facts_record::record_unrecorded)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}

/// Now on the wall clock, in nanoseconds since the Unix epoch.
fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_nanos()).unwrap_or(i64::MAX)
        })
}

/// A failure to open the log, said as a full disk when the disk that holds
/// it has no room left (SQLite then reports only an I/O error).
fn disk_full(path: &Path, err: LogError) -> LogError {
    let folder = path.parent().unwrap_or(Path::new("."));
    let Ok(folder_c) = std::ffi::CString::new(folder.as_os_str().as_encoded_bytes()) else {
        return err;
    };
    // SAFETY: statvfs fills in a plain C struct from a NUL-terminated path.
    let full = unsafe {
        let mut stats: libc::statvfs = std::mem::zeroed();
        libc::statvfs(folder_c.as_ptr(), &mut stats) == 0 && stats.f_bavail == 0
    };
    if !full {
        return err;
    }
    LogError::Open {
        path: path.display().to_string(),
        message: format!(
            "the disk that holds {} is full ({err}); free some space there and start hearth again",
            folder.display()
        ),
    }
}

/// A fault-injection hook for tests, not a setting: `HEARTH_TEST_MAX_PAGES=N`
/// caps the database at N pages (`PRAGMA max_page_count`), so that a write
/// past the cap fails as on a full disk (`SQLITE_FULL`). `tests/faults.rs`
/// uses it to show that a failed write stops the agent with an `error` event
/// and loses nothing already acknowledged. Unset (always, outside tests), it
/// does nothing.
pub const TEST_MAX_PAGES_ENV: &str = "HEARTH_TEST_MAX_PAGES";

fn limit_for_tests(connection: &Connection) -> Result<(), LogError> {
    let Some(pages) = std::env::var(TEST_MAX_PAGES_ENV)
        .ok()
        .and_then(|pages| pages.trim().parse::<i64>().ok())
    else {
        return Ok(());
    };
    tracing::warn!("{TEST_MAX_PAGES_ENV} is set: the database is capped at {pages} pages");
    connection.pragma_update(None, "max_page_count", pages)?;
    Ok(())
}

fn read_entry(row: &rusqlite::Row) -> Result<Entry, rusqlite::Error> {
    let kind: String = row.get(2)?;
    let data: Option<String> = row.get(7)?;
    let text: String = row.get(4)?;
    let data = MessageData::read_beside(data.as_deref(), &text);
    Ok(Entry {
        message: Message {
            agent: row.get(0)?,
            id: row.get::<_, i64>(1)? as u64,
            // Only this module writes kinds, always from `Kind::as_str`.
            kind: Kind::parse(&kind).unwrap_or(Kind::Note),
            source: row.get(3)?,
            text,
            status: row.get(5)?,
            at: row.get(6)?,
            answers: data.answers.clone(),
            images: data.images.clone(),
            outbox: data.outbox.clone(),
            client: data.client.clone(),
            transcript_of: data.transcript_of,
        },
        data,
    })
}

mod anchor;
mod append;
pub mod backup;
pub use append::{append, next_id, Appended};
pub mod chain;
mod data;
mod ends;
mod exposure;
mod import;
pub use exposure::Exposure;
pub mod facts_record;
mod migrations;
mod schema;
pub use data::{Imported, MessageData, Provenance, ToolCall};
pub use import::{ImportOutcome, ImportRefusal};
use schema::create;
mod turns;
mod waiting;
mod writer;
use writer::{writer, Writer};
pub mod words;

use waiting::waiting;
pub use waiting::waits_for_turn;

#[cfg(test)]
mod tests;
