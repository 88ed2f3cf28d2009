//! A mail as it arrived, read (pure): who sent it and whether the user's
//! receiving server vouches for that, how a reply threads under it, its
//! words (an HTML-only mail read as text, the quoted mail below a reply
//! and the signature left out) and its files.

use super::authentication::{self, Verdict};
use mail_parser::{MessageParser, MimeHeaders};
use serde::{Deserialize, Serialize};

/// A file of a mail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePart {
    pub name: Option<String>,
    /// `type/subtype` as the mail declares it.
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// Where a reply goes in a conversation: what it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// The Message-ID answered, without its angle brackets.
    pub message_id: String,
    /// The References of the mail answered (oldest first), without brackets.
    pub references: Vec<String>,
    /// The Subject of the mail answered.
    pub subject: String,
}

impl Thread {
    /// The Subject of a reply: `Re: ` once, whatever the mail answered had.
    pub fn reply_subject(&self) -> String {
        reply_subject(&self.subject)
    }

    /// The References of a reply: the answered mail's, then the answered mail.
    pub fn reply_references(&self) -> Vec<String> {
        let mut references = self.references.clone();
        if !references.contains(&self.message_id) {
            references.push(self.message_id.clone());
        }
        references
    }
}

/// `Re: ` before a subject, once.
pub fn reply_subject(subject: &str) -> String {
    let subject = subject.trim();
    let already = subject
        .get(..3)
        .is_some_and(|start| start.eq_ignore_ascii_case("re:"));
    if already {
        subject.to_string()
    } else if subject.is_empty() {
        "Re: your mail".to_string()
    } else {
        format!("Re: {subject}")
    }
}

/// A mail, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// The From address, lower case.
    pub from: String,
    /// The sender as the mail names them (`Ada <ada@example.com>`), for notes.
    pub shown: String,
    pub message_id: Option<String>,
    /// The Message-IDs named by In-Reply-To and References.
    pub answers: Vec<String>,
    pub references: Vec<String>,
    pub subject: String,
    /// The new words: the body as text, without the quoted mail below a
    /// reply or the signature.
    pub words: String,
    pub files: Vec<FilePart>,
    /// What the trusted server's Authentication-Results says of `from`.
    pub verdict: Verdict,
    /// Sent by a program, not a person (an auto-reply, a bounce): never
    /// answered, so two programs cannot answer each other forever.
    pub automatic: bool,
}

/// Why a mail cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unreadable {
    /// Not a mail at all.
    NotMail,
    /// No From address, or more than one: nobody to check or answer.
    NoSender,
}

/// Reads a raw mail; `trusted` is the authserv-id whose
/// Authentication-Results is believed.
pub fn read(raw: &[u8], trusted: &str) -> Result<Incoming, Unreadable> {
    let message = MessageParser::default()
        .parse(raw)
        .ok_or(Unreadable::NotMail)?;
    let senders: Vec<_> = message
        .from()
        .map(|from| from.iter().collect())
        .unwrap_or_default();
    let [sender] = senders.as_slice() else {
        return Err(Unreadable::NoSender);
    };
    let from = sender
        .address()
        .map(|address| address.trim().to_lowercase())
        .filter(|address| address.contains('@'))
        .ok_or(Unreadable::NoSender)?;
    let shown = match sender.name() {
        Some(name) if !name.trim().is_empty() => format!("{} <{from}>", name.trim()),
        _ => from.clone(),
    };
    let results = message
        .headers_raw()
        .filter(|(name, _)| name.eq_ignore_ascii_case("Authentication-Results"))
        .map(|(_, value)| value.replace(['\r', '\n'], " "))
        .collect::<Vec<_>>();
    let verdict = authentication::verdict(results.iter().map(String::as_str), trusted, &from);
    let ids = |value: &mail_parser::HeaderValue| -> Vec<String> {
        match value {
            mail_parser::HeaderValue::Text(id) => vec![id.to_string()],
            mail_parser::HeaderValue::TextList(ids) => {
                ids.iter().map(|id| id.to_string()).collect()
            }
            _ => Vec::new(),
        }
    };
    let references = ids(message.references());
    let mut answers = ids(message.in_reply_to());
    answers.extend(references.iter().cloned());
    let automatic = message
        .header_raw("Auto-Submitted")
        .is_some_and(|value| !value.trim().eq_ignore_ascii_case("no"))
        || message.return_address().is_some_and(|path| path.is_empty())
        || message
            .header_raw("Return-Path")
            .is_some_and(|path| path.trim() == "<>");
    let body = message
        .body_text(0)
        .map(|text| text.into_owned())
        .unwrap_or_default();
    let files = message
        .attachments()
        .map(|part| FilePart {
            name: part.attachment_name().map(str::to_string),
            content_type: part.content_type().map(|kind| match kind.subtype() {
                Some(subtype) => format!("{}/{subtype}", kind.ctype()),
                None => kind.ctype().to_string(),
            }),
            bytes: part.contents().to_vec(),
        })
        .collect();
    Ok(Incoming {
        from,
        shown,
        message_id: message.message_id().map(str::to_string),
        answers,
        references,
        subject: message.subject().unwrap_or_default().trim().to_string(),
        words: new_words(&body),
        files,
        verdict,
        automatic,
    })
}

