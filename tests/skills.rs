//! End-to-end: skills (`SKILL.md` folders) through a real hearthd with the
//! fake model calling `read_skill` and running a skill's script; `hearth
//! skills` naming why a folder was refused; a skill the owner did not
//! install tainting the turn that reads it.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{EventKind, Kind};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::TestHome;
use std::path::{Path, PathBuf};

/// A skill `notes` with a script, written outside the home (as one
/// downloaded would be).
fn notes_skill(dir: &Path) -> PathBuf {
    let skill = dir.join("notes");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: notes\ndescription: Tidies the notes folder; use it when asked to tidy notes.\n---\n\
         Run `scripts/tidy.sh` with the shell.\n",
    )
    .unwrap();
    std::fs::write(skill.join("scripts/tidy.sh"), "echo tidied by the skill\n").unwrap();
    skill
}

/// A home whose shell asks before each command.
fn home(model: &FakeModel) -> TestHome {
    let home = TestHome::new(bins!());
    home.use_model_without_summaries(&model.base_url(), "\n[approvals]\ntools = [\"shell\"]\n");
    home
}

fn tool_names(request: &serde_json::Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|tool| tool["function"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn an_installed_skill_is_listed_read_and_its_script_runs_under_approval() {
    let model = FakeModel::start().await;
    let home = home(&model);
    let source = tempfile::tempdir().unwrap();
    let skill = notes_skill(source.path());
    let installed = home.hearth(&["skills", "install", skill.to_str().unwrap(), "--yes"]);
    assert!(installed.status.success(), "{installed:?}");
    let script = home.path().join("skills/notes/scripts/tidy.sh");
    assert!(script.is_file());
    let listed = home.hearth(&["skills"]);
    let listed = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        listed.contains("notes: Tidies the notes folder")
            && listed.contains(&format!("installed from {}", skill.display())),
        "{listed}"
    );

    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::tool_call("read_skill", r#"{"name": "notes"}"#));
    let command = format!("bash {}", script.display());
    model.push(Reply::tool_call(
        "shell",
        serde_json::json!({ "command": command }).to_string(),
    ));
    model.push(Reply::text("tidied"));
    let (id, _) = client.submit("tidy my notes", "terminal", None).await;
    let asked = client.approval_asked().await;
    let approval = asked.approval.clone().unwrap();
    assert_eq!(approval.tool, "shell");
    let text = asked.text.clone().unwrap_or_default();
    assert!(
        !text.contains("did not install"),
        "an installed skill taints nothing: {text}"
    );
    client.approve(&approval.id, true).await;
    client.reply_to(id).await;

    let requests = model.requests();
    let first = &requests[0];
    let instructions = &first.contents()[0];
    assert!(
        instructions.contains(
            "## Skills\n\nSkills are procedures kept as folders. When a task matches one, read it first"
        ) && instructions
            .contains("\n- notes: Tidies the notes folder; use it when asked to tidy notes."),
        "{instructions}"
    );
    assert!(tool_names(&first.body).contains(&"read_skill".to_string()));
    let read = &requests[1].tool_results()[0];
    assert!(
        read.contains("skill `notes` (installed by the owner)")
            && read.contains("files: SKILL.md, scripts/tidy.sh")
            && read.contains("Run `scripts/tidy.sh` with the shell."),
        "{read}"
    );
    let ran = &requests[2].tool_results()[1];
    assert!(ran.contains("tidied by the skill"), "{ran}");
    // The prefix is the same at every request: the listing did not move.
    assert_eq!(requests[2].contents()[0], *instructions);
}

#[tokio::test]
async fn a_bad_skill_is_refused_with_its_reason_in_hearth_skills() {
    let home = TestHome::new(bins!());
    let folder = home.path().join("skills");
    for (dir, text) in [
        ("no-front", "# Just a title\n"),
        ("bad-name", "---\nname: Bad Name\ndescription: d\n---\n"),
        ("other", "---\nname: clash\ndescription: Second.\n---\n"),
        ("clash", "---\nname: clash\ndescription: First.\n---\n"),
    ] {
        std::fs::create_dir_all(folder.join(dir)).unwrap();
        std::fs::write(folder.join(dir).join("SKILL.md"), text).unwrap();
    }
    std::fs::create_dir_all(folder.join("big")).unwrap();
    std::fs::write(
        folder.join("big/SKILL.md"),
        format!(
            "---\nname: big\ndescription: d\n---\n{}",
            "x".repeat(300 * 1024)
        ),
    )
    .unwrap();
    let output = home.hearth(&["skills"]);
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        text.contains("  clash: First.\n") && text.contains("untrusted: not installed by you"),
        "{text}"
    );
    let refused = text.split("refused:\n").nth(1).unwrap_or_default();
    for (dir, why) in [
        ("big", "its SKILL.md is too large"),
        ("bad-name", "its name `Bad Name` is not"),
        ("no-front", "its SKILL.md does not begin with front matter"),
        ("other", "its name `clash` is taken by the skill in"),
    ] {
        let line = format!("{}: {why}", folder.join(dir).display());
        assert!(refused.contains(&line), "{line} in {refused}");
    }
}

#[tokio::test]
async fn reading_a_skill_the_owner_did_not_install_taints_the_turn_so_the_shell_asks() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model_without_summaries(&model.base_url(), "");
    // Dropped into the agent's folder: no one installed it.
    notes_skill(&home.path().join("agents/hearth/skills"));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    model.push(Reply::tool_call("read_skill", r#"{"name": "notes"}"#));
    model.push(Reply::tool_call(
        "shell",
        r#"{"command": "echo pwned > pwned"}"#,
    ));
    model.push(Reply::text("I did not run it"));
    client.submit("tidy my notes", "terminal", None).await;
    let asked = client.approval_asked().await;
    let approval = asked.approval.clone().unwrap();
    assert_eq!(approval.tool, "shell");
    let text = asked.text.clone().unwrap_or_default();
    assert!(
        text.contains("after reading the skill `notes`, which the owner did not install"),
        "{text}"
    );
    client.approve(&approval.id, false).await;
    client
        .wait_for(|e| e.kind == EventKind::Reply && e.text.as_deref() == Some("I did not run it"))
        .await;
    assert!(!home.path().join("agents/hearth/work/pwned").exists());
    let instructions = &model.requests()[0].contents()[0];
    assert!(
        instructions.contains("\n- notes [untrusted]: not installed by the owner")
            && !instructions.contains("Tidies the notes folder"),
        "{instructions}"
    );
    let log = home.history().await;
    let read = log.iter().find(|m| m.kind == Kind::Tool).unwrap();
    assert!(
        read.text.contains("not installed by the owner"),
        "{}",
        read.text
    );
}
