//! Mail the bridge sends: a reply threaded under the mail it answers
//! (`In-Reply-To`, `References`, `Subject: Re: …`), or a new mail when the
//! agent speaks first; the agent's Markdown as plain text with an HTML
//! alternative. Built here (pure), sent by `smtp.rs`.

use super::incoming::Thread;
use crate::bridge::markdown::mail;
use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MessageBuilder, MultiPart, SinglePart};
use lettre::Message;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The Subject of a mail that answers nothing.
pub const NEW_SUBJECT: &str = "A message from your assistant";

/// Why a mail cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    #[error("`{0}` is not an address a mail can go to")]
    Address(String),
    #[error("`{0}` is not a media type a mail can name")]
    MediaType(String),
    #[error("the mail cannot be built: {0}")]
    Build(#[from] lettre::error::Error),
}

/// A new Message-ID in the agent's domain, without its angle brackets:
/// the time, the process and a count make it unique.
pub fn new_message_id(own_address: &str) -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let domain = own_address
        .rsplit_once('@')
        .map_or("hearth.invalid", |(_, d)| d);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    format!("{nanos}.{}.{count}.hearth@{domain}", std::process::id())
}

/// A mail from `from` to `to` of `markdown` with Message-ID `id`: a reply
/// in `thread` when there is one, else a new mail with `subject`.
pub fn compose(
    from: &str,
    to: &str,
    id: &str,
    thread: Option<&Thread>,
    subject: &str,
    markdown: &str,
) -> Result<Message, ComposeError> {
    let body = MultiPart::alternative_plain_html(mail::plain(markdown), mail::html(markdown));
    Ok(headers(from, to, id, thread, subject)?.multipart(body)?)
}

/// A mail from `from` to `to` with one file, `(name, media type, bytes)`,
/// threaded as [`compose`] threads.
pub fn compose_with_file(
    from: &str,
    to: &str,
    id: &str,
    thread: Option<&Thread>,
    (name, media_type, bytes): (&str, &str, &[u8]),
) -> Result<Message, ComposeError> {
    let kind = ContentType::parse(media_type)
        .map_err(|_| ComposeError::MediaType(media_type.to_string()))?;
    let file = lettre::message::Attachment::new(name.to_string()).body(bytes.to_vec(), kind);
    let body = MultiPart::mixed()
        .singlepart(SinglePart::plain(String::new()))
        .singlepart(file);
    Ok(headers(from, to, id, thread, NEW_SUBJECT)?.multipart(body)?)
}

/// The headers of a mail: who from and to, its id, and its place in a
/// thread (a reply) or its `subject` (a new mail).
fn headers(
    from: &str,
    to: &str,
    id: &str,
    thread: Option<&Thread>,
    subject: &str,
) -> Result<MessageBuilder, ComposeError> {
    let mailbox = |address: &str| {
        address
            .parse::<Mailbox>()
            .map_err(|_| ComposeError::Address(address.to_string()))
    };
    let builder = Message::builder()
        .from(mailbox(from)?)
        .to(mailbox(to)?)
        .message_id(Some(format!("<{id}>")));
    Ok(match thread {
        Some(thread) => {
            let references: Vec<String> = thread
                .reply_references()
                .iter()
                .map(|id| format!("<{id}>"))
                .collect();
            builder
                .subject(thread.reply_subject())
                .in_reply_to(format!("<{}>", thread.message_id))
                .references(references.join(" "))
        }
        None => builder.subject(subject),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_threads_under_the_mail_it_answers() {
        let thread = Thread {
            message_id: "m2@example.com".into(),
            references: vec!["m1@example.com".into()],
            subject: "Plans".into(),
        };
        let mail = compose(
            "agent@example.com",
            "ada@example.com",
            "r1@example.com",
            Some(&thread),
            NEW_SUBJECT,
            "**Done.**",
        )
        .unwrap();
        let text = String::from_utf8(mail.formatted()).unwrap();
        assert!(text.contains("In-Reply-To: <m2@example.com>\r\n"), "{text}");
        assert!(
            text.contains("References: <m1@example.com> <m2@example.com>\r\n"),
            "{text}"
        );
        assert!(text.contains("Subject: Re: Plans\r\n"), "{text}");
        assert!(text.contains("Message-ID: <r1@example.com>\r\n"), "{text}");
        assert!(text.contains("*Done.*"), "{text}");
        assert!(text.contains("<strong>Done.</strong>"), "{text}");
    }

    #[test]
    fn message_ids_are_new_each_time_and_in_the_agents_domain() {
        let one = new_message_id("agent@example.com");
        let two = new_message_id("agent@example.com");
        assert_ne!(one, two);
        assert!(one.ends_with(".hearth@example.com"), "{one}");
    }
}
