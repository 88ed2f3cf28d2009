//! End-to-end: the script commands' rough edges, with the real `hearth`
//! against a real `hearthd` and the fake model: `send --wait` keeps stdout
//! for the reply, `send -` and a pipe read the message from stdin, a used
//! key says `duplicate`, `log` filters, `schedule` reads the forms a person
//! types and lists each time once, `backup` says what is wrong, `stats
//! --agent` narrows, `status` does not count itself, and the exit codes.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_protocol::{ClientFrame, ServerFrame};
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::TestHome;
use std::io::Write;
use std::process::{Output, Stdio};

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// Runs `hearth ARGS` on `home` with `input` piped to its stdin.
async fn hearth_with_stdin(home: &TestHome, args: &[&str], input: Vec<u8>) -> Output {
    let mut command = home.hearth_command(args);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().expect("hearth runs");
        let mut stdin = child.stdin.take().expect("a pipe");
        // A refusal may come before all is read: a broken pipe is fine.
        let _ = stdin.write_all(&input);
        drop(stdin);
        child.wait_with_output().expect("hearth ends")
    })
    .await
    .expect("the CLI thread")
}

/// The texts of `hearth log --json ARGS`, one per message.
async fn logged(home: &TestHome, args: &[&str]) -> Vec<String> {
    let mut all = vec!["log", "--json"];
    all.extend_from_slice(args);
    let output = home.hearth_async(&all).await;
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    stdout(&output)
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("JSON a line");
            value["text"].as_str().unwrap_or_default().to_string()
        })
        .collect()
}

#[tokio::test]
async fn send_keeps_stdout_for_the_reply_reads_stdin_and_says_duplicate() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();

    model.push(Reply::text("Four."));
    let output = home.hearth_async(&["send", "--wait", "what is 2+2?"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "Four.\n", "the reply alone");
    assert_eq!(stderr(&output).trim(), "0", "the id on stderr");

    model.push(Reply::text("Five."));
    let output = home
        .hearth_async(&["send", "--wait", "--id", "and 2+3?"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "2\nFive.\n");

    // A key used before: the same message, said so, and exit 0.
    model.push(Reply::text("Noted."));
    let first = home
        .hearth_async(&["send", "--key", "mail-4711", "hi"])
        .await;
    assert!(first.status.success(), "{}", stderr(&first));
    let id = stdout(&first).trim().to_string();
    let again = home
        .hearth_async(&["send", "--key", "mail-4711", "hi"])
        .await;
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(stdout(&again).trim(), format!("duplicate {id}"));

    // From a pipe; then longer than one command-line argument may be (128
    // KiB on Linux). Their turns fail (no reply is scripted): no matter.
    let output = hearth_with_stdin(
        &home,
        &["send", "--source", "cron"],
        b"from a pipe\n".to_vec(),
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).trim().parse::<u64>().is_ok(),
        "{}",
        stdout(&output)
    );
    let long = format!("{}\n", "many words ".repeat(30_000));
    let output = hearth_with_stdin(&home, &["send", "-"], long.clone().into()).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let texts = logged(&home, &["--kind", "user"]).await;
    assert_eq!(
        texts[3], "from a pipe",
        "its last newline is not part of it"
    );
    assert_eq!(texts[4], long.trim_end_matches('\n'), "stdin whole");

    // More than a frame holds is refused before anything is sent.
    let huge = vec![b'x'; 2 << 20];
    let output = hearth_with_stdin(&home, &["send", "-"], huge).await;
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("at most 1048576 bytes"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn usage_errors_exit_2() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    // Nothing to send: no words, and stdin (empty here) holds none.
    let output = home.hearth_async(&["send"]).await;
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("nothing to send"),
        "{}",
        stderr(&output)
    );
    let output = home.hearth_async(&["log", "--kind", "replies"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not a kind of message"),
        "{}",
        stderr(&output)
    );
    let output = home
        .hearth_async(&["log", "--since-date", "last week"])
        .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("not a date"),
        "{}",
        stderr(&output)
    );
    let output = home.hearth_async(&["send", "--id", "hi"]).await;
    assert_eq!(output.status.code(), Some(2), "--id needs --wait");
}

