//! End-to-end: the WhatsApp linked-device bridge. A real `hearthd` runs on
//! a temporary home with a fake model; the bridge's relay
//! (`whatsapp::web::bridge::relay`) runs in this process against a fake
//! linked device, which records what it is asked to send and lets the test
//! play WhatsApp: deliver messages, and see whether the bridge told it they
//! were taken (`done`). To see that `done` waits for the daemon's ack, one
//! test puts a proxy between the bridge and the daemon's socket that holds
//! back what the daemon says.
//!
//! The daemon's config has no `[whatsapp]` table, except in the test of
//! `whatsapp_send`, which needs one: there hearthd also starts `hearth
//! whatsapp`, which finds no linked device and exits for good (78) with a
//! note; the test waits for that before running its own relay.
//!
//! - `device.rs`: the fake device, the relay on it, the proxy.
//! - `media.rs`: voice notes and documents through the device.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(feature = "whatsapp-web")]

mod device;
mod media;

use device::*;
use hearth_bridges::bridge::people::REFUSAL;
use hearth_bridges::whatsapp::web::device::Chat;
use hearth_protocol::{EventKind, Kind};
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::harness::{cursor_at_log_end, eventually, notes_by, texts};
use tokio::sync::oneshot;
use tokio::task::LocalSet;

// ── the tests ───────────────────────────────────────────────────────────

#[tokio::test]
async fn an_allowed_persons_message_is_acknowledged_once_logged_and_answered() {
    LocalSet::new()
        .run_until(async {
            let model = FakeModel::start().await;
            let home = home(&model);
            let _daemon = home.start();
            let config = parse(&web_table(&[FRIEND]));
            let device = FakeDevice::new();
            let proxy = Proxy::start(&home);
            let mut bridge = Bridge::start_on(proxy.home(&home), &config, &device).await;
            let mut watcher = home.connect("watcher", None).await;

            let gate = Gate::new();
            model.push(Reply::gated(Reply::text("Hello, Bea!"), &gate));
            // The daemon logs the message, but its ack is held back: the
            // bridge does not tell WhatsApp it has the message yet.
            proxy.hold(true);
            let message = from(FRIEND, "Bea", "3EB0A1", "hi from my phone");
            let mut answer = bridge.offer(vec![message]);
            let home_ref = &home;
            let user = eventually("the message logged", || async move {
                let log = home_ref.history().await;
                log.into_iter().find(|m| m.kind == Kind::User)
            })
            .await;
            assert_eq!(
                (user.source.as_str(), user.text.as_str()),
                ("whatsapp", "hi from my phone")
            );
            assert_eq!(
                answer.try_recv(),
                Err(oneshot::error::TryRecvError::Empty),
                "answered before the daemon acknowledged"
            );
            proxy.hold(false);
            assert!(bridge.answer(answer).await);
            let event = watcher.wait_for(|e| e.kind == EventKind::User).await;
            assert_eq!(event.source.as_deref(), Some("whatsapp"));
            assert_eq!(event.id, Some(user.id));

            // While the agent works, "typing…" shows in the chat.
            eventually("typing in the friend's chat", || {
                let typing = device.0.composing.borrow().contains(&FRIEND.to_string());
                std::future::ready(typing.then_some(()))
            })
            .await;
            assert!(device.sent().is_empty());
            gate.open();
            let sent = sends(&device, 1).await;
            assert_eq!(
                (sent[0].to.as_str(), sent[0].text.as_str()),
                (FRIEND, "Hello, Bea!"),
                "only the reply goes out, never the person's own words"
            );
            let requests = model.requests();
            assert_eq!(requests.len(), 1);
            assert!(requests[0].body.to_string().contains("hi from my phone"));
            bridge.stop().await;
        })
        .await;
}

#[tokio::test]
async fn a_message_delivered_again_is_logged_and_answered_once() {
    LocalSet::new()
        .run_until(async {
            let model = FakeModel::start().await;
            let home = home(&model);
            let _daemon = home.start();
            let config = parse(&web_table(&[FRIEND]));
            let device = FakeDevice::new();
            let mut bridge = Bridge::start(&home, &config, &device).await;

            model.push(Reply::text("One."));
            let first = from(FRIEND, "Bea", "3EB0B1", "first");
            assert!(bridge.deliver(vec![first.clone()]).await);
            sends(&device, 1).await;

            // WhatsApp delivers it again (it was not told in time), once on
            // its own and once beside a new message.
            assert!(bridge.deliver(vec![first.clone()]).await);
            model.push(Reply::text("Two."));
            let second = from(FRIEND, "Bea", "3EB0B2", "second");
            assert!(bridge.deliver(vec![first, second]).await);
            let sent = sends(&device, 2).await;

            // Once the second answer is out, a second answer to the first
            // would have gone before it.
            assert_eq!(device.sent_to(FRIEND), vec!["One.", "Two."]);
            assert_eq!(sent.len(), 2);
            let log = home.history().await;
            assert_eq!(texts(&log, Kind::User), vec!["first", "second"]);
            assert_eq!(model.requests().len(), 2, "each message answered once");
            bridge.stop().await;
        })
        .await;
}

