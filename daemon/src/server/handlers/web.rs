//! The browser client's logins: `web_login`, `web_sessions`, `web_revoke`.
//! Only over the Unix socket, whose file mode says the asker is the owner:
//! a browser session cannot mint codes or keep others out.

use super::{Answer, Context, Refusal};
use crate::server::listener::Door;
use crate::server::web::Web;

/// The web client, when the frame came over the Unix socket and `[web]` is on.
fn web<'a>(context: &Context<'a>) -> Result<&'a Web, Refusal> {
    if context.door != Door::Unix {
        return Err(Refusal::refused(
            "web logins and sessions are managed over the Unix socket only (`hearth web`)",
        ));
    }
    context.shared.web.as_ref().ok_or_else(|| {
        Refusal::refused(
            "the web client is off: add `[web] listen = \"127.0.0.1:8787\"` to config.toml and restart hearthd",
        )
    })
}

/// `web_login`: a link with a new one-time code.
pub async fn login(context: &Context<'_>) -> Answer {
    Ok(web(context)?.login_frame().await?)
}

/// `web_sessions`: every session, newest first.
pub async fn sessions(context: &Context<'_>) -> Answer {
    Ok(web(context)?.sessions_frame().await?)
}

/// `web_revoke`: ends a session and disconnects its pages.
pub async fn revoke(context: &Context<'_>, id: i64) -> Answer {
    web(context)?.revoke(id).await?.ok_or_else(|| {
        Refusal::refused("there is no such web session; `hearth web sessions` lists them").into()
    })
}
