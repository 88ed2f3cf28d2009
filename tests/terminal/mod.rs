//! End-to-end: the terminal client (`hearth` with no subcommand) in a
//! pseudo-terminal against a real `hearthd` and a fake model that streams
//! under the test's control.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod pty;
mod setup;
mod voice;

use hearth_protocol::Kind;
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Gate, Reply};
use hearth_tests::harness::{eventually, texts, TestHome};
use pty::{count, Pty};

/// A home with the fake model configured and its daemon running.
async fn attached(model: &FakeModel) -> (TestHome, hearth_tests::harness::Daemon) {
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let daemon = home.start();
    (home, daemon)
}

/// No turn runs: the status line, which says how to interrupt, is gone.
fn idle(screen: &str) -> bool {
    !screen.contains("· Ctrl-C interrupts")
}

fn key_env() -> [(&'static str, &'static str); 1] {
    [("HEARTH_TEST_KEY", "sk-test-secret")]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_streams_before_it_ends_then_shows_rendered() {
    let model = FakeModel::start().await;
    let (home, _daemon) = attached(&model).await;
    let gate = Gate::new();
    let reply = "Here is **bold** text and `code`.\n\n# A heading\n\n- first\n- second\n\n```rust\nfn main() {}\n```";
    model.push(Reply::paused(reply, 16, &gate));
    let mut pty = Pty::attach(&home, &key_env());
    pty.wait_for("model openai-chat/fake-model");

    pty.line("tell me");
    // Half written: the words so far are on screen, raw, the rest is not.
    let half = pty.wait_for("Here is **bold");
    assert!(!half.contains("A heading"), "{half}");
    assert!(half.contains("› tell me"), "{half}");
    gate.open();
    let done = pty.wait_for("╭─ rust");
    assert!(done.contains("Here is bold text and code."), "{done}");
    assert!(!done.contains("**"), "the raw words were replaced:\n{done}");
    assert!(done.contains("• first\n• second"), "{done}");
    assert!(done.contains("╭─ rust"), "{done}");
    assert!(pty.is_bold("bold"));
    assert!(pty.is_bold("A heading"));
    assert_eq!(count(&done, "tell me"), 1, "{done}");
    assert_eq!(count(&done, "A heading"), 1, "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_turn_is_one_line_and_another_clients_message_names_it() {
    let model = FakeModel::start().await;
    let (home, _daemon) = attached(&model).await;
    model.push(Reply::error(400, "invalid_request_error", "bad things"));
    let mut pty = Pty::attach(&home, &key_env());
    pty.wait_for("/help");

    pty.line("first try");
    let screen = pty.wait_for("bad things");
    let failed = pty.wait_until("the turn to end", idle);
    assert_eq!(count(&failed, "bad things"), 1, "{failed}");
    assert!(!screen.contains("error: "), "{screen}");

    // Another terminal's words say whose they are.
    model.push(Reply::text("Noted."));
    let mut desk = home.connect("terminal@desk", None).await;
    desk.submit("from the desk", "terminal", None).await;
    let screen = pty.wait_for("Noted.");
    assert!(screen.contains("[terminal@desk] from the desk"), "{screen}");
    assert!(screen.contains("› first try"), "{screen}");
    assert!(!screen.contains("› from the desk"), "{screen}");

    // The input history is kept, private.
    pty.line("/quit");
    assert!(pty.wait_exit());
    let history = home.path().join("input_history");
    let mode = std::fs::metadata(&history)
        .expect("a history")
        .permissions();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(mode.mode() & 0o777, 0o600);
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(kept.contains("first try"), "{kept}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_interrupts_and_help_never_reaches_the_model() {
    let model = FakeModel::start().await;
    let (home, _daemon) = attached(&model).await;
    let mut pty = Pty::attach(&home, &key_env());
    pty.wait_for("/help");

    pty.line("/help");
    pty.wait_for("//text");
    pty.line("/nonsense");
    pty.wait_for("/nonsense is not a command here.");
    pty.line("/status");
    pty.wait_for("pid ");
    assert_eq!(model.request_count(), 0, "no command went to the model");
    let log = home.history().await;
    assert!(texts(&log, Kind::User).is_empty(), "{log:?}");

    model.push(Reply::hang("Thinking out loud"));
    pty.line("start something long");
    pty.wait_for("Thinking out loud");
    pty.send("\x03");
    let screen = pty.wait_for("interrupted by the user");
    let words = screen.find("Thinking out loud").expect("the words stay");
    assert!(
        words < screen.find("interrupted by the user").unwrap(),
        "{screen}"
    );
    let screen = pty.wait_until("the turn to end", idle);
    assert_eq!(count(&screen, "Thinking out loud"), 1, "{screen}");
    let headers = screen
        .lines()
        .filter(|line| line.ends_with(" hearth") && line.starts_with(|c: char| c.is_ascii_digit()))
        .count();
    assert_eq!(headers, 1, "one header over the words:\n{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_restart_under_the_client_loses_nothing_and_shows_nothing_twice() {
    let model = FakeModel::start().await;
    let (home, mut daemon) = attached(&model).await;
    model.set_default(Reply::text("Answered."));
    let mut pty = Pty::attach(&home, &key_env());
    pty.wait_for("/help");

    pty.line("before the restart");
    pty.wait_for("Answered.");
    pty.wait_until("the turn to end", idle);
    assert!(daemon.stop(), "a clean stop");
    // The daemon's close frame says why it went.
    pty.wait_for("hearthd stopped (reconnecting");
    // Typed while hearthd is away: sent once it is back.
    pty.line("while it was away");
    pty.wait_for("sent when it is back");
    let _daemon = home.start();
    // Another client's message, whether before or after the reconnect.
    let mut phone = home.connect("telegram", None).await;
    phone.submit("from the phone", "telegram", None).await;

    // Every message answered, each shown once, each reply as often as logged.
    let replies = eventually("every message answered", || async {
        let log = home.history().await;
        let users: Vec<u64> = log
            .iter()
            .filter(|m| m.kind == Kind::User)
            .map(|m| m.id)
            .collect();
        let answered = |id: &u64| {
            log.iter()
                .any(|m| m.kind == Kind::Reply && m.answers.contains(id))
        };
        (users.len() == 3 && users.iter().all(answered)).then(|| texts(&log, Kind::Reply).len())
    })
    .await;
    let screen = pty.wait_until("every reply", |screen| {
        count(screen, "Answered.") == replies
    });
    for said in [
        "› before the restart",
        "› while it was away",
        "[telegram] from the phone",
        "hearthd stopped",
    ] {
        assert_eq!(count(&screen, said), 1, "{said} once:\n{screen}");
    }
    let log = home.history().await;
    let users = texts(&log, Kind::User);
    assert_eq!(
        users
            .iter()
            .filter(|text| *text == "while it was away")
            .count(),
        1,
        "{users:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_sequences_in_a_message_are_not_passed_raw() {
    let model = FakeModel::start().await;
    let (home, _daemon) = attached(&model).await;
    model.set_default(Reply::text("ok"));
    let pty = Pty::attach(&home, &key_env());
    pty.wait_for("/help");

    let evil = "look\x1b]0;owned title\x07 here\x1b]52;c;cGF3bmVk\x07\x1b[2J now";
    let mut phone = home.connect("telegram", None).await;
    phone.submit(evil, "telegram", None).await;
    pty.wait_for("[telegram] look here now");
    let raw = pty.raw();
    let raw = String::from_utf8_lossy(&raw);
    assert!(!raw.contains("\x1b]0;"), "no title change");
    assert!(!raw.contains("\x1b]52;"), "no clipboard write");
    assert!(!raw.contains("owned title"));

    let output = home.hearth_async(&["log"]).await;
    let log = String::from_utf8_lossy(&output.stdout);
    assert!(log.contains("look here now"), "{log}");
    assert!(!log.contains('\x1b'), "{log:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_takes_several_lines_pastes_whole_and_pages_back() {
    let model = FakeModel::start().await;
    let (home, _daemon) = attached(&model).await;
    model.set_default(Reply::text("ok"));
    let mut phone = home.connect("telegram", None).await;
    for n in 1..=25 {
        phone
            .submit(&format!("old message {n}"), "telegram", None)
            .await;
    }
    // The turns that took them (one or more) end before the client attaches.
    let last = eventually("the old messages answered", || async {
        let log = home.history().await;
        let last_user = log.iter().rev().find(|m| m.kind == Kind::User)?.id;
        log.iter()
            .any(|m| m.kind == Kind::Reply && m.answers.contains(&last_user))
            .then_some(log.len() as u64)
    })
    .await;
    // The last 20 are shown on attach: older ones start at `first - 1`.
    let first = last - 20;
    let mut pty = Pty::attach(&home, &key_env());
    let screen = pty.wait_for("/help");
    assert!(!screen.contains("old message 1\n"), "{screen}");

    // A trailing backslash, Alt-Enter, a bracketed paste: one message each.
    pty.send("one\\\rtwo\r");
    pty.wait_for("› one");
    pty.send("three\x1b\rfour\r");
    pty.wait_for("› three");
    pty.send("\x1b[200~pasted\nlines\x1b[201~\r");
    pty.wait_for("› pasted");
    let log = home.history().await;
    let users = texts(&log, Kind::User);
    for wanted in ["one\ntwo", "three\nfour", "pasted\nlines"] {
        assert!(
            users.iter().any(|text| text == wanted),
            "{wanted:?} in {users:?}"
        );
    }

    // Older messages, by page.
    pty.line("/history 3");
    let page = format!("3 earlier messages, #{} to #{}", first - 3, first - 1);
    pty.wait_for(&page);
    pty.send("\x1b[5~");
    let page = format!("{} earlier messages, #0 to #{}", first - 3, first - 4);
    // The page is whole once its closing rule is there.
    let screen = pty.wait_until("the whole first page", |screen| {
        screen.contains(&page) && count(screen, "── back to now") == 2
    });
    assert!(screen.contains("[telegram] old message 1\n"), "{screen}");
    assert_eq!(count(&screen, "[telegram] old message 2\n"), 1, "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_color_streams_without_styles() {
    let model = FakeModel::start().await;
    let (home, _daemon) = attached(&model).await;
    model.push(Reply::text("Some **strong** words."));
    let env = [("HEARTH_TEST_KEY", "sk-test-secret"), ("NO_COLOR", "1")];
    let mut pty = Pty::attach(&home, &env);
    pty.wait_for("/help");
    pty.line("hello");
    pty.wait_for("Some **strong** words.");
    pty.wait_until("the turn to end", idle);
    let raw = pty.raw();
    let raw = String::from_utf8_lossy(&raw);
    for style in ["\x1b[1m", "\x1b[3m", "\x1b[9m", "\x1b[90m"] {
        assert!(!raw.contains(style), "no style {style:?} in {raw:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_line_says_what_the_call_did_and_an_approval_is_asked_once() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let config = home.path().join("config.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[approvals]\nshell = [\"rm *\"]\n");
    std::fs::write(&config, text).unwrap();
    let _daemon = home.start();
    model.push(Reply::tool_call(
        "shell",
        r#"{"command":"printf 'a\\nb\\nc\\n'"}"#,
    ));
    model.push(Reply::tool_call(
        "shell",
        r#"{"command":"rm -f nothing-here"}"#,
    ));
    model.push(Reply::text("All done."));
    let mut pty = Pty::attach(&home, &key_env());
    pty.wait_for("/help");

    pty.line("count, then clean up");
    let screen = pty.wait_for("[y/n]");
    assert!(
        screen.contains("· shell: printf 'a\\nb\\nc\\n' → 3 lines"),
        "{screen}"
    );
    pty.line("y");
    let screen = pty.wait_for("All done.");
    assert_eq!(count(&screen, "[y/n]"), 1, "asked once:\n{screen}");
    assert_eq!(count(&screen, "waits for a yes or no"), 0, "{screen}");
    assert!(screen.contains("allowed by terminal@"), "{screen}");
    assert!(
        screen.contains("· shell: rm -f nothing-here → no output"),
        "{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_says_what_the_turn_does_and_is_gone_at_its_end() {
    let model = FakeModel::start().await;
    let (home, _daemon) = attached(&model).await;
    // A shell call that prints a line, then waits on a pipe the test opens
    // (outside the home, which the confined shell cannot read).
    let pipes = tempfile::tempdir().expect("a folder for the pipe");
    let fifo = pipes.path().join("release");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let command = format!("echo step one; cat {}", fifo.display());
    let arguments = serde_json::json!({ "command": command }).to_string();
    model.push(Reply::tool_call("shell", arguments));
    model.push(Reply::text("The steps are done."));
    let mut pty = Pty::attach(&home, &key_env());
    pty.wait_for("/help");

    pty.line("run the steps");
    let screen = pty.wait_until("the tool on the status line", |screen| {
        screen
            .lines()
            .any(|line| line.starts_with("… shell: echo step one") && line.contains("| step one"))
    });
    let status = screen
        .lines()
        .find(|line| line.starts_with("… shell:"))
        .unwrap_or_default();
    assert!(status.ends_with("· Ctrl-C interrupts"), "{screen}");
    // Typing goes on below it, untouched.
    pty.send("half a li");
    pty.wait_for("> half a li");

    std::fs::write(&fifo, "go\n").expect("the pipe opens");
    pty.wait_for("The steps are done.");
    // The screen may be read between a redraw's first and last bytes (the
    // status line cleared, the input line not yet drawn again), so the whole
    // end state is waited for: no hint, no tool, and the typing still there.
    pty.wait_until(
        "the status line to go at the turn's end, the typing kept",
        |screen| idle(screen) && !screen.contains("… shell:") && screen.contains("> half a li"),
    );
}