#[tokio::test]
async fn a_stranger_is_refused_once_with_a_note_and_the_agent_never_sees_them() {
    LocalSet::new()
        .run_until(async {
            let model = FakeModel::start().await;
            let home = home(&model);
            let _daemon = home.start();
            // The owner's own number is not allowed.
            let config = parse(&web_table(&[FRIEND]));
            let device = FakeDevice::new();
            let mut bridge = Bridge::start(&home, &config, &device).await;

            let knock = from(STRANGER, "Mallory", "3EB0S1", "let me in");
            assert!(bridge.deliver(vec![knock]).await);
            let again = from(STRANGER, "Mallory", "3EB0S2", "pretty please");
            assert!(bridge.deliver(vec![again]).await);
            // The owner's "message yourself" chat, with the owner not
            // allowed: skipped, not refused.
            let note_to_self = by_owner(chat_with(OWNER), "3EB0S3", "buy milk");
            assert!(bridge.deliver(vec![note_to_self]).await);
            model.push(Reply::text("Hi Bea."));
            assert!(
                bridge
                    .deliver(vec![from(FRIEND, "Bea", "3EB0S4", "hello")])
                    .await
            );

            // Messages are taken in order and a stranger is told right after
            // theirs: once the friend is answered, the rest is done.
            sends(&device, 2).await;
            assert_eq!(device.sent_to(STRANGER), vec![REFUSAL.to_string()]);
            assert_eq!(device.sent_to(FRIEND), vec!["Hi Bea."]);
            assert_eq!(device.sent().len(), 2, "{:?}", device.sent());

            let log = home.history().await;
            let notes = notes_by(&log, "whatsapp");
            assert_eq!(
                notes,
                vec!["whatsapp: refused a message from +4915100000000 (Mallory)"]
            );
            assert_eq!(texts(&log, Kind::User), vec!["hello"]);
            let requests = model.requests();
            assert_eq!(requests.len(), 1);
            let body = requests[0].body.to_string();
            for words in ["let me in", "pretty please", "buy milk"] {
                assert!(!body.contains(words), "{body}");
            }
            bridge.stop().await;
        })
        .await;
}

#[tokio::test]
async fn only_the_owners_message_yourself_chat_is_relayed_and_never_the_bridges_own_sends() {
    LocalSet::new()
        .run_until(async {
            let model = FakeModel::start().await;
            let home = home(&model);
            let _daemon = home.start();
            let config = parse(&web_table(&[OWNER, FRIEND]));
            let device = FakeDevice::new();
            let mut bridge = Bridge::start(&home, &config, &device).await;

            // The owner writes to a friend from the phone: not for the agent,
            // though the friend is allowed, and nobody is refused.
            let to_friend = by_owner(chat_with(FRIEND), "3EB0M1", "see you at 8");
            assert!(bridge.deliver(vec![to_friend]).await);

            // The owner's own chat is how they talk to the agent.
            model.push(Reply::text("Noted."));
            let note_to_self = by_owner(chat_with(OWNER), "3EB0M2", "remind me to call mum");
            assert!(bridge.deliver(vec![note_to_self]).await);
            let sent = sends(&device, 1).await;
            assert_eq!(
                (sent[0].to.as_str(), sent[0].text.as_str()),
                (OWNER, "Noted.")
            );

            // The reply appears in that chat as the owner's own message: it
            // never comes back in. The chat addressed by the owner's privacy
            // id is the same chat.
            let echo = by_owner(chat_with(OWNER), &sent[0].id, "Noted.");
            assert!(bridge.deliver(vec![echo]).await);
            model.push(Reply::text("You're welcome."));
            let by_lid = Chat::Direct {
                number: None,
                lid: Some(OWNER_LID.into()),
            };
            assert!(
                bridge
                    .deliver(vec![by_owner(by_lid, "3EB0M3", "thanks")])
                    .await
            );
            sends(&device, 2).await;

            assert_eq!(device.sent_to(OWNER), vec!["Noted.", "You're welcome."]);
            assert!(device.sent_to(FRIEND).is_empty());
            let log = home.history().await;
            assert_eq!(
                texts(&log, Kind::User),
                vec!["remind me to call mum", "thanks"]
            );
            assert!(texts(&log, Kind::Note).is_empty(), "{log:?}");
            assert_eq!(model.requests().len(), 2);
            bridge.stop().await;
        })
        .await;
}

