//! The linked device's bridge at its boundary with the library: the
//! conversions on the library's own types, and the relay rules, sending and
//! pairing against a fake device.

use super::bridge::WebError;
use super::convert;
use super::device::{Chat, Device, DeviceError, Own, Received, Stop, WebEvent, WebFile, WebImage};
use super::inbound::{classify, Incoming, SentIds};
use super::library::jid;
use super::outbound::WebCourier;
use super::pairing::{pair, HOW_TO_SCAN};
use crate::bridge::courier::{retrying, send_parts, Courier};
use crate::whatsapp::config::WhatsAppConfig;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;
use whatsapp_rust::buffa::MessageField;
use whatsapp_rust::wacore::types::events::{
    ConnectFailureReason, Connected, Event, LoggedOut, PairingQrCode, StreamReplaced,
};
use whatsapp_rust::wacore::types::message::{MessageInfo, MessageSource};
use whatsapp_rust::waproto::whatsapp as wa;
use whatsapp_rust::{Jid, Server};

const OWNER: &str = "15551234567";
const FRIEND: &str = "447946000958";
const STRANGER: &str = "4915100000000";

fn config(allow: &[&str]) -> WhatsAppConfig {
    let allow: Vec<String> = allow.iter().map(|n| format!("\"+{n}\"")).collect();
    let text = format!(
        "[whatsapp]\nbackend = \"web\"\nallow = [{}]\n",
        allow.join(", ")
    );
    WhatsAppConfig::parse(Path::new("config.toml"), &text).unwrap()
}

fn own() -> Own {
    Own {
        number: Some(OWNER.into()),
        lid: Some("99000111".into()),
    }
}

fn info(chat: Jid, sender: Jid, from_me: bool) -> MessageInfo {
    MessageInfo {
        id: "3EB0AAAA".into(),
        push_name: "Eve".into(),
        source: MessageSource {
            is_group: chat.server == Server::Group,
            chat,
            sender,
            is_from_me: from_me,
            ..Default::default()
        },
        ..Default::default()
    }
}

fn text(words: &str) -> wa::Message {
    wa::Message {
        conversation: Some(words.into()),
        ..Default::default()
    }
}

fn received(from: &str, words: &str) -> Received {
    convert::received(&text(words), &info(Jid::pn(from), Jid::pn(from), false))
}

// ── conversions on the library's types ─────────────────────────────────

#[test]
fn a_direct_text_message_converts_with_its_sender_number() {
    let got = received(FRIEND, "hello");
    assert_eq!(
        got,
        Received {
            id: "3EB0AAAA".into(),
            chat: Chat::Direct {
                number: Some(FRIEND.into()),
                lid: None
            },
            from: Some(FRIEND.into()),
            from_address: format!("{FRIEND}@s.whatsapp.net"),
            from_me: false,
            name: "Eve".into(),
            text: Some("hello".into()),
            image: None,
            file: None,
        }
    );
}

#[test]
fn a_privacy_id_sender_takes_the_number_whatsapp_names_beside_it() {
    let mut info = info(Jid::lid("77001"), Jid::lid_device("77001", 3), false);
    info.source.sender_alt = Some(Jid::pn(FRIEND));
    let got = convert::received(&text("hi"), &info);
    assert_eq!(got.from.as_deref(), Some(FRIEND));
    assert_eq!(
        got.chat,
        Chat::Direct {
            number: Some(FRIEND.into()),
            lid: Some("77001".into())
        }
    );
    assert_eq!(got.from_address, "77001@lid", "the device part is dropped");

    let info = self::info(Jid::lid("77001"), Jid::lid("77001"), false);
    let got = convert::received(&text("hi"), &info);
    assert_eq!(got.from, None, "no number without one beside the id");
}

#[test]
fn groups_are_not_direct_chats() {
    let info = info(Jid::group("1203630001"), Jid::pn(FRIEND), false);
    assert_eq!(convert::received(&text("hi"), &info).chat, Chat::Other);
}

#[test]
fn an_image_keeps_its_caption_as_the_words() {
    let image = wa::message::ImageMessage {
        caption: Some("look".into()),
        mimetype: Some("image/jpeg".into()),
        direct_path: Some("/v/t62/abc".into()),
        ..Default::default()
    };
    let message = wa::Message {
        image_message: MessageField::some(image.clone()),
        ..Default::default()
    };
    let got = convert::received(&message, &info(Jid::pn(FRIEND), Jid::pn(FRIEND), false));
    assert_eq!(got.text.as_deref(), Some("look"));
    assert_eq!(got.image, Some(WebImage(Box::new(image))));

    let bare = wa::Message {
        image_message: MessageField::some(wa::message::ImageMessage::default()),
        ..Default::default()
    };
    let got = convert::received(&bare, &info(Jid::pn(FRIEND), Jid::pn(FRIEND), false));
    assert_eq!(got.text, None);
    assert!(got.image.is_some());
}

