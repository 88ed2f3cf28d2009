//! End-to-end: MCP servers at streamable HTTP addresses (`url`, `headers`)
//! in a real `hearthd`, called by a fake model: the reference server
//! `@modelcontextprotocol/server-everything` in its streamable HTTP mode,
//! and a small server written for these tests (tests/support/fake_mcp_http.rs)
//! that records the headers it receives.

// Test code fails by panicking: unwrap and expect name what was expected.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_tests::bins;
use hearth_tests::fake_mcp_http::FakeMcpHttp;
use hearth_tests::fake_model::Reply;
use hearth_tests::mcp::{mcp_status, servers, start_with, turn};
use std::path::PathBuf;

#[tokio::test]
async fn a_streamable_http_server_is_reached_with_its_headers() {
    // The reference server takes its port from PORT: a free one, found now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server =
        std::process::Command::new(servers().join("node_modules/.bin/mcp-server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
    // Listening once it says so on stderr.
    let mut stderr = std::io::BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening") {
        line.clear();
        assert!(
            std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() > 0,
            "the HTTP server did not start"
        );
    }
    let config = format!(
        "[[mcp]]\nname = \"web\"\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
         headers = {{ X-Test = \"${{HEARTH_TEST_KEY}}\" }}\n"
    );
    let mut t = start_with(bins!(), &config, &[], "").await;
    t.model.push(Reply::tool_call(
        "mcp__web__echo",
        r#"{"message": "over http"}"#,
    ));
    t.model.push(Reply::text("done"));
    let tools = turn(&mut t, "echo over http").await;
    let _ = server.kill();
    let _ = server.wait();
    let text = tools[0].text.clone().unwrap();
    assert_eq!(tools[0].status.as_deref(), Some("ok"), "{text}");
    assert!(text.contains("Echo: over http"), "{text}");
    assert!(mcp_status(&t.home)
        .await
        .contains("web: ready (http: http://127.0.0.1:"));
}

#[tokio::test]
async fn an_http_servers_headers_carry_secrets_that_reach_no_log() {
    let server = FakeMcpHttp::start();
    let (from_env, from_file) = ("env-secret-91c3e7", "file-secret-5f2a0b");
    let config = format!(
        "[[mcp]]\nname = \"remote\"\nurl = \"{}\"\n\
         headers = {{ Authorization = \"Bearer ${{MCP_TOKEN}}\", X-Api-Key = \"${{MCP_KEY}}\" }}\n",
        server.url()
    );
    let secrets = format!("MCP_TOKEN={from_file}\n");
    let mut t = start_with(bins!(), &config, &[("MCP_KEY", from_env)], &secrets).await;
    t.model.push(Reply::tool_call(
        "mcp__remote__echo",
        r#"{"text": "over http"}"#,
    ));
    t.model.push(Reply::text("done"));
    let tools = turn(&mut t, "echo over http").await;
    let text = tools[0].text.clone().unwrap();
    assert_eq!(tools[0].status.as_deref(), Some("ok"), "{text}");
    assert!(text.contains("echo: over http"), "{text}");
    // Every request of the session carried both headers with the secrets'
    // values: the handshake, the list, the call, and the GET of the stream.
    let seen = server.seen();
    for rpc in [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
    ] {
        assert!(
            seen.iter().any(|s| s.rpc.as_deref() == Some(rpc)),
            "no {rpc}: {seen:?}"
        );
    }
    for request in &seen {
        let header = |name: &str| request.headers.get(name).map(String::as_str);
        assert_eq!(
            header("authorization"),
            Some("Bearer file-secret-5f2a0b"),
            "{request:?}"
        );
        assert_eq!(header("x-api-key"), Some(from_env), "{request:?}");
    }
    // Neither secret reaches hearthd's log (its stderr here; hearthd.log
    // when `hearth` starts it), the message log or any other file of the
    // home but secrets.env.
    t.daemon.stop();
    let log = t.daemon.log_text();
    for secret in [from_env, from_file] {
        assert!(!log.contains(secret), "{secret} is in hearthd's log");
        for file in files_under(t.home.path()) {
            if file.ends_with("secrets.env") {
                continue;
            }
            let bytes = std::fs::read(&file).unwrap();
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{secret} is in {}", file.display());
        }
    }
}

/// Every file under `dir`, at any depth.
fn files_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => files.extend(files_under(&path)),
            Ok(kind) if kind.is_file() => files.push(path),
            _ => {}
        }
    }
    files
}

#[tokio::test]
async fn a_header_naming_a_missing_secret_is_an_error_that_names_it() {
    let server = FakeMcpHttp::start();
    let config = format!(
        "[[mcp]]\nname = \"remote\"\nurl = \"{}\"\n\
         headers = {{ Authorization = \"Bearer ${{NO_SUCH_MCP_TOKEN}}\" }}\n",
        server.url()
    );
    let mut t = start_with(bins!(), &config, &[], "").await;
    let status = mcp_status(&t.home).await;
    assert!(
        status.contains("${NO_SUCH_MCP_TOKEN} is not set in hearthd's environment or secrets.env"),
        "{status}"
    );
    // Nothing was sent without it, and hearthd runs on.
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    assert!(t.daemon.is_running());
}
