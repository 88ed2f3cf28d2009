//! Frames that steer a running agent: `approve`, `interrupt`.

use super::{Answer, Context, Refusal};
use crate::approvals;
use hearth_protocol::ServerFrame;

/// `approve`: answers a tool call that waits for a person.
pub async fn approve(context: &Context<'_>, id: String, allow: bool, by: Option<String>) -> Answer {
    let who = approvals::who(context.client, by.as_deref());
    let noted = context
        .shared
        .approvals
        .answer(&id, allow, &who)
        .await
        .map_err(|err| Refusal::refused(err.to_string()))?;
    Ok(ServerFrame::Ack {
        id: noted,
        duplicate: false,
    })
}

/// `interrupt`: stops the agent's running turn, if one runs.
pub fn interrupt(context: &Context<'_>) -> ServerFrame {
    let running = context.handle.interrupt();
    ServerFrame::Interrupted { running }
}
