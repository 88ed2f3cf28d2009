//! End-to-end: a ChatGPT plan as the model. `hearth login chatgpt` against
//! a fake authorization server (a browser's callback driven by the test,
//! and a device code), then `hearthd` against a fake Codex backend: the
//! request field by field, tokens renewed before they expire and after a
//! 401, a revoked sign-in, and a plan at its usage limit.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_daemon::model::chatgpt::{tokens, tokens_file, CLIENT_ID, ISSUER_ENV};
use hearth_tests::bins;
use hearth_tests::fake_chatgpt::{self, BackendReply, FakeChatGpt};
use hearth_tests::harness::TestHome;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// `hearth ARGS` on `home` with the fake as the authorization server.
fn login_command(home: &TestHome, fake: &FakeChatGpt, args: &[&str]) -> Command {
    let mut command = home.hearth_command(args);
    command.env(ISSUER_ENV, fake.issuer());
    command
}

/// A home whose model is the plan's, on the fake backend, signed in
/// already (tokens issued by the fake).
fn signed_in_home(fake: &FakeChatGpt) -> TestHome {
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"chatgpt\"\nmodel = \"gpt-5\"\nbase_url = \"{}\"\ntimeout_secs = 30\nretry_delay_ms = 1\n",
        fake.backend()
    ));
    let signed_in = fake.sign_in_directly();
    tokens::save(&tokens_file(&home.hearth_home()), &signed_in).unwrap();
    home
}

async fn send_wait(home: &TestHome, words: &str) -> Output {
    home.hearth_async(&["send", "--wait", words]).await
}