#[test]
fn a_voice_note_and_a_document_convert_to_files_with_their_details() {
    let voice = wa::message::AudioMessage {
        mimetype: Some("audio/ogg; codecs=opus".into()),
        seconds: Some(42),
        ptt: Some(true),
        direct_path: Some("/v/t62/voice".into()),
        ..Default::default()
    };
    let message = wa::Message {
        audio_message: MessageField::some(voice.clone()),
        ..Default::default()
    };
    let got = from_friend(&message);
    assert_eq!(got.text, None);
    let file = got.file.clone().expect("the voice note's file");
    assert_eq!(file, WebFile::Audio(Box::new(voice)));
    assert_eq!(
        (file.mime_type(), file.name(), file.duration_secs()),
        (Some("audio/ogg; codecs=opus"), None, Some(42))
    );
    assert!(matches!(
        classify(&got, &config(&[FRIEND]), &own(), &SentIds::default()),
        Incoming::Relay { .. }
    ));

    let lease = wa::message::DocumentMessage {
        mimetype: Some("application/pdf".into()),
        file_name: Some("lease.pdf".into()),
        caption: Some("what is the deposit?".into()),
        ..Default::default()
    };
    let message = wa::Message {
        document_message: MessageField::some(lease),
        ..Default::default()
    };
    let got = from_friend(&message);
    assert_eq!(got.text.as_deref(), Some("what is the deposit?"));
    let file = got.file.expect("the document's file");
    assert_eq!(
        (file.mime_type(), file.name(), file.duration_secs()),
        (Some("application/pdf"), Some("lease.pdf".to_string()), None)
    );
}

/// `message` as received from the friend.
fn from_friend(message: &wa::Message) -> Received {
    convert::received(message, &info(Jid::pn(FRIEND), Jid::pn(FRIEND), false))
}

#[test]
fn the_events_that_end_a_session_convert_to_stops() {
    let qr = Event::PairingQrCode(
        PairingQrCode::builder()
            .code("2@abc".to_string())
            .timeout(Duration::from_secs(60))
            .build(),
    );
    assert!(matches!(
        convert::event(&qr),
        Some(WebEvent::Qr { code, valid_for }) if code == "2@abc" && valid_for == Duration::from_secs(60)
    ));
    let logged_out = Event::LoggedOut(
        LoggedOut::builder()
            .on_connect(false)
            .reason(ConnectFailureReason::LoggedOut)
            .build(),
    );
    assert!(matches!(
        convert::event(&logged_out),
        Some(WebEvent::Stopped(Stop::LoggedOut(_)))
    ));
    let replaced = Event::StreamReplaced(StreamReplaced::builder().build());
    assert!(matches!(
        convert::event(&replaced),
        Some(WebEvent::Stopped(Stop::Replaced))
    ));
    let connected = Event::Connected(Connected::builder().build());
    assert!(matches!(
        convert::event(&connected),
        Some(WebEvent::Connected)
    ));
}

#[test]
fn addresses_are_numbers_or_full_ids() {
    assert_eq!(jid(OWNER).unwrap(), Jid::pn(OWNER));
    assert_eq!(jid("77001@lid").unwrap(), Jid::lid("77001"));
    assert!(!jid("not an @ address@@").is_ok_and(|j| j.server == Server::Pn));
}

// ── the relay rules ─────────────────────────────────────────────────────

#[test]
fn an_allowed_numbers_words_are_relayed_with_the_message_id_as_key() {
    let got = classify(
        &received(FRIEND, "hello"),
        &config(&[FRIEND]),
        &own(),
        &SentIds::default(),
    );
    assert_eq!(
        got,
        Incoming::Relay {
            chat: FRIEND.into(),
            key: "whatsapp:3EB0AAAA".into(),
            text: "hello".into()
        }
    );
}

#[test]
fn strangers_are_refused_by_number_or_by_privacy_id() {
    let got = classify(
        &received(STRANGER, "hi"),
        &config(&[FRIEND]),
        &own(),
        &SentIds::default(),
    );
    assert_eq!(
        got,
        Incoming::Refuse {
            address: STRANGER.into(),
            who: format!("+{STRANGER} (Eve)")
        }
    );
    let info = info(Jid::lid("77001"), Jid::lid("77001"), false);
    let unknown = convert::received(&text("hi"), &info);
    assert_eq!(
        classify(&unknown, &config(&[FRIEND]), &own(), &SentIds::default()),
        Incoming::Refuse {
            address: "77001@lid".into(),
            who: "77001@lid (Eve)".into()
        }
    );
}

