//! End-to-end: `hearth setup` writes a configuration that works, proves the
//! model with one real request before it writes anything, finds a local
//! Ollama and the window of its model, pairs a Telegram account by code
//! (and says so when another poller holds the bot: this home's running
//! bridge, or a program elsewhere), writes email only once its login is
//! proved on a real IMAP server, and edits an existing file without
//! losing what it does not own.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_bridges::telegram::api::Api;
use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::fake_telegram::{FakeTelegram, Person, BOT_USERNAME, TOKEN};
use hearth_tests::harness::{setup_args, TestHome, DEADLINE, OLLAMA_URL_ENV};
use hearth_tests::mail_servers::{self, Dovecot};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};

/// `hearth setup ARGS --home HOME`, with `stdin` as its input and these
/// variables; run off the async runtime so the fakes keep answering.
async fn setup(home: &TestHome, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut command = setup_command(home, args, env);
    let stdin = stdin.to_string();
    tokio::task::spawn_blocking(move || {
        let mut child = command.spawn().expect("hearth setup runs");
        let mut input = child.stdin.take().expect("stdin piped");
        input.write_all(stdin.as_bytes()).expect("stdin written");
        drop(input);
        child.wait_with_output().expect("hearth setup ends")
    })
    .await
    .expect("the setup thread")
}

fn setup_command(home: &TestHome, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = home.hearth_command(&[&["setup"], args].concat());
    command
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("TELEGRAM_BOT_TOKEN")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path)
        .expect("the file")
        .permissions()
        .mode()
        & 0o777
}

