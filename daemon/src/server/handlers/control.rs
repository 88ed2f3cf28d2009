//! Frames that steer a running agent or the daemon: `approve`, `interrupt`,
//! `stop`, `reload`.

use super::{Answer, Context, Refusal};
use crate::approvals;
use crate::server::shared::Control;
use hearth_protocol::ServerFrame;
use tokio::sync::oneshot;

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

/// `stop`: the daemon stops (its loop is told at once); this connection is
/// closed with every other, with a close frame.
pub async fn stop(context: &Context<'_>, restart: bool) -> ServerFrame {
    let asked = if restart { "restart" } else { "stop" };
    tracing::info!("{} asked hearthd to {asked}", context.client);
    // The loop is gone only when the daemon stops already.
    let _ = context.shared.control.send(Control::Stop { restart }).await;
    ServerFrame::Stopping {
        pid: std::process::id(),
    }
}

/// `reload`: the daemon reads its configuration again; a file that does not
/// parse is refused with its line, and nothing changes.
pub async fn reload(context: &Context<'_>) -> Answer {
    let stopping = || Refusal::refused("hearthd is stopping");
    let (reply, answer) = oneshot::channel();
    if context
        .shared
        .control
        .send(Control::Reload(reply))
        .await
        .is_err()
    {
        return Err(stopping().into());
    }
    match answer.await {
        Ok(Ok((applied, needs_restart))) => Ok(ServerFrame::Reloaded {
            applied,
            needs_restart,
        }),
        Ok(Err(why)) => Err(Refusal::refused(why).into()),
        Err(_) => Err(stopping().into()),
    }
}