#[test]
fn groups_and_empty_messages_are_ignored() {
    let info = info(Jid::group("1203630001"), Jid::pn(FRIEND), false);
    let group = convert::received(&text("hi"), &info);
    assert_eq!(
        classify(&group, &config(&[FRIEND]), &own(), &SentIds::default()),
        Incoming::Ignore("not a person-to-person chat")
    );
    let mut empty = received(FRIEND, "x");
    empty.text = None;
    assert_eq!(
        classify(&empty, &config(&[FRIEND]), &own(), &SentIds::default()),
        Incoming::Ignore("nothing to relay")
    );
}

#[test]
fn what_the_owner_writes_to_others_never_comes_in() {
    let info = info(Jid::pn(FRIEND), Jid::pn(OWNER), true);
    let mine = convert::received(&text("see you at 8"), &info);
    assert_eq!(
        classify(
            &mine,
            &config(&[OWNER, FRIEND]),
            &own(),
            &SentIds::default()
        ),
        Incoming::Ignore("written by the owner to someone else")
    );
}

#[test]
fn the_owners_message_yourself_chat_is_relayed_only_when_the_owner_is_allowed() {
    let by_number = convert::received(
        &text("remind me"),
        &info(Jid::pn(OWNER), Jid::pn(OWNER), true),
    );
    let by_lid = convert::received(
        &text("remind me"),
        &info(Jid::lid("99000111"), Jid::lid("99000111"), true),
    );
    for message in [&by_number, &by_lid] {
        assert_eq!(
            classify(message, &config(&[OWNER]), &own(), &SentIds::default()),
            Incoming::Relay {
                chat: OWNER.into(),
                key: "whatsapp:3EB0AAAA".into(),
                text: "remind me".into()
            }
        );
        assert_eq!(
            classify(message, &config(&[FRIEND]), &own(), &SentIds::default()),
            Incoming::Ignore("written by the owner to someone else")
        );
    }
}

#[test]
fn the_bridges_own_messages_never_come_back_in() {
    let mut sent = SentIds::default();
    sent.remember("3EB0AAAA".into());
    let echo = convert::received(
        &text("the agent's reply"),
        &info(Jid::pn(OWNER), Jid::pn(OWNER), true),
    );
    assert_eq!(
        classify(&echo, &config(&[OWNER]), &own(), &sent),
        Incoming::Ignore("the bridge sent it")
    );
    // Only the newest ids are kept, and an old one is forgotten.
    for n in 0..512 {
        sent.remember(format!("later{n}"));
    }
    assert!(!sent.contains("3EB0AAAA") && sent.contains("later511"));
}

// ── sending and pairing against a fake device ──────────────────────────

/// A device whose sends answer from a script and are recorded.
#[derive(Default)]
struct FakeDevice {
    answers: RefCell<VecDeque<Result<(), DeviceError>>>,
    sent: RefCell<Vec<(String, String)>>,
}

impl FakeDevice {
    fn failing(retry: bool, times: usize) -> FakeDevice {
        let device = FakeDevice::default();
        for _ in 0..times {
            device.answers.borrow_mut().push_back(Err(DeviceError {
                retry,
                message: "offline".into(),
            }));
        }
        device
    }
}

impl Device for FakeDevice {
    fn own(&self) -> Own {
        own()
    }

    async fn send_text(&self, to: &str, text: &str) -> Result<String, DeviceError> {
        self.answers.borrow_mut().pop_front().unwrap_or(Ok(()))?;
        let mut sent = self.sent.borrow_mut();
        sent.push((to.to_string(), text.to_string()));
        Ok(format!("SENT{}", sent.len()))
    }

    async fn send_image(&self, to: &str, _: Vec<u8>, _: &str) -> Result<String, DeviceError> {
        self.send_text(to, "[image]").await
    }

    async fn composing(&self, _: &str) -> Result<(), DeviceError> {
        Ok(())
    }

    async fn download(&self, _: &WebImage) -> Result<Vec<u8>, DeviceError> {
        Ok(Vec::new())
    }
}

/// Sends "hi" to `to` through the courier's retries.
async fn through<'a>(
    courier: &'a WebCourier<'a, FakeDevice>,
    to: &'a String,
) -> Result<Result<(), String>, WebError> {
    let send = |plain| courier.send_text(to, "hi", plain);
    retrying("whatsapp", "+1", courier.tries(), send).await
}

fn courier<'a>(
    device: &'a FakeDevice,
    config: &'a WhatsAppConfig,
    sent: &'a RefCell<SentIds>,
) -> WebCourier<'a, FakeDevice> {
    let (_, chats) = tokio::sync::watch::channel(Default::default());
    let (_, last_chat) = tokio::sync::watch::channel(None);
    WebCourier::new(device, config, chats, last_chat, sent)
}

