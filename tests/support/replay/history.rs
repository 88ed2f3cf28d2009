//! A synthetic personal-assistant history: seeded and deterministic, the same
//! seed gives the same messages at the same times on any machine.
//!
//! Weeks of days; each day a few sessions of turns; within a session, turns
//! a few seconds to a few minutes apart (sometimes a longer break), between
//! sessions hours. A turn takes a burst of one to three user messages —
//! mostly short, sometimes a long paste — and answers with a reply, often
//! after a chain of tool calls whose outputs can be large (up to the
//! daemon's 30,000-character clip). Now and then the daemon logs a note.

use hearth_daemon::model::ToolSpec;
use hearth_protocol::Kind;
use serde_json::json;

/// A tiny xorshift64* generator: deterministic, no dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    // A generator that never ends, not an iterator.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next() >> 11) as f64) < p * (1u64 << 53) as f64
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

/// The daemon's clip of a tool's output, in characters (all ASCII here).
pub const TOOL_CLIP: usize = 30_000;

/// A message as it reaches the log, before it has an id.
#[derive(Debug, Clone)]
pub struct Message {
    pub kind: Kind,
    pub source: &'static str,
    pub text: String,
    /// Seconds since the history began (a Monday, 00:00 UTC).
    pub at: u64,
    /// For an echo or a tool call: the step of the chain it belongs to.
    pub step: Option<u32>,
    /// For a tool message: the call and its output.
    pub call: Option<Call>,
}

#[derive(Debug, Clone)]
pub struct Call {
    pub id: String,
    pub name: &'static str,
    pub arguments: String,
    pub output: String,
}

/// What happens next in the history.
#[derive(Debug, Clone)]
pub enum Episode {
    /// A message that starts no turn.
    Note(Message),
    Turn(Turn),
}

/// One turn: what it takes, the chain it runs, the reply that ends it.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The user messages the turn takes, oldest first.
    pub taken: Vec<Message>,
    /// Per step of the chain, the echo (if any) and the tool calls logged
    /// after that step's request.
    pub steps: Vec<Vec<Message>>,
    pub reply: Message,
    /// When each model request is sent: one per step, then the one answered
    /// by the reply.
    pub requests_at: Vec<u64>,
}

impl Turn {
    pub fn messages(&self) -> usize {
        self.taken.len() + self.steps.iter().map(Vec::len).sum::<usize>() + 1
    }
}

/// The episodes of a history of at least `messages` messages.
pub fn generate(seed: u64, messages: u64) -> Vec<Episode> {
    Generator::new(seed, messages).collect()
}

/// Streams a history episode by episode, so a long one need not be held whole.
pub struct Generator {
    rng: Rng,
    /// Seconds since the start.
    clock: u64,
    logged: u64,
    limit: u64,
    session_left: u32,
    calls: u64,
}

const DAY: u64 = 86_400;
const HOUR: u64 = 3_600;

impl Generator {
    pub fn new(seed: u64, messages: u64) -> Generator {
        Generator {
            rng: Rng::new(seed),
            clock: 7 * HOUR,
            logged: 0,
            limit: messages,
            session_left: 0,
            calls: 0,
        }
    }

    /// Moves the clock to the next turn: a short gap within a session,
    /// hours to the next session, the next morning after the evening's last.
    fn next_turn_time(&mut self) {
        let rng = &mut self.rng;
        if self.session_left > 0 {
            self.session_left -= 1;
            self.clock += if rng.chance(0.08) {
                rng.between(10 * 60, 30 * 60)
            } else if rng.chance(0.3) {
                rng.between(90, 480)
            } else {
                rng.between(15, 120)
            };
            return;
        }
        self.session_left = rng.between(2, 14) as u32;
        let gap = rng.between(40 * 60, 5 * HOUR);
        let day_start = self.clock / DAY * DAY;
        if self.clock + gap > day_start + 23 * HOUR {
            self.clock = day_start + DAY + 7 * HOUR + rng.between(0, 2 * HOUR);
        } else {
            self.clock += gap;
        }
    }

    fn user_message(&mut self, at: u64) -> Message {
        let rng = &mut self.rng;
        let size = if rng.chance(0.05) {
            rng.between(2_000, 12_000)
        } else if rng.chance(0.26) {
            rng.between(200, 1_000)
        } else {
            rng.between(12, 200)
        };
        let source = *rng.pick(&["terminal", "terminal", "telegram", "telegram", "whatsapp"]);
        message(Kind::User, source, prose(rng, size as usize), at)
    }

