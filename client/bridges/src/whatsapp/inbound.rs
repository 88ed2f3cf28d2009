//! The inbound half: takes the webhook's signed deliveries, submits the
//! allowed people's messages to the daemon and refuses everyone else. A
//! person is allowed by number or by business-scoped user id, and their
//! chat is kept under the form the allowlist names, so replies go there.
//!
//! Each message is submitted with the key `whatsapp:<wamid>`, so a delivery
//! Meta sends again (after a failure, or twice) is acknowledged as a
//! duplicate and logged once. The webhook answers Meta only after every
//! message of the delivery is durable; strangers are told they are refused
//! after that, so Meta never waits on it.

use super::bridge::{BridgeError, CHATS_STATE, SOURCE};
use super::config::WhatsAppConfig;
use super::graph::Graph;
use super::media;
use super::payload::Received;
use super::webhook::Delivery;
use crate::bridge::link;
use crate::bridge::people::{remember_chat, Gate};
use hearth_client::Connection;
use hearth_protocol::whatsapp::whatsapp_shown;
use std::collections::BTreeSet;
use std::convert::Infallible;
use tokio::sync::{mpsc, watch};

/// The newest message an allowed person sent: the read mark and "typing…"
/// name it while the agent works.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastReceived {
    pub wamid: String,
    pub from: String,
}

/// What to do with one received message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// An allowed person's words for the agent; `from` is their chat: the
    /// form of their id (number or user id) that the allowlist names.
    Relay {
        from: String,
        wamid: String,
        key: String,
        text: String,
    },
    /// Someone not on the allowlist, by number or user id; `from` is
    /// where the refusal goes, `who` names them for the note.
    Refuse { from: String, who: String },
    /// Nothing to do, and why.
    Ignore(&'static str),
}

/// Decides what to do with a received message (pure).
pub fn classify(received: &Received, config: &WhatsAppConfig) -> Incoming {
    if received
        .phone_number_id
        .as_deref()
        .is_some_and(|id| id != config.phone_number_id)
    {
        return Incoming::Ignore("sent to another business number");
    }
    let allowed = std::iter::once(&received.from)
        .chain(&received.user_id)
        .find(|id| config.allows(id));
    let Some(chat) = allowed else {
        let shown = whatsapp_shown(&received.from);
        let who = match &received.name {
            Some(name) => format!("{shown} ({name})"),
            None => shown,
        };
        return Incoming::Refuse {
            from: received.from.clone(),
            who,
        };
    };
    match &received.text {
        Some(text) => Incoming::Relay {
            from: chat.clone(),
            wamid: received.wamid.clone(),
            key: format!("whatsapp:{}", received.wamid),
            text: text.clone(),
        },
        None => Incoming::Ignore("nothing to relay"),
    }
}

/// The inbound half's state.
pub struct Inbound<'a> {
    graph: &'a Graph,
    config: &'a WhatsAppConfig,
    /// Submits, notes and state writes. The live events the daemon also
    /// sends here are read and dropped: the outbound half has its own.
    connection: Connection,
    /// The webhook's signed deliveries.
    deliveries: mpsc::Receiver<Delivery>,
    /// The numbers that get the agent's messages, shared with the outbound half.
    chats: watch::Sender<BTreeSet<String>>,
    /// For the outbound half's read mark and "typing…".
    last_received: watch::Sender<Option<LastReceived>>,
    /// Numbers refused in this run, so each is told once.
    strangers: Gate<String>,
}

