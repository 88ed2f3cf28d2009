//! Frames that log a message or an event: `submit`, `note`, `notify`, and
//! `transcribe`, which queues a voice note's transcript again.

use super::{Answer, Context, Refusal};
use crate::log::NewMessage;
use hearth_protocol::{Kind, MediaAttachment, ReceiptStatus, ServerFrame};

/// `submit`: logs a person's message (once per `key`) and wakes the agent.
/// Its media are said in its text (`[voice 0:42, transcribing]`,
/// `[file: "lease.pdf", 12 pages]`) and named in its data.
pub async fn submit(
    context: &Context<'_>,
    text: String,
    source: String,
    key: Option<String>,
    hashes: Vec<String>,
    person: Option<String>,
    media: Vec<MediaAttachment>,
) -> Answer {
    // With images or media the words may be empty; every other check holds.
    let words = if hashes.is_empty() && media.is_empty() {
        text.as_str()
    } else {
        "(attachments)"
    };
    check_submit(words, &source, key.as_deref())?;
    let attached = context
        .shared
        .images
        .attach(&hashes)
        .map_err(|err| Refusal::new(err.code(), err.client_message()))?;
    let media = context
        .shared
        .media
        .attach(&media)
        .map_err(|err| Refusal::new(err.code(), err.client_message()))?;
    let transcribing = !media.is_empty() && context.shared.transcriber.is_some();
    let text = crate::transcription::labelled(&text, &media, transcribing);
    let mut message = NewMessage::new(Kind::User, &source, text);
    message.key = key;
    message.data.images = attached;
    crate::transcription::name_media(&mut message.data, &media, transcribing);
    // Who submitted it, so clients tell another terminal's words from their own.
    message.data.client = Some(context.client.to_string());
    // Someone other than the owner: untrusted words, which taint the turn.
    if let Some(person) = person {
        let person: String = person.chars().take(200).collect();
        message.data.provenance = Some(crate::provenance::person(&format!("{person} on {source}")));
    }
    let provenance = message.data.provenance.clone();
    match context.shared.log.submit(context.agent(), message).await {
        Ok((id, duplicate)) => {
            if !duplicate {
                // A redelivered voice note is transcribed once: only a
                // message logged now is queued.
                if let Some(transcriber) = &context.shared.transcriber {
                    let client = Some(context.client.to_string());
                    transcriber.queue_message(
                        context.agent(),
                        id,
                        &source,
                        client,
                        provenance,
                        &media,
                    );
                }
                context.handle.wake();
            }
            Ok(ServerFrame::Ack { id, duplicate })
        }
        Err(err) => {
            tracing::error!("cannot log a submitted message: {err}");
            Err(Refusal::storage(format!("the message was not logged: {err}")).into())
        }
    }
}

/// `transcribe`: queues a voice note's audio to be transcribed again.
pub async fn transcribe(context: &Context<'_>, id: u64) -> Answer {
    let Some(transcriber) = &context.shared.transcriber else {
        return Err(Refusal::refused(
            "no [transcription] is configured: add one to config.toml (see docs/media.md) and restart hearthd",
        )
        .into());
    };
    transcriber
        .retry(&context.shared.log, context.agent(), id)
        .await
        .map_err(Refusal::refused)?;
    Ok(ServerFrame::Ack {
        id,
        duplicate: false,
    })
}

/// `note`: logs a note the agent sees at its next turn, without waking it.
pub async fn note(context: &Context<'_>, text: String, source: String) -> Answer {
    check_submit(&text, &source, None)?;
    let logged = context
        .shared
        .log
        .append(context.agent(), NewMessage::new(Kind::Note, &source, text))
        .await
        .map_err(|err| {
            tracing::error!("cannot log a note: {err}");
            Refusal::storage(format!("the note was not logged: {err}"))
        })?;
    Ok(ServerFrame::Ack {
        id: logged.id,
        duplicate: false,
    })
}

/// `notify`: queues an event (once per `key`) for delivery between chains.
pub async fn notify(context: &Context<'_>, key: String, text: String, source: String) -> Answer {
    check_submit(&text, &source, Some(&key))?;
    match context
        .shared
        .log
        .notify(context.agent(), &key, &text, &source)
        .await
    {
        Ok((seq, duplicate)) => {
            let status = if duplicate {
                ReceiptStatus::Duplicate
            } else {
                context.handle.wake();
                ReceiptStatus::Accepted
            };
            Ok(ServerFrame::Receipt { status, seq })
        }
        Err(err) => Err(Refusal::storage(format!("the event was not stored: {err}")).into()),
    }
}

/// Refuses a message that is empty, from a source that is not a short
/// name, or with a key out of bounds.
fn check_submit(text: &str, source: &str, key: Option<&str>) -> Result<(), Refusal> {
    if text.trim().is_empty() {
        return Err(Refusal::refused("the message is empty"));
    }
    if source.is_empty() || source.len() > 64 || source.chars().any(char::is_whitespace) {
        return Err(Refusal::refused(
            "`source` must be a short name without spaces, like `terminal`",
        ));
    }
    if key.is_some_and(|key| key.is_empty() || key.len() > 256) {
        return Err(Refusal::refused("`key` must be 1 to 256 bytes"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_submit;

    #[test]
    fn empty_messages_odd_sources_and_long_keys_are_refused() {
        assert!(check_submit("hi", "terminal", Some("k")).is_ok());
        assert!(check_submit("  ", "terminal", None).is_err());
        assert!(check_submit("hi", "my phone", None).is_err());
        assert!(check_submit("hi", "", None).is_err());
        assert!(check_submit("hi", "terminal", Some("")).is_err());
        assert!(check_submit("hi", "terminal", Some(&"k".repeat(257))).is_err());
    }
}