    fn tool_call(&mut self, step: u32, at: u64) -> Message {
        self.calls += 1;
        let id = format!("call_{:06}", self.calls);
        let rng = &mut self.rng;
        let (name, arguments, size) = match rng.between(0, 9) {
            0 => ("date", "{}".to_string(), 40),
            1 | 2 => (
                "shell",
                json!({"command": format!("grep -rn {} ~/notes | head -200", word(rng))})
                    .to_string(),
                size_class(rng, [0.3, 0.5, 0.2]),
            ),
            3 | 4 => (
                "web_fetch",
                json!({"url": format!("https://{}.example.org/{}", word(rng), word(rng))})
                    .to_string(),
                size_class(rng, [0.1, 0.4, 0.5]),
            ),
            5 | 6 => (
                "read_file",
                json!({"path": format!("notes/{}.md", word(rng))}).to_string(),
                size_class(rng, [0.3, 0.5, 0.2]),
            ),
            7 => (
                "write_file",
                json!({"path": format!("notes/{}.md", word(rng)), "content": prose(rng, 600)})
                    .to_string(),
                60,
            ),
            8 => (
                "zoom",
                json!({"id": rng.between(0, 5_000), "n": 1 << rng.between(0, 5)}).to_string(),
                size_class(rng, [0.6, 0.4, 0.0]),
            ),
            _ => (
                "schedule",
                json!({"at": "tomorrow 09:00", "text": prose(rng, 60)}).to_string(),
                80,
            ),
        };
        let output = tool_output(rng, size as usize);
        let text = format!("{name}({arguments}) → {output}");
        let mut message = message(Kind::Tool, "main", text, at);
        message.step = Some(step);
        message.call = Some(Call {
            id,
            name,
            arguments,
            output,
        });
        message
    }

    fn turn(&mut self) -> Turn {
        let burst = match self.rng.between(0, 19) {
            0 => 3,
            1..=3 => 2,
            _ => 1,
        };
        let mut at = self.clock;
        let mut taken = Vec::new();
        for _ in 0..burst {
            taken.push(self.user_message(at));
            at += self.rng.between(3, 40);
        }
        let steps = if self.rng.chance(0.55) {
            *self.rng.pick(&[1, 1, 1, 1, 2, 2, 2, 3, 3, 4])
        } else {
            0
        };
        let mut requests_at = Vec::new();
        let mut chain = Vec::new();
        for step in 0..steps {
            requests_at.push(at);
            at += self.rng.between(2, 12);
            let mut logged = Vec::new();
            if self.rng.chance(0.3) {
                let size = self.rng.between(30, 200) as usize;
                let mut echo = message(Kind::Echo, "main", prose(&mut self.rng, size), at);
                echo.step = Some(step);
                logged.push(echo);
            }
            for _ in 0..if self.rng.chance(0.2) { 2 } else { 1 } {
                at += self.rng.between(1, 30);
                logged.push(self.tool_call(step, at));
            }
            chain.push(logged);
        }
        requests_at.push(at);
        at += self.rng.between(3, 25);
        let size = if self.rng.chance(0.1) {
            self.rng.between(3_000, 6_000)
        } else {
            self.rng.between(60, 1_500)
        };
        let reply = message(Kind::Reply, "main", prose(&mut self.rng, size as usize), at);
        self.clock = at;
        Turn {
            taken,
            steps: chain,
            reply,
            requests_at,
        }
    }
}

impl Iterator for Generator {
    type Item = Episode;

    fn next(&mut self) -> Option<Episode> {
        if self.logged >= self.limit {
            return None;
        }
        self.next_turn_time();
        if self.rng.chance(0.01) {
            self.logged += 1;
            let text = match self.rng.between(0, 2) {
                0 => "hearthd restarted".to_string(),
                1 => format!("schedule `{}` fired", word(&mut self.rng)),
                _ => format!(
                    "refused a message from +{}",
                    self.rng.between(1e9 as u64, 1e10 as u64)
                ),
            };
            return Some(Episode::Note(message(
                Kind::Note,
                "hearthd",
                text,
                self.clock,
            )));
        }
        let turn = self.turn();
        self.logged += turn.messages() as u64;
        Some(Episode::Turn(turn))
    }
}

fn message(kind: Kind, source: &'static str, text: String, at: u64) -> Message {
    Message {
        kind,
        source,
        text,
        at,
        step: None,
        call: None,
    }
}

/// A tool output's size: small, medium or large (up to the clip), with the
/// given probabilities.
fn size_class(rng: &mut Rng, odds: [f64; 3]) -> u64 {
    let roll = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
    if roll < odds[0] {
        rng.between(40, 400)
    } else if roll < odds[0] + odds[1] {
        rng.between(800, 5_000)
    } else {
        rng.between(8_000, TOOL_CLIP as u64)
    }
}

const WORDS: &[&str] = &[
    "the",
    "a",
    "to",
    "and",
    "of",
    "in",
    "for",
    "on",
    "with",
    "at",
    "is",
    "it",
    "that",
    "we",
    "you",
    "I",
    "can",
    "will",
    "should",
    "meeting",
    "invoice",
    "dentist",
    "flight",
    "train",
    "Berlin",
    "Lisbon",
    "tomorrow",
    "Monday",
    "Friday",
    "budget",
    "report",
    "draft",
    "email",
    "Anna",
    "Marco",
    "Yuki",
    "landlord",
    "rent",
    "tax",
    "receipt",
    "calendar",
    "reminder",
    "recipe",
    "groceries",
    "gym",
    "doctor",
    "project",
    "deadline",
    "review",
    "notes",
    "idea",
    "book",
    "hotel",
    "price",
    "euros",
    "call",
    "plan",
    "week",
    "morning",
    "evening",
    "list",
    "compare",
    "summary",
    "error",
    "server",
    "backup",
    "photo",
    "garden",
    "bike",
    "repair",
    "insurance",
    "contract",
    "renewal",
    "birthday",
    "gift",
    "party",
    "school",
    "kids",
    "weather",
    "rain",
    "ticket",
    "museum",
    "dinner",
    "table",
    "question",
    "answer",
    "check",
    "update",
];

