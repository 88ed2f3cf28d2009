//! End-to-end: the `hearth` commands for scripts against a real `hearthd`.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::TestHome;
use std::process::Output;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

#[test]
fn scripted_commands_fail_at_once_without_a_daemon() {
    let home = TestHome::new(bins!());
    for args in [
        &["send", "hello"][..],
        &["log"][..],
        &["status"][..],
        &["interrupt"][..],
    ] {
        let output = home.hearth(args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&output).contains("no hearthd is running"),
            "{}",
            stderr(&output)
        );
    }
    assert!(!home.socket().exists(), "no daemon was started");
}

#[tokio::test]
async fn send_wait_prints_the_reply_and_log_json_shows_the_exchange() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();

    model.push(Reply::Text("Four.".into()));
    let output = home
        .hearth_async(&["send", "--wait", "what", "is", "2+2?"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let said = stdout(&output);
    assert!(said.contains("Four."), "{said}");

    let output = home.hearth_async(&["log", "--json"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let lines: Vec<serde_json::Value> = stdout(&output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object a line"))
        .collect();
    assert_eq!(lines.len(), 2);
    let keys: Vec<&str> = lines[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in ["id", "kind", "source", "text", "status", "at"] {
        assert!(keys.contains(&key), "{key} in {keys:?}");
    }
    assert_eq!(lines[0]["kind"], "user");
    assert_eq!(lines[0]["text"], "what is 2+2?");
    assert_eq!(lines[1]["kind"], "reply");
    assert_eq!(lines[1]["text"], "Four.");

    let output = home.hearth_async(&["log", "--json", "--since", "0"]).await;
    assert_eq!(stdout(&output).lines().count(), 1);
}

#[tokio::test]
async fn send_wait_fails_with_the_turns_error() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    let output = home.hearth_async(&["send", "--wait", "hello"]).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("[model]"), "{}", stderr(&output));
}

#[tokio::test]
async fn home_may_come_before_the_subcommand() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    let mut command = std::process::Command::new(&home.bins.hearth);
    command
        .arg("--home")
        .arg(home.path())
        .args(["send", "--key", "k1", "hi"])
        .env_remove("HEARTH_HOME");
    let first = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(stdout(&first).trim(), "0");
    let again = home.hearth_async(&["send", "--key", "k1", "hi"]).await;
    assert_eq!(
        stdout(&again).trim(),
        "duplicate 0",
        "the same key names the same message"
    );
    assert!(again.status.success());
    let status = home.hearth_async(&["status", "--json"]).await;
    let status: serde_json::Value = serde_json::from_str(stdout(&status).trim()).unwrap();
    assert_eq!(status["agent"], "hearth");
}

#[tokio::test]
async fn backup_writes_a_consistent_copy_while_the_daemon_runs() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    let sent = home.hearth_async(&["send", "keep this"]).await;
    assert!(sent.status.success(), "{}", stderr(&sent));
    let copy = home.path().join("backup.db");
    let output = home.hearth_async(&["backup", copy.to_str().unwrap()]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let bytes = std::fs::read(&copy).unwrap();
    assert!(bytes.starts_with(b"SQLite format 3\0"));
    assert!(bytes.windows(9).any(|w| w == b"keep this"));
    // Given again after more was said, the same file takes only what is new.
    let later = home.hearth_async(&["send", "and this later"]).await;
    assert!(later.status.success(), "{}", stderr(&later));
    let again = home.hearth_async(&["backup", copy.to_str().unwrap()]).await;
    assert!(again.status.success(), "{}", stderr(&again));
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(
        said.contains("up to date:") && said.contains("new messages"),
        "{said}"
    );
    assert!(!said.contains(": 0 new"), "{said}");
    let bytes = std::fs::read(&copy).unwrap();
    assert!(bytes.windows(14).any(|w| w == b"and this later"));
}

#[test]
fn a_secrets_file_other_users_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = TestHome::new(bins!());
    let secrets = home.path().join("secrets.env");
    std::fs::write(&secrets, "OPENAI_API_KEY=sk-do-not-leak\n").unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = home.run_daemon_to_end();
    assert!(!output.status.success());
    let said = stderr(&output);
    assert!(said.contains("chmod 600"), "{said}");
    assert!(!said.contains("sk-do-not-leak"));
}

#[test]
fn a_layout_too_big_for_the_model_window_is_refused_at_start_with_the_layout_that_fits() {
    let home = TestHome::new(bins!());
    // Never contacted: the daemon refuses before any request.
    let model = "[model]\nprovider = \"openai-chat\"\nmodel = \"local-8b\"\n\
                 base_url = \"http://127.0.0.1:9/v1\"\ncontext_window = 32768\n";
    home.write_config(model);
    let output = home.run_daemon_to_end();
    assert!(!output.status.success());
    let said = stderr(&output);
    assert!(said.contains("layout `default`"), "{said}");
    assert!(said.contains("32768-token window"), "{said}");
    assert!(said.contains("layout = \"small\""), "{said}");

    // The layout it names fits: the daemon starts and answers.
    home.write_config(&format!("{model}\n[agent]\nlayout = \"small\"\n"));
    let mut daemon = home.start();
    assert!(daemon.is_running());
    assert!(daemon.stop());
}
