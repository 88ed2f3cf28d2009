//! The scripted subcommands: `hearth send`, `hearth status` and `hearth
//! interrupt` (`hearth log` is in `log.rs`).
//!
//! They never start a daemon: when none answers on the home's socket they fail
//! at once with [`CommandError::NoDaemon`], so a script learns that hearthd is
//! down instead of silently starting one. Output goes to the writer the caller
//! passes (stdout in the binary), one line per item, so it pipes cleanly.

use crate::sanitize::terminal_safe;
use hearth_client::images;
use hearth_client::log_walk::{walk_log, LogWalk};
use hearth_client::running::{ask, connect_running, CommandError};
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, Event, EventKind, Kind, ServerFrame, Status, MAX_FRAME_BYTES};
use std::io::{self, Write};
use std::process::ExitCode;

/// What `hearth send` submits.
#[derive(Debug, Clone)]
pub struct SendRequest {
    pub text: String,
    pub source: String,
    /// An idempotency key: the same key again is logged once.
    pub key: Option<String>,
    /// Wait for the turn that takes the message and print its reply.
    pub wait: bool,
    /// With `wait`, print the id on stdout before the reply (else stderr).
    pub print_id: bool,
    /// Image files the message carries.
    pub images: Vec<std::path::PathBuf>,
    /// Documents and audio files the message carries.
    pub files: Vec<std::path::PathBuf>,
}

/// The message text of `hearth send WORDS...`: the words joined by single
/// spaces, or `None` when there is nothing to send.
pub fn join_words(words: &[String]) -> Option<String> {
    let text = words.join(" ");
    if text.trim().is_empty() {
        None
    } else {
        Some(text)
    }
}

/// The text of `hearth send`: the words joined, or stdin read to its end
/// for `-` alone, or when no words and no images are given and stdin is not
/// a terminal (a pipe). One final newline of stdin is not part of it.
pub fn message_text(
    words: &[String],
    has_images: bool,
    stdin: &mut dyn io::Read,
    stdin_is_terminal: bool,
) -> Result<String, CommandError> {
    let piped = match words {
        [dash] if dash == "-" => true,
        [] => !has_images && !stdin_is_terminal,
        _ => false,
    };
    let text = if piped {
        let mut text = String::new();
        stdin
            .read_to_string(&mut text)
            .map_err(CommandError::Stdin)?;
        if text.ends_with('\n') {
            text.pop();
            if text.ends_with('\r') {
                text.pop();
            }
        }
        text
    } else {
        words.join(" ")
    };
    if text.trim().is_empty() && !has_images {
        return Err(CommandError::NothingToSend);
    }
    Ok(text)
}

