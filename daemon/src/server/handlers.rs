//! One handler per client frame after the hello. Each returns the frame that
//! answers it, a typed [`Refusal`] (sent as an `error` frame; nothing
//! changed), or a log failure, which ends the connection.
//!
//! - `handlers/messages.rs`: `submit`, `note`, `notify`, `transcribe`.
//! - `handlers/control.rs`: `approve`, `interrupt`, `stop`, `reload`.
//! - `handlers/reading.rs`: `history`, `status`, `stats`.
//! - `handlers/schedules.rs`: `schedule_add`, `schedule_list`, `schedule_cancel`.
//! - `handlers/storage.rs`: `backup`, `state_get`, `state_set`, `image_put`, `image_get`
//!   (`media_put` is answered by the media store itself).
//! - `handlers/memory.rs`: `search`, `memory`, `memory_show`, `facts`.
//! - `handlers/web.rs`: `web_login`, `web_sessions`, `web_revoke` (Unix socket only).
//! - `handlers/import.rs`: `import`, another agent's history (Unix socket only).

mod control;
mod import;
mod memory;
mod messages;
mod reading;
mod schedules;
mod storage;
mod web;

use super::listener::Door;
use super::shared::Shared;
use crate::log::LogError;
use crate::turn::AgentHandle;
use hearth_protocol::{ClientFrame, ErrorCode, ServerFrame};

/// A frame the daemon turns down: sent to the client as an `error` frame.
/// Nothing was changed by the frame refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// The frame is understood but not allowed now or with these values.
    pub fn refused(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Refused, message)
    }

    /// The frame could not be stored.
    pub fn storage(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Storage, message)
    }
}

/// Why a handler gave no answer.
#[derive(Debug)]
pub enum Failure {
    /// The client is told why; the connection goes on.
    Refused(Refusal),
    /// The log failed under a read the answer needs: the connection ends.
    Log(LogError),
}

impl From<Refusal> for Failure {
    fn from(refusal: Refusal) -> Self {
        Failure::Refused(refusal)
    }
}

impl From<LogError> for Failure {
    fn from(err: LogError) -> Self {
        Failure::Log(err)
    }
}

/// What a handler returns.
pub type Answer = Result<ServerFrame, Failure>;

/// What a handler may use: the daemon's shared parts, the agent this client
/// follows, and the client's name.
pub struct Context<'a> {
    pub shared: &'a Shared,
    pub handle: &'a AgentHandle,
    pub client: &'a str,
    /// Where the client came in: some frames are for the Unix socket only.
    pub door: Door<'a>,
}

impl Context<'_> {
    /// The agent this client follows.
    fn agent(&self) -> &str {
        &self.handle.name
    }
}

/// Answers one client frame.
pub async fn answer(frame: ClientFrame, context: &Context<'_>) -> Answer {
    match frame {
        ClientFrame::Hello { .. } => {
            Err(Refusal::new(ErrorCode::Sequence, "hello was already said").into())
        }
        ClientFrame::Submit {
            text,
            source,
            key,
            images,
            person,
            media,
        } => messages::submit(context, text, source, key, images, person, media).await,
        ClientFrame::Note { text, source } => messages::note(context, text, source).await,
        ClientFrame::Notify { key, text, source } => {
            messages::notify(context, key, text, source).await
        }
        ClientFrame::Approve { id, allow, by } => control::approve(context, id, allow, by).await,
        ClientFrame::Interrupt => Ok(control::interrupt(context)),
        ClientFrame::History { before, limit } => reading::history(context, before, limit).await,
        ClientFrame::Status => reading::status(context).await,
        ClientFrame::Mcp => Ok(reading::mcp(context)),
        ClientFrame::Stats { days } => reading::stats(context, days).await,
        ClientFrame::ScheduleAdd { when, text } => schedules::add(context, when, text).await,
        ClientFrame::ScheduleList => schedules::list(context).await,
        ClientFrame::ScheduleCancel { id } => schedules::cancel(context, id).await,
        ClientFrame::Backup { path } => storage::backup(context, path).await,
        ClientFrame::StateGet { name } => storage::state_get(context, name).await,
        ClientFrame::StateSet { name, value } => storage::state_set(context, name, value).await,
        ClientFrame::ImagePut {
            media_type,
            data_base64,
        } => Ok(storage::image_put(context, media_type, data_base64).await),
        ClientFrame::Transcribe { id } => messages::transcribe(context, id).await,
        ClientFrame::MediaPut {
            media_type,
            data_base64,
            name,
            duration_secs,
        } => Ok(context
            .shared
            .media
            .answer_put(&media_type, &data_base64, name, duration_secs)
            .await),
        ClientFrame::ImageGet { sha256 } => Ok(storage::image_get(context, sha256).await),
        frame @ (ClientFrame::Search { .. }
        | ClientFrame::Memory
        | ClientFrame::MemoryShow { .. }
        | ClientFrame::Facts { .. }) => memory::answer(context, &frame).await,
        ClientFrame::WebLogin => web::login(context).await,
        ClientFrame::WebSessions => web::sessions(context).await,
        ClientFrame::WebRevoke { id } => web::revoke(context, id).await,
        ClientFrame::Stop { restart } => Ok(control::stop(context, restart).await),
        ClientFrame::Reload => control::reload(context).await,
        ClientFrame::Import {
            from,
            messages,
            force,
            dry_run,
        } => import::import(context, from, messages, force, dry_run).await,
    }
}
