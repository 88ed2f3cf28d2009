//! The terminal's own commands: a line that starts with `/word` is for the
//! client and never reaches the model, except `/image` and `/file`, which
//! attach an image, or a document or audio file, to a message. A leading `//` sends the line with one slash.
//! Answers to approvals (`y`, `n`, `/approve ID`, `/deny ID`) are read
//! first, by `approvals.rs`.

/// How many messages `/history` shows when no number is given.
pub const HISTORY_PAGE: u32 = 20;

/// The most `/history N` shows at once.
const HISTORY_MAX: u32 = 1000;

/// What a typed line asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Typed {
    /// A message for the agent (with `/image` or `@PATH` images in it).
    Message(String),
    Help,
    Status,
    Stats,
    /// The `n` messages before the oldest shown.
    History(u32),
    Quit,
    /// `/word` that is no command: say which there are.
    Unknown(String),
    /// `/history` with something that is not a count.
    Usage(&'static str),
}

/// What `line` asks. A slash followed by a path (`/usr/bin is…`) is a
/// message: a command is a slash and letters, then a space or the end.
pub fn parse(line: &str) -> Typed {
    let trimmed = line.trim();
    if let Some(literal) = trimmed.strip_prefix("//") {
        return Typed::Message(format!("/{literal}"));
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Typed::Message(line.to_string());
    };
    let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let (word, argument) = rest.split_at(word_end);
    if word.is_empty() || !word.chars().all(|c| c.is_ascii_alphabetic()) {
        return Typed::Message(line.to_string());
    }
    let argument = argument.trim();
    match word {
        "image" | "file" => Typed::Message(line.to_string()),
        "help" => Typed::Help,
        "status" => Typed::Status,
        "stats" => Typed::Stats,
        "quit" | "exit" => Typed::Quit,
        "history" if argument.is_empty() => Typed::History(HISTORY_PAGE),
        "history" => match argument.parse::<u32>() {
            Ok(count) if count > 0 => Typed::History(count.min(HISTORY_MAX)),
            _ => Typed::Usage("/history N shows the N messages before the oldest shown"),
        },
        other => Typed::Unknown(other.to_string()),
    }
}

/// What `/help` says.
pub const HELP: &str = "\
Type a message and press Enter; Alt-Enter, or a line ending in \\, starts a new line.
  /image PATH words   send an image with your words (or @PATH words)
  /file PATH words    send a document (PDF, .txt, .md, .csv) or audio with your words
  /approve ID         allow a call that waits for approval (y answers the oldest)
  /deny ID            deny it (n answers the oldest)
  /status             what the agent is doing, its model, the cost today
  /stats              model requests, tokens and cost of the last days
  /history [N]        the N messages before the oldest shown (PageUp: 20)
  /quit               leave (Ctrl-D too); hearthd keeps running
  //text              send a message that starts with a slash
Ctrl-C interrupts a running turn; at an idle prompt, twice quits.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_commands_are_read_and_never_sent() {
        assert_eq!(parse("/help"), Typed::Help);
        assert_eq!(parse("  /status "), Typed::Status);
        assert_eq!(parse("/stats"), Typed::Stats);
        assert_eq!(parse("/quit"), Typed::Quit);
        assert_eq!(parse("/history"), Typed::History(HISTORY_PAGE));
        assert_eq!(parse("/history 50"), Typed::History(50));
        assert!(matches!(parse("/history lots"), Typed::Usage(_)));
        assert_eq!(
            parse("/frobnicate now"),
            Typed::Unknown("frobnicate".into())
        );
    }

    #[test]
    fn messages_paths_images_and_double_slashes_go_to_the_agent() {
        assert_eq!(parse("hello"), Typed::Message("hello".into()));
        assert_eq!(parse("//help me"), Typed::Message("/help me".into()));
        assert_eq!(
            parse("/usr/bin is full"),
            Typed::Message("/usr/bin is full".into())
        );
        assert_eq!(
            parse("/image cat.png look"),
            Typed::Message("/image cat.png look".into())
        );
        assert_eq!(parse("/"), Typed::Message("/".into()));
    }
}