/// Submits a message and prints its id once it is durable (`duplicate ID`
/// when its key was used before). With `wait`, the id goes to stderr (or
/// stdout with `print_id`) and the reply whose turn answered it to stdout
/// (exit success), or the failed turn's error to stderr (exit failure).
pub async fn send(
    home: &Home,
    agent: Option<&str>,
    request: SendRequest,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    // Refused here rather than by the daemon closing the connection.
    let bytes = ClientFrame::Submit {
        text: request.text.clone(),
        source: request.source.clone(),
        key: request.key.clone(),
        images: Vec::new(),
        person: None,
        media: Vec::new(),
    }
    .encode()
    .len();
    if bytes > MAX_FRAME_BYTES {
        return Err(CommandError::TooLarge {
            bytes,
            limit: MAX_FRAME_BYTES,
        });
    }
    // Subscribed from hello on, so no event about the message can be missed.
    let (mut connection, _) = connect_running(home, agent, "hearth-send", None).await?;
    let mut early = Vec::new();
    let hashes = images::put_files(&mut connection, &request.images, &mut |frame| {
        if let ServerFrame::Event(event) = frame {
            early.push(event);
        }
    })
    .await?;
    let media = hearth_client::media::put_files(&mut connection, &request.files, &mut |frame| {
        if let ServerFrame::Event(event) = frame {
            early.push(event);
        }
    })
    .await?;
    let answer = connection
        .request(
            &ClientFrame::Submit {
                text: request.text,
                source: request.source,
                key: request.key,
                images: hashes,
                person: None,
                media,
            },
            &mut |event| early.push(event),
        )
        .await?;
    let (id, duplicate) = match answer {
        ServerFrame::Ack { id, duplicate } => (id, duplicate),
        ServerFrame::Error { message, .. } => return Err(CommandError::Refused(message)),
        other => return Err(CommandError::Unexpected(other.encode())),
    };
    let said = if duplicate {
        format!("duplicate {id}")
    } else {
        id.to_string()
    };
    if request.wait && !request.print_id {
        // stdout is the reply's alone.
        let _ = writeln!(io::stderr(), "{said}");
    } else {
        writeln!(out, "{said}")?;
        out.flush()?;
    }
    if !request.wait {
        connection.close().await;
        return Ok(ExitCode::SUCCESS);
    }

    for event in &early {
        if let Some(verdict) = verdict(event, id) {
            return report(verdict, out);
        }
    }
    if duplicate {
        // The first submit may have been answered long ago: look in the log.
        let logged = walk_log(&mut connection, LogWalk::new(Some(id), None)).await?;
        let reply = logged
            .iter()
            .find(|message| message.kind == Kind::Reply && message.answers.contains(&id));
        if let Some(reply) = reply {
            let text = hearth_protocol::ending::shown(&reply.text, reply.status.as_deref());
            return report(Verdict::Reply(text), out);
        }
        // Not answered yet, or its turn failed before this client was there:
        // the status check below tells the two apart.
        connection.send(&ClientFrame::Status).await?;
    }
    loop {
        match connection.next().await? {
            None => return Err(CommandError::ClosedBeforeAnswer { id }),
            Some(ServerFrame::Event(event)) => {
                if let Some(verdict) = verdict(&event, id) {
                    return report(verdict, out);
                }
                if event.kind == EventKind::Idle {
                    // A turn ended after the message was durable. If nothing
                    // waits and nothing runs, the message was taken and its
                    // turn ended without answering it (an interrupt, say).
                    connection.send(&ClientFrame::Status).await?;
                }
            }
            Some(ServerFrame::Status(status)) => {
                if !status.busy && status.waiting == 0 {
                    return Err(CommandError::NoReply { id });
                }
            }
            Some(ServerFrame::Error { message, .. }) => return Err(CommandError::Refused(message)),
            Some(_) => {}
        }
    }
}

/// How a turn ended for a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The reply's text.
    Reply(String),
    /// The error event's text.
    Failed(String),
}

/// Whether `event` ends the wait for message `id`: a reply or an error whose
/// `answers` name it.
pub fn verdict(event: &Event, id: u64) -> Option<Verdict> {
    if !event.answers.contains(&id) {
        return None;
    }
    let text = event.text.clone().unwrap_or_default();
    match event.kind {
        EventKind::Reply => Some(Verdict::Reply(hearth_protocol::ending::shown(
            &text,
            event.status.as_deref(),
        ))),
        EventKind::Error => Some(Verdict::Failed(text)),
        _ => None,
    }
}