#[tokio::test]
async fn the_bridge_stopped_mid_conversation_loses_no_reply_and_sends_none_twice() {
    LocalSet::new()
        .run_until(async {
            let model = FakeModel::start().await;
            let home = home(&model);
            let _daemon = home.start();
            let config = parse(&web_table(&[FRIEND]));
            let device = FakeDevice::new();
            let mut first = Bridge::start(&home, &config, &device).await;

            // The reply is being sent when the bridge is killed.
            device.hold_sends(true);
            model.push(Reply::text("First answer."));
            assert!(
                first
                    .deliver(vec![from(FRIEND, "Bea", "3EB0K1", "one")])
                    .await
            );
            eventually("the reply held", || {
                std::future::ready((device.held() == 1).then_some(()))
            })
            .await;
            first.kill().await;
            assert_eq!(device.held(), 0, "the killed bridge's send was dropped");
            device.hold_sends(false);
            assert!(device.sent().is_empty());

            // Meanwhile the terminal talks to the agent: those replies are
            // for the friend too, after the first, in order.
            let mut terminal = home.connect("terminal", None).await;
            for answer in ["Second.", "Third."] {
                model.push(Reply::text(answer));
                let (id, _) = terminal
                    .submit(&format!("before the {answer}"), "terminal", None)
                    .await;
                terminal.reply_to(id).await;
            }

            // Started again, the bridge sends what it owes, then goes on.
            let mut second = Bridge::start(&home, &config, &device).await;
            model.push(Reply::text("Fourth."));
            assert!(
                second
                    .deliver(vec![from(FRIEND, "Bea", "3EB0K2", "two")])
                    .await
            );
            sends(&device, 4).await;
            assert_eq!(
                device.sent_to(FRIEND),
                vec!["First answer.", "Second.", "Third.", "Fourth."]
            );

            // Stopped and started again, it resumes after the last.
            cursor_at_log_end(&home, "whatsapp.cursor").await;
            second.stop().await;
            let third = Bridge::start(&home, &config, &device).await;
            model.push(Reply::text("Fifth."));
            let (id, _) = terminal.submit("one more", "terminal", None).await;
            terminal.reply_to(id).await;
            sends(&device, 5).await;
            assert_eq!(
                device.sent_to(FRIEND),
                vec!["First answer.", "Second.", "Third.", "Fourth.", "Fifth."]
            );
            assert_eq!(device.sent().len(), 5);
            let log = home.history().await;
            assert_eq!(
                texts(&log, Kind::User),
                vec![
                    "one",
                    "before the Second.",
                    "before the Third.",
                    "two",
                    "one more"
                ]
            );
            assert_eq!(model.requests().len(), 5, "each message answered once");
            third.stop().await;
        })
        .await;
}

#[tokio::test]
async fn whatsapp_send_goes_to_the_named_contact_once_through_the_linked_device() {
    LocalSet::new()
        .run_until(async {
            let model = FakeModel::start().await;
            let home = home(&model);
            // `whatsapp_send` needs the daemon's `[whatsapp]` table.
            let table = format!(
                "{}contacts = {{ Anna = \"+44 7700 900123\" }}\n",
                web_table(&[FRIEND])
            );
            let model_table = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
            home.write_config(&format!("{model_table}\n{table}"));
            let daemon = home.start();
            // hearthd starts `hearth whatsapp` for that table; with no device
            // linked on this home it says so and exits for good. Only then
            // does this test's bridge run, so it is the only one.
            eventually("the daemon to give up on its own bridge", || {
                let log = daemon.log_text();
                std::future::ready(
                    log.contains("the whatsapp bridge cannot run as configured")
                        .then_some(()),
                )
            })
            .await;
            let config = parse(&std::fs::read_to_string(home.path().join("config.toml")).unwrap());
            let device = FakeDevice::new();
            let first = Bridge::start(&home, &config, &device).await;

            // The owner asks from the terminal; the agent writes to Anna,
            // then answers (nobody has written on WhatsApp: it stays home).
            let mut terminal = home.connect("terminal", None).await;
            model.push(Reply::tool_call(
                "whatsapp_send",
                r#"{"to": "anna", "text": "Dinner at 8?"}"#,
            ));
            model.push(Reply::text("Asked Anna."));
            let (id, _) = terminal
                .submit("ask Anna about dinner", "terminal", None)
                .await;
            terminal.reply_to(id).await;
            sends(&device, 1).await;
            assert_eq!(device.sent_to(ANNA), vec!["Dinner at 8?"]);
            let tools = texts(&home.history().await, Kind::Tool);
            assert!(tools[0].contains("queued for +447700900123"), "{tools:?}");

            // Killed once the cursor is stored past the turn and started
            // again, the bridge does not write to Anna twice.
            cursor_at_log_end(&home, "whatsapp.cursor").await;
            first.kill().await;
            let mut second = Bridge::start(&home, &config, &device).await;
            model.push(Reply::text("Hi Bea."));
            assert!(
                second
                    .deliver(vec![from(FRIEND, "Bea", "3EB0W1", "hi")])
                    .await
            );
            sends(&device, 2).await;
            assert_eq!(device.sent_to(FRIEND), vec!["Hi Bea."]);
            assert_eq!(device.sent_to(ANNA), vec!["Dinner at 8?"]);
            assert_eq!(device.sent().len(), 2, "{:?}", device.sent());

            // The daemon's own bridge said why it could not run, in the
            // daemon's log, never as a message in the conversation.
            assert!(
                daemon.log_text().contains("no WhatsApp account is linked"),
                "{}",
                daemon.log_text()
            );
            let notes = texts(&home.history().await, Kind::Note);
            assert!(
                notes.iter().all(|note| !note.contains("cannot run")),
                "{notes:?}"
            );
            second.stop().await;
        })
        .await;
}