#[tokio::test]
async fn login_with_the_browsers_callback_stores_private_tokens() {
    let fake = FakeChatGpt::start().await;
    let home = TestHome::new(bins!());
    let mut child = login_command(
        &home,
        &fake,
        &["login", "chatgpt", "--no-browser", "--callback-port", "0"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // The address the person would open, as the command prints it.
    let stdout = child.stdout.take().unwrap();
    let (url, rest) = tokio::task::spawn_blocking(move || {
        let mut lines = BufReader::new(stdout).lines();
        let url = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|line| {
                line.trim()
                    .strip_prefix("http")
                    .map(|rest| format!("http{rest}"))
            })
            .expect("the sign-in address is printed");
        (url, lines)
    })
    .await
    .unwrap();
    let parsed = reqwest::Url::parse(&url).unwrap();
    assert!(
        url.starts_with(&format!("{}/oauth/authorize?", fake.issuer())),
        "{url}"
    );
    let query: std::collections::BTreeMap<String, String> =
        parsed.query_pairs().into_owned().collect();
    assert_eq!(query["client_id"], CLIENT_ID);
    assert_eq!(query["code_challenge_method"], "S256");
    assert_eq!(query["scope"], "openid profile email offline_access");
    assert_eq!(query["originator"], "codex_cli_rs");
    let redirect = reqwest::Url::parse(&query["redirect_uri"]).unwrap();
    assert_eq!(redirect.host_str(), Some("localhost"));
    assert_eq!(redirect.path(), "/auth/callback");

    // The browser: the authorization server approves and sends it back to
    // the local callback, which answers the page.
    let page = reqwest::get(&url).await.unwrap();
    assert!(page.status().is_success(), "{}", page.status());
    assert!(page.text().await.unwrap().contains("Signed in"));

    let output = tokio::task::spawn_blocking(move || {
        let rest: Vec<String> = rest.map_while(Result::ok).collect();
        (child.wait_with_output().unwrap(), rest.join("\n"))
    })
    .await
    .unwrap();
    let (status, said) = output;
    assert!(status.status.success(), "{}", text(&status.stderr));
    assert!(
        said.contains(&format!("Signed in to ChatGPT as {}", fake_chatgpt::EMAIL)),
        "{said}"
    );
    // The code was exchanged once, form-encoded, with its verifier.
    let exchanges = fake.token_requests();
    assert_eq!(exchanges.len(), 1);
    assert!(exchanges[0]
        .0
        .starts_with("application/x-www-form-urlencoded"));
    assert!(exchanges[0].1.contains("code_verifier="));

    let file = tokens_file(&home.hearth_home());
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the tokens are private");
    let stored = tokens::load(&file).unwrap().unwrap();
    assert_eq!(stored.account_id.as_deref(), Some(fake_chatgpt::ACCOUNT));
    assert_eq!(Some(stored.access_token), fake.current_access());

    let output = login_command(&home, &fake, &["logout", "chatgpt"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(!file.exists(), "logout forgets the tokens");
}

#[tokio::test]
async fn login_with_a_device_code_waits_until_the_code_is_entered() {
    let fake = FakeChatGpt::start().await;
    let home = TestHome::new(bins!());
    let mut command = login_command(&home, &fake, &["login", "chatgpt", "--device"]);
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let said = text(&output.stdout);
    assert!(output.status.success(), "{said}{}", text(&output.stderr));
    assert!(
        said.contains(&format!("{}/codex/device", fake.issuer())),
        "{said}"
    );
    assert!(said.contains("WXYZ-2345"), "{said}");
    let stored = tokens::load(&tokens_file(&home.hearth_home()))
        .unwrap()
        .expect("signed in");
    assert_eq!(stored.account_id.as_deref(), Some(fake_chatgpt::ACCOUNT));
}

#[tokio::test]
async fn the_plans_request_carries_the_sign_in_and_the_codex_fields() {
    let fake = FakeChatGpt::start().await;
    let home = signed_in_home(&fake);
    let _daemon = home.start();
    fake.push(BackendReply::Text("Hello from the plan.".into()));
    fake.push(BackendReply::Text("Again.".into()));
    let output = send_wait(&home, "hi").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("Hello from the plan."));
    let output = send_wait(&home, "once more").await;
    assert!(output.status.success(), "{}", text(&output.stderr));

    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    let header = |name: &str| first.headers.get(name).cloned().unwrap_or_default();
    assert_eq!(
        header("authorization"),
        format!("Bearer {}", fake.current_access().unwrap())
    );
    assert_eq!(header("chatgpt-account-id"), fake_chatgpt::ACCOUNT);
    assert_eq!(header("originator"), "codex_cli_rs");
    assert_eq!(header("openai-beta"), "responses=experimental");
    assert_eq!(header("accept"), "text/event-stream");
    let body = &first.body;
    assert_eq!(body["model"], "gpt-5");
    assert!(body["instructions"]
        .as_str()
        .is_some_and(|text| !text.is_empty()));
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["tool_choice"], "auto");
    assert_eq!(body["parallel_tool_calls"], false);
    assert!(body["tools"]
        .as_array()
        .is_some_and(|tools| !tools.is_empty()));
    assert!(body["input"]
        .as_array()
        .is_some_and(|input| !input.is_empty()));
    assert!(body.get("max_output_tokens").is_none(), "{body}");
    assert!(body.get("prompt_cache_retention").is_none(), "{body}");
    let key = body["prompt_cache_key"]
        .as_str()
        .expect("a prompt_cache_key");
    assert_eq!(header("session_id"), key);
    assert_eq!(
        requests[1].body["prompt_cache_key"], key,
        "the cache key is stable"
    );

    // The plan's limits, as the backend's headers said; and the tokens
    // are metered, never priced.
    let output = home.hearth_async(&["status"]).await;
    let status = text(&output.stdout);
    assert!(
        status.contains(&format!(
            "plan     ChatGPT {} plan: 5-hour window {}% used, resets ",
            fake_chatgpt::PLAN,
            fake_chatgpt::PRIMARY_USED
        )),
        "{status}"
    );
    assert!(status.contains("7-day window 12% used"), "{status}");
    assert!(status.contains("on your plan"), "{status}");
    let output = home.hearth_async(&["stats", "--json"]).await;
    let stats = text(&output.stdout);
    let row: serde_json::Value = serde_json::from_str(stats.lines().last().unwrap()).unwrap();
    assert_eq!(row["cost_usd"], 0.0, "{stats}");
    assert!(row["input_tokens"].as_u64().unwrap() >= 2400, "{stats}");
}

#[tokio::test]
async fn the_access_token_is_renewed_before_it_expires_and_after_a_401() {
    let fake = FakeChatGpt::start().await;
    // Tokens about to expire: renewed before the first request.
    fake.set_lifetime(60);
    let home = signed_in_home(&fake);
    fake.set_lifetime(3600);
    let _daemon = home.start();
    fake.push(BackendReply::Text("one".into()));
    let output = send_wait(&home, "hi").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(fake.refreshes(), 1);
    assert_eq!(fake.requests().len(), 1, "the old token was never sent");
    let stored = tokens::load(&tokens_file(&home.hearth_home()))
        .unwrap()
        .unwrap();
    assert_eq!(Some(stored.access_token.clone()), fake.current_access());

    // The backend refuses a token before its time: renewed once, sent again.
    fake.refuse_next_request();
    fake.push(BackendReply::Text("two".into()));
    let output = send_wait(&home, "again").await;
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("two"));
    assert_eq!(fake.refreshes(), 2);
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert_ne!(
        requests[1].headers["authorization"],
        requests[2].headers["authorization"]
    );
}