#[tokio::test(start_paused = true)]
async fn long_text_goes_out_in_parts_whose_ids_are_remembered() {
    let device = FakeDevice::default();
    let sent = RefCell::new(SentIds::default());
    let config = config(&[OWNER]);
    let courier = courier(&device, &config, &sent);
    let text = ["word ".repeat(700), "more ".repeat(700)].join("\n\n");
    let parts = courier.parts(&text);
    assert_eq!(parts.len(), 2);
    let to = OWNER.to_string();
    let done = send_parts(&courier, "whatsapp", &to, "+owner", &parts).await;
    assert_eq!(done.unwrap(), Ok(()));
    let got = device.sent.borrow();
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|(to, _)| to == OWNER));
    assert!(sent.borrow().contains("SENT1") && sent.borrow().contains("SENT2"));
}

#[tokio::test(start_paused = true)]
async fn a_send_while_reconnecting_is_tried_again_with_backoff() {
    let device = FakeDevice::failing(true, 3);
    let sent = RefCell::new(SentIds::default());
    let config = config(&[FRIEND]);
    let courier = courier(&device, &config, &sent);
    let started = tokio::time::Instant::now();
    assert_eq!(
        through(&courier, &FRIEND.to_string()).await.unwrap(),
        Ok(())
    );
    assert!(sent.borrow().contains("SENT1"));
    // 1 s, 2 s, 4 s of (paused) waiting.
    assert_eq!(started.elapsed(), Duration::from_secs(7));
}

#[tokio::test(start_paused = true)]
async fn a_refused_send_is_not_tried_again_and_a_lasting_outage_gives_up() {
    let config = config(&[FRIEND]);
    let sent = RefCell::new(SentIds::default());
    let device = FakeDevice::failing(false, 1);
    let courier_once = courier(&device, &config, &sent);
    let skipped = through(&courier_once, &FRIEND.to_string()).await.unwrap();
    assert!(skipped.is_err());
    assert!(device.sent.borrow().is_empty());
    assert_eq!(device.answers.borrow().len(), 0, "one try only");

    let device = FakeDevice::failing(true, 100);
    let courier_long = courier(&device, &config, &sent);
    let skipped = through(&courier_long, &FRIEND.to_string()).await.unwrap();
    assert!(skipped.is_err());
    assert_eq!(device.answers.borrow().len(), 90, "ten tries, then a note");
}

#[tokio::test]
async fn pairing_shows_the_code_and_how_to_scan_it_until_the_phone_links() {
    let (events, mut received) = mpsc::unbounded_channel();
    events
        .send(WebEvent::Qr {
            code: "2@AbCdEf,ghIJ,klMN".into(),
            valid_for: Duration::from_secs(60),
        })
        .unwrap();
    events.send(WebEvent::Connected).unwrap();
    events
        .send(WebEvent::Paired {
            number: OWNER.into(),
        })
        .unwrap();
    let mut out = Vec::new();
    pair(&mut received, &mut out).await.unwrap();
    let shown = String::from_utf8(out).unwrap();
    assert!(shown.contains(HOW_TO_SCAN), "{shown}");
    assert!(
        shown.contains('█') || shown.contains('▀'),
        "a drawn code: {shown}"
    );
    assert!(
        shown.contains(&format!("Linked to WhatsApp as +{OWNER}")),
        "{shown}"
    );
}

#[tokio::test]
async fn pairing_that_cannot_finish_says_why() {
    for (event, expected) in [
        (WebEvent::QrExhausted, "no code was scanned in time"),
        (WebEvent::PairFailed("refused".into()), "the phone refused"),
        (
            WebEvent::Stopped(Stop::LoggedOut("LoggedOut".into())),
            "logged out",
        ),
    ] {
        let (events, mut received) = mpsc::unbounded_channel();
        events.send(event).unwrap();
        let said = pair(&mut received, &mut Vec::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(said.contains(expected), "{said}");
    }
}

#[test]
fn a_session_that_cannot_go_on_is_a_configuration_matter() {
    assert!(WebError::NotLinked.is_config());
    assert!(WebError::NotLinked
        .to_string()
        .contains("hearth whatsapp link"));
    let unlinked = WebError::Stopped(Stop::LoggedOut("LoggedOut".into()));
    assert!(unlinked.is_config());
    assert!(unlinked.to_string().contains("run `hearth whatsapp link`"));
    assert!(WebError::Stopped(Stop::Replaced).is_config());
    assert!(WebError::Stopped(Stop::Banned("x".into())).is_config());
    // The library gave up otherwise: hearthd starts the bridge again.
    assert!(!WebError::Stopped(Stop::Ended("x".into())).is_config());
}
