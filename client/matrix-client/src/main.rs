//! hearth-matrix: a Matrix account driven over stdin and stdout, for the
//! hearth Matrix bridge (`hearth matrix` runs it) and for the bridge's
//! tests (which drive a second one as the person talking to the agent).
//!
//! `hearth-matrix --store DIR`: the account's SQLite store (its end-to-end
//! encryption keys, the rooms, where syncing stopped) and its session live
//! in DIR, readable by the user alone. Requests come in a line each and are
//! answered a line each; events go out from `start` on (see `wire.rs`).
//!
//! - `wire.rs`: the requests, answers and events as JSON.
//! - `account.rs`: logging in or taking up the stored session.
//! - `calls.rs`: what each request does.
//! - `events.rs`: what the account receives, as events.

mod account;
mod calls;
mod events;
mod wire;

use std::path::PathBuf;
use std::process::ExitCode;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use wire::{Output, Request};

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let store = match (args.next().as_deref(), args.next()) {
        (Some("--store"), Some(dir)) => PathBuf::from(dir),
        _ => {
            eprintln!(
                "usage: hearth-matrix --store DIR (requests on stdin, one JSON object a line)"
            );
            return ExitCode::from(2);
        }
    };
    let (out, mut outgoing) = mpsc::unbounded_channel::<Output>();
    // One writer to stdout, so lines never interleave.
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(output) = outgoing.recv().await {
            let Ok(mut line) = serde_json::to_string(&output) else {
                continue;
            };
            line.push('\n');
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let calls = calls::Calls::new(store, out.clone());
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    // Stdin closed (the bridge went away): the account stops with it.
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        let request: Request = match serde_json::from_str(&line) {
            Ok(request) => request,
            Err(err) => {
                eprintln!("hearth-matrix: skipping a request that is not understood: {err}");
                continue;
            }
        };
        // Each request runs on its own, so a slow send does not hold up
        // the others; the answer names the request.
        let calls = calls.clone();
        let out = out.clone();
        tokio::spawn(async move {
            let answer = match calls.handle(request.call).await {
                Ok(result) => Output::Answer {
                    id: request.id,
                    result: Some(result),
                    error: None,
                },
                Err(error) => Output::Answer {
                    id: request.id,
                    result: None,
                    error: Some(error),
                },
            };
            let _ = out.send(answer);
        });
    }
    drop(out);
    drop(calls);
    writer.abort();
    ExitCode::SUCCESS
}
