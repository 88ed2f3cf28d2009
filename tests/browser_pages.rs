//! End-to-end in a real browser, the pages besides the conversation: the
//! activity line, schedules added and cancelled, the agents and their runs,
//! a failed bridge's reason, the memory (its pinned facts, a search, the
//! view's lines opened into what they were made from), each laid out
//! within a phone's 360 px. A headless Chromium (`tests/support/cdp.rs`),
//! one for this file, against a real `hearthd` with a fake model.
//!
//! Without Chromium installed these tests say so and pass; CI installs it.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{ClientFrame, ServerFrame};
use hearth_tests::bins;
use hearth_tests::cdp::{Browser, Page};
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::harness::{bridge_failed, eventually, small_layout, TestHome};
use hearth_tests::web::{browser, free_port, open_live_page, send, shown, web_home, web_home_with};

/// Asserts that the page shown is no wider than the phone-sized window.
async fn fits_a_phone(browser: &mut Browser, page: &Page) {
    let widths = browser
        .eval(
            page,
            "[document.documentElement.scrollWidth, window.innerWidth]",
        )
        .await;
    assert!(
        widths[0].as_u64() <= widths[1].as_u64(),
        "wider than the window: {widths}"
    );
}

#[tokio::test]
async fn the_pages_show_memory_activity_schedules_agents_and_bridges() {
    let Some(mut browser) = browser().await else {
        return;
    };
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let port = free_port();
    // A subagent, and a bridge that cannot run (no token).
    let extra = "[[agents]]\nname = \"scout\"\nresponsibility = \"looks things up\"\n\n\
                 [telegram]\ntoken_env = \"HEARTH_TEST_NO_SUCH_TOKEN\"\nallow = [1]\n";
    web_home_with(&home, &model, port, extra);
    let _daemon = home.start();
    // Something to find in the memory, and a pinned fact.
    let mut script = home.connect("script", None).await;
    model.push(Reply::text("Noted."));
    let (id, _) = script
        .submit("the plumber comes on tuesday", "script", None)
        .await;
    script.reply_to(id).await;
    let facts = ClientFrame::Facts {
        add: Some("Prefers tea".into()),
        remove: None,
    };
    script.request(facts).await;
    let page = open_live_page(&mut browser, &home).await;

    // The activity line says the agent is thinking while the model is
    // held, and clears when the reply is in.
    let gate = Gate::new();
    model.push(Reply::Gate {
        reply: Box::new(Reply::text("Thought it through.")),
        gate: gate.clone(),
    });
    send(&mut browser, &page, "think about it").await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#activity').textContent.includes('thinking')",
        )
        .await;
    gate.open();
    browser
        .wait_for(&page, &shown("reply", "Thought it through."))
        .await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#activity').textContent === ''",
        )
        .await;

    browser.click(&page, "nav [data-page=schedules]").await;
    browser
        .wait_for(&page, "document.querySelector('#schedules table')")
        .await;
    browser
        .eval(&page, "{ const [w, t] = document.querySelectorAll('#schedules input'); w.value = 'tomorrow 9am'; t.value = 'call mum' } true")
        .await;
    browser.click(&page, "#schedules form button").await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#schedules table').textContent.includes('call mum')",
        )
        .await;
    let row = browser
        .eval(&page, "[...document.querySelectorAll('#schedules tr')].find(r => r.textContent.includes('call mum')).textContent")
        .await;
    assert!(row.as_str().unwrap_or_default().contains("once"), "{row}");
    browser
        .eval(&page, "{ const [w, t] = document.querySelectorAll('#schedules input'); w.value = '0 9 * * 1-5'; t.value = 'stand-up notes' } true")
        .await;
    browser.click(&page, "#schedules form button").await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#schedules table').textContent.includes('stand-up notes')",
        )
        .await;
    let listed = script.request(ClientFrame::ScheduleList).await;
    assert!(
        format!("{listed:?}").contains("stand-up notes"),
        "{listed:?}"
    );
    browser
        .eval(&page, "[...document.querySelectorAll('#schedules tr')].find(r => r.textContent.includes('stand-up notes')).querySelector('button').click(); true")
        .await;
    browser
        .wait_for(
            &page,
            "!document.querySelector('#schedules table').textContent.includes('stand-up notes')",
        )
        .await;
    let listed = script.request(ClientFrame::ScheduleList).await;
    assert!(
        !format!("{listed:?}").contains("stand-up notes"),
        "{listed:?}"
    );

    fits_a_phone(&mut browser, &page).await;
    browser.click(&page, "nav [data-page=agents]").await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#agents').textContent.includes('scout')",
        )
        .await;
    browser.click(&page, "#agents button").await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#agents').textContent.includes('no runs yet')",
        )
        .await;

    // The bridge that cannot run says so, with why.
    bridge_failed(&home, "telegram").await;
    fits_a_phone(&mut browser, &page).await;
    browser.click(&page, "nav [data-page=bridges]").await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#bridges').textContent.includes('fake-model')",
        )
        .await;
    let bridges = browser
        .eval(
            &page,
            "document.querySelector('#bridges table').textContent",
        )
        .await;
    let bridges = bridges.as_str().unwrap_or_default();
    assert!(
        bridges.contains("telegram")
            && bridges.contains("failed")
            && bridges.contains("no Telegram bot token"),
        "{bridges}"
    );

    fits_a_phone(&mut browser, &page).await;
    // The memory: pinned facts shown, and a search finds the message.
    browser.click(&page, "nav [data-page=memory]").await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#memory #facts')?.textContent.includes('Prefers tea')",
        )
        .await;
    browser
        .eval(
            &page,
            "document.querySelector('#memory-search input').value = 'plumber'; true",
        )
        .await;
    browser
        .eval(
            &page,
            "document.querySelector('#memory-search form').requestSubmit(); true",
        )
        .await;
    browser
        .wait_for(
            &page,
            "document.querySelector('#memory-search .hits')?.textContent.includes('plumber')",
        )
        .await;
    let hit = browser
        .eval(
            &page,
            "document.querySelector('#memory-search .hits li').textContent",
        )
        .await;
    assert!(
        hit.as_str()
            .unwrap_or_default()
            .starts_with(&format!("{id}+1 user script")),
        "{hit}"
    );
    fits_a_phone(&mut browser, &page).await;
}

