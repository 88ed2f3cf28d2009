//! The approvals' pure policy and the registry: first answer wins, the
//! timeout denies, unknown and late answers are refused.

use super::*;
use serde_json::json;

#[test]
fn glob_stars_match_any_run_and_question_marks_one_character() {
    assert!(glob_matches("rm *", "rm -rf /"));
    assert!(glob_matches("rm *", "rm "));
    assert!(!glob_matches("rm *", "rm"));
    assert!(!glob_matches("rm *", "echo; rm x"));
    assert!(glob_matches("git push*", "git push"));
    assert!(glob_matches("git push*", "git push origin main"));
    assert!(!glob_matches("git push*", "git pull"));
    assert!(glob_matches("*sudo*", "echo x | sudo tee /etc/hosts"));
    assert!(glob_matches("*sudo*", "sudo"));
    assert!(glob_matches("ca?", "cat"));
    assert!(!glob_matches("ca?", "ca"));
    assert!(!glob_matches("ca?", "cats"));
    assert!(glob_matches("*a*b*c", "xxaxxbxxbxc"));
    assert!(!glob_matches("*a*b*c", "xxaxxbxxbx"));
    assert!(glob_matches("", ""));
    assert!(!glob_matches("", "x"));
    assert!(glob_matches("*", ""));
    assert!(glob_matches("**", "anything at all"));
    assert!(glob_matches("é?*", "éàz"));
}

#[test]
fn the_policy_names_tools_and_shell_patterns_and_nothing_by_default() {
    let none = ApprovalsConfig::default();
    assert!(!none.needs_approval("write_file", &json!({"path": "a"})));
    assert!(!none.needs_approval("shell", &json!({"command": "rm -rf /"})));

    let config: ApprovalsConfig = toml::from_str(
        "tools = [\"write_file\", \"web_fetch\"]\nshell = [\"rm *\", \"git push*\", \"*sudo*\"]\ntimeout_secs = 5",
    )
    .unwrap();
    assert_eq!(config.timeout(), Duration::from_secs(5));
    assert!(config.needs_approval("write_file", &json!({"path": "a", "content": ""})));
    assert!(config.needs_approval("web_fetch", &json!({"url": "https://x"})));
    assert!(!config.needs_approval("read_file", &json!({"path": "a"})));
    let shell = |command: &str| config.needs_approval("shell", &json!({"command": command}));
    assert!(shell("  git push origin main\n"));
    assert!(shell("rm notes.txt"));
    assert!(shell("ls && sudo reboot"));
    assert!(!shell("ls -la"));
    assert!(!shell("git status"));

    let every: ApprovalsConfig = toml::from_str("tools = [\"shell\"]").unwrap();
    assert!(every.needs_approval("shell", &json!({"command": "ls"})));
    assert_eq!(every.timeout_secs, 300);
    assert!(toml::from_str::<ApprovalsConfig>("tool = [\"shell\"]").is_err());
}

#[test]
fn calls_and_people_read_as_one_line() {
    assert_eq!(
        describe("shell", &json!({"command": " git push origin main "})),
        "shell `git push origin main`"
    );
    assert_eq!(
        describe("write_file", &json!({"path": "a.txt", "content": "hi"})),
        r#"write_file {"content":"hi","path":"a.txt"}"#
    );
    let long = describe("write_file", &json!({"content": "x".repeat(5000)}));
    assert!(long.ends_with('…') && long.chars().count() < 1100);
    assert_eq!(who("terminal", None), "terminal");
    assert_eq!(who("telegram", Some("@ada")), "telegram (@ada)");
    assert_eq!(who("a\nb", Some("  ")), "a b");
}

struct Setup {
    _dir: tempfile::TempDir,
    log: Log,
    approvals: Approvals,
    events: broadcast::Receiver<Event>,
}

fn setup(timeout_secs: u64) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let (events, seen) = broadcast::channel(64);
    let log = Log::open(&dir.path().join("hearth.db"), events.clone()).unwrap();
    let config = ApprovalsConfig {
        tools: vec!["write_file".into()],
        timeout_secs,
        ..ApprovalsConfig::default()
    };
    let approvals = Approvals::new(config, log.clone(), events);
    Setup {
        _dir: dir,
        log,
        approvals,
        events: seen,
    }
}

/// The next `approval` event.
async fn next_approval(events: &mut broadcast::Receiver<Event>) -> Event {
    loop {
        let event = events.recv().await.unwrap();
        if event.kind == EventKind::Approval {
            return event;
        }
    }
}