#[tokio::test]
async fn log_filters_by_words_kind_source_and_date() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let _daemon = home.start();
    model.push(Reply::text("The Plumber comes on Tuesday."));
    let output = home
        .hearth_async(&[
            "send",
            "--wait",
            "--source",
            "mail",
            "when does the plumber come?",
        ])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    model.push(Reply::text("Fine."));
    let output = home
        .hearth_async(&["send", "--wait", "anything else?"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));

    assert_eq!(logged(&home, &[]).await.len(), 4);
    assert_eq!(
        logged(&home, &["--grep", "PLUMBER"]).await,
        [
            "when does the plumber come?",
            "The Plumber comes on Tuesday."
        ]
    );
    assert_eq!(
        logged(&home, &["--kind", "reply"]).await,
        ["The Plumber comes on Tuesday.", "Fine."]
    );
    assert_eq!(
        logged(
            &home,
            &["--kind", "user", "--kind", "reply", "--limit", "1"]
        )
        .await,
        ["Fine."],
        "the limit counts what is kept, newest last"
    );
    assert_eq!(
        logged(&home, &["--source", "mail"]).await,
        ["when does the plumber come?"]
    );
    assert_eq!(
        logged(
            &home,
            &["--grep", "plumber", "--kind", "user", "--source", "script"]
        )
        .await,
        Vec::<String>::new()
    );
    assert_eq!(
        logged(&home, &["--since-date", "2000-01-01"]).await.len(),
        4
    );
    assert!(logged(&home, &["--until-date", "2000-01-01"])
        .await
        .is_empty());
    assert!(logged(&home, &["--since-date", "2999-01-01 00:00"])
        .await
        .is_empty());
    assert_eq!(
        logged(&home, &["--until-date", "2999-01-01"]).await.len(),
        4
    );
    let human = home.hearth_async(&["log", "--grep", "tuesday"]).await;
    let human = stdout(&human);
    assert_eq!(human.lines().count(), 1, "{human}");
    assert!(human.contains("reply [hearth] The Plumber"), "{human}");
}

#[tokio::test]
async fn schedules_read_the_forms_a_person_types_and_list_each_time_once() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    for when in [
        "in 20 minutes",
        "tomorrow 9am",
        "monday 8:00",
        "07:30",
        "2999-12-24 18:00",
        "0 9 * * 1-5",
    ] {
        let output = home
            .hearth_async(&["schedule", "add", when, "check", "the", "post"])
            .await;
        assert!(output.status.success(), "{when}: {}", stderr(&output));
        assert!(
            stdout(&output).starts_with("added #"),
            "{}",
            stdout(&output)
        );
    }
    let output = home.hearth_async(&["schedule", "list"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let list = stdout(&output);
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 7, "{list}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header, ["ID", "NEXT", "REPEATS", "TEXT"]);
    assert_eq!(
        lines.iter().filter(|l| l.contains("  once  ")).count(),
        5,
        "{list}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.contains("0 9 * * 1-5")).count(),
        1,
        "{list}"
    );
    let christmas = lines
        .iter()
        .find(|l| l.contains("2999-12-24 18:00"))
        .unwrap();
    assert_eq!(
        christmas.matches("2999").count(),
        1,
        "each time once: {christmas}"
    );
    assert!(
        lines[6].contains("2999-12-24 18:00"),
        "soonest first: {list}"
    );

    let output = home
        .hearth_async(&["schedule", "add", "someday soon", "nothing"])
        .await;
    assert_eq!(output.status.code(), Some(1));
    let said = stderr(&output);
    assert!(said.contains("`someday soon` is not a time"), "{said}");
    assert!(
        said.contains("tomorrow 9am") && said.contains("in 20 minutes"),
        "{said}"
    );
    let output = home
        .hearth_async(&["schedule", "add", "2001-01-01 09:00", "late"])
        .await;
    assert!(
        stderr(&output).contains("is in the past"),
        "{}",
        stderr(&output)
    );
}

/// `hearth backup PATH` fails (exit 1) saying `why`.
async fn refused(home: &TestHome, path: std::path::PathBuf, why: &str) {
    let output = home.hearth_async(&["backup", path.to_str().unwrap()]).await;
    assert_eq!(output.status.code(), Some(1), "{}", path.display());
    let said = stderr(&output);
    assert!(said.contains(why), "{}: {said}", path.display());
}

/// The clients `hearth status` counts.
async fn clients(home: &TestHome) -> Option<u64> {
    let output = home.hearth_async(&["status", "--json"]).await;
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    value["clients"].as_u64()
}

#[tokio::test]
async fn backup_says_what_is_wrong_with_the_path() {
    let home = TestHome::new(bins!());
    let _daemon = home.start();
    // Not under /tmp, which the agents' shell may read (a backup is refused there).
    let elsewhere = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    refused(
        &home,
        elsewhere.path().to_path_buf(),
        "it is a folder; give a file name in it",
    )
    .await;
    refused(
        &home,
        elsewhere.path().join("no/such/x.db"),
        "no/such does not exist",
    )
    .await;
    refused(
        &home,
        home.path().join("hearth.db.copy"),
        "a name the home uses for its own files",
    )
    .await;
    refused(
        &home,
        home.path().join("secrets.env"),
        "one of the home's own files",
    )
    .await;
    let taken = elsewhere.path().join("taken.db");
    std::fs::write(&taken, "mine").unwrap();
    refused(&home, taken.clone(), "not a hearth database").await;
    assert_eq!(std::fs::read(&taken).unwrap(), b"mine");
    let copy = elsewhere.path().join("copy.db");
    let output = home.hearth_async(&["backup", copy.to_str().unwrap()]).await;
    assert!(output.status.success(), "{}", stderr(&output));
}

#[tokio::test]
async fn stats_narrow_to_an_agent_and_status_does_not_count_itself() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    home.write_config(&format!(
        "{config}\n[[agents]]\nname = \"scout\"\nresponsibility = \"looks things up\"\n"
    ));
    let _daemon = home.start();
    model.push(Reply::text("Hello."));
    let output = home.hearth_async(&["send", "--wait", "hi"]).await;
    assert!(output.status.success(), "{}", stderr(&output));

    let all = home.hearth_async(&["stats", "--json"]).await;
    assert!(
        stdout(&all).contains("\"agent\":\"hearth\""),
        "{}",
        stdout(&all)
    );
    let scout = home.hearth_async(&["stats", "--agent", "scout"]).await;
    assert!(scout.status.success(), "{}", stderr(&scout));
    assert_eq!(
        stdout(&scout).trim(),
        "no model requests in the last 7 days"
    );

    assert_eq!(
        clients(&home).await,
        Some(0),
        "the asking client is not counted"
    );
    let _attached = home.connect("terminal@laptop", None).await;
    assert_eq!(clients(&home).await, Some(1));
}

