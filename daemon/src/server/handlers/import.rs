//! `import`: another agent's history brought into the log (`hearth
//! import`). Only over the Unix socket: the words are logged as the
//! owner's, which only the owner may claim.

use super::{Answer, Context, Refusal};
use crate::log::{ImportRefusal, Imported, NewMessage};
use crate::server::listener::Door;
use hearth_protocol::import::{ImportMessage, MAX_KEY_BYTES, MAX_TEXT_BYTES, SOURCES};
use hearth_protocol::{Kind, MessageStatus, ServerFrame};

/// `import`: logs the messages not imported before, with their times.
pub async fn import(
    context: &Context<'_>,
    from: String,
    messages: Vec<ImportMessage>,
    force: bool,
    dry_run: bool,
) -> Answer {
    if context.door != Door::Unix {
        return Err(Refusal::refused(
            "history is imported over the Unix socket only (`hearth import`)",
        )
        .into());
    }
    if !SOURCES.contains(&from.as_str()) {
        return Err(
            Refusal::refused(format!("`from` must be one of {}", SOURCES.join(", "))).into(),
        );
    }
    let messages = messages
        .into_iter()
        .map(|message| to_log(&from, message))
        .collect::<Result<Vec<_>, _>>()?;
    let outcome = context
        .shared
        .log
        .import(context.agent(), messages, force, dry_run)
        .await
        .map_err(|refusal| match refusal {
            ImportRefusal::Log(err) => {
                tracing::error!("cannot import history: {err}");
                Refusal::storage(format!("the history was not imported: {err}"))
            }
            refusal => Refusal::refused(refusal.to_string()),
        })?;
    if outcome.imported > 0 && !dry_run {
        tracing::info!(
            "{} imported {} messages from {from}",
            context.client,
            outcome.imported
        );
    }
    Ok(ServerFrame::Imported {
        imported: outcome.imported,
        known: outcome.known,
        first_id: outcome.first_id,
        last_id: outcome.last_id,
    })
}

/// The message as the log keeps it: marked imported, from `from`, with
/// its original time in local time and its key named by its origin.
fn to_log(from: &str, message: ImportMessage) -> Result<NewMessage, Refusal> {
    if !matches!(message.kind, Kind::User | Kind::Reply) {
        return Err(Refusal::refused(
            "only `user` and `reply` messages are imported",
        ));
    }
    if message.text.trim().is_empty() || message.text.len() > MAX_TEXT_BYTES {
        return Err(Refusal::refused(format!(
            "an imported message's text must be 1 to {MAX_TEXT_BYTES} bytes"
        )));
    }
    if message.key.is_empty() || message.key.len() > MAX_KEY_BYTES {
        return Err(Refusal::refused(format!(
            "an imported message's key must be 1 to {MAX_KEY_BYTES} bytes"
        )));
    }
    let at = chrono::DateTime::parse_from_rfc3339(&message.at).map_err(|_| {
        Refusal::refused(format!(
            "`{}` is not an RFC 3339 time (2025-01-02T10:00:00Z)",
            message.at
        ))
    })?;
    let local = at
        .with_timezone(&chrono::Local)
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
    let session = message
        .session
        .map(|session| session.chars().take(200).collect());
    let mut logged =
        NewMessage::new(message.kind, from, message.text).with_status(MessageStatus::Imported);
    logged.data.imported = Some(Imported {
        from: from.to_string(),
        session,
    });
    logged.key = Some(format!("import:{from}:{}", message.key));
    logged.at = Some(local);
    Ok(logged)
}
