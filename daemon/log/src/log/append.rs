//! Appending one message inside a job's transaction: its id and time, keys
//! masked, its row and its link in the chain; and the tails the writer
//! keeps between appends, so that an append reads nothing back.

use super::{chain, Entry as Logged, MessageData, NewMessage};
use hearth_protocol::{Message, MessageStatus};
use rusqlite::{params, Connection};
use std::collections::hash_map::{Entry, HashMap};

/// What the writer's jobs appended, and each agent's tail as the writer
/// last wrote it.
#[derive(Default)]
pub struct Appended {
    /// The messages the group's jobs appended, in order, with their data:
    /// broadcast once the group's transaction is durable.
    messages: Vec<Logged>,
    /// Each agent's next id and last link. Kept rather than read back
    /// (two lookups per append, a good part of an append's time); an agent
    /// missing is read from the database. Cleared whenever writes are
    /// rolled back, so it never runs ahead of the database.
    tails: HashMap<String, Tail>,
}

/// An agent's end of the log: the id its next message gets, and the link
/// of its last one.
struct Tail {
    next: u64,
    link: String,
}

impl Appended {
    /// Where a job's messages begin, to roll back to if it fails.
    pub(super) fn mark(&self) -> usize {
        self.messages.len()
    }

    /// A job's writes were rolled back: its messages are forgotten, and the
    /// tails are read anew from the database.
    pub(super) fn roll_back_to(&mut self, mark: usize) {
        self.messages.truncate(mark);
        self.tails.clear();
    }

    /// The group's transaction did not commit: nothing it appended stays.
    pub(super) fn commit_failed(&mut self) {
        self.messages.clear();
        self.tails.clear();
    }

    /// The group's messages, to broadcast; the tails stay.
    pub(super) fn take(&mut self) -> Vec<Logged> {
        std::mem::take(&mut self.messages)
    }
}

// The statements of every append are cached: preparing them again each
// time cost as much of the writer's time as running them.
pub fn next_id(tx: &Connection, agent: &str) -> Result<u64, rusqlite::Error> {
    tx.prepare_cached("SELECT COALESCE(MAX(id), -1) + 1 FROM messages WHERE agent = ?1")?
        .query_row(params![agent], |row| row.get::<_, i64>(0))
        .map(|id| id as u64)
}

/// `agent`'s tail: kept by the writer, else read from the database.
fn tail<'a>(
    tx: &Connection,
    appended: &'a mut Appended,
    agent: &str,
) -> Result<&'a mut Tail, rusqlite::Error> {
    Ok(match appended.tails.entry(agent.to_string()) {
        Entry::Occupied(kept) => kept.into_mut(),
        Entry::Vacant(missing) => {
            let next = next_id(tx, agent)?;
            let link = chain::previous(tx, agent, next as i64)?;
            missing.insert(Tail { next, link })
        }
    })
}

/// Appends one message inside a job's transaction; its event is broadcast
/// once the transaction is durable.
pub fn append(
    tx: &Connection,
    agent: &str,
    mut message: NewMessage,
    appended: &mut Appended,
) -> Result<Message, rusqlite::Error> {
    let tail = tail(tx, appended, agent)?;
    let id = tail.next;
    // An imported message keeps the time it was written at elsewhere.
    let at = message.at.take().unwrap_or_else(|| {
        chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
    });
    // No key reaches the log: what is logged is sent in later requests.
    if let std::borrow::Cow::Owned(masked) = crate::redact::mask(&message.text) {
        message.text = masked;
    }
    let mut data = message.data.stored();
    if let Some(text) = &data {
        if let std::borrow::Cow::Owned(masked) = crate::redact::mask(text) {
            // What the clients get is what is stored.
            message.data = MessageData::read(Some(&masked));
            data = Some(masked);
        }
    }
    // A tool message's arguments and output once, in its text, when the
    // text holds them as they are (after masking, both ways the same).
    if data.is_some() {
        data = message.data.stored_beside(&message.text);
    }
    tx.prepare_cached(
        "INSERT INTO messages (agent, id, kind, source, text, status, at, data, key)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        agent,
        id as i64,
        message.kind.as_str(),
        message.source,
        message.text,
        message.status.map(MessageStatus::as_str),
        at,
        data,
        message.key
    ])?;
    let link = chain::extend(
        tx,
        &tail.link,
        &chain::Stored {
            agent,
            id: id as i64,
            kind: message.kind.as_str(),
            source: &message.source,
            text: &message.text,
            status: message.status.map(MessageStatus::as_str),
            at: &at,
            data: data.as_deref(),
            key: message.key.as_deref(),
        },
    )?;
    // Only once both rows are written: a failed insert leaves the tail as
    // the database has it (and the job's rollback clears it anyway).
    *tail = Tail { next: id + 1, link };
    let details = message.data;
    let logged = Message {
        agent: agent.to_string(),
        id,
        kind: message.kind,
        source: message.source,
        text: message.text,
        status: message.status.map(|status| status.as_str().to_string()),
        at,
        answers: details.answers.clone(),
        images: details.images.clone(),
        outbox: details.outbox.clone(),
        client: details.client.clone(),
        transcript_of: details.transcript_of,
    };
    appended.messages.push(Logged {
        message: logged.clone(),
        data: details,
    });
    Ok(logged)
}