impl Incoming {
    /// Where a reply to this mail goes; `None` without a Message-ID.
    pub fn thread(&self) -> Option<Thread> {
        Some(Thread {
            message_id: self.message_id.clone()?,
            references: self.references.clone(),
            subject: self.subject.clone(),
        })
    }

    /// What the agent reads: the subject of a new conversation, then the words.
    pub fn text(&self) -> String {
        let reply = self
            .subject
            .get(..3)
            .is_some_and(|start| start.eq_ignore_ascii_case("re:"));
        if self.subject.is_empty() || reply {
            self.words.clone()
        } else if self.words.is_empty() {
            format!("Subject: {}", self.subject)
        } else {
            format!("Subject: {}\n\n{}", self.subject, self.words)
        }
    }

    /// What the first word of the words answers, when it is a yes or a no.
    pub fn answer(&self) -> Option<bool> {
        let first = self.words.split_whitespace().next()?;
        let word = first
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        match word.as_str() {
            "yes" | "y" | "allow" | "ok" | "approve" => Some(true),
            "no" | "n" | "deny" => Some(false),
            _ => None,
        }
    }
}

/// A body without the quoted mail at its end (the lines from where only
/// `>` lines follow, and the `On …, … wrote:` line above them) and without
/// a signature (from a `-- ` line).
fn new_words(body: &str) -> String {
    let lines: Vec<&str> = body
        .lines()
        .map(|line| line.trim_end_matches('\r'))
        .collect();
    let mut end = lines
        .iter()
        .position(|line| *line == "-- ")
        .unwrap_or(lines.len());
    // Quoted lines and blanks at the end.
    while end > 0 {
        let line = lines[end - 1].trim();
        if line.is_empty() || line.starts_with('>') {
            end -= 1;
        } else {
            break;
        }
    }
    let quoted_below = lines[end..].iter().any(|line| line.trim().starts_with('>'));
    if quoted_below && end > 0 && lines[end - 1].trim_end().ends_with("wrote:") {
        end -= 1;
    }
    lines[..end].join("\n").trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRUSTED: &str = "mx.example.com";

    #[test]
    fn a_reply_is_read_with_its_thread_and_without_the_quoted_mail() {
        let raw = "Authentication-Results: mx.example.com; dmarc=pass header.from=example.com\r\n\
            From: Ada Lovelace <Ada@Example.com>\r\n\
            To: agent@example.com\r\n\
            Subject: Re: Plans\r\n\
            Message-ID: <m2@example.com>\r\n\
            In-Reply-To: <m1@agent.example.com>\r\n\
            References: <m0@example.com> <m1@agent.example.com>\r\n\
            \r\n\
            Yes, go ahead.\r\n\
            \r\n\
            On Monday, agent wrote:\r\n\
            > Shall I?\r\n\
            > \r\n\
            -- \r\n\
            Ada\r\n";
        let mail = read(raw.as_bytes(), TRUSTED).unwrap();
        assert_eq!(mail.from, "ada@example.com");
        assert_eq!(mail.shown, "Ada Lovelace <ada@example.com>");
        assert_eq!(mail.verdict, Verdict::Verified("dmarc"));
        assert_eq!(mail.words, "Yes, go ahead.");
        assert_eq!(mail.text(), "Yes, go ahead.");
        assert_eq!(mail.answer(), Some(true));
        assert_eq!(
            mail.answers,
            vec![
                "m1@agent.example.com",
                "m0@example.com",
                "m1@agent.example.com"
            ]
        );
        let thread = mail.thread().unwrap();
        assert_eq!(thread.reply_subject(), "Re: Plans");
        assert_eq!(
            thread.reply_references(),
            vec!["m0@example.com", "m1@agent.example.com", "m2@example.com"]
        );
        assert!(!mail.automatic);
    }

    #[test]
    fn an_html_only_mail_is_read_as_text_with_its_subject() {
        let raw = "From: ada@example.com\r\nSubject: Hello\r\nMessage-ID: <h@example.com>\r\n\
            Content-Type: text/html; charset=utf-8\r\n\r\n\
            <html><body><p>Hi <b>there</b></p><script>x()</script></body></html>\r\n";
        let mail = read(raw.as_bytes(), TRUSTED).unwrap();
        assert!(mail.words.contains("Hi there"), "{:?}", mail.words);
        assert!(!mail.words.contains('<'), "{:?}", mail.words);
        assert!(mail.text().starts_with("Subject: Hello\n\nHi there"));
        assert!(matches!(mail.verdict, Verdict::Unverified(_)));
        assert_eq!(mail.answer(), None);
    }

    #[test]
    fn a_mail_without_one_sender_or_from_a_program_is_told_apart() {
        let two = "From: a@example.com, b@example.com\r\nSubject: x\r\n\r\nhi\r\n";
        assert_eq!(read(two.as_bytes(), TRUSTED), Err(Unreadable::NoSender));
        let none = "Subject: x\r\n\r\nhi\r\n";
        assert_eq!(read(none.as_bytes(), TRUSTED), Err(Unreadable::NoSender));
        let auto = "From: a@example.com\r\nAuto-Submitted: auto-replied\r\n\r\nAway\r\n";
        assert!(read(auto.as_bytes(), TRUSTED).unwrap().automatic);
    }

    #[test]
    fn subjects_get_re_once() {
        assert_eq!(reply_subject("Plans"), "Re: Plans");
        assert_eq!(reply_subject("RE: Plans"), "RE: Plans");
        assert_eq!(reply_subject(""), "Re: your mail");
    }
}
