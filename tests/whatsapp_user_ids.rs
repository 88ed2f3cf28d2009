//! End-to-end: WhatsApp senders named by business-scoped user id. Someone
//! who chose a WhatsApp username may write with their number withheld: the
//! webhook names them by `from_user_id` and `contacts[].user_id` only. A
//! real `hearthd` runs `hearth whatsapp`; the test plays Meta and a fake
//! Graph API takes the sends.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_bridges::bridge::people::REFUSAL;
use hearth_protocol::{EventKind, Kind};
use hearth_tests::bins;
use hearth_tests::fake_graph::{whatsapp_secrets, FakeGraph, ACCESS_TOKEN, PHONE_NUMBER_ID};
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{model_table, notes_by, texts, TestHome};
use hearth_tests::meta_webhook::{
    delivery, delivery_from_user_id, text, text_from_user_id, Sender, Webhook,
};

const USER_ID: &str = "US.13491208655302741918";
const STRANGER_ID: &str = "DE.99887766554433";

/// The fake model, and a `[whatsapp]` table for the fake Graph API that
/// allows `allow` (TOML list items), with its secrets in `secrets.env`.
fn configure(home: &TestHome, model: &FakeModel, graph: &FakeGraph, allow: &str) {
    home.write_config(&format!(
        "{}\n{}",
        model_table("openai-chat", &model.base_url()),
        graph.whatsapp_table(allow)
    ));
    home.write_secrets(&whatsapp_secrets(ACCESS_TOKEN));
}

async fn deliver(webhook: &Webhook, body: Vec<u8>) {
    let answer = webhook.deliver(&body).await;
    assert_eq!(answer.status, 200, "{answer:?}");
}

#[tokio::test]
async fn a_sender_known_only_by_user_id_is_allowed_answered_and_strangers_refused() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = TestHome::new(bins!());
    configure(&home, &model, &graph, "\"us.13491208655302741918\"");
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;
    let mut watcher = home.connect("watcher", None).await;

    // A stranger without a number first: refused by their user id, told once.
    let stranger = |wamid: &str| {
        delivery_from_user_id(
            PHONE_NUMBER_ID,
            STRANGER_ID,
            "Mallory",
            vec![text_from_user_id(STRANGER_ID, wamid, "let me in")],
        )
    };
    deliver(&webhook, stranger("wamid.S1")).await;
    deliver(&webhook, stranger("wamid.S2")).await;

    model.push(Reply::text("Hello, Bo!"));
    let from_user = delivery_from_user_id(
        PHONE_NUMBER_ID,
        USER_ID,
        "Bo",
        vec![text_from_user_id(USER_ID, "wamid.U1", "hi, no number here")],
    );
    deliver(&webhook, from_user).await;
    let user = watcher.wait_for(|e| e.kind == EventKind::User).await;
    assert_eq!(user.text.as_deref(), Some("hi, no number here"));

    let calls = graph
        .wait_until("the reply to the user id", |calls| {
            calls.sent_to(USER_ID) == ["Hello, Bo!"]
        })
        .await;
    assert_eq!(calls.sent_to(STRANGER_ID), vec![REFUSAL.to_string()]);
    // Sent as the Cloud API takes a user id: `recipient`, and no `to`.
    let texts_sent: Vec<_> = calls
        .message_bodies
        .iter()
        .filter(|body| body["type"] == "text")
        .collect();
    assert_eq!(texts_sent.len(), 2, "{texts_sent:?}");
    for body in &texts_sent {
        assert!(body.get("to").is_none(), "{body}");
        assert!(body["recipient"].as_str().is_some(), "{body}");
    }
    assert_eq!(texts_sent[1]["recipient"], USER_ID);

    let log = home.history().await;
    let notes = notes_by(&log, "whatsapp");
    assert_eq!(
        notes,
        vec![format!(
            "whatsapp: refused a message from {STRANGER_ID} (Mallory)"
        )]
    );
    assert_eq!(texts(&log, Kind::User), vec!["hi, no number here"]);
}

#[tokio::test]
async fn a_sender_with_both_names_is_allowed_by_either_and_answered_where_allowed() {
    let model = FakeModel::start().await;
    let graph = FakeGraph::start().await;
    let home = TestHome::new(bins!());
    // Ada is allowed by number, Bo by user id; both write with both names.
    configure(
        &home,
        &model,
        &graph,
        &format!("\"+1 555 123 4567\", \"{USER_ID}\""),
    );
    let daemon = home.start();
    let webhook = Webhook::of(&daemon, 1).await;

    let with_user_id = |sender: &Sender, user_id: &str, wamid: &str, words: &str| {
        let mut body: serde_json::Value = serde_json::from_slice(&delivery(
            PHONE_NUMBER_ID,
            sender,
            vec![text(sender, wamid, words)],
        ))
        .expect("json");
        let value = &mut body["entry"][0]["changes"][0]["value"];
        value["contacts"][0]["user_id"] = user_id.into();
        value["messages"][0]["from_user_id"] = user_id.into();
        body.to_string().into_bytes()
    };
    let ada = Sender {
        wa_id: "15551234567",
        name: "Ada",
    };
    let bo = Sender {
        wa_id: "447700900123",
        name: "Bo",
    };
    model.push(Reply::text("Hi Ada."));
    deliver(
        &webhook,
        with_user_id(&ada, "US.5550001", "wamid.A1", "from Ada"),
    )
    .await;
    graph
        .wait_until("Ada's reply", |calls| {
            calls.sent_to(ada.wa_id) == ["Hi Ada."]
        })
        .await;
    model.push(Reply::text("Hi Bo."));
    deliver(&webhook, with_user_id(&bo, USER_ID, "wamid.B1", "from Bo")).await;
    let calls = graph
        .wait_until("Bo's reply", |calls| calls.sent_to(USER_ID) == ["Hi Bo."])
        .await;
    // Ada's reply goes to her number, Bo's to his user id: each to the
    // form the allowlist names. Bo's number is not on it and gets nothing.
    assert!(calls.sent_to(bo.wa_id).is_empty(), "{:?}", calls.sent);
    let replies: Vec<_> = calls
        .message_bodies
        .iter()
        .filter(|body| body["type"] == "text")
        .map(|body| (body["to"].as_str(), body["recipient"].as_str()))
        .collect();
    assert_eq!(
        replies,
        vec![
            (Some("15551234567"), None),
            // Ada is in Bo's turn's chats too: both get the reply.
            (Some("15551234567"), None),
            (None, Some(USER_ID)),
        ]
    );
    let log = home.history().await;
    assert_eq!(texts(&log, Kind::User), vec!["from Ada", "from Bo"]);
}