fn report(verdict: Verdict, out: &mut dyn Write) -> Result<ExitCode, CommandError> {
    match verdict {
        Verdict::Reply(text) => {
            writeln!(out, "{}", terminal_safe(&text))?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Verdict::Failed(text) => {
            // stderr is the place for a failed turn even when stdout is piped.
            let _ = writeln!(io::stderr(), "error: {}", terminal_safe(&text));
            Ok(ExitCode::FAILURE)
        }
    }
}

/// A message's time as `YYYY-MM-DD HH:MM:SS` in the offset it was logged
/// with; the raw text when it is not RFC 3339.
pub fn local_time(at: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(at) {
        Ok(time) => time.format("%Y-%m-%d %H:%M:%S").to_string(),
        Err(_) => at.to_string(),
    }
}

/// Prints the agent's status: human lines, or with `json` the frame as the
/// daemon sent it.
pub async fn status(
    home: &Home,
    agent: Option<&str>,
    json: bool,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (mut connection, _) = connect_running(home, agent, "hearth-status", None).await?;
    let status = ask(
        &mut connection,
        &ClientFrame::Status,
        |answer| match answer {
            ServerFrame::Status(status) => Some(status),
            _ => None,
        },
    )
    .await?;
    connection.close().await;
    if json {
        writeln!(out, "{}", ServerFrame::Status(status).encode())?;
    } else {
        write!(out, "{}", status_text(&status))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// One MCP server in `status`: its state, what it offers, the first tool
/// it skips and why, and its last error.
fn mcp_line(server: &hearth_protocol::McpServer) -> String {
    let mut line = format!(
        "{} {}: {} tool(s) offered",
        server.name,
        server.state,
        server.tools.len()
    );
    if let Some(first) = server.skipped.first() {
        line.push_str(&format!("; skipped {first}"));
        if server.skipped.len() > 1 {
            line.push_str(&format!(" and {} more", server.skipped.len() - 1));
        }
    }
    if let Some(error) = &server.last_error {
        line.push_str(&format!("; last error: {error}"));
    }
    line.push('\n');
    line
}

/// Bytes as `812 B`, `4.2 kB`, `17.0 MB`.
pub fn size(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{:.1} kB", bytes as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", bytes as f64 / 1e6),
        _ => format!("{:.1} GB", bytes as f64 / 1e9),
    }
}

/// Seconds as `3d 4h`, `2h 5m`, `7m 12s` or `40s`.
pub fn uptime(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3_600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

/// The human form of a status frame, one `name  value` line per field.
pub fn status_text(status: &Status) -> String {
    let last = status.last_id.map_or_else(
        || "none (the log is empty)".to_string(),
        |id| format!("#{id}"),
    );
    let model = status
        .model
        .clone()
        .unwrap_or_else(|| "none configured".to_string());
    let state = if status.busy { "busy" } else { "idle" };
    let mut extra = String::new();
    for agent in status.agents.iter().skip(1) {
        let state = if agent.busy { "busy" } else { "idle" };
        extra.push_str(&format!("subagent {} ({state})\n", agent.name));
    }
    if let Some(next) = &status.next_schedule {
        extra.push_str(&format!("next     {next}\n"));
    }
    if let Some(cost) = status.cost_today_usd {
        // A plan's requests are metered in tokens, never priced.
        let plan = status
            .model
            .as_deref()
            .is_some_and(|model| model.starts_with("chatgpt/"));
        let note = if plan {
            " (the model's requests are on your plan)"
        } else {
            ""
        };
        extra.push_str(&format!("today    ${cost:.4}{note}\n"));
    }
    if let Some(plan) = &status.plan {
        extra.push_str(&plan_text(plan));
    }
    for call in &status.mcp_calls {
        extra.push_str(&format!(
            "mcp call {}: {} {} ({} s)\n",
            call.agent, call.server, call.tool, call.secs
        ));
    }
    for server in &status.mcp_servers {
        extra.push_str(&format!("mcp      {}", mcp_line(server)));
    }
    if let Some(activity) = &status.activity {
        extra.push_str(&format!(
            "doing    {} (since {})\n",
            activity.describe(),
            local_time(&activity.since)
        ));
    }
    if let Some(memory) = &status.memory {
        // The memory model, named when it is not the turns' own.
        let by = memory
            .model
            .as_deref()
            .map(|model| format!(", written by {model}"))
            .unwrap_or_default();
        extra.push_str(&format!(
            "memory   {} lines, {} of {} bytes in view, {} summaries pending{by}\n",
            memory.lines, memory.bytes, memory.high_budget, memory.pending
        ));
    }
    if let Some(bytes) = status.database_bytes {
        extra.push_str(&format!("database {}\n", size(bytes)));
    }
    if let Some(chain) = &status.chain {
        extra.push_str(&format!("chain    {chain}\n"));
    }
    for bridge in &status.bridges {
        let why = bridge
            .error
            .as_deref()
            .map(|why| format!(": {why}"))
            .unwrap_or_default();
        extra.push_str(&format!("bridge   {} {}{why}\n", bridge.name, bridge.state));
    }
    if let Some(window) = &status.window {
        extra.push_str(&format!("window   {window}\n"));
    }
    if let Some(confinement) = &status.confinement {
        extra.push_str(&format!("shell    {confinement}\n"));
    }
    format!(
        "agent    {}\nstate    {state}\nlast     {last}\nwaiting  {}\nmodel    {model}\nclients  {} besides this one\nuptime   {}\npid      {}\nversion  {}\n",
        status.agent, status.waiting, status.clients, uptime(status.uptime_secs), status.pid, status.version
    ) + &extra
}

/// A ChatGPT plan's limits as `plan` lines: each window's use and reset,
/// and when a refusal at the limit ends.
pub fn plan_text(plan: &hearth_protocol::PlanLimits) -> String {
    let local = |at: &str| match chrono::DateTime::parse_from_rfc3339(at) {
        Ok(at) => at
            .with_timezone(&chrono::Local)
            .format("%Y-%m-%d %H:%M")
            .to_string(),
        Err(_) => at.to_string(),
    };
    let name = plan.plan.as_deref().map_or_else(
        || "ChatGPT plan".to_string(),
        |plan| format!("ChatGPT {plan} plan"),
    );
    let windows: Vec<String> = plan
        .windows
        .iter()
        .map(|window| {
            let span = match window.window_minutes {
                Some(minutes) if minutes % 1440 == 0 => format!("{}-day", minutes / 1440),
                Some(minutes) if minutes % 60 == 0 => format!("{}-hour", minutes / 60),
                Some(minutes) => format!("{minutes}-minute"),
                None => "a".to_string(),
            };
            let reset = window
                .resets_at
                .as_deref()
                .map(|at| format!(", resets {}", local(at)))
                .unwrap_or_default();
            format!("{span} window {:.0}% used{reset}", window.used_percent)
        })
        .collect();
    let mut text = match windows.is_empty() {
        true => format!("plan     {name}\n"),
        false => format!("plan     {name}: {}\n", windows.join("; ")),
    };
    if let Some(until) = &plan.limited_until {
        text.push_str(&format!(
            "plan     usage limit reached; requests resume at {}\n",
            local(until)
        ));
    }
    text
}

/// Ends the running turn, if any, and says whether one was running.
pub async fn interrupt(
    home: &Home,
    agent: Option<&str>,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (mut connection, _) = connect_running(home, agent, "hearth-interrupt", None).await?;
    let running = ask(
        &mut connection,
        &ClientFrame::Interrupt,
        |answer| match answer {
            ServerFrame::Interrupted { running } => Some(running),
            _ => None,
        },
    )
    .await?;
    connection.close().await;
    if running {
        writeln!(out, "interrupted the running turn")?;
    } else {
        writeln!(out, "no turn was running")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `hearth transcribe ID`: asks for a voice note's transcript again; it
/// follows in the conversation as a message of its own.
pub async fn transcribe(
    home: &Home,
    agent: Option<&str>,
    id: u64,
    out: &mut dyn Write,
) -> Result<ExitCode, CommandError> {
    let (mut connection, _) = connect_running(home, agent, "hearth-transcribe", None).await?;
    let answer = connection
        .request(&ClientFrame::Transcribe { id }, &mut |_| {})
        .await?;
    connection.close().await;
    match answer {
        ServerFrame::Ack { .. } => {
            writeln!(
                out,
                "transcribing message {id}; the transcript follows in the conversation"
            )?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        ServerFrame::Error { message, .. } => Err(CommandError::Refused(message)),
        other => Err(CommandError::Unexpected(other.encode())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hearth_protocol::Message;

    fn message(id: u64, kind: Kind, text: &str) -> Message {
        Message {
            agent: "hearth".into(),
            id,
            kind,
            source: "terminal".into(),
            text: text.into(),
            status: None,
            at: "2026-11-30T10:00:05+01:00".into(),
            answers: Vec::new(),
            images: Vec::new(),
            outbox: None,
            client: None,
            transcript_of: None,
        }
    }

    #[test]
    fn send_joins_words_with_spaces() {
        let words: Vec<String> = ["hello", "there,", "friend"]
            .iter()
            .map(|w| w.to_string())
            .collect();
        assert_eq!(join_words(&words).as_deref(), Some("hello there, friend"));
        assert_eq!(join_words(&[]), None);
        assert_eq!(join_words(&["  ".to_string()]), None);
    }

    #[test]
    fn wait_ends_on_the_reply_or_error_that_answers_the_message() {
        let mut reply = Event::message(&Message {
            answers: vec![4, 5],
            ..message(6, Kind::Reply, "done")
        });
        assert_eq!(verdict(&reply, 5), Some(Verdict::Reply("done".into())));
        assert_eq!(verdict(&reply, 3), None);
        reply.answers.clear();
        assert_eq!(verdict(&reply, 5), None);

        let mut error = Event::signal(EventKind::Error, "hearth", Some("no model".into()));
        assert_eq!(verdict(&error, 5), None);
        error.answers = vec![5];
        assert_eq!(verdict(&error, 5), Some(Verdict::Failed("no model".into())));

        let mut busy = Event::signal(EventKind::Busy, "hearth", None);
        busy.answers = vec![5];
        assert_eq!(verdict(&busy, 5), None);
    }

    #[test]
    fn status_text_names_every_field() {
        let status = Status {
            agent: "hearth".into(),
            busy: true,
            last_id: Some(41),
            waiting: 2,
            model: None,
            clients: 3,
            pid: 1234,
            version: "0.1.0".into(),
            uptime_secs: 3_700,
            agents: vec![],
            next_schedule: Some("2026-12-01T09:00:00+01:00 stand-up".into()),
            cost_today_usd: Some(0.25),
            mcp_calls: vec![hearth_protocol::McpCall {
                agent: "hearth".into(),
                server: "fs".into(),
                tool: "read_file".into(),
                secs: 3,
            }],
            mcp_servers: vec![hearth_protocol::McpServer {
                name: "slow".into(),
                transport: "stdio: node".into(),
                state: "starting".into(),
                tools: vec![],
                skipped: vec![],
                last_error: None,
                restarts: 0,
            }],
            activity: None,
            memory: None,
            database_bytes: None,
            confinement: None,
            bridges: vec![],
            queued_bytes: None,
            chain: None,
            plan: Some(hearth_protocol::PlanLimits {
                plan: Some("plus".into()),
                windows: vec![hearth_protocol::PlanWindow {
                    window_minutes: Some(300),
                    used_percent: 37.0,
                    resets_at: None,
                }],
                limited_until: None,
                reported_at: "2026-12-01T09:00:00Z".into(),
            }),
            window: Some("the llama.cpp server serves a 4096-token window".into()),
        };
        let text = status_text(&status);
        assert!(text.contains("state    busy\n"), "{text}");
        assert!(text.contains("last     #41\n"), "{text}");
        assert!(text.contains("model    none configured\n"), "{text}");
        assert!(text.contains("pid      1234\n"), "{text}");
        // The one who asks is not counted, and the line says so.
        assert!(text.contains("clients  3 besides this one\n"), "{text}");
        assert!(text.contains("uptime   1h 1m\n"), "{text}");
        assert!(
            text.contains("mcp call hearth: fs read_file (3 s)\n"),
            "{text}"
        );
        assert!(
            text.contains("mcp      slow starting: 0 tool(s) offered\n"),
            "{text}"
        );
        assert!(
            text.contains("next     2026-12-01T09:00:00+01:00 stand-up\n"),
            "{text}"
        );
        assert!(text.contains("today    $0.2500\n"), "{text}");
        assert!(
            text.contains("plan     ChatGPT plus plan: 5-hour window 37% used\n"),
            "{text}"
        );
        assert!(
            text.contains("window   the llama.cpp server serves a 4096-token window\n"),
            "{text}"
        );
    }
}