fn word(rng: &mut Rng) -> &'static str {
    let &word = rng.pick(WORDS);
    word
}

/// Sentences of words and numbers, in paragraphs, `size` bytes long.
fn prose(rng: &mut Rng, size: usize) -> String {
    let mut text = String::with_capacity(size + 16);
    while text.len() < size {
        let words = rng.between(5, 18);
        for i in 0..words {
            if i > 0 {
                text.push(' ');
            }
            if rng.chance(0.06) {
                text.push_str(&rng.between(1, 9_999).to_string());
            } else {
                text.push_str(word(rng));
            }
        }
        text.push_str(if rng.chance(0.15) { ".\n" } else { ". " });
    }
    text.truncate(size);
    text.trim_end().to_string()
}

/// Tool output: lines like a grep's, a page's or a file's, `size` bytes long.
fn tool_output(rng: &mut Rng, size: usize) -> String {
    let mut text = String::with_capacity(size + 64);
    while text.len() < size {
        let file = word(rng);
        let line = rng.between(1, 400);
        let len = rng.between(20, 90) as usize;
        text.push_str(&format!("{file}.md:{line}: {}\n", prose(rng, len)));
    }
    text.truncate(size);
    text
}

/// The agent's instructions in the replay: the daemon's preamble and a
/// prompt file of a realistic size.
pub fn instructions() -> String {
    let prompt = "You are Sam's assistant. Be brief. Keep track of appointments, bills and \
                  travel; write notes to the notes folder; check the calendar before you \
                  promise a time. "
        .repeat(8);
    format!("{}\n\n{}", hearth_daemon::request::PREAMBLE, prompt.trim())
}

/// The agent's tools in the replay: the families the daemon offers, with
/// schemas of realistic size.
pub fn tools() -> Vec<ToolSpec> {
    let spec = |name: &str, description: &str, properties: serde_json::Value| ToolSpec {
        name: name.to_string(),
        description: description.to_string(),
        parameters: json!({
            "type": "object",
            "properties": properties,
            "additionalProperties": false
        }),
    };
    let path = json!({"type": "string", "description": "A path inside the agent's folder."});
    vec![
        spec(
            "date",
            "The current local date and time (ISO 8601 with offset). With `id`, when that message was written instead.",
            json!({"id": {"type": "integer", "minimum": 0, "description": "A message id from the chat."}}),
        ),
        spec(
            "shell",
            "Runs a command with bash in the agent's folder, in its own process group, with a time limit; returns its exit status and output (head and tail kept when long).",
            json!({"command": {"type": "string"}, "timeout_secs": {"type": "integer", "minimum": 1}}),
        ),
        spec("read_file", "Reads a text file in the agent's folder.", json!({"path": path, "offset": {"type": "integer"}, "limit": {"type": "integer"}})),
        spec("write_file", "Writes a text file in the agent's folder, replacing it.", json!({"path": path, "content": {"type": "string"}})),
        spec("edit_file", "Replaces one exact occurrence of `old` with `new` in a file.", json!({"path": path, "old": {"type": "string"}, "new": {"type": "string"}})),
        spec("list_files", "Lists a folder in the agent's folder.", json!({"path": path})),
        spec("web_fetch", "Fetches a web page and returns its text.", json!({"url": {"type": "string"}})),
        spec(
            "zoom",
            "Opens node `id+n` of your memory into the two lines it was made from; n = 1 gives the message whole.",
            json!({"id": {"type": "integer", "minimum": 0}, "n": {"type": "integer", "minimum": 1}}),
        ),
        spec(
            "schedule",
            "Schedules a message to yourself at a time or on a cron expression, in the user's time zone.",
            json!({"at": {"type": "string"}, "cron": {"type": "string"}, "text": {"type": "string"}}),
        ),
    ]
}

/// `at` (seconds since the start) as the daemon's state shows local time.
pub fn clock_text(at: u64) -> String {
    let weekday = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ][(at / DAY % 7) as usize];
    format!("{} ({weekday})", log_time(at))
}

/// `at` as the log stores a message's time (RFC 3339).
pub fn log_time(at: u64) -> String {
    let days = at / DAY;
    let (year, month, day) = civil_from_days(days as i64 + 20_703); // 2026-09-07, a Monday
    let secs = at % DAY;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}+00:00",
        secs / HOUR,
        secs % HOUR / 60,
        secs % 60
    )
}

/// Days since 1970-01-01 as a date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(clock_text(0), "2026-09-07T00:00:00+00:00 (Monday)");
        assert_eq!(
            clock_text(DAY * 30 + 3_661),
            "2026-10-07T01:01:01+00:00 (Wednesday)"
        );
    }
}
