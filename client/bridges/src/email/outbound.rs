//! The outbound half: mails the agent's replies (and, as configured, its
//! echoes, work reports, notes and errors) to the allowed people who wrote,
//! in log order from a stored cursor (see `bridge::delivery`), each a reply
//! threaded under the last mail that person sent; asks about tool calls
//! that wait for approval in mails of their own.

use super::approval::{request_subject, request_text, Open};
use super::bridge::{BridgeError, CURSOR_STATE, SOURCE};
use super::config::EmailConfig;
use super::inbound::Chats;
use super::outgoing::{compose, compose_with_file, new_message_id, NEW_SUBJECT};
use super::smtp::{Refusal, Smtp};
use crate::bridge::config::Outgoing;
use crate::bridge::courier::{Courier, Refused};
use crate::bridge::delivery::{Cursor, Feed};
use hearth_client::images::Attachment;
use hearth_protocol::home::Home;
use hearth_protocol::image::fit::Destination;
use hearth_protocol::Event;
use std::time::Duration;
use tokio::sync::watch;

/// A mail has no length limit worth splitting at: one reply is one mail
/// up to this many UTF-16 code units.
const MESSAGE_LIMIT: usize = 200_000;

/// How often a send that fails for a reason worth waiting out is tried.
const TRIES: u32 = 8;

/// Mail shows no "typing…": the hint is never sent.
const NEVER: Duration = Duration::from_secs(24 * 60 * 60);

/// The outbound half: the daemon's feed and the mail courier.
pub struct Outbound<'a> {
    feed: Feed,
    courier: MailCourier<'a>,
}

impl<'a> Outbound<'a> {
    /// Connects from where delivery stands (see [`Feed::start`]).
    pub async fn start(
        home: &Home,
        smtp: &'a Smtp,
        config: &'a EmailConfig,
        stored: Option<Cursor>,
        chats: watch::Receiver<Chats>,
        open: Open,
    ) -> Result<Outbound<'a>, BridgeError> {
        let feed = Feed::start(home, "email-out", SOURCE, CURSOR_STATE, stored).await?;
        let courier = MailCourier {
            smtp,
            config,
            chats,
            open,
        };
        Ok(Outbound { feed, courier })
    }

    /// Delivers until something fails for good, or until `stop` turns true
    /// (see [`Feed::run`]).
    pub async fn run(mut self, stop: watch::Receiver<bool>) -> Result<(), BridgeError> {
        self.feed.run(&mut self.courier, stop).await
    }
}

/// Who gets what by mail, and how it is sent.
struct MailCourier<'a> {
    smtp: &'a Smtp,
    config: &'a EmailConfig,
    /// The people who wrote and the mail each reply answers, kept by the
    /// inbound half.
    chats: watch::Receiver<Chats>,
    /// The approvals asked, for the inbound half to match answers with.
    open: Open,
}

/// What the server's answer means for one send.
fn refused(refusal: Refusal) -> Refused<BridgeError> {
    match refusal {
        Refusal::Permanent(why) => Refused::Skip(format!("{why}; skipped")),
        Refusal::Transient(why) => Refused::Retry(why),
    }
}

impl MailCourier<'_> {
    /// Sends `mail` built for `to`, or says why it could not be built.
    async fn send(
        &self,
        built: Result<lettre::Message, super::outgoing::ComposeError>,
    ) -> Result<(), Refused<BridgeError>> {
        match built {
            Ok(mail) => self.smtp.send(mail).await.map_err(refused),
            Err(err) => Err(Refused::Skip(err.to_string())),
        }
    }
}

impl Courier for MailCourier<'_> {
    type Address = String;
    type Error = BridgeError;

    fn send_list(&self) -> &[Outgoing] {
        &self.config.send
    }

    /// The allowed people who wrote (one taken off the allowlist gets
    /// nothing more).
    fn recipients(&self) -> Vec<String> {
        let chats = self.chats.borrow();
        chats
            .keys()
            .filter(|who| self.config.allows(who))
            .cloned()
            .collect()
    }

    fn shown(&self, to: &String) -> String {
        to.clone()
    }

    fn message_limit(&self) -> usize {
        MESSAGE_LIMIT
    }

    fn tries(&self) -> Option<u32> {
        Some(TRIES)
    }

    /// A mail takes images as they are.
    fn photo_limits(&self) -> Option<&'static Destination> {
        None
    }

    /// Mails one part, a reply to the last mail `to` sent.
    async fn send_text(
        &self,
        to: &String,
        part: &str,
        _plain: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let thread = self.chats.borrow().get(to).cloned().flatten();
        let id = new_message_id(&self.config.address);
        let built = compose(
            &self.config.address,
            to,
            &id,
            thread.as_ref(),
            NEW_SUBJECT,
            part,
        );
        self.send(built).await
    }

    /// Mails an image as a file of a reply.
    async fn send_image(
        &self,
        to: &String,
        image: &Attachment,
        _as_photo: bool,
    ) -> Result<(), Refused<BridgeError>> {
        let thread = self.chats.borrow().get(to).cloned().flatten();
        let id = new_message_id(&self.config.address);
        let extension = hearth_protocol::image::extension(image.media_type).unwrap_or("jpg");
        let name = format!("image.{extension}");
        let built = compose_with_file(
            &self.config.address,
            to,
            &id,
            thread.as_ref(),
            (&name, image.media_type, &image.bytes),
        );
        self.send(built).await
    }

    fn busy_every(&self) -> Duration {
        NEVER
    }

    /// Mail has no "typing…".
    async fn show_busy(&mut self, _feed: &mut Feed) -> Result<(), BridgeError> {
        Ok(())
    }

    /// Asks the recipients about a tool call, each in a mail of its own;
    /// remembers each mail, so a reply to it answers it. A decided request
    /// is forgotten.
    async fn ask_approval(&mut self, feed: &mut Feed, event: &Event) -> Result<(), BridgeError> {
        let Some(approval) = event.approval.as_deref() else {
            return Ok(());
        };
        let Some(text) = request_text(event) else {
            self.open.close(&approval.id);
            return Ok(());
        };
        let subject = request_subject(event);
        for to in self.recipients() {
            let id = new_message_id(&self.config.address);
            self.open.asking(&approval.id, &to, &id);
            let built = compose(&self.config.address, &to, &id, None, &subject, &text);
            if let Err(err) = feed.beside(self.send(built)).await? {
                self.open.not_asked(&id);
                match err {
                    Refused::Fatal(err) => return Err(err),
                    _ => tracing::warn!("cannot ask {to} about approval {}: {err:?}", approval.id),
                }
            }
        }
        Ok(())
    }
}