#[tokio::test]
async fn stats_show_the_budget_a_reload_set() {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.use_model("openai-chat", &model.base_url());
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    home.write_config(&format!("{config}\n[budget]\ndaily_usd = 1.0\n"));
    let _daemon = home.start();
    let mut client = home.connect("script", None).await;
    let daily = |frame: ServerFrame| match frame {
        ServerFrame::Stats { budget, .. } => budget.and_then(|b| b.daily_usd),
        other => panic!("not stats: {other:?}"),
    };
    let stats = ClientFrame::Stats { days: Some(1) };
    assert_eq!(daily(client.request(stats.clone()).await), Some(1.0));
    home.write_config(&format!("{config}\n[budget]\ndaily_usd = 2.5\n"));
    let output = home.hearth_async(&["reload"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        daily(client.request(stats).await),
        Some(2.5),
        "the live limit"
    );
}

#[tokio::test]
async fn a_backup_is_refused_where_the_agents_tools_can_read_it() {
    let home = TestHome::new(bins!());
    home.write_config("[[agents]]\nname = \"scout\"\nresponsibility = \"looks things up\"\n");
    let _daemon = home.start();
    let shared = tempfile::tempdir_in("/tmp").unwrap();
    let refused = [
        (
            home.path().join("agents/hearth/work/backup.db"),
            "an agent's working folder",
        ),
        (
            home.path().join("agents/scout/work/backup.db"),
            "an agent's working folder",
        ),
        (
            shared.path().join("backup.db"),
            "the agents' shell may read",
        ),
        (
            std::path::PathBuf::from("/dev/shm/hearth-backup-test.db"),
            "the agents' shell may read",
        ),
    ];
    for (path, why) in refused {
        let output = home.hearth_async(&["backup", path.to_str().unwrap()]).await;
        let said = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(1), "{}: {said}", path.display());
        assert!(said.contains(why), "{}: {said}", path.display());
        assert!(!path.exists(), "{}", path.display());
    }
    // The home's own folder and a folder outside the shell's reach take one.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for path in [
        home.path().join("backup.db"),
        outside.path().join("backup.db"),
    ] {
        let output = home.hearth_async(&["backup", path.to_str().unwrap()]).await;
        let said = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(output.status.success(), "{}: {said}", path.display());
        assert!(path.exists());
    }
}
