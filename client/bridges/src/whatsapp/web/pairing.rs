//! Pairing, as `hearth whatsapp link` shows it: each code the library
//! issues drawn in the terminal with how to scan it, until the phone has
//! scanned one, refused, or no code is left.

use super::bridge::WebError;
use super::device::WebEvent;
use qrcode::render::unicode::Dense1x2;
use qrcode::QrCode;
use std::io::Write;
use tokio::sync::mpsc;

/// What the user does with the code.
pub const HOW_TO_SCAN: &str =
    "On the phone: WhatsApp → Settings → Linked devices → Link a device, then scan this code.";

/// Draws `code` as a QR code of half-height blocks (two rows of modules
/// per line of text), with the quiet zone scanners need. Drawn for a dark
/// terminal, as most are: the blocks (in the text colour) are the code's
/// light modules, the background its dark ones.
pub fn draw(code: &str) -> Option<String> {
    let qr = QrCode::new(code.as_bytes()).ok()?;
    Some(
        qr.render::<Dense1x2>()
            .dark_color(Dense1x2::Light)
            .light_color(Dense1x2::Dark)
            .quiet_zone(true)
            .build(),
    )
}

/// Shows codes from `events` on `out` until the device is paired (Ok) or
/// pairing cannot go on.
pub async fn pair(
    events: &mut mpsc::UnboundedReceiver<WebEvent>,
    out: &mut impl Write,
) -> Result<(), WebError> {
    // The terminal is the only place the code goes; an unwritable one
    // still lets the phone scan an earlier code, so write errors are ignored.
    while let Some(event) = events.recv().await {
        match event {
            WebEvent::Qr { code, valid_for } => {
                let drawn =
                    draw(&code).unwrap_or_else(|| format!("(cannot draw the code: {code})"));
                let _ = writeln!(
                    out,
                    "\n{drawn}\n{HOW_TO_SCAN}\n(a new code follows in {} seconds)",
                    valid_for.as_secs()
                );
            }
            WebEvent::Paired { number } => {
                let _ = writeln!(
                    out,
                    "Linked to WhatsApp as +{number}. The bridge starts with hearthd when config.toml has [whatsapp] backend = \"web\" (restart hearthd if it runs)."
                );
                return Ok(());
            }
            WebEvent::PairFailed(why) => return Err(WebError::PairFailed(why)),
            WebEvent::QrExhausted => return Err(WebError::QrExhausted),
            WebEvent::Stopped(stop) => return Err(WebError::Stopped(stop)),
            // Nothing can be written to an unlinked device; a message
            // arriving during the pairing handshake is taken up by the bridge.
            WebEvent::Messages { .. } => {}
            WebEvent::Connected | WebEvent::Disconnected(_) => {}
        }
    }
    Err(WebError::Stopped(super::device::Stop::Ended(
        "the library stopped before the code was scanned".into(),
    )))
}
