//! The platform's part of delivery, and the one loop every bridge sends
//! through. A new channel (Matrix, Discord, Signal, email) implements
//! [`Courier`] and gets the rest from the core.
//!
//! What a platform provides: who gets the agent's messages
//! ([`Courier::recipients`]), how one part of text or one image goes to one
//! of them, and what the platform answered when it did not take it (a
//! [`Refused`]); its limits (the longest message, a photo's limits) and how
//! it shows that the agent works.
//!
//! What the core guarantees (here and in [`Feed`]): messages go out in the
//! order of the log, from the cursor stored in the daemon, so nothing is
//! lost or sent twice across a restart (a crash between a send and storing
//! the cursor repeats that one message); long text is split at the
//! platform's limit and its parts go in order; a platform's "wait this
//! long" is honoured to the letter, other trouble worth waiting out is
//! tried again with backoff; a recipient that cannot take a message is
//! skipped with a note in the log and delivery goes on; the daemon's
//! connection is read all the while, so no event is missed.

use super::backoff::Backoff;
use super::config::Outgoing;
use super::delivery::Feed;
use super::fitting::{self, prepare};
use super::link::LinkError;
use super::split::{split, MAX_MESSAGE_UNITS};
use hearth_client::images::Attachment;
use hearth_protocol::image::fit::Destination;
use hearth_protocol::{Event, ImageRef};
use std::borrow::Cow;
use std::future::Future;
use std::time::Duration;

/// Why the platform did not take one send, as it answered.
#[derive(Debug)]
pub enum Refused<E> {
    /// It asked to wait this long (a retry-after, flood control): the same
    /// send goes again once the wait is over.
    Wait(Duration),
    /// Trouble a later try may get through (a server error, a dropped
    /// connection), in words: tried again with backoff, as often as
    /// [`Courier::tries`] allows, then skipped with these words.
    Retry(String),
    /// It could not read the markup of a marked-up part: the part goes again
    /// at once as plain text. A plain part it cannot take is a `Skip`.
    Markup(String),
    /// The recipient can never take it (blocked, outside a window), in the
    /// words the note gives: skipped.
    Skip(String),
    /// The bridge cannot go on (its token is refused): delivery stops.
    Fatal(E),
}

/// The platform's side of delivery: who gets what, and how one send goes.
// The bridges run on one thread, so nothing needs these futures to be `Send`.
#[allow(async_fn_in_trait)]
pub trait Courier {
    /// How the platform addresses a recipient (a chat id, a number).
    type Address;
    type Error: From<LinkError>;

    /// What goes out besides replies (the table's `send` list).
    fn send_list(&self) -> &[Outgoing];

    /// Who gets the agent's messages now: the allowed people who wrote (one
    /// taken off the allowlist gets nothing more). A message nobody would
    /// get is skipped (the cursor moves past it).
    fn recipients(&self) -> Vec<Self::Address>;

    /// How a recipient is named in a note (`chat 42`, `+15551234567`).
    fn shown(&self, to: &Self::Address) -> String;

    /// The longest text one message may hold, in UTF-16 code units; longer
    /// text goes in parts.
    fn message_limit(&self) -> usize {
        MAX_MESSAGE_UNITS
    }

    /// `text` in the parts that go as messages, each within
    /// [`Courier::message_limit`]. A platform that renders Markdown cuts it
    /// between blocks so each part renders whole (see `bridge::markdown`).
    fn parts(&self, text: &str) -> Vec<String> {
        split(text, self.message_limit())
    }

    /// How many tries trouble worth waiting out ([`Refused::Retry`]) gets
    /// before the recipient is skipped; `None`: until it goes through.
    fn tries(&self) -> Option<u32> {
        None
    }

    /// The limits a photo must keep, if the platform has them: an image is
    /// fitted to them first, goes as a file when it cannot be, and is
    /// noted as not sent when it cannot be read. `None`: sent as it is.
    fn photo_limits(&self) -> Option<&'static Destination>;

    /// The address of one person a tool's outbox names (`whatsapp_send`),
    /// whether or not they wrote. `None`: the platform has no such tool, and
    /// the message is noted as not sent.
    fn one_person(&self, _to: &str) -> Option<Self::Address> {
        None
    }

    /// Sends one part of text to one recipient, with the platform's markup
    /// unless `plain`.
    async fn send_text(
        &self,
        to: &Self::Address,
        part: &str,
        plain: bool,
    ) -> Result<(), Refused<Self::Error>>;

    /// Sends one image to one recipient, as the platform's photo when
    /// `as_photo`, else as a file.
    async fn send_image(
        &self,
        to: &Self::Address,
        image: &Attachment,
        as_photo: bool,
    ) -> Result<(), Refused<Self::Error>>;

