//! End-to-end: which model writes the summaries, and in what form. A
//! memory model of its own (`[memory] model`) gets ordinary batches at a
//! turn's end, with its own prompt and no tools, never the turn's chain; a
//! layout's compaction prompt on the turn's model likewise goes at the
//! turn's end. A real `hearthd`, a fake model that serves both names.
//!
//! A memory model the provider refuses to the key: a default one gives
//! way to the turns' model (tested on the keeper through the library, since
//! the default applies only on the provider's own address, which a test
//! cannot point at the fake); one the user chose stays, and its refusal is
//! said (a real `hearthd`).

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_daemon::activity::ActivityBoard;
use hearth_daemon::config::{Config, MemorySettings};
use hearth_daemon::layout::Layout;
use hearth_daemon::log::{Log, NewMessage};
use hearth_daemon::memory::{Memory, MemoryConfig, MemoryModel};
use hearth_daemon::model::Model;
use hearth_daemon::usage::{Budget, Meter, Prices};
use hearth_protocol::{Activity, Doing, Event, EventKind, Kind};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{Client, TestHome};
use std::path::Path;

/// A layout with small budgets: a file read is a long message.
fn layout(extra: &str) -> String {
    "block_lines = 4\nline_budget = 80\nline_guard = 160\nhigh_budget = 4000\nlow_budget = 2000\n\
     compaction_high_budget = 4000\ncompaction_low_budget = 2000\ncompactor_concurrency = 1\n\
     compactor_ahead = 1\ncompactor_tries = 2\ncompactor_failures = 3\ncompactor_backoff_ms = 1\n"
        .to_string()
        + extra
}

/// A home on the fake model (`fake`), with `layout_text` and `more` after
/// `[agent]`, and the notes file the turn reads.
fn home_with(model: &FakeModel, layout_text: &str, more: &str) -> TestHome {
    let home = TestHome::new(bins!());
    let layout_file = home.path().join("test-layout.toml");
    std::fs::write(&layout_file, layout_text).unwrap();
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake\"\nbase_url = \"{}\"\neffort = \"high\"\n\n\
         [agent]\nlayout = \"{}\"\n\n{more}",
        model.base_url(),
        layout_file.display()
    ));
    let work = home.work_dir();
    std::fs::create_dir_all(&work).unwrap();
    let notes = "the plumber comes on tuesday at nine; call ahead on 555 0199. ".repeat(6);
    std::fs::write(work.join("notes.txt"), notes).unwrap();
    home
}

