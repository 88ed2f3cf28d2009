//! The linked device's bridge: take the home's bridge lock, open the
//! device's session, read the bridge's state from the daemon, then relay
//! both ways until the session ends for good, the daemon goes away or the
//! process is told to stop.
//!
//! Reconnecting: the library keeps the connection itself, reconnecting
//! with its own backoff (WhatsApp Web's: 1 s growing to 15 minutes), so the
//! bridge does not wrap it in another loop. When the library gives up for
//! good (the device was unlinked, another program took the session, a ban)
//! the bridge exits with [`EXIT_CONFIG`](crate::bridge::EXIT_CONFIG), since
//! starting again would not help; any other end is a failure that hearthd
//! answers by starting the bridge again after its own backoff.

use super::device::{Device, Stop, WebEvent};
use super::inbound::{Inbound, SentIds};
use super::library::{Library, LibraryError};
use super::outbound::{Outbound, WebCourier};
use super::pairing;
use crate::bridge::delivery::run_halves;
use crate::bridge::link::{self, LinkError};
use crate::bridge::lock::{lock, LockError};
use crate::bridge::people::parse_chats;
use crate::whatsapp::bridge::{CHATS_STATE, CURSOR_STATE};
use crate::whatsapp::config::WhatsAppConfig;
use hearth_client::connect_running;
use hearth_protocol::home::Home;
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use tokio::sync::{mpsc, watch};

/// The session's file in the home's data folder: the device's keys and
/// WhatsApp's protocol state, kept by the library.
pub const SESSION_FILE: &str = "whatsapp-web.db";

#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Link(#[from] LinkError),
    #[error(transparent)]
    Library(#[from] LibraryError),
    #[error("no WhatsApp account is linked yet; run `hearth whatsapp link` and scan the code with the phone")]
    NotLinked,
    #[error("this hearth is already linked to WhatsApp as +{0}; unlink it from the phone (Settings → Linked devices) and delete {1} to link another account")]
    AlreadyLinked(String, PathBuf),
    #[error("the phone refused to link this device: {0}")]
    PairFailed(String),
    #[error("no code was scanned in time; run `hearth whatsapp link` again")]
    QrExhausted,
    #[error("{}", stop_text(.0))]
    Stopped(Stop),
}

fn stop_text(stop: &Stop) -> String {
    match stop {
        Stop::LoggedOut(why) => format!(
            "the linked device was logged out of WhatsApp ({why}); run `hearth whatsapp link` to link it again"
        ),
        Stop::Replaced => "another program connected with this linked device's session; only one may run".to_string(),
        Stop::Banned(why) => format!("WhatsApp banned this account for a while: {why}"),
        Stop::Ended(why) => format!("the WhatsApp session ended: {why}"),
    }
}

impl WebError {
    /// Whether starting the bridge again would only fail again.
    pub fn is_config(&self) -> bool {
        match self {
            WebError::NotLinked | WebError::AlreadyLinked(..) => true,
            WebError::Stopped(stop) => !matches!(stop, Stop::Ended(_)),
            _ => false,
        }
    }
}

/// Runs the bridge with the linked device until `shutdown` completes or it
/// fails.
pub async fn run(
    home: &Home,
    config: &WhatsAppConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), WebError> {
    let _lock = lock(&home.bridge_lock("whatsapp"), "WhatsApp", "whatsapp")?;
    let (device, events) = Library::open(&home.data_dir.join(SESSION_FILE)).await?;
    if !device.is_linked() {
        return Err(WebError::NotLinked);
    }
    device.start();
    let result = relay(home, config, &device, events, shutdown).await;
    device.stop().await;
    result
}

/// Relays both ways through `device` until the session ends for good,
/// the daemon goes away or `shutdown` completes.
pub async fn relay<D: Device>(
    home: &Home,
    config: &WhatsAppConfig,
    device: &D,
    events: mpsc::UnboundedReceiver<WebEvent>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), WebError> {
    let (mut control, _) = connect_running(home, None, "whatsapp", None)
        .await
        .map_err(LinkError::from)?;
    let cursor = link::read_state(
        &mut control,
        CURSOR_STATE,
        crate::bridge::delivery::Cursor::parse,
    )
    .await?;
    let chats: BTreeSet<String> = link::read_state(&mut control, CHATS_STATE, parse_chats)
        .await?
        .unwrap_or_default();
    let (chats_out, chats_in) = watch::channel(chats);
    let (last_out, last_in) = watch::channel(None);
    let sent = RefCell::new(SentIds::default());

    // The outbound half starts first: it fixes where delivery begins before
    // any new message can be logged by the inbound half.
    let courier = WebCourier::new(device, config, chats_in, last_in, &sent);
    let outbound = Outbound::start(home, courier, cursor).await?;
    let inbound = Inbound::new(device, config, control, events, chats_out, last_out, &sent);
    if let Some(number) = device.own().number {
        tracing::info!(
            "whatsapp bridge running as the linked device of +{number} for {} allowed number(s)",
            config.allow.len()
        );
    }
    let (stop, stopping) = watch::channel(false);
    run_halves(outbound.run(stopping), inbound.run(), shutdown, stop).await
}

/// `hearth whatsapp link`: shows the pairing code in the terminal until
/// the phone scans it, and writes what happens to `out`.
pub async fn link_device(home: &Home, out: &mut impl Write) -> Result<(), WebError> {
    let _lock = lock(&home.bridge_lock("whatsapp"), "WhatsApp", "whatsapp")?;
    let path = home.data_dir.join(SESSION_FILE);
    let (device, mut events) = Library::open(&path).await?;
    if let Some(number) = device.own().number {
        return Err(WebError::AlreadyLinked(number, path));
    }
    // Written before connecting: with no network the library keeps trying,
    // and the user should know what it waits for.
    let _ = writeln!(
        out,
        "Connecting to WhatsApp to link this hearth as a device…"
    );
    device.start();
    let result = pairing::pair(&mut events, out).await;
    // Stopping flushes the new session to its file.
    device.stop().await;
    result
}
