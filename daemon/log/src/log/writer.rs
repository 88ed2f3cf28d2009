//! The writer thread: the one connection that writes the log.

use super::*;

/// The writer thread, joined when the last handle to the log is dropped, so
/// the database is closed (and its WAL checkpointed) before anything opens it
/// again.
pub(super) struct Writer {
    pub(super) thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            // A handle dropped on the writer thread itself must not wait for it.
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

/// The writer thread: takes jobs in groups, one transaction each; answers
/// each job only after the commit, then broadcasts what the group appended.
/// Returns the connection when the last handle is gone.
pub(super) fn writer(
    mut connection: Connection,
    jobs: mpsc::Receiver<Job>,
    events: broadcast::Sender<Event>,
    entries: broadcast::Sender<Arc<Vec<Entry>>>,
    anchor_to: Option<&Path>,
) -> Connection {
    let mut since_anchor = 0;
    let mut appended = Appended::default();
    // `prepare` set FULL; a group of derived writes alone commits NORMAL.
    let mut syncing = true;
    while let Ok(first) = jobs.recv() {
        let mut group = vec![first];
        while group.len() < GROUP_COMMIT {
            match jobs.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let durable = group.iter().any(|job| job.durable);
        if durable != syncing {
            let level = if durable { "FULL" } else { "NORMAL" };
            match connection.pragma_update(None, "synchronous", level) {
                Ok(()) => syncing = durable,
                // A NORMAL that failed leaves FULL: slower, as safe.
                Err(err) if !durable => tracing::warn!("cannot set synchronous = {level}: {err}"),
                // A FULL that failed would commit durable jobs unsynced:
                // they are refused (their callers see the log stopped).
                Err(err) => {
                    tracing::error!("cannot set synchronous = {level}: {err}");
                    continue;
                }
            }
        }
        let tx = match connection.transaction() {
            Ok(tx) => tx,
            Err(err) => {
                tracing::error!("cannot begin a transaction on the log: {err}");
                // Dropping the jobs drops their answer channels: callers see
                // `LogError::Stopped` and refuse the work.
                continue;
            }
        };
        // The group's messages are indexed together before the commit
        // (`log/words.rs`): in the same transaction, as one statement.
        let before = words::last_message_row(&tx);
        let deliveries: Vec<Delivery> = group
            .into_iter()
            .map(|job| (job.run)(&tx, &mut appended))
            .collect();
        let indexed = match before {
            Ok(_) if appended.mark() == 0 => Ok(()),
            Ok(after) => words::index_appended(&tx, after),
            Err(err) => Err(err),
        };
        let committed = indexed
            .map_err(|err| {
                tracing::error!("cannot index the log's new messages: {err}");
                err.to_string()
            })
            .and_then(|()| {
                tx.commit().map_err(|err| {
                    tracing::error!("cannot commit to the log: {err}");
                    err.to_string()
                })
            });
        if committed.is_err() {
            appended.commit_failed();
        }
        let messages = Arc::new(appended.take());
        // The messages whole to the daemon's own readers of the log (the
        // memory's keeper), which need not read them back: before the jobs
        // are answered, so that what an answered job appended is there for
        // whatever it does next (a turn asking for its view).
        if !messages.is_empty() && entries.receiver_count() > 0 {
            let _ = entries.send(messages.clone());
        }
        for delivery in deliveries {
            delivery(committed.clone());
        }
        for entry in messages.iter() {
            let _ = events.send(Event::message(&entry.message));
        }
        since_anchor += messages.len();
        if let Some(database) = anchor_to.filter(|_| since_anchor >= anchor::ANCHOR_EVERY) {
            anchor::write(&connection, database);
            since_anchor = 0;
        }
    }
    connection
}