#[tokio::test]
async fn the_memory_page_opens_a_line_into_what_it_was_made_from() {
    let Some(mut browser) = browser().await else {
        return;
    };
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let port = free_port();
    web_home(&home, &model, port);
    // A view that passes its high budget after a few messages, so old lines
    // are merged (the fake model writes the merged lines).
    std::fs::write(home.layout_file(), small_layout(400, 300, 150)).unwrap();
    // Every request, turn or summary, gets a short line back.
    model.set_default(Reply::text("a short line"));
    let _daemon = home.start();
    let mut script = home.connect("script", None).await;
    for n in 0..6 {
        let (id, _) = script
            .submit(
                &format!("message {n} about the garden and the pond"),
                "script",
                None,
            )
            .await;
        script.reply_to(id).await;
    }
    let home_ref = &home;
    let merged = eventually("a merged line in the view", || async move {
        let mut client = home_ref.connect("look", None).await;
        let ServerFrame::Memory(view) = client.request(ClientFrame::Memory).await else {
            return None;
        };
        view.lines
            .into_iter()
            .find(|line| line.n > 1 && !line.text.is_empty())
    })
    .await;
    let page = open_live_page(&mut browser, &home).await;
    browser.click(&page, "nav [data-page=memory]").await;
    let node = format!("{}+{}", merged.id, merged.n);
    let find = format!(
        "[...document.querySelectorAll('#memory ol.memory > li')].find(li => li.querySelector('button.node').textContent === '{node}')"
    );
    let line = browser
        .wait_for(&page, &format!("{find}?.textContent"))
        .await;
    assert!(line.as_str().unwrap().contains(&merged.text), "{line}");
    browser
        .eval(
            &page,
            &format!("{find}.querySelector('button.node').click(); true"),
        )
        .await;
    // Opened: the two lines it was made from, which together cover it.
    let half = merged.n / 2;
    let parts = browser
        .wait_for(
            &page,
            &format!("(() => {{ const parts = [...{find}.querySelectorAll(':scope > ol > li > button.node')].map(b => b.textContent); return parts.length === 2 && parts; }})()"),
        )
        .await;
    let expected = [
        format!("{}+{half}", merged.id),
        format!("{}+{half}", merged.id + half),
    ];
    assert_eq!(parts, serde_json::json!(expected));
    fits_a_phone(&mut browser, &page).await;
}