fn config(home: &TestHome) -> String {
    std::fs::read_to_string(home.path().join("config.toml")).expect("config.toml")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn setup_without_questions_writes_a_config_whose_daemon_answers() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let home = TestHome::new(bins!());
    let args = [
        "--provider",
        "openai-chat",
        "--base-url",
        &model.base_url(),
        "--model",
        "fake-model",
        "--key-stdin",
        "--yes",
    ];
    let output = setup(&home, &args, "sk-from-setup\n", &[]).await;
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("answered: “ready”"), "{text}");
    assert!(
        !text.contains("sk-from-setup"),
        "the key is never shown: {text}"
    );

    let written = config(&home);
    assert!(written.contains("provider = \"openai-chat\""), "{written}");
    // A compatible server's key has its own name: an exported OpenAI key
    // is never sent to it.
    assert!(
        written.contains("api_key_env = \"HEARTH_MODEL_API_KEY\""),
        "{written}"
    );
    assert!(!written.contains("sk-from-setup"), "{written}");
    let secrets = home.path().join("secrets.env");
    let stored = std::fs::read_to_string(&secrets).unwrap();
    assert_eq!(stored, "HEARTH_MODEL_API_KEY=sk-from-setup\n");
    assert_eq!(mode(&secrets), 0o600);
    assert_eq!(mode(&home.path().join("config.toml")), 0o600);
    assert_eq!(mode(home.path()), 0o700);

    // The daemon it configures answers, with the key from secrets.env.
    model.push(Reply::text("Hello from the agent."));
    let _daemon = home.start();
    let mut client = home.connect("test", None).await;
    let (id, _) = client.submit("hi", "terminal", None).await;
    let reply = client.reply_to(id).await;
    assert_eq!(reply.text.as_deref(), Some("Hello from the agent."));
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "the test request, then the turn");
    for request in &requests {
        assert_eq!(
            request.headers.get("authorization").map(String::as_str),
            Some("Bearer sk-from-setup")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_test_request_writes_nothing_and_says_why() {
    let model = FakeModel::start().await;
    model.push(Reply::error(
        401,
        "invalid_api_key",
        "Incorrect API key provided",
    ));
    let home = TestHome::new(bins!());
    let args = [
        "--provider",
        "openai",
        "--base-url",
        &model.base_url(),
        "--key-stdin",
        "--yes",
    ];
    let output = setup(&home, &args, "sk-wrong\n", &[]).await;
    let text = said(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("test request to openai/gpt-5-mini failed"),
        "{text}"
    );
    assert!(text.contains("Incorrect API key provided"), "{text}");
    assert!(text.contains("nothing was written"), "{text}");
    assert!(!home.path().join("config.toml").exists());
    assert!(!home.path().join("secrets.env").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_ollama_is_found_and_its_models_window_picks_the_layout() {
    let model = FakeModel::start().await;
    model.serve_local_models(&["nomic-embed-text:latest", "qwen3:8b"]);
    model.serve_context_length("qwen3:8b", 32_768);
    model.push(Reply::text("ready"));
    let home = TestHome::new(bins!());
    let ollama = format!("http://{}", model.addr());
    let output = setup(&home, &["--yes"], "", &[(OLLAMA_URL_ENV, &ollama)]).await;
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("32768-token context"), "{text}");
    // And how to make Ollama serve that window.
    assert!(text.contains("OLLAMA_CONTEXT_LENGTH=32768"), "{text}");

    let written = config(&home);
    for line in [
        "provider = \"openai-chat\"".to_string(),
        "model = \"qwen3:8b\"".to_string(),
        format!("base_url = \"{ollama}/v1\""),
        "context_window = 32768".to_string(),
        "layout = \"small\"".to_string(),
    ] {
        assert!(written.contains(&line), "{line} in:\n{written}");
    }
    let shown = model
        .probes()
        .into_iter()
        .find(|request| request.path == "/api/show")
        .expect("the model's details were asked for");
    assert_eq!(shown.body["model"], "qwen3:8b");
    // The daemon takes the window and the layout as they are.
    let _daemon = home.start();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_takes_no_tools_fails_setup_saying_so() {
    let model = FakeModel::start().await;
    model.refuse_tools();
    model.push(Reply::text("ready"));
    let home = TestHome::new(bins!());
    let base_url = model.base_url();
    let args = ["--provider", "openai-chat", "--base-url", &base_url];
    let output = setup(
        &home,
        &[&args[..], &["--model", "smol", "--yes"]].concat(),
        "",
        &[],
    )
    .await;
    let text = said(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("refuses requests with tools"), "{text}");
    assert!(text.contains("--jinja"), "{text}");
    // Said once: one try, no retry of a refusal no wait mends.
    assert_eq!(model.requests().len(), 1);
    assert!(model.requests()[0].body["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    assert!(!home.path().join("config.toml").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_llama_cpp_server_s_slot_window_is_written_with_the_layout_that_fits() {
    let model = FakeModel::start().await;
    // `llama-server -c 32768 -np 4`.
    model.serve_props(8192, 4);
    model.push(Reply::text("ready"));
    let home = TestHome::new(bins!());
    let base_url = model.base_url();
    let args = ["--provider", "openai-chat", "--base-url", &base_url];
    let output = setup(
        &home,
        &[&args[..], &["--model", "smol", "--yes"]].concat(),
        "",
        &[],
    )
    .await;
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("serves 8192 tokens a request"), "{text}");
    assert!(text.contains("-np 1"), "{text}");
    let written = config(&home);
    for line in ["context_window = 8192", "layout = \"small\""] {
        assert!(written.contains(line), "{line} in:\n{written}");
    }
    // The daemon starts with what setup wrote.
    let _daemon = home.start();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_setup_again_keeps_other_tables_and_comments() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let home = TestHome::new(bins!());
    home.write_config(
        "# my agent's settings\n\n[agent]\nname = \"ada\"  # her name\n\n[model]\n\
         provider = \"openai\"\nmodel = \"gpt-5\"\neffort = \"low\"\n\n\
         [budget]\n# keep it cheap\ndaily_usd = 1.5\n",
    );
    let base_url = model.base_url();
    let args = setup_args(&base_url, &["--yes"]);
    let output = setup(&home, &args, "", &[("HEARTH_TEST_KEY", "sk-in-env")]).await;
    assert!(output.status.success(), "{}", said(&output));
    let written = config(&home);
    for kept in [
        "# my agent's settings\n",
        "name = \"ada\"  # her name\n",
        "[budget]\n# keep it cheap\ndaily_usd = 1.5\n",
    ] {
        assert!(written.contains(kept), "{kept:?} kept in:\n{written}");
    }
    assert!(written.contains("model = \"fake-model\""), "{written}");
    assert!(
        written.contains("api_key_env = \"HEARTH_TEST_KEY\""),
        "{written}"
    );
    assert!(
        !written.contains("effort"),
        "the old model's effort went:\n{written}"
    );
    // A key found in the environment stays there.
    assert!(!home.path().join("secrets.env").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_is_paired_by_a_code_sent_to_the_bot() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let telegram = FakeTelegram::start().await;
    let owner = Person {
        id: 4242,
        first_name: "Ada",
        username: Some("ada"),
    };
    let stranger = Person {
        id: 666,
        first_name: "Eve",
        username: None,
    };
    // Waiting before setup runs: passed over.
    telegram.write(&stranger, "hello bot");
    let home = TestHome::new(bins!());
    let base_url = model.base_url();
    let api_base = telegram.api_base();
    let args = setup_args(
        &base_url,
        &[
            "--telegram-token-env",
            "HEARTH_TEST_BOT",
            "--telegram-api-base",
            &api_base,
            "--telegram-pair",
            "--yes",
        ],
    );
    let env = [("HEARTH_TEST_KEY", "sk-in-env"), ("HEARTH_TEST_BOT", TOKEN)];
    let mut child = setup_command(&home, &args, &env)
        .stdin(Stdio::null())
        .spawn()
        .expect("setup runs");
    let stdout = child.stdout.take().expect("stdout piped");
    // Reads what setup says until it shows the code.
    let (code_tx, code_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        let mut code_sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let code = line.trim();
            if !code_sent && code.len() == 6 && code.chars().all(|c| c.is_ascii_digit()) {
                let _ = code_tx.send(code.to_string());
                code_sent = true;
            }
            lines.push(line);
        }
        lines.join("\n")
    });
    let code = tokio::task::spawn_blocking(move || code_rx.recv_timeout(DEADLINE))
        .await
        .unwrap()
        .expect("setup shows a code");
    telegram.write(&stranger, "123");
    telegram.write(&owner, &code);
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .expect("setup ends");
    let text = reader.join().expect("the output");
    assert!(status.success(), "{text}");
    assert!(text.contains(&format!("@{BOT_USERNAME}")), "{text}");
    assert!(text.contains("paired with @ada (user id 4242)"), "{text}");

    let written = config(&home);
    assert!(
        written.contains("[telegram]\nallow = [4242]\n"),
        "{written}"
    );
    assert!(
        written.contains("token_env = \"HEARTH_TEST_BOT\""),
        "{written}"
    );
    assert!(
        written.contains(&format!("api_base = \"{api_base}\"")),
        "{written}"
    );
    let calls = telegram.calls();
    assert_eq!(calls.sent_to(4242).len(), 1, "a word to the paired owner");
    assert!(calls.sent_to(666).is_empty(), "nothing to the stranger");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_that_gets_no_code_ends_with_a_clear_timeout_and_keeps_the_model() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let telegram = FakeTelegram::start().await;
    let home = TestHome::new(bins!());
    let base_url = model.base_url();
    let api_base = telegram.api_base();
    let args = setup_args(
        &base_url,
        &[
            "--telegram-token-env",
            "HEARTH_TEST_BOT",
            "--telegram-api-base",
            &api_base,
            "--telegram-pair",
            "--pair-timeout",
            "1",
            "--yes",
        ],
    );
    let env = [("HEARTH_TEST_KEY", "sk-in-env"), ("HEARTH_TEST_BOT", TOKEN)];
    let output = setup(&home, &args, "", &env).await;
    let text = said(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("no private message with the code"), "{text}");
    let written = config(&home);
    assert!(written.contains("model = \"fake-model\""), "{written}");
    assert!(!written.contains("[telegram]"), "{written}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_bot_token_is_refused_by_get_me() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let telegram = FakeTelegram::start().await;
    let home = TestHome::new(bins!());
    let base_url = model.base_url();
    let api_base = telegram.api_base();
    let args = setup_args(
        &base_url,
        &[
            "--telegram-token-env",
            "HEARTH_TEST_BOT",
            "--telegram-api-base",
            &api_base,
            "--telegram-allow",
            "7",
            "--yes",
        ],
    );
    let env = [
        ("HEARTH_TEST_KEY", "sk-in-env"),
        ("HEARTH_TEST_BOT", "999:wrong"),
    ];
    let output = setup(&home, &args, "", &env).await;
    let text = said(&output);
    assert!(!output.status.success(), "{text}");
    assert!(text.contains("Telegram refused the bot token"), "{text}");
    assert!(!config(&home).contains("[telegram]"));
}

/// Setup's flags for the fake model and a pairing with the fake Bot API.
fn pairing_args(model: &FakeModel, telegram: &FakeTelegram) -> Vec<String> {
    setup_args(
        &model.base_url(),
        &[
            "--telegram-token-env",
            "HEARTH_TEST_BOT",
            "--telegram-api-base",
            &telegram.api_base(),
            "--telegram-pair",
            "--pair-timeout",
            "60",
            "--yes",
        ],
    )
    .into_iter()
    .map(str::to_string)
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_while_this_homes_bridge_runs_is_refused_naming_it() {
    let model = FakeModel::start().await;
    let telegram = FakeTelegram::start().await;
    let home = TestHome::new(bins!());
    let running = format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\n\n[telegram]\ntoken_env = \"HEARTH_TEST_BOT\"\n\
         allow = [7]\napi_base = \"{}\"\n",
        model.base_url(),
        telegram.api_base()
    );
    home.write_config(&running);
    let secrets = home.path().join("secrets.env");
    std::fs::write(&secrets, format!("HEARTH_TEST_BOT={TOKEN}\n")).unwrap();
    std::fs::set_permissions(&secrets, std::fs::Permissions::from_mode(0o600)).unwrap();
    let daemon = home.start();
    telegram
        .wait_until("the bridge polls", |calls| !calls.polls.is_empty())
        .await;

    model.push(Reply::text("ready"));
    let args = pairing_args(&model, &telegram);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("HEARTH_TEST_KEY", "sk-in-env"), ("HEARTH_TEST_BOT", TOKEN)];
    let output = setup(&home, &args, "", &env).await;
    let text = said(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "hearthd (pid {}) runs the Telegram bridge",
            daemon.pid()
        )),
        "{text}"
    );
    assert!(text.contains(&format!("@{BOT_USERNAME}")), "{text}");
    assert!(text.contains("`hearth stop`"), "{text}");
    assert!(
        config(&home).contains("allow = [7]\n"),
        "the allowlist is as it was"
    );
    assert_eq!(
        telegram.calls().poll_conflicts,
        0,
        "setup never polled beside the bridge"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_poller_of_the_bot_ends_pairing_with_its_409_named() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    let telegram = FakeTelegram::start().await;
    // A program elsewhere polls the same bot, again as soon as it is answered.
    let api = Api::new(&telegram.api_base(), TOKEN).unwrap();
    let elsewhere = tokio::spawn(async move {
        loop {
            let _ = api.get_updates(None, 5).await;
        }
    });
    telegram
        .wait_until("the other poller polls", |calls| !calls.polls.is_empty())
        .await;
    let home = TestHome::new(bins!());
    let args = pairing_args(&model, &telegram);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = [("HEARTH_TEST_KEY", "sk-in-env"), ("HEARTH_TEST_BOT", TOKEN)];
    let output = setup(&home, &args, "", &env).await;
    elsewhere.abort();
    let text = said(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains(&format!("another program reads @{BOT_USERNAME}'s messages")),
        "{text}"
    );
    assert!(
        text.contains("Conflict: terminated by other getUpdates request"),
        "{text}"
    );
    assert!(telegram.calls().poll_conflicts >= 1);
    let written = config(&home);
    assert!(written.contains("model = \"fake-model\""), "{written}");
    assert!(!written.contains("[telegram]"), "{written}");
}

/// Setup's flags for the fake model and an email mailbox on `dovecot`.
fn email_args(model: &FakeModel, dovecot: &Dovecot) -> Vec<String> {
    setup_args(
        &model.base_url(),
        &[
            "--email-address",
            "agent@hearth.test",
            "--email-imap-host",
            "127.0.0.1",
            "--email-imap-port",
            &dovecot.port().to_string(),
            "--email-smtp-host",
            "127.0.0.1",
            "--email-smtp-port",
            "2525",
            "--email-user",
            mail_servers::USER,
            "--email-password-env",
            "HEARTH_TEST_EMAIL_PASSWORD",
            "--email-allow",
            "Ada@Example.com",
            "--email-authserv-id",
            "mx.hearth.test",
            "--yes",
        ],
    )
    .into_iter()
    .map(str::to_string)
    .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn email_is_written_only_once_its_login_is_proved() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ready"));
    model.push(Reply::text("ready"));
    let dovecot = Dovecot::start();
    let home = TestHome::new(bins!());
    let args = email_args(&model, &dovecot);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    let wrong = [
        ("HEARTH_TEST_KEY", "sk-in-env"),
        ("HEARTH_TEST_EMAIL_PASSWORD", "not-the-password"),
    ];
    let output = setup(&home, &args, "", &wrong).await;
    let text = said(&output);
    assert!(!output.status.success(), "{text}");
    assert!(
        text.contains("127.0.0.1 refused the login of agent"),
        "{text}"
    );
    assert!(text.contains("nothing about email was written"), "{text}");
    assert!(!config(&home).contains("[email]"));

    let right = [
        ("HEARTH_TEST_KEY", "sk-in-env"),
        ("HEARTH_TEST_EMAIL_PASSWORD", mail_servers::PASSWORD),
    ];
    let output = setup(&home, &args, "", &right).await;
    let text = said(&output);
    assert!(output.status.success(), "{text}");
    assert!(text.contains("✓ saved [email]"), "{text}");
    let written = config(&home);
    for line in [
        "address = \"agent@hearth.test\"",
        "allow = [\"ada@example.com\"]",
        "trusted_authserv_id = \"mx.hearth.test\"",
        "password_env = \"HEARTH_TEST_EMAIL_PASSWORD\"",
    ] {
        assert!(written.contains(line), "{line} in {written}");
    }
    // The password came from the environment: it is not copied anywhere.
    assert!(!written.contains(mail_servers::PASSWORD));
    assert!(!home.path().join("secrets.env").exists());
}
