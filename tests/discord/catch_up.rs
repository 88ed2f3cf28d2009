//! The Discord bridge reads back what was written while it was away: the
//! Gateway does not replay it, so each (re)connect reads every chat's
//! history from the newest message taken there, and takes each message
//! once.

use super::{discord_notes, home_for, users};
use hearth_bridges::bridge::people::REFUSAL;
use hearth_tests::fake_discord::{Calls, FakeDiscord, CHANNEL_ID, OWNER, STRANGER};
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{eventually, TestHome};

/// Waits until the bridge stored that it took message `id` in `channel`.
async fn marked(home: &TestHome, channel: u64, id: u64) {
    eventually("the bridge's mark of the chat", || async move {
        let stored = home.stored_state("discord.read").await?;
        let marks: serde_json::Value = serde_json::from_str(&stored).ok()?;
        let mark = ["direct", "channel"]
            .iter()
            .find_map(|kind| marks[kind][channel.to_string()].as_u64())?;
        (mark >= id).then_some(())
    })
    .await;
}

/// The people's messages the agent got, once `count` are in.
async fn users_once(home: &TestHome, count: usize) -> Vec<String> {
    eventually("the people's messages", || async {
        let texts = users(home).await;
        (texts.len() >= count).then_some(texts)
    })
    .await
}

#[tokio::test]
async fn a_message_sent_while_the_bridge_was_down_is_read_once_when_it_is_back() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("ok"));
    let discord = FakeDiscord::start().await;
    let table = format!("channel = {CHANNEL_ID}");
    let home = home_for(&model, &discord, &table, "");
    let mut daemon = home.start();
    let dm = discord.dm_of(&OWNER);

    // Up: the owner writes in both chats and is answered; a first start
    // reads back no history.
    let hello = discord.write(&OWNER, "hello");
    let hello_all = discord.write_in(&OWNER, CHANNEL_ID, "hello all");
    discord
        .wait_until("a reply in the channel", |calls| {
            !calls.sent_in(CHANNEL_ID).is_empty()
        })
        .await;
    marked(&home, dm, hello).await;
    marked(&home, CHANNEL_ID, hello_all).await;
    assert!(
        discord.calls().read_back.is_empty(),
        "{:?}",
        discord.calls().read_back
    );

    // Down: hearth stops, and people write on. Discord sends none of it to
    // a bot offline; the stranger's flood puts the owner's channel message
    // on a second page.
    assert!(daemon.stop());
    discord
        .wait_until("the stopped bridge gone", |calls| calls.sessions == 0)
        .await;
    discord.write_while_down(&OWNER, "written while you were away");
    for n in 0..105 {
        discord.write_in_while_down(&STRANGER, CHANNEL_ID, &format!("let me in {n}"));
    }
    let in_channel = discord.write_in_while_down(&OWNER, CHANNEL_ID, "and in the channel");
    // Written as the bridge comes back: read back, and brought by the new
    // Gateway session too.
    let photo = hearth_tests::fake_telegram::photo_bytes();
    let cat = discord.send_file(&OWNER, "image/png", "cat.png", &photo, false, "my cat");

    // Back: each allowed message reaches the agent once, in the order
    // written; the stranger is refused as ever, once.
    let mut daemon = home.start();
    let expected = [
        "hello",
        "hello all",
        "written while you were away",
        "and in the channel",
        "my cat",
    ];
    assert_eq!(users_once(&home, expected.len()).await, expected);
    marked(&home, dm, cat).await;
    marked(&home, CHANNEL_ID, in_channel).await;
    let calls = discord.calls();
    assert_eq!(calls.fetched, ["cat.png"], "the photo is taken once");
    let refusals = |calls: &Calls| {
        let sent = calls.sent_in(CHANNEL_ID);
        sent.iter().filter(|text| *text == REFUSAL).count()
    };
    assert_eq!(refusals(&calls), 1);
    let stranger = format!("discord: refused a message from {} (mallory)", STRANGER.id);
    assert_eq!(discord_notes(&home).await, std::slice::from_ref(&stranger));
    // Read from each chat's mark, 100 at most a page, the channel's two
    // pages one after the other.
    assert!(calls.read_back.iter().all(|read| read.limit == Some(100)));
    assert!(calls
        .read_back
        .iter()
        .any(|read| read.channel == dm && read.after == Some(hello)));
    let pages: Vec<u64> = calls
        .read_back
        .iter()
        .filter(|read| read.channel == CHANNEL_ID)
        .filter_map(|read| read.after)
        .collect();
    assert_eq!(pages.len(), 2, "{pages:?}");
    assert!(pages[0] == hello_all && pages[1] > hello_all, "{pages:?}");

    // Again: read back once more, nothing is taken twice.
    assert!(daemon.stop());
    discord
        .wait_until("the stopped bridge gone", |calls| calls.sessions == 0)
        .await;
    let read_before = calls.read_back.len();
    let _daemon = home.start();
    discord
        .wait_until("both chats read back", |calls| {
            calls.read_back.len() >= read_before + 2
        })
        .await;
    discord.write(&OWNER, "back again");
    let mut expected = expected.to_vec();
    expected.push("back again");
    assert_eq!(users_once(&home, expected.len()).await, expected);
    let calls = discord.calls();
    assert_eq!(
        calls.read_back.len(),
        read_before + 2,
        "each chat read once"
    );
    assert_eq!(calls.fetched, ["cat.png"]);
    assert_eq!(refusals(&calls), 1);
    assert_eq!(discord_notes(&home).await, [stranger]);
}

#[tokio::test]
async fn a_message_missed_while_the_gateway_reconnects_is_read_when_it_is_resumed() {
    let model = FakeModel::start().await;
    model.set_default(Reply::text("ok"));
    let discord = FakeDiscord::start().await;
    let home = home_for(&model, &discord, "", "");
    let _daemon = home.start();
    let dm = discord.dm_of(&OWNER);
    let hello = discord.write(&OWNER, "hello");
    marked(&home, dm, hello).await;

    // Written in the gap of a reconnect: no Gateway session brings it.
    discord.write_while_down(&OWNER, "written while the bot reconnected");
    discord.drop_connections();
    discord
        .wait_until("the session resumed", |calls| {
            calls.resumes == 1 && calls.sessions == 1
        })
        .await;
    assert_eq!(
        users_once(&home, 2).await,
        ["hello", "written while the bot reconnected"]
    );
    let calls = discord.calls();
    assert_eq!(calls.identifies.len(), 1, "resumed, not identified again");
    assert_eq!(calls.read_back.len(), 1, "{:?}", calls.read_back);
    assert_eq!(calls.read_back[0].after, Some(hello));
}
