//! Who a bridge talks with: the allowed people's chats, which get the
//! agent's messages once they have written, and strangers, whom the one
//! [`Gate`] refuses once per run with a note in the log.

use super::link::{self, LinkError};
use hearth_client::Connection;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::{BTreeSet, HashSet};
use std::fmt::Display;
use std::future::Future;
use std::hash::Hash;
use tokio::sync::watch;

/// What a stranger is told, once per bridge run.
pub const REFUSAL: &str =
    "Sorry, this is a private assistant: it only talks with the people its owner allowed.";

/// The note a refusal leaves in the log: `{source}: refused a message from {who}`.
pub fn refusal_note(source: &str, who: &str) -> String {
    format!("{source}: refused a message from {who}")
}

/// The one gate for strangers: each bridge's inbound half hands it every
/// message from someone its allowlist does not name. The first one from an
/// address in this run is noted in the log and queued to be told
/// [`REFUSAL`]; later ones are only logged here, so a stranger who keeps
/// writing neither floods the log nor gets an answer each time.
#[derive(Debug)]
pub struct Gate<A> {
    /// The bridge's name as a message source (`telegram`), for the notes.
    source: &'static str,
    /// The addresses refused in this run.
    refused: HashSet<A>,
    /// Refused for the first time and not told yet, with how they are named.
    to_tell: Vec<(A, String)>,
}

impl<A: Eq + Hash + Clone> Gate<A> {
    pub fn new(source: &'static str) -> Gate<A> {
        Gate {
            source,
            refused: HashSet::new(),
            to_tell: Vec::new(),
        }
    }

    /// Refuses a message from `address` (named `who` in the note): the
    /// first time in this run it is noted in the log through `connection`
    /// and the address queued for [`Gate::tell`].
    pub async fn refuse(
        &mut self,
        connection: &mut Connection,
        address: A,
        who: &str,
    ) -> Result<(), LinkError> {
        if !self.first_time(address.clone()) {
            tracing::info!("{}: refused another message from {who}", self.source);
            return Ok(());
        }
        let note = refusal_note(self.source, who);
        link::note(connection, self.source, note, &mut |_| {}).await?;
        self.to_tell.push((address, who.to_string()));
        Ok(())
    }

    /// Tells the strangers refused since the last call [`REFUSAL`] with
    /// `send` (the platform's send of a text), reading `connection`
    /// meanwhile; a send that fails is only logged. Returns what the sends
    /// that went through returned (the ids of the messages, say).
    pub async fn tell<T, E: Display, F: Future<Output = Result<T, E>>>(
        &mut self,
        connection: &mut Connection,
        send: impl Fn(A, &'static str) -> F,
    ) -> Result<Vec<T>, LinkError> {
        let mut sent = Vec::new();
        for (address, who) in std::mem::take(&mut self.to_tell) {
            let told = send(address, REFUSAL);
            match link::beside(connection, told, &mut |_| {}).await? {
                Ok(receipt) => sent.push(receipt),
                Err(err) => {
                    tracing::warn!("{}: cannot tell {who} they are refused: {err}", self.source)
                }
            }
        }
        Ok(sent)
    }

    /// Whether `address` is refused for the first time in this run.
    fn first_time(&mut self, address: A) -> bool {
        self.refused.insert(address)
    }
}

/// Reads the stored chats: a JSON list.
pub fn parse_chats<T: DeserializeOwned + Ord>(text: &str) -> Option<BTreeSet<T>> {
    serde_json::from_str(text).ok()
}

/// Adds `chat` to the chats that get the agent's messages, when it is new:
/// shared with the outbound half at once (so the reply to the message that
/// brought it finds it), then stored in the daemon as state `name`.
pub async fn remember_chat<T: Ord + Serialize>(
    connection: &mut Connection,
    name: &str,
    chats: &watch::Sender<BTreeSet<T>>,
    chat: T,
) -> Result<(), LinkError> {
    if chats.borrow().contains(&chat) {
        return Ok(());
    }
    chats.send_modify(|chats| {
        chats.insert(chat);
    });
    // A set of ids or strings always serializes.
    let value = serde_json::to_string(&*chats.borrow()).unwrap_or_default();
    link::set_state(connection, name, value, &mut |_| {}).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strangers_are_refused_once_each() {
        let mut gate = Gate::new("telegram");
        assert!(gate.first_time(7));
        assert!(!gate.first_time(7));
        assert!(gate.first_time(8));
        assert_eq!(
            refusal_note("telegram", "user 7 (@eve)"),
            "telegram: refused a message from user 7 (@eve)"
        );
    }

    #[test]
    fn chats_read_back_what_is_stored() {
        let ids: BTreeSet<i64> = parse_chats("[42, 7]").unwrap();
        assert_eq!(ids.into_iter().collect::<Vec<_>>(), vec![7, 42]);
        let numbers: BTreeSet<String> = parse_chats(r#"["15551234567"]"#).unwrap();
        assert!(numbers.contains("15551234567"));
        assert_eq!(parse_chats::<i64>("nope"), None);
    }
}
