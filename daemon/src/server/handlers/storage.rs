//! Frames about what the daemon stores beside the conversation: `backup`,
//! `state_get`, `state_set`, `image_put`, `image_get`.

use super::{Answer, Context, Refusal};
use hearth_protocol::ServerFrame;

/// `backup`: copies the log to a new file at an absolute path.
pub async fn backup(context: &Context<'_>, path: String) -> Answer {
    let target = std::path::Path::new(&path);
    if !target.is_absolute() || target.exists() {
        return Err(Refusal::refused(format!(
            "the backup path must be absolute and must not exist yet: {path}"
        ))
        .into());
    }
    match context.shared.log.backup(target).await {
        Ok(bytes) => Ok(ServerFrame::BackedUp { path, bytes }),
        Err(err) => Err(Refusal::refused(format!("the backup failed: {err}")).into()),
    }
}

/// `state_get`: a client's stored value (a bridge's offset or cursor).
pub async fn state_get(context: &Context<'_>, name: String) -> Answer {
    let value = context.shared.log.get_state(&name).await?;
    Ok(ServerFrame::State { name, value })
}

/// `state_set`: stores a client's value; answers with it.
pub async fn state_set(context: &Context<'_>, name: String, value: String) -> Answer {
    context.shared.log.set_state(&name, &value).await?;
    Ok(ServerFrame::State {
        name,
        value: Some(value),
    })
}

/// `image_put`: checks and stores an image; a refusal is an `error` frame.
pub async fn image_put(
    context: &Context<'_>,
    media_type: String,
    data_base64: String,
) -> ServerFrame {
    context
        .shared
        .images
        .answer_put(&media_type, &data_base64)
        .await
}

/// `image_get`: a stored image's bytes; a refusal is an `error` frame.
pub async fn image_get(context: &Context<'_>, sha256: String) -> ServerFrame {
    context.shared.images.answer_get(&sha256).await
}