#[tokio::test]
async fn a_revoked_sign_in_asks_to_sign_in_again() {
    let fake = FakeChatGpt::start().await;
    fake.set_lifetime(-10);
    let home = signed_in_home(&fake);
    fake.revoke();
    let _daemon = home.start();
    let output = send_wait(&home, "hi").await;
    assert_eq!(output.status.code(), Some(1));
    let said = text(&output.stderr);
    assert!(
        said.contains(
            "the ChatGPT sign-in must be renewed (it was revoked): run `hearth login chatgpt`"
        ),
        "{said}"
    );
    assert!(fake.requests().is_empty(), "an expired token is never sent");
}

#[tokio::test]
async fn a_plan_at_its_usage_limit_says_when_it_resets() {
    let fake = FakeChatGpt::start().await;
    let home = signed_in_home(&fake);
    let _daemon = home.start();
    let resets_at = 4_102_444_800; // 2100-01-01
    fake.push(BackendReply::UsageLimit { resets_at });
    let output = send_wait(&home, "hi").await;
    assert_eq!(output.status.code(), Some(1));
    let said = text(&output.stderr);
    let local = chrono::DateTime::from_timestamp(resets_at, 0)
        .unwrap()
        .with_timezone(&chrono::Local)
        .format("%Y-%m-%d %H:%M")
        .to_string();
    assert!(
        said.contains(&format!(
            "your ChatGPT plus plan has reached its usage limit; it resets at {local}"
        )),
        "{said}"
    );
    assert_eq!(fake.requests().len(), 1, "a plan's limit is not retried");
    let output = home.hearth_async(&["status"]).await;
    let status = text(&output.stdout);
    assert!(
        status.contains(&format!(
            "plan     usage limit reached; requests resume at {local}"
        )),
        "{status}"
    );
}

#[tokio::test]
async fn setup_with_the_chatgpt_choice_proves_the_plan_and_writes_no_key() {
    let fake = FakeChatGpt::start().await;
    let home = signed_in_home(&fake);
    std::fs::remove_file(home.path().join("config.toml")).unwrap();
    fake.push(BackendReply::Text("ready".into()));
    let backend = fake.backend();
    let mut command = login_command(
        &home,
        &fake,
        &[
            "setup",
            "--yes",
            "--provider",
            "chatgpt",
            "--base-url",
            &backend,
            "--no-telegram",
            "--no-service",
        ],
    );
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let said = text(&output.stdout);
    assert!(output.status.success(), "{said}{}", text(&output.stderr));
    assert!(said.contains("Signed in with ChatGPT already"), "{said}");
    assert_eq!(fake.requests().len(), 1, "one test request, on the plan");
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert!(config.contains("provider = \"chatgpt\""), "{config}");
    assert!(config.contains("model = \"gpt-5\""), "{config}");
    assert!(!config.contains("api_key_env"), "{config}");
}
