//! `hearth setup` in a pseudo-terminal, answered as a person would: a
//! number for the provider, Enter for a default, a key pasted unseen, and
//! Ctrl-C at the hidden prompt leaving a terminal that echoes again.

use super::pty::Pty;
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::TestHome;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_asks_on_a_terminal_and_never_shows_the_key() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let home = TestHome::new(bins!());
    let base_url = model.base_url();
    let mut pty = Pty::run(&home, &["setup", "--base-url", &base_url], &[]);
    pty.wait_for("Which model provider?");
    pty.wait_for("Choose 1-5:");
    pty.line("2");
    pty.wait_for("Which model? [gpt-5-mini]:");
    pty.line("");
    pty.wait_for("Paste the API key for $OPENAI_API_KEY (hidden):");
    pty.line("sk-typed-secret");
    pty.wait_for("answered: “ready”");
    pty.wait_for("Telegram too");
    pty.line("");
    pty.wait_for("Signal too");
    pty.line("");
    pty.wait_for("by email too");
    pty.line("");
    pty.wait_for("Discord too");
    pty.line("");
    pty.wait_for("Matrix too");
    pty.line("");
    pty.wait_for("systemd user service");
    pty.line("");
    assert!(pty.wait_exit(), "setup exits 0");

    let raw = String::from_utf8_lossy(&pty.raw()).into_owned();
    assert!(
        !raw.contains("sk-typed-secret"),
        "the key is never shown:\n{raw}"
    );
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(
        config.contains("provider = \"openai\"\nmodel = \"gpt-5-mini\""),
        "{config}"
    );
    assert!(
        config.contains(&format!("base_url = \"{base_url}\"")),
        "{config}"
    );
    let secrets = std::fs::read_to_string(home.path().join("secrets.env")).unwrap();
    assert_eq!(secrets, "OPENAI_API_KEY=sk-typed-secret\n");
    let request = &model.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(
        request.headers.get("authorization").map(String::as_str),
        Some("Bearer sk-typed-secret")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_servers_key_variable_is_asked_and_none_sends_no_exported_key() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let home = TestHome::new(bins!());
    let base_url = model.base_url();
    let exported = [
        ("OPENAI_API_KEY", "sk-openai-not-for-others"),
        ("HEARTH_MODEL_API_KEY", ""),
    ];
    let mut pty = Pty::run(&home, &["setup", "--base-url", &base_url], &exported);
    pty.wait_for("Choose 1-5:");
    pty.line("4");
    pty.wait_for("Which model?");
    pty.line("smol");
    pty.wait_for("The variable that holds the server's API key, if it needs one [none]:");
    pty.line("");
    pty.wait_for("answered: “ready”");
    pty.wait_for("Telegram too");
    pty.line("");
    pty.wait_for("Signal too");
    pty.line("");
    pty.wait_for("by email too");
    pty.line("");
    pty.wait_for("Discord too");
    pty.line("");
    pty.wait_for("Matrix too");
    pty.line("");
    pty.wait_for("systemd user service");
    pty.line("");
    assert!(pty.wait_exit(), "setup exits 0");
    let request = &model.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert!(
        !request.headers.contains_key("authorization"),
        "no key goes to another server: {:?}",
        request.headers
    );
    assert!(!home.path().join("secrets.env").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_at_the_hidden_key_prompt_gives_the_terminal_back_echoing() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    let base_url = model.base_url();
    let args = ["setup", "--provider", "openai", "--base-url", &base_url];
    // What the terminal is once setup has gone, in the same pty.
    let after = "echo \"setup exited $?\"; stty -a; echo 'stty done'";
    let mut pty = Pty::run_then(&home, &args, &[], after);
    pty.wait_for("Which model? [gpt-5-mini]:");
    pty.line("");
    pty.wait_for("Paste the API key for $OPENAI_API_KEY (hidden):");
    pty.send("sk-half-typ");
    pty.send("\x03");
    let screen = pty.wait_for("stty done");
    assert!(screen.contains("setup was interrupted"), "{screen}");
    assert!(screen.contains("setup exited 130"), "{screen}");
    let raw = String::from_utf8_lossy(&pty.raw()).into_owned();
    let settings = raw
        .split("setup exited 130")
        .nth(1)
        .expect("stty's output after setup's");
    let flags: Vec<&str> = settings.split_whitespace().collect();
    for flag in ["echo", "icanon", "isig"] {
        assert!(flags.contains(&flag), "{flag} is back on:\n{settings}");
    }
    assert!(
        !raw.contains("sk-half-typ"),
        "the half-typed key was never shown:\n{raw}"
    );
    assert!(!home.path().join("config.toml").exists());
    assert!(model.requests().is_empty(), "no test request was sent");
}