    /// How often the sign that the agent works is shown again while it does.
    fn busy_every(&self) -> Duration;

    /// Shows that the agent works ("typing…"); a failure only costs the hint.
    /// Calls to the platform go through [`Feed::beside`].
    async fn show_busy(&mut self, feed: &mut Feed) -> Result<(), Self::Error>;

    /// Asks the recipients about a tool call waiting for approval (an
    /// `approval` event, live only); platforms without a way to answer
    /// ignore it.
    async fn ask_approval(&mut self, _feed: &mut Feed, _event: &Event) -> Result<(), Self::Error> {
        Ok(())
    }

    /// Sends the text of message `id` (or of a live signal when `None`) to
    /// every recipient: see [`to_everyone`]. A platform that must know when
    /// a message went out wraps it.
    async fn deliver(
        &mut self,
        feed: &mut Feed,
        id: Option<u64>,
        text: &str,
    ) -> Result<(), Self::Error> {
        to_everyone(self, feed, id, text).await
    }
}

/// Sends `text` to every recipient, split at the platform's limit; a
/// recipient that cannot take a part is skipped (the rest of the parts
/// with it) with a note.
pub async fn to_everyone<C: Courier + ?Sized>(
    courier: &C,
    feed: &mut Feed,
    id: Option<u64>,
    text: &str,
) -> Result<(), C::Error> {
    let source = feed.source();
    let parts = courier.parts(text);
    for to in courier.recipients() {
        let shown = courier.shown(&to);
        let sent = feed
            .beside(send_parts(courier, source, &to, &shown, &parts))
            .await??;
        if let Err(why) = sent {
            let what = id.map_or_else(|| "an error".to_string(), |id| format!("message #{id}"));
            let note = format!("{source}: could not deliver {what} to {shown}: {why}");
            feed.note(note).await?;
        }
    }
    Ok(())
}

/// Sends `text` to the one person a tool message's outbox names (`to`, the
/// platform's name for them), for tool message `id`, as [`to_everyone`]
/// sends to each recipient.
pub async fn to_one<C: Courier + ?Sized>(
    courier: &C,
    feed: &mut Feed,
    id: u64,
    to: &str,
    text: &str,
) -> Result<(), C::Error> {
    let source = feed.source();
    let Some(address) = courier.one_person(to) else {
        let note =
            format!("message #{id} for {to} was not sent: this bridge cannot send to one person");
        return Ok(feed.note(note).await?);
    };
    let shown = courier.shown(&address);
    let parts = courier.parts(text);
    let sent = feed
        .beside(send_parts(courier, source, &address, &shown, &parts))
        .await??;
    if let Err(why) = sent {
        let note = format!("{source}: could not deliver message #{id} to {shown}: {why}");
        feed.note(note).await?;
    }
    Ok(())
}

/// Sends an image a tool showed to every recipient, fitted to the
/// platform's photo limits first; a recipient that cannot take it is
/// skipped with a note, and an image that cannot be sent at all is said in
/// a note.
pub async fn image_to_everyone<C: Courier + ?Sized>(
    courier: &C,
    feed: &mut Feed,
    image: &ImageRef,
    attachment: &Attachment,
) -> Result<(), C::Error> {
    let source = feed.source();
    let recipients = courier.recipients();
    if recipients.is_empty() {
        return Ok(());
    }
    let (attachment, as_photo) = match courier.photo_limits() {
        None => (Cow::Borrowed(attachment), true),
        Some(limits) => match prepare(attachment, limits).await {
            fitting::Outgoing::Photo(photo) => (Cow::Owned(photo), true),
            fitting::Outgoing::Document(file, why) => {
                tracing::info!("{source}: image {} goes as a file: {why}", image.label());
                (Cow::Owned(file), false)
            }
            fitting::Outgoing::Refused(why) => {
                let note = format!("{source}: could not send image {}: {why}", image.label());
                return Ok(feed.note(note).await?);
            }
        },
    };
    for to in recipients {
        let shown = courier.shown(&to);
        let send = |_plain| courier.send_image(&to, &attachment, as_photo);
        let sent = feed
            .beside(retrying(source, &shown, courier.tries(), send))
            .await??;
        if let Err(why) = sent {
            let label = image.label();
            let note = format!("{source}: could not send image {label} to {shown}: {why}");
            feed.note(note).await?;
        }
    }
    Ok(())
}