/// One turn that reads the notes (a long tool output) and replies.
async fn read_the_notes(model: &FakeModel, client: &mut Client) -> u64 {
    model.push(Reply::ToolCalls {
        text: None,
        calls: vec![("read_file".into(), r#"{"path": "notes.txt"}"#.into())],
    });
    model.push(Reply::Text("Tuesday at nine.".into()));
    let ask = "please read my notes file and tell me when the plumber comes";
    let (id, _) = client.submit(ask, "terminal", None).await;
    client.reply_to(id).await;
    client
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Tool)
        .find_map(|e| e.id)
        .unwrap()
}

#[tokio::test]
async fn a_memory_model_of_its_own_gets_its_prompt_no_tools_and_no_chain_at_the_turns_end() {
    let model = FakeModel::start().await;
    let home = home_with(&model, &layout(""), "[memory]\nmodel = \"fake-small\"\n");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    let line = "plumber due tuesday at nine, phone 555 0199 before; notes.txt read";
    model.push_for("fake-small", Reply::Text(format!("1. {line}")));
    let tool = read_the_notes(&model, &mut client).await;
    // Asked at the turn's end: before the next turn asks for anything.
    let requests = model.wait_for_requests(3).await;
    for turn in &requests[..2] {
        assert_eq!(turn.body["model"], "fake");
        assert_eq!(turn.body["reasoning_effort"], "high");
        assert!(turn.body["tools"].as_array().is_some_and(|t| !t.is_empty()));
    }
    let summary = &requests[2];
    assert_eq!(summary.body["model"], "fake-small");
    // Not the turns' effort; with a base_url, none at all.
    assert!(
        summary.body.get("reasoning_effort").is_none(),
        "{}",
        summary.body
    );
    assert!(
        summary.body.get("tools").is_none(),
        "no tools: {}",
        summary.body
    );
    let all = summary.contents();
    assert_eq!(all[0], hearth_daemon::memory::COMPACTION_PROMPT);
    assert_eq!(summary.body["messages"][0]["role"], "system");
    // No copy of the turn's chain: neither its reply nor its state; the
    // compaction view, then the tool output whole in the task.
    assert!(!all.iter().any(|c| c == "Tuesday at nine."), "{all:?}");
    assert!(
        summary.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["role"] != "assistant" && m["role"] != "tool"),
        "{all:?}"
    );
    let task = all.last().unwrap();
    assert!(task.starts_with("</chat>\nWrite the lines"), "{task}");
    assert!(
        task.contains(&format!("1. Message {tool}, whole")),
        "{task}"
    );
    assert!(task.contains("call ahead on 555 0199"), "{task}");
    assert!(
        all[1].starts_with("<chat>\n"),
        "the compaction view: {all:?}"
    );

    // The next turn finds the line built: no call runs before it. Its end
    // asks the memory model for the merge that was waiting.
    model.push(Reply::Text("You're welcome.".into()));
    let merged = "asked when the plumber comes: tuesday at nine";
    model.push_for("fake-small", Reply::Text(format!("1. {merged}")));
    let (next, _) = client.submit("thanks", "terminal", None).await;
    client.reply_to(next).await;
    let requests = model.wait_for_requests(5).await;
    assert_eq!(requests[3].body["model"], "fake");
    let view = requests[3].contents().join("\n");
    assert!(view.contains(&format!("{tool}+1|{line}")), "{view}");
    let merge = &requests[4];
    assert_eq!(merge.body["model"], "fake-small");
    assert!(merge.body.get("tools").is_none());
    let task = merge.contents().pop().unwrap();
    assert!(task.contains("1. Two lines that cover messages"), "{task}");

    // `hearth status` names the memory model, since it is not the turns'.
    let status = home.hearth_async(&["status"]).await;
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(said.contains("written by openai-chat/fake-small"), "{said}");
    let status = home.hearth_async(&["status", "--json"]).await;
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["memory"]["model"], "openai-chat/fake-small");
}

