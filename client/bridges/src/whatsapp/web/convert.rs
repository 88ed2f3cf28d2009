//! The library's types in hearth's words (pure): a received message and
//! its sender, the events that matter to the bridge. Tested on the
//! library's own structs, so a change in their meaning shows here.

use super::device::{Chat, Received, Stop, WebEvent, WebFile, WebImage};
use whatsapp_rust::wacore::proto_helpers::MessageExt;
use whatsapp_rust::wacore::types::events::Event;
use whatsapp_rust::wacore::types::message::{MessageInfo, MessageSource};
use whatsapp_rust::waproto::whatsapp as wa;
use whatsapp_rust::{Jid, Server};

/// The phone number (digits) of an id, when it is one.
fn number_of(jid: &Jid) -> Option<String> {
    (jid.server == Server::Pn).then(|| jid.user.to_string())
}

/// The privacy id (LID) of an id, when it is one.
fn lid_of(jid: &Jid) -> Option<String> {
    (jid.server == Server::Lid).then(|| jid.user.to_string())
}

/// Where a message was written: only person-to-person chats are direct.
fn chat_of(source: &MessageSource) -> Chat {
    let chat = &source.chat;
    if source.is_group || !matches!(chat.server, Server::Pn | Server::Lid) {
        return Chat::Other;
    }
    // In a chat addressed by privacy id, WhatsApp may name the number beside
    // it: as the sender's for a received message, the recipient's for one
    // the account wrote.
    let beside = if source.is_from_me {
        source.recipient_alt.as_ref()
    } else {
        source.sender_alt.as_ref()
    };
    Chat::Direct {
        number: number_of(chat).or_else(|| beside.and_then(number_of)),
        lid: lid_of(chat),
    }
}

/// The author's number: the sender's, or the one WhatsApp names beside a
/// privacy id.
fn sender_number(source: &MessageSource) -> Option<String> {
    number_of(&source.sender).or_else(|| source.sender_alt.as_ref().and_then(number_of))
}

/// A received message as the bridge sees it.
pub fn received(message: &wa::Message, info: &MessageInfo) -> Received {
    let base = message.get_base_message();
    let image = base
        .image_message
        .as_option()
        .map(|image| WebImage(Box::new(image.clone())));
    let file = match (
        base.audio_message.as_option(),
        base.document_message.as_option(),
    ) {
        (Some(audio), _) => Some(WebFile::Audio(Box::new(audio.clone()))),
        (None, Some(document)) => Some(WebFile::Document(Box::new(document.clone()))),
        (None, None) => None,
    };
    let text = message
        .text_content()
        .or_else(|| message.get_caption())
        .filter(|text| !text.trim().is_empty())
        .map(str::to_string);
    Received {
        id: info.id.to_string(),
        chat: chat_of(&info.source),
        from: sender_number(&info.source),
        from_address: info.source.sender.to_non_ad_string(),
        from_me: info.source.is_from_me,
        name: info.push_name.clone(),
        text,
        image,
        file,
    }
}

/// The events the bridge acts on; every other one is `None`. Messages are
/// not among them: they come through the durability hook (`library.rs`),
/// which waits until the daemon holds them.
pub fn event(event: &Event) -> Option<WebEvent> {
    Some(match event {
        Event::PairingQrCode(qr) => WebEvent::Qr {
            code: qr.code.clone(),
            valid_for: qr.timeout,
        },
        Event::PairSuccess(paired) => WebEvent::Paired {
            number: paired.id.user.to_string(),
        },
        Event::PairError(failed) => WebEvent::PairFailed(failed.error.clone()),
        Event::PairingQrCodesExhausted(_) => WebEvent::QrExhausted,
        Event::Connected(_) => WebEvent::Connected,
        Event::Disconnected(disconnected) => {
            WebEvent::Disconnected(format!("{:?}", disconnected.reason))
        }
        Event::LoggedOut(logged_out) => {
            WebEvent::Stopped(Stop::LoggedOut(format!("{:?}", logged_out.reason)))
        }
        Event::StreamReplaced(_) => WebEvent::Stopped(Stop::Replaced),
        Event::TemporaryBan(ban) => WebEvent::Stopped(Stop::Banned(format!(
            "{} (for {} more minutes)",
            ban.code,
            (ban.expire.num_seconds().max(0) + 59) / 60
        ))),
        Event::ClientOutdated(_) => WebEvent::Stopped(Stop::Ended(
            "WhatsApp says this client's version is outdated; a newer hearth (whatsapp-rust) is needed"
                .to_string(),
        )),
        _ => return None,
    })
}
