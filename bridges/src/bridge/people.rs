//! Who a bridge talks with: the allowed people's chats, which get the
//! agent's messages once they have written, and strangers, who are refused
//! once per run with a note in the log.

use super::link::{self, LinkError};
use hearth_client::Connection;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::{BTreeSet, HashSet};
use std::hash::Hash;
use tokio::sync::watch;

/// What a stranger is told, once per bridge run.
pub const REFUSAL: &str =
    "Sorry, this is a private assistant: it only talks with the people its owner allowed.";

/// The note a refusal leaves in the log: `{source}: refused a message from {who}`.
pub fn refusal_note(source: &str, who: &str) -> String {
    format!("{source}: refused a message from {who}")
}

/// The strangers refused in this run, so each is told (and noted) once.
#[derive(Debug)]
pub struct Strangers<T> {
    refused: HashSet<T>,
}

impl<T> Default for Strangers<T> {
    fn default() -> Strangers<T> {
        Strangers {
            refused: HashSet::new(),
        }
    }
}

impl<T: Eq + Hash> Strangers<T> {
    /// Whether `who` is refused for the first time in this run.
    pub fn first_time(&mut self, who: T) -> bool {
        self.refused.insert(who)
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
        let mut strangers = Strangers::default();
        assert!(strangers.first_time(7));
        assert!(!strangers.first_time(7));
        assert!(strangers.first_time(8));
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