#[tokio::test]
async fn a_layouts_compaction_prompt_on_the_turns_model_is_asked_at_the_turns_end() {
    let model = FakeModel::start().await;
    let prompt = "You summarize this assistant's conversation in short lines.";
    let layout_text = layout(&format!("compaction_prompt = \"{prompt}\"\n"));
    let home = home_with(&model, &layout_text, "");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    let line = "plumber due tuesday at nine, phone 555 0199 before";
    model.push(Reply::ToolCalls {
        text: None,
        calls: vec![("read_file".into(), r#"{"path": "notes.txt"}"#.into())],
    });
    model.push(Reply::Text("Tuesday at nine.".into()));
    model.push(Reply::Text(format!("1. {line}")));
    let ask = "please read my notes file and tell me when the plumber comes";
    let (id, _) = client.submit(ask, "terminal", None).await;
    client.reply_to(id).await;
    let requests = model.wait_for_requests(3).await;
    let summary = &requests[2];
    assert_eq!(summary.body["model"], "fake");
    let all = summary.contents();
    assert_eq!(all[0], prompt);
    assert!(
        !all.iter().any(|c| c == "Tuesday at nine."),
        "not the chain"
    );
    assert!(all.last().unwrap().contains("whole"), "{all:?}");
    // The turn's model keeps the turns' tools and reasoning, so their
    // prefix is shared.
    assert_eq!(summary.body["tools"], requests[1].body["tools"]);
    assert_eq!(summary.body["reasoning_effort"], "high");
    // The turns' own model is no memory model to name apart.
    let status = home.hearth_async(&["status", "--json"]).await;
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(status["memory"]["lines"].is_u64(), "{status}");
    assert!(status["memory"].get("model").is_none(), "{status}");
}

/// Whether `event` is an `error` event whose text has all of `words`.
fn error_saying(event: &Event, words: &[&str]) -> bool {
    event.kind == EventKind::Error
        && event
            .text
            .as_deref()
            .is_some_and(|text| words.iter().all(|word| text.contains(word)))
}

/// The view of every message before `through`, once it is settled; a
/// keeper that waits for ever fails the test instead of hanging it.
async fn settled(memory: &Memory, through: u64) -> Vec<String> {
    let settle = memory.settle(through, Vec::new());
    tokio::time::timeout(std::time::Duration::from_secs(60), settle)
        .await
        .expect("the view settles: the summaries are not waiting for ever")
        .unwrap()
}

#[tokio::test]
async fn a_default_memory_model_the_key_cannot_use_gives_way_to_the_turns_model() {
    let model = FakeModel::start().await;
    model.refuse_model("fake-small");
    let dir = tempfile::tempdir().unwrap();
    let (events, mut seen) = tokio::sync::broadcast::channel(256);
    let log = Log::open(&dir.path().join("hearth.db"), events.clone()).unwrap();
    let config = Config::parse(
        Path::new("config.toml"),
        &format!(
            "[model]\nprovider = \"openai-chat\"\nmodel = \"fake\"\nbase_url = \"{}\"\n",
            model.base_url()
        ),
    )
    .unwrap();
    let turn = config.turn_model(None).unwrap();
    // The provider's small model as the default gives it (`[memory]` set
    // nothing): its own model, with the turns' model to fall back on.
    let settings = MemorySettings {
        model: Some("fake-small".into()),
        effort: None,
    };
    let small = settings.model_for(&turn);
    assert!(small.own);
    let memory_model = MemoryModel {
        model: Model::new(small.config, |_| None),
        own: true,
        turns: Some(Model::new(turn.clone(), |_| None)),
    };
    let meter = Meter::new(
        log.clone(),
        "hearth",
        Prices::default(),
        Budget::default(),
        dir.path().join("config.toml"),
    );
    let memory = Memory::start(
        log.clone(),
        MemoryConfig {
            agent: "hearth".into(),
            layout: Layout::parse("test-layout.toml", &layout("")).unwrap(),
            model: Some(memory_model),
            prompt_file: dir.path().join("prompt.md"),
            tools: std::sync::Arc::new(Vec::new),
            events: events.clone(),
            meter,
            activity: ActivityBoard::new("hearth", events.clone()),
        },
    )
    .await
    .unwrap();
    assert_eq!(
        memory.own_model().as_deref(),
        Some("openai-chat/fake-small")
    );

    let notes = "the plumber comes on tuesday at nine; call ahead on 555 0199. ".repeat(6);
    let long = NewMessage::new(Kind::User, "terminal", notes);
    let id = log.append("hearth", long).await.unwrap().id;
    let line = "plumber due tuesday at nine, phone 555 0199 before";
    model.push_for("fake", Reply::Text(format!("1. {line}")));
    // A turn asks for its view: the small model is refused, the turns'
    // model writes the line at once, and the view shows it.
    let view = settled(&memory, id + 1).await;
    assert!(view.iter().any(|l| l.contains(line)), "{view:?}");
    let requests = model.requests();
    let models: Vec<&str> = requests
        .iter()
        .map(|r| r.body["model"].as_str().unwrap())
        .collect();
    assert_eq!(models, ["fake-small", "fake"]);
    // The turns' model is asked as the turns' own: their prompt, no prompt
    // of its own.
    assert_ne!(
        requests[1].contents()[0],
        hearth_daemon::memory::COMPACTION_PROMPT
    );
    // Said once, in words: which model, why, which one writes now.
    let words = [
        "openai-chat/fake-small is not available to this key",
        "404",
        "does not exist or you do not have access to it",
        "the turns' model openai-chat/fake writes them from now on",
        "[memory] model",
    ];
    let mut said = 0;
    while let Ok(event) = seen.try_recv() {
        if error_saying(&event, &words) {
            said += 1;
        }
    }
    assert_eq!(said, 1);
    // `status` names no memory model of its own any more.
    assert_eq!(memory.own_model(), None);

    // A reload that names the same default finds it refused already: the
    // next long message goes to the turns' model straight away, unsaid.
    memory.set_model(Some(MemoryModel {
        model: Model::new(settings.model_for(&turn).config, |_| None),
        own: true,
        turns: Some(Model::new(turn.clone(), |_| None)),
    }));
    let next = NewMessage::new(Kind::User, "terminal", "and the electrician? ".repeat(8));
    let next = log.append("hearth", next).await.unwrap().id;
    model.push_for(
        "fake",
        Reply::Text("1. asks when the electrician comes".into()),
    );
    let view = settled(&memory, next + 1).await;
    assert!(
        view.iter().any(|l| l.contains("electrician comes")),
        "{view:?}"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["model"], "fake");
    assert_eq!(memory.own_model(), None);
    while let Ok(event) = seen.try_recv() {
        assert!(event.kind != EventKind::Error, "{event:?}");
    }
    // No line was cut mechanically for the refusal.
    assert!(
        !view.iter().any(|l| l.contains("call ahead on 555 0199")),
        "{view:?}"
    );
}

#[tokio::test]
async fn a_memory_model_the_user_chose_is_not_replaced_and_its_refusal_is_said() {
    let model = FakeModel::start().await;
    model.refuse_model("fake-small");
    let home = home_with(&model, &layout(""), "[memory]\nmodel = \"fake-small\"\n");
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;

    read_the_notes(&model, &mut client).await;
    let words = [
        "summaries wait: openai-chat/fake-small is not available to this key",
        "404",
        "set [memory] model to a model this key may use",
    ];
    client.wait_for(|event| error_saying(event, &words)).await;
    // The next turn waits for the line and says what for; the summary is
    // asked of the chosen model again, never of the turns' one.
    let (thanks, _) = client.submit("thanks", "terminal", None).await;
    client
        .wait_for(|event| {
            matches!(
                event.activity.as_deref(),
                Some(Activity {
                    doing: Doing::Summaries { waiting_for: Some(why), .. },
                    ..
                }) if why.contains("fake-small")
            )
        })
        .await;
    // The turn's two requests, then the summaries' tries.
    let requests = model.wait_for_requests(4).await;
    for summary in &requests[2..] {
        assert_eq!(summary.body["model"], "fake-small");
    }
    let said = client
        .events
        .iter()
        .filter(|event| error_saying(event, &words))
        .count();
    assert_eq!(said, 1);
    let status = home.hearth_async(&["status", "--json"]).await;
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["memory"]["model"], "openai-chat/fake-small");

    // The fix: without `[memory] model` the turns' model writes them (with
    // a base_url, no small model is the default). A reload applies it at
    // once, and the waiting turn goes on with the line in its view.
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    home.write_config(&config.replace("[memory]\nmodel = \"fake-small\"\n", ""));
    let line = "plumber due tuesday at nine, phone 555 0199 before";
    model.push(Reply::Text(format!("1. {line}")));
    model.push(Reply::Text("You're welcome.".into()));
    let reloaded = home.hearth_async(&["reload"]).await;
    assert!(reloaded.status.success(), "{reloaded:?}");
    assert!(
        String::from_utf8_lossy(&reloaded.stdout).contains("memory"),
        "{reloaded:?}"
    );
    client.reply_to(thanks).await;
    // The turn's request: the last that asks for no lines (its end may ask
    // for a merge).
    let requests = model.requests();
    let turn = requests
        .iter()
        .rev()
        .find(|r| !r.contents().last().unwrap().contains("Write the lines"))
        .unwrap();
    assert_eq!(turn.body["model"], "fake");
    let view = turn.contents().join("\n");
    assert!(view.contains(line), "{view}");
    let status = home.hearth_async(&["status", "--json"]).await;
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(status["memory"].get("model").is_none(), "{status}");
}
