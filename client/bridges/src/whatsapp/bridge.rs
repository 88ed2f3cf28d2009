//! The bridge's life: read the configuration and secrets, take the home's
//! bridge lock, read the bridge's state from the daemon, start delivery,
//! then listen for the webhook and run until a half fails, the daemon goes
//! away or the process is told to stop.
//!
//! Everything the bridge must remember lives in the daemon's database (the
//! delivery cursor, the numbers that wrote) or with Meta (a delivery not
//! answered 200 is sent again), so the process keeps nothing and may be
//! killed at any moment: hearthd starts it again.

use super::config::{Backend, WhatsAppConfig};
use super::graph::{Graph, GraphError};
use super::inbound::Inbound;
use super::outbound::Outbound;
use super::webhook;
use crate::bridge::config::ConfigError;
use crate::bridge::delivery::{run_halves, Cursor};
use crate::bridge::link::{self, LinkError};
use crate::bridge::lock::{lock, LockError};
use crate::bridge::people::parse_chats;
use hearth_client::connect_running;
use hearth_protocol::home::Home;
use std::collections::BTreeSet;
use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

/// What the bridge's messages and notes say they came from.
pub const SOURCE: &str = "whatsapp";

/// The id of the last log message delivered or skipped, or `start` when
/// none was yet and the log was empty.
pub const CURSOR_STATE: &str = "whatsapp.cursor";

/// The allowed numbers that have written, as a JSON list of WhatsApp ids.
pub const CHATS_STATE: &str = "whatsapp.chats";

/// Deliveries waiting for the inbound half; the webhook waits beyond that.
const DELIVERY_QUEUE: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error("WhatsApp refused the access token ({error}); check ${env} or secrets.env")]
    Unauthorized { error: GraphError, env: String },
    #[error(transparent)]
    Graph(#[from] GraphError),
    #[error("cannot listen for the WhatsApp webhook on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the WhatsApp webhook stopped: {0}")]
    Webhook(std::io::Error),
    #[error("the WhatsApp webhook stopped handing over deliveries")]
    WebhookGone,
    /// The linked-device backend's failures.
    #[cfg(feature = "whatsapp-web")]
    #[error(transparent)]
    Web(#[from] super::web::WebError),
    #[error("{0}: [whatsapp] backend = \"web\" links a personal account, but this hearth was built without linked-device support; build it with `cargo build --release --features whatsapp-web`")]
    NoLinkedDevice(std::path::PathBuf),
}

impl BridgeError {
    /// Whether the bridge cannot run until its configuration (or a secret)
    /// is fixed, so starting it again would only fail again.
    pub fn is_config(&self) -> bool {
        match self {
            BridgeError::Config(_)
            | BridgeError::Unauthorized { .. }
            | BridgeError::NoLinkedDevice(_) => true,
            #[cfg(feature = "whatsapp-web")]
            BridgeError::Web(err) => err.is_config(),
            _ => false,
        }
    }
}

/// Runs the bridge for `home` until `shutdown` completes or it fails. Why it
/// cannot run is said on stderr, which hearthd keeps in its log and shows in
/// `hearth status` — never in the agent's conversation.
pub async fn run(home: &Home, shutdown: impl Future<Output = ()>) -> Result<(), BridgeError> {
    run_until(home, shutdown).await
}

/// `hearth whatsapp link`: links this hearth to a personal account as a
/// WhatsApp Web device, showing the pairing code on `out`.
pub async fn link(home: &Home, out: &mut impl std::io::Write) -> Result<(), BridgeError> {
    #[cfg(feature = "whatsapp-web")]
    return Ok(super::web::link_device(home, out).await?);
    #[cfg(not(feature = "whatsapp-web"))]
    {
        let _ = out;
        Err(BridgeError::NoLinkedDevice(home.config_file()))
    }
}

async fn run_until(home: &Home, shutdown: impl Future<Output = ()>) -> Result<(), BridgeError> {
    let config = WhatsAppConfig::load(home)?;
    if config.backend == Backend::Web {
        #[cfg(feature = "whatsapp-web")]
        return Ok(super::web::run(home, &config, shutdown).await?);
        #[cfg(not(feature = "whatsapp-web"))]
        return Err(BridgeError::NoLinkedDevice(home.config_file()));
    }
    let secrets = config.secrets(home)?;
    let _lock = lock(&home.bridge_lock("whatsapp"), "WhatsApp", "whatsapp")?;
    let graph = Graph::new(
        &config.graph_base,
        &config.phone_number_id,
        &secrets.access_token,
    )?;

    let (mut control, _) = connect_running(home, None, "whatsapp", None)
        .await
        .map_err(LinkError::from)?;
    let cursor = link::read_state(&mut control, CURSOR_STATE, Cursor::parse).await?;
    let chats: BTreeSet<String> = link::read_state(&mut control, CHATS_STATE, parse_chats)
        .await?
        .unwrap_or_default();
    let (chats_out, chats_in) = watch::channel(chats);
    let (last_out, last_in) = watch::channel(None);

    // The outbound half starts first: it fixes where delivery begins before
    // any new message can be logged by the inbound half.
    let outbound = Outbound::start(home, &graph, &config, cursor, chats_in, last_in).await?;

    let listener =
        TcpListener::bind(config.listen)
            .await
            .map_err(|source| BridgeError::Listen {
                addr: config.listen,
                source,
            })?;
    let addr = listener.local_addr().map_err(BridgeError::Webhook)?;
    let (deliveries_out, deliveries_in) = mpsc::channel(DELIVERY_QUEUE);
    let routes = webhook::router(
        &config.path,
        secrets.verify_token.clone(),
        secrets.app_secret.clone(),
        deliveries_out,
    );
    let server = axum::serve(listener, routes).into_future();
    let inbound = Inbound::new(&graph, &config, control, deliveries_in, chats_out, last_out);
    tracing::info!(
        "whatsapp webhook listening on {addr} (path {})",
        config.path
    );
    tracing::info!(
        "whatsapp bridge running for {} allowed number(s)",
        config.allow.len()
    );
    let others = async {
        tokio::select! {
            result = inbound.run() => result,
            result = server => match result {
                Ok(()) => Err(BridgeError::WebhookGone),
                Err(err) => Err(BridgeError::Webhook(err)),
            },
        }
    };
    let (stop, stopping) = watch::channel(false);
    run_halves(outbound.run(stopping), others, shutdown, stop).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_linked_device_config_without_the_feature_says_how_to_build_it() {
        let err = BridgeError::NoLinkedDevice("config.toml".into());
        assert!(err.is_config(), "exits with EXIT_CONFIG");
        let said = err.to_string();
        assert!(
            said.contains("built without linked-device support")
                && said.contains("cargo build --release --features whatsapp-web"),
            "{said}"
        );
    }
}
