//! End-to-end: a page `web_fetch` reduces never holds the daemon. A page
//! of ampersands that today's quadratic entity decoding would chew on for
//! hours is reduced at once, and a stop while a reduction runs on a
//! blocking thread (one held forever by a test hook) still ends hearthd.
//! Waits for the exit poll with the harness's bound: a wait for a
//! condition, not a timing assertion.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use hearth_tests::bins;
use hearth_tests::fake_model::{FakeModel, Reply};
use hearth_tests::harness::{read_request_head, Daemon, TestHome, DEADLINE};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

/// The daemon's test hook (`tools/web.rs`) that holds a reduction forever.
const TEST_HOLD_REDUCTION_ENV: &str = "HEARTH_TEST_HOLD_REDUCTION";

/// A home whose agent may fetch pages on this machine, up to `max_bytes`.
fn home(model: &FakeModel, max_bytes: usize) -> TestHome {
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"openai-chat\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n\n\
         [tools]\nallow_private_network = true\nfetch_max_bytes = {max_bytes}\n",
        model.base_url(),
    ));
    home
}

/// Serves `body` as HTML once on 127.0.0.1:0; the task ends once the
/// whole page was written.
async fn serve(body: String) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/page", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        read_request_head(&mut stream).await;
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
        stream.shutdown().await.ok();
    });
    (url, server)
}

/// SIGTERM, then waits (up to the harness's bound) for hearthd to exit;
/// whether it exited cleanly.
async fn stop(daemon: &mut Daemon) -> bool {
    // SAFETY: kill has no memory effects.
    unsafe { libc::kill(daemon.pid() as libc::pid_t, libc::SIGTERM) };
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if !daemon.is_running() {
            return daemon.stop();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "hearthd did not exit after SIGTERM:\n{}",
            daemon.log_text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_page_of_ampersands_is_reduced_and_a_stop_after_it_is_prompt() {
    let model = FakeModel::start().await;
    let size = 16_000_000;
    let home = home(&model, size);
    let mut daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    // Today's decoding looked for a `;` from every `&`: 16 MB of them is
    // 10^14 bytes looked at.
    let (url, server) = serve("&".repeat(size)).await;
    model.push(Reply::tool_call(
        "web_fetch",
        format!(r#"{{"url": "{url}"}}"#),
    ));
    model.push(Reply::text("a page of ampersands"));
    let (id, _) = client.submit("read this page", "terminal", None).await;
    server.await.unwrap();
    let reply = client.reply_to(id).await;
    assert_eq!(reply.text.as_deref(), Some("a page of ampersands"));
    assert!(stop(&mut daemon).await, "{}", daemon.log_text());
}

#[tokio::test]
async fn a_stop_while_a_reduction_runs_ends_the_daemon() {
    let model = FakeModel::start().await;
    let home = home(&model, 2_000_000);
    let mut daemon = Daemon::start_with_env(&home, &[(TEST_HOLD_REDUCTION_ENV, "1")]);
    let mut client = home.connect("terminal", None).await;
    let (url, server) = serve("<p>a page</p>".to_string()).await;
    model.push(Reply::tool_call(
        "web_fetch",
        format!(r#"{{"url": "{url}"}}"#),
    ));
    model.push(Reply::text("never said"));
    client.submit("read this page", "terminal", None).await;
    server.await.unwrap();
    let log = hearth_tests::harness::eventually("the reduction to run", || {
        let log = daemon.log_text();
        std::future::ready(log.contains("reduction never ends").then_some(log))
    })
    .await;
    assert!(log.contains(TEST_HOLD_REDUCTION_ENV), "{log}");
    assert!(stop(&mut daemon).await, "{}", daemon.log_text());
}