async fn notes(log: &Log) -> Vec<String> {
    let entries = log.range("a", 0, u64::MAX, 100).await.unwrap();
    entries.into_iter().map(|e| e.message.text).collect()
}

#[tokio::test]
async fn the_first_answer_wins_and_a_second_is_refused() {
    let mut s = setup(300);
    let approvals = s.approvals.clone();
    let call = json!({"path": "a.txt", "content": "x"});
    let asking = tokio::spawn(async move { approvals.ask("a", "write_file", &call).await });
    let request = next_approval(&mut s.events).await;
    let approval = request.approval.clone().unwrap();
    assert_eq!(
        (approval.tool.as_str(), approval.allowed),
        ("write_file", None)
    );
    assert_eq!(approval.id.len(), 6);
    assert_eq!(s.approvals.waiting().len(), 1);

    let noted = s
        .approvals
        .answer(&approval.id, true, "terminal")
        .await
        .unwrap();
    assert_eq!(asking.await.unwrap(), Verdict::Allowed);
    let closed = next_approval(&mut s.events).await;
    assert_eq!(closed.approval.unwrap().allowed, Some(true));
    assert_eq!(closed.text.as_deref(), Some("allowed by terminal"));

    let late = s.approvals.answer(&approval.id, false, "telegram").await;
    assert!(
        matches!(&late, Err(ApprovalError::AlreadyDecided { how, .. }) if how == "allowed by terminal"),
        "{late:?}"
    );
    assert!(s.approvals.waiting().is_empty());
    let notes = notes(&s.log).await;
    assert_eq!(notes.len(), 2);
    assert!(notes[0].starts_with(&format!("approval {}: write_file ", approval.id)));
    assert_eq!(
        notes[1],
        format!("approval {}: allowed by terminal", approval.id)
    );
    assert_eq!(noted, 1);
}

#[tokio::test]
async fn a_denial_reaches_the_call() {
    let mut s = setup(300);
    let approvals = s.approvals.clone();
    let asking = tokio::spawn(async move { approvals.ask("a", "write_file", &json!({})).await });
    let id = next_approval(&mut s.events).await.approval.unwrap().id;
    s.approvals
        .answer(&id, false, &who("telegram", Some("@ada")))
        .await
        .unwrap();
    assert_eq!(
        asking.await.unwrap(),
        Verdict::Denied("the user denied this call".into())
    );
    assert_eq!(
        notes(&s.log).await[1],
        format!("approval {id}: denied by telegram (@ada)")
    );
}

#[tokio::test(start_paused = true)]
async fn no_answer_before_the_timeout_denies() {
    let mut s = setup(30);
    let verdict = s.approvals.ask("a", "write_file", &json!({})).await;
    assert_eq!(
        verdict,
        Verdict::Denied("no one approved this call within 30 s".into())
    );
    let request = next_approval(&mut s.events).await;
    let closed = next_approval(&mut s.events).await;
    assert_eq!(closed.approval.unwrap().allowed, Some(false));
    let id = request.approval.unwrap().id;
    assert!(matches!(
        s.approvals.answer(&id, true, "terminal").await,
        Err(ApprovalError::AlreadyDecided { .. })
    ));
    assert_eq!(
        notes(&s.log).await[1],
        format!("approval {id}: denied, no one answered within 30 s")
    );
}

#[tokio::test]
async fn an_unknown_id_is_refused() {
    let s = setup(300);
    assert!(matches!(
        s.approvals.answer("nope00", true, "terminal").await,
        Err(ApprovalError::Unknown(id)) if id == "nope00"
    ));
    assert!(notes(&s.log).await.is_empty());
}

#[tokio::test]
async fn a_dropped_call_withdraws_its_request() {
    let mut s = setup(300);
    let approvals = s.approvals.clone();
    let asking = tokio::spawn(async move { approvals.ask("a", "write_file", &json!({})).await });
    let id = next_approval(&mut s.events).await.approval.unwrap().id;
    asking.abort();
    let closed = next_approval(&mut s.events).await;
    assert_eq!(closed.approval.unwrap().allowed, Some(false));
    assert!(s.approvals.waiting().is_empty());
    assert!(matches!(
        s.approvals.answer(&id, true, "terminal").await,
        Err(ApprovalError::AlreadyDecided { .. })
    ));
}
