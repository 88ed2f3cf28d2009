//! What `hearth` prints of the conversation's past: on attach, before line
//! editing starts, a banner (the agent, its model or how to configure one,
//! how to get about), the recent messages and the events that came
//! meanwhile; later, the pages of older messages `/history` and PageUp ask
//! for. And the name this client gives itself in `hello`.

use crate::display::Display;
use crate::look::{self, Style};
use crate::session::{Session, Show, SOURCE};
use crate::terminal::TerminalError;
use hearth_client::Connection;
use hearth_protocol::home::Home;
use hearth_protocol::{ClientFrame, ServerFrame};

/// How many recent messages are shown on attach.
const RECENT: u32 = 20;

/// This client's name in `hello`: `terminal@HOST`.
pub fn client_name() -> String {
    let host = ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty() && name.len() <= 48 && !name.contains(char::is_whitespace))
        .unwrap_or_else(|| "localhost".to_string());
    format!("{SOURCE}@{host}")
}

/// What is printed before line editing starts, in one piece: the banner,
/// the recent messages, and the events that came meanwhile.
pub async fn catch_up(
    home: &Home,
    connection: &mut Connection,
    session: &mut Session,
    display: &mut Display,
) -> Result<String, TerminalError> {
    let mut early = Vec::new();
    let status = match connection
        .request(&ClientFrame::Status, &mut |event| early.push(event))
        .await?
    {
        ServerFrame::Status(status) => Some(status),
        _ => None,
    };
    let history = ClientFrame::History {
        before: None,
        limit: Some(RECENT),
    };
    let recent = match connection
        .request(&history, &mut |event| early.push(event))
        .await?
    {
        ServerFrame::History { messages } => messages,
        ServerFrame::Error { message, .. } => return Err(TerminalError::Refused(message)),
        _ => Vec::new(),
    };
    let mut out = banner(home, status.as_deref(), session.style);
    out.push('\n');
    let mut shows: Vec<Show> = recent
        .iter()
        .map(|message| session.on_message(message))
        .collect();
    shows.extend(early.iter().map(|event| session.on_event(event)));
    for show in shows {
        out.push_str(&show_once(display, session.style, show));
    }
    Ok(out)
}

/// What a show prints when nothing is live yet (the catch-up).
fn show_once(display: &mut Display, style: Style, show: Show) -> String {
    match show {
        Show::Line(line) => format!("{line}\n"),
        Show::Words {
            agent, at, text, ..
        } => {
            let header = look::header(&agent, &at, style, chrono::Local::now());
            display.finish(&header, &text)
        }
        _ => String::new(),
    }
}

/// Who this is, which model answers (or how to configure one), and how to
/// get about.
fn banner(home: &Home, status: Option<&hearth_protocol::Status>, style: Style) -> String {
    let agent = status.map_or("hearth", |status| status.agent.as_str());
    let mut out = format!(
        "{} · agent {}",
        style.agent("hearth"),
        look::sanitized(agent)
    );
    match status.and_then(|status| status.model.as_deref()) {
        Some(model) => out.push_str(&format!(" · model {}\n", look::sanitized(model))),
        None => {
            out.push_str(&style.error(" · no model configured"));
            out.push_str(&format!(
                "\n  Add to {}:\n    [model]\n    provider = \"openai\"\n    model = \"gpt-5-mini\"\n    api_key_env = \"OPENAI_API_KEY\"\n  (or a local server: provider = \"openai-chat\", model = \"qwen3:8b\",\n  base_url = \"http://127.0.0.1:11434/v1\"), then `hearth reload`;\n  `hearth setup` does it for you.\n",
                home.config_file().display()
            ));
        }
    }
    out.push_str(&style.grey(
        "Alt-Enter: new line · Ctrl-C: interrupt · Ctrl-D or /quit: leave · /help: commands",
    ));
    out
}

/// A stamp of this process's start, so that its keys differ from those of
/// an earlier process with the same pid.
pub fn start_stamp() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos())
}

/// A page of older messages as printed below what is on screen, between
/// two rules that say what it is.
pub fn older_page(session: &mut Session, messages: &[hearth_protocol::Message]) -> String {
    let style = session.style;
    let (Some(first), Some(last)) = (messages.first(), messages.last()) else {
        return style.grey("── nothing older ──");
    };
    let head = format!(
        "── {} earlier messages, #{} to #{} ──",
        messages.len(),
        first.id,
        last.id
    );
    session.paged_back_to(first.id);
    let mut out = style.grey(&head);
    out.push('\n');
    let now = chrono::Local::now();
    for message in messages {
        match session.older_message(message, now) {
            Show::Line(line) => {
                out.push_str(&line);
                out.push('\n');
            }
            Show::Words {
                agent, at, text, ..
            } => {
                out.push_str(&look::header(&agent, &at, style, now));
                out.push('\n');
                out.push_str(&style.body(&look::sanitized(&text)));
                out.push('\n');
            }
            _ => {}
        }
    }
    out.push_str(&style.grey("── back to now (PageUp or /history for more) ──"));
    out
}