/// Sends `parts` in order to `to` (named `shown`); the first one that
/// cannot go through ends it, with why.
pub async fn send_parts<C: Courier + ?Sized>(
    courier: &C,
    source: &str,
    to: &C::Address,
    shown: &str,
    parts: &[String],
) -> Result<Result<(), String>, C::Error> {
    for part in parts {
        let send = |plain| courier.send_text(to, part, plain);
        if let Err(why) = retrying(source, shown, courier.tries(), send).await? {
            return Ok(Err(why));
        }
    }
    Ok(Ok(()))
}

/// Sends with `send` (told whether to go without markup) until it goes
/// through: waits as long as the platform asks, tries again with backoff
/// at most `tries` times (`None`: without end), goes plain once when the
/// markup is refused. `Ok(Err(why))`: skipped; `Err`: the bridge cannot go
/// on.
pub async fn retrying<E, F>(
    source: &str,
    shown: &str,
    tries: Option<u32>,
    send: impl Fn(bool) -> F,
) -> Result<Result<(), String>, E>
where
    F: Future<Output = Result<(), Refused<E>>>,
{
    let mut backoff = Backoff::default();
    let mut plain = false;
    let mut tried = 1;
    loop {
        let Err(refused) = send(plain).await else {
            return Ok(Ok(()));
        };
        let wait = match refused {
            Refused::Fatal(error) => return Err(error),
            Refused::Skip(why) => return Ok(Err(why)),
            Refused::Markup(why) if !plain => {
                tracing::info!("{source}: the markup was refused ({why}); sending plain text");
                plain = true;
                continue;
            }
            Refused::Markup(why) => return Ok(Err(why)),
            Refused::Wait(wait) => {
                tracing::info!("{source}: asked to wait {wait:?} before sending to {shown}");
                wait
            }
            Refused::Retry(why) if tries.is_some_and(|most| tried >= most) => return Ok(Err(why)),
            Refused::Retry(why) => {
                tried += 1;
                let wait = backoff.next_wait();
                tracing::warn!(
                    "{source}: sending to {shown} failed: {why}; trying again in {wait:?}"
                );
                wait
            }
        };
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::VecDeque;

    /// Answers the sends in turn with `answers`, then takes them; records
    /// whether each went plain.
    struct Answers {
        answers: RefCell<VecDeque<Refused<&'static str>>>,
        tried: RefCell<Vec<bool>>,
    }

    impl Answers {
        fn new(answers: Vec<Refused<&'static str>>) -> Answers {
            Answers {
                answers: RefCell::new(answers.into()),
                tried: RefCell::new(Vec::new()),
            }
        }

        async fn send(&self, plain: bool) -> Result<(), Refused<&'static str>> {
            self.tried.borrow_mut().push(plain);
            match self.answers.borrow_mut().pop_front() {
                Some(refused) => Err(refused),
                None => Ok(()),
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_the_platform_asks_for_is_honoured_and_trouble_backs_off() {
        let platform = Answers::new(vec![
            Refused::Wait(Duration::from_secs(30)),
            Refused::Retry("502".into()),
            Refused::Retry("502".into()),
        ]);
        let started = tokio::time::Instant::now();
        let sent = retrying("test", "chat 1", None, |plain| platform.send(plain)).await;
        assert_eq!(sent, Ok(Ok(())));
        // 30 s asked for, then 1 s and 2 s of backoff.
        assert_eq!(started.elapsed(), Duration::from_secs(33));
        assert_eq!(platform.tried.borrow().len(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn refused_markup_goes_again_plain_and_a_skip_or_a_fatal_answer_ends_it() {
        let platform = Answers::new(vec![Refused::Markup("bad entity".into())]);
        let sent = retrying("test", "chat 1", None, |plain| platform.send(plain)).await;
        assert_eq!(sent, Ok(Ok(())));
        assert_eq!(*platform.tried.borrow(), vec![false, true]);

        let platform = Answers::new(vec![Refused::Skip("blocked; skipped".into())]);
        let sent = retrying("test", "chat 1", None, |plain| platform.send(plain)).await;
        assert_eq!(sent, Ok(Err("blocked; skipped".to_string())));

        let platform = Answers::new(vec![Refused::Fatal("token refused")]);
        let sent = retrying("test", "chat 1", None, |plain| platform.send(plain)).await;
        assert_eq!(sent, Err("token refused"));
    }

    #[tokio::test(start_paused = true)]
    async fn trouble_gets_the_platforms_number_of_tries_then_is_skipped() {
        let platform = Answers::new((0..20).map(|_| Refused::Retry("offline".into())).collect());
        let sent = retrying("test", "+1", Some(10), |plain| platform.send(plain)).await;
        assert_eq!(sent, Ok(Err("offline".to_string())));
        assert_eq!(platform.tried.borrow().len(), 10);
    }
}
