//! The memory frames: `search`, `memory`, `memory_show`, `facts`. Their
//! answers are made in `memory/inspect.rs`, beside the memory they read.

use super::{Answer, Context, Refusal};
use hearth_protocol::{ClientFrame, ServerFrame};

/// One of the memory frames, answered.
pub async fn answer(context: &Context<'_>, frame: &ClientFrame) -> Answer {
    let log = &context.shared.log;
    match crate::memory::answer_frame(log, context.agent(), context.client, frame).await? {
        Some(ServerFrame::Error { code, message }) => Err(Refusal::new(code, message).into()),
        Some(answer) => Ok(answer),
        None => Err(Refusal::refused("not a memory frame").into()),
    }
}