impl<'a> Inbound<'a> {
    pub fn new(
        graph: &'a Graph,
        config: &'a WhatsAppConfig,
        connection: Connection,
        deliveries: mpsc::Receiver<Delivery>,
        chats: watch::Sender<BTreeSet<String>>,
        last_received: watch::Sender<Option<LastReceived>>,
    ) -> Inbound<'a> {
        Inbound {
            graph,
            config,
            connection,
            deliveries,
            chats,
            last_received,
            strangers: Gate::new(SOURCE),
        }
    }

    /// Takes deliveries until something fails for good. A delivery whose
    /// messages the daemon did not all take is answered with a failure, so
    /// Meta sends it again.
    pub async fn run(mut self) -> Result<Infallible, BridgeError> {
        loop {
            let next = self.deliveries.recv();
            let Some(delivery) = link::beside(&mut self.connection, next, &mut |_| {}).await?
            else {
                return Err(BridgeError::WebhookGone);
            };
            for received in &delivery.messages {
                // On failure `done` is dropped unanswered: Meta gets an error.
                self.take(received).await?;
            }
            // A send WhatsApp accepted and then could not deliver.
            for failed in &delivery.failed {
                let note = failed.note(SOURCE);
                link::note(&mut self.connection, SOURCE, note, &mut |_| {}).await?;
            }
            // The webhook may have given up waiting; Meta then sends it again.
            let _ = delivery.done.send(true);
            let graph = self.graph;
            let tell = |to: String, refusal| async move { graph.send_text(&to, refusal).await };
            self.strangers.tell(&mut self.connection, tell).await?;
        }
    }

    /// Relays, refuses or skips one message; strangers are told they are
    /// refused once the whole delivery is taken.
    async fn take(&mut self, received: &Received) -> Result<(), BridgeError> {
        match classify(received, self.config) {
            Incoming::Relay {
                from,
                wamid,
                key,
                text,
            } => {
                let (text, images, files) = media::attach(
                    self.graph,
                    &mut self.connection,
                    &key,
                    received.media.as_ref(),
                    text,
                )
                .await?;
                self.relay(from, wamid, key, text, images, files).await
            }
            Incoming::Refuse { from, who } => Ok(self
                .strangers
                .refuse(&mut self.connection, from, &who)
                .await?),
            Incoming::Ignore(why) => {
                tracing::debug!("whatsapp: skipping message {}: {why}", received.wamid);
                Ok(())
            }
        }
    }

    async fn relay(
        &mut self,
        from: String,
        wamid: String,
        key: String,
        text: String,
        images: Vec<String>,
        files: Vec<hearth_protocol::MediaAttachment>,
    ) -> Result<(), BridgeError> {
        // Shared before the submit, so the turn it starts finds it.
        self.last_received.send_replace(Some(LastReceived {
            wamid,
            from: from.clone(),
        }));
        let person = self.config.person(&from);
        link::submit(
            &mut self.connection,
            SOURCE,
            key,
            text,
            images,
            person,
            files,
        )
        .await?;
        remember_chat(&mut self.connection, CHATS_STATE, &self.chats, from).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config() -> WhatsAppConfig {
        let text = "[whatsapp]\nphone_number_id = \"1098765\"\nallow = [\"+1 650 555 1234\"]\n";
        WhatsAppConfig::parse(Path::new("c"), text).unwrap()
    }

    fn received(from: &str, text: Option<&str>) -> Received {
        Received {
            wamid: "wamid.A".into(),
            from: from.into(),
            user_id: None,
            name: Some("Eve".into()),
            phone_number_id: Some("1098765".into()),
            text: text.map(str::to_string),
            media: None,
        }
    }

    #[test]
    fn an_allowed_numbers_words_are_relayed_with_the_message_id_as_key() {
        assert_eq!(
            classify(&received("16505551234", Some("hello")), &config()),
            Incoming::Relay {
                from: "16505551234".into(),
                wamid: "wamid.A".into(),
                key: "whatsapp:wamid.A".into(),
                text: "hello".into()
            }
        );
        assert_eq!(
            classify(&received("16505551234", None), &config()),
            Incoming::Ignore("nothing to relay")
        );
    }

    #[test]
    fn a_person_is_allowed_by_number_or_user_id_and_replied_to_as_allowed() {
        let text = "[whatsapp]\nphone_number_id = \"1098765\"\nallow = [\"US.777\"]\n";
        let config = WhatsAppConfig::parse(Path::new("c"), text).unwrap();
        let mut both = received("16505551234", Some("hi"));
        both.user_id = Some("US.777".into());
        let Incoming::Relay { from, .. } = classify(&both, &config) else {
            panic!("not relayed");
        };
        assert_eq!(from, "US.777", "the chat is the form the allowlist names");

        let mut only_id = received("US.777", Some("hi"));
        only_id.user_id = Some("US.777".into());
        assert!(
            matches!(classify(&only_id, &config), Incoming::Relay { from, .. } if from == "US.777")
        );

        let mut stranger = received("US.999", Some("hi"));
        stranger.user_id = Some("US.999".into());
        assert_eq!(
            classify(&stranger, &config),
            Incoming::Refuse {
                from: "US.999".into(),
                who: "US.999 (Eve)".into()
            }
        );
    }

    #[test]
    fn strangers_are_refused_and_other_business_numbers_ignored() {
        assert_eq!(
            classify(&received("4915100000000", Some("hi")), &config()),
            Incoming::Refuse {
                from: "4915100000000".into(),
                who: "+4915100000000 (Eve)".into()
            }
        );
        let mut elsewhere = received("16505551234", Some("hi"));
        elsewhere.phone_number_id = Some("5550000".into());
        assert_eq!(
            classify(&elsewhere, &config()),
            Incoming::Ignore("sent to another business number")
        );
    }
}
