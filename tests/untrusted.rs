//! End-to-end: what words from outside can reach. The shell's commands are
//! confined (Landlock) away from the home's keys and database; words that
//! did not come from the owner taint the turn that reads them.

use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::TestHome;
use std::os::unix::fs::PermissionsExt;

/// Whether this kernel has Landlock, from the daemon's own words.
fn landlock(status: &str) -> bool {
    status.contains("shell    Landlock (ABI ")
}

#[tokio::test]
async fn the_shell_cannot_read_the_homes_secrets_or_database_but_works_in_its_folder() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let secrets = home.path().join("secrets.env");
    std::fs::write(&secrets, "HEARTH_UNRELATED=sk-home-secret-42\n").unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let status = home.hearth_async(&["status"]).await;
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    assert!(
        landlock(&status) || status.contains("shell    none ("),
        "status names the shell's confinement: {status}"
    );
    if !landlock(&status) {
        println!("skipped: this kernel has no Landlock ({status})");
        return;
    }
    let stolen = format!(
        "cat {}; od -c {} | head -2; echo x >> {}",
        secrets.display(),
        home.path().join("hearth.db").display(),
        home.path().join("config.toml").display(),
    );
    let normal = "echo hello > made.txt; ls; cat made.txt; echo fine > /dev/null && echo done";
    model.push(Reply::ToolCalls {
        text: None,
        calls: vec![
            (
                "shell".into(),
                serde_json::json!({ "command": stolen }).to_string(),
            ),
            (
                "shell".into(),
                serde_json::json!({ "command": normal }).to_string(),
            ),
        ],
    });
    model.push(Reply::Text("done".into()));
    let (id, _) = client.submit("read the keys", "terminal", None).await;
    client.reply_to(id).await;
    let log = home.history().await;
    let results: Vec<&str> = log
        .iter()
        .filter(|m| m.kind == hearth_protocol::Kind::Tool)
        .map(|m| m.text.as_str())
        .collect();
    let [stolen, normal] = results[..] else {
        panic!("two tool results expected: {results:?}")
    };
    assert!(!stolen.contains("sk-home-secret-42"), "{stolen}");
    assert!(!stolen.contains("SQLite"), "{stolen}");
    assert!(stolen.matches("Permission denied").count() >= 3, "{stolen}");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(
        !config.ends_with("x\n"),
        "config.toml was written: {config}"
    );
    assert!(normal.contains("→ exit code 0\n"), "{normal}");
    assert!(
        normal.contains("hello\n") && normal.contains("done"),
        "{normal}"
    );
}
