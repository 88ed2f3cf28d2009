//! Recall canaries: facts planted at known ages in the replayed history,
//! then looked for as the agent would — `search` through the daemon's real
//! full-text index (a real log database, every message appended and every
//! line of the tree stored), and `zoom` down the tree from the final view.
//!
//! Each canary is a user message whose first words state a fact; it is
//! found when one of the first five hits of its query is its message or a
//! line that covers it, and reachable when the view's node that covers it
//! opens, level by level, down to the message.

use super::hearth::Hearth;
use super::history::{self, Episode, Generator};
use super::report::Meter;
use super::strategies::{Replay, Strategy, AGENT};
use hearth_daemon::layout::Layout;
use hearth_daemon::log::{Entry, Log, NewMessage, TurnRecord};
use hearth_daemon::memory::search::Query;
use hearth_daemon::memory::{MemoryLog, SearchLog};

/// How many of the first hits count.
pub const FIRST_HITS: u32 = 5;

/// A fact, the words that look for it, and where in the history it is
/// planted (a share of the messages).
pub struct Canary {
    pub fact: &'static str,
    pub query: &'static str,
    pub at: f64,
}

pub const CANARIES: [Canary; 8] = [
    Canary {
        fact: "The plumber is Bo Lindqvist, his number is 0176 5550192.",
        query: "plumber number",
        at: 0.02,
    },
    Canary {
        fact: "Our wifi password is marmalade-otter-42.",
        query: "wifi password",
        at: 0.10,
    },
    Canary {
        fact: "Aunt Theodora's birthday is the ninth of March.",
        query: "Theodora birthday",
        at: 0.25,
    },
    Canary {
        fact: "The storage unit at Lagerhus Nord has the code 7731.",
        query: "storage unit code",
        at: 0.40,
    },
    Canary {
        fact: "Dr. Okonkwo moved the dentist appointment to Thursday at 8.",
        query: "Okonkwo dentist appointment",
        at: 0.55,
    },
    Canary {
        fact: "The lease on Fernweg 12 ends in September; we give notice by June.",
        query: "lease Fernweg notice",
        at: 0.70,
    },
    Canary {
        fact: "Sam's passport expires in 2031; its number ends in 4471.",
        query: "passport expires",
        at: 0.85,
    },
    Canary {
        fact: "The spare key is under the blue heron statue by the shed.",
        query: "spare key heron",
        at: 0.97,
    },
];

/// What became of one canary.
#[derive(Debug, Clone)]
pub struct Found {
    pub query: &'static str,
    /// The message that states it.
    pub id: u64,
    /// Where among the hits the first one covering it came (1 = first);
    /// none when not among the first [`FIRST_HITS`].
    pub rank: Option<usize>,
    /// Whether that hit was the message itself rather than a line over it.
    pub message_hit: bool,
    /// Whether zoom reaches it from the final view.
    pub reachable: bool,
}

/// The canaries of one replay.
#[derive(Debug, Clone)]
pub struct Recall {
    pub messages: u64,
    pub found: Vec<Found>,
}

impl Recall {
    /// The share of canaries found among the first hits and reachable.
    pub fn rate(&self) -> f64 {
        let good = self
            .found
            .iter()
            .filter(|found| found.rank.is_some() && found.reachable)
            .count();
        good as f64 / self.found.len().max(1) as f64
    }

    /// A markdown table of the canaries, and the rate.
    pub fn table(&self) -> String {
        let mut out = String::from(
            "| canary | message | age (messages) | query | rank | hit | zoom reaches it |\n\
             |---|---:|---:|---|---:|---|---|\n",
        );
        for (found, canary) in self.found.iter().zip(&CANARIES) {
            out.push_str(&format!(
                "| {} | {} | {} | `{}` | {} | {} | {} |\n",
                canary
                    .fact
                    .split_whitespace()
                    .take(4)
                    .collect::<Vec<_>>()
                    .join(" "),
                found.id,
                self.messages.saturating_sub(found.id),
                found.query,
                found.rank.map_or("—".to_string(), |rank| rank.to_string()),
                if found.rank.is_none() {
                    "not found"
                } else if found.message_hit {
                    "the message"
                } else {
                    "a line over it"
                },
                if found.reachable { "yes" } else { "NO" }
            ));
        }
        out.push_str(&format!(
            "\nRecall: {:.0}% of {} canaries found in the first {FIRST_HITS} hits of `search` and \
             reachable by `zoom` (goal: 100%).\n",
            self.rate() * 100.0,
            self.found.len()
        ));
        out
    }
}

/// Keeps every entry the replay logs, to append them to a real log.
#[derive(Default)]
struct Recorder(Vec<Entry>);

impl Strategy for Recorder {
    fn logged(&mut self, entry: &Entry, _: &mut Meter) {
        self.0.push(entry.clone());
    }

    fn request(&mut self, _: TurnRecord, _: &[Entry], _: &str, _: &mut Meter) {}
}

/// Replays `messages` messages of history `seed` with the canaries planted,
/// through hearth's tree and views, then looks for each canary.
pub fn recall(seed: u64, messages: u64) -> Recall {
    let layout = match Layout::find("default") {
        Ok(layout) => layout,
        Err(err) => panic!("the default layout: {err}"),
    };
    let mut hearth = Hearth::new(
        layout,
        &history::instructions(),
        &history::tools(),
        false,
        false,
    );
    let mut recorder = Recorder::default();
    let mut meters = [Meter::new("hearth", &[600]), Meter::new("log", &[600])];
    let mut replay = Replay::new(u64::MAX);
    let targets: Vec<u64> = CANARIES
        .iter()
        .map(|canary| (canary.at * messages as f64) as u64)
        .collect();
    let mut planted: Vec<u64> = Vec::new();
    let mut logged = 0u64;
    for mut episode in Generator::new(seed, messages) {
        if let Episode::Turn(turn) = &mut episode {
            if let Some(&target) = targets.get(planted.len()) {
                if logged >= target {
                    let canary = &CANARIES[planted.len()];
                    let first = &mut turn.taken[0];
                    first.text = format!("{} {}", canary.fact, first.text);
                    planted.push(logged);
                }
            }
        }
        logged += match &episode {
            Episode::Note(_) => 1,
            Episode::Turn(turn) => turn.messages() as u64,
        };
        let mut strategies: [&mut dyn Strategy; 2] = [&mut hearth, &mut recorder];
        replay.episode(&episode, &mut strategies, &mut meters);
    }
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(err) => panic!("a runtime for the log: {err}"),
    };
    let hits = runtime.block_on(search_all(&recorder.0, &hearth));
    let found = CANARIES
        .iter()
        .zip(&planted)
        .zip(hits)
        .map(|((canary, &id), hits)| {
            let rank = hits
                .iter()
                .position(|&(first, n)| first <= id && id < first + n);
            Found {
                query: canary.query,
                id,
                rank: rank.map(|at| at + 1),
                message_hit: rank.is_some_and(|at| hits[at] == (id, 1)),
                reachable: hearth.reachable(id),
            }
        })
        .collect();
    Recall {
        messages: logged,
        found,
    }
}

/// Appends the whole log to a real database, stores every line of the
/// tree, and runs each canary's query: the first hits' nodes, per canary.
async fn search_all(entries: &[Entry], hearth: &Hearth) -> Vec<Vec<(u64, u64)>> {
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => panic!("a folder for the log: {err}"),
    };
    let (events, _) = tokio::sync::broadcast::channel(16);
    let log = match Log::open(&dir.path().join("hearth.db"), events) {
        Ok(log) => log,
        Err(err) => panic!("the log: {err}"),
    };
    for chunk in entries.chunks(500) {
        let batch = chunk
            .iter()
            .map(|entry| {
                let message = &entry.message;
                let mut new = NewMessage::new(message.kind, &message.source, message.text.clone());
                new.status = message
                    .status
                    .as_deref()
                    .and_then(hearth_protocol::MessageStatus::parse);
                new.data = entry.data.clone();
                new
            })
            .collect();
        if let Err(err) = log.append_all(AGENT, batch).await {
            panic!("appending to the log: {err}");
        }
    }
    if let Err(err) = log.insert_nodes(AGENT, hearth.built()).await {
        panic!("storing the tree: {err}");
    }
    let mut all = Vec::new();
    for canary in &CANARIES {
        let query = match Query::read(canary.query, None, None, None, None, Some(FIRST_HITS)) {
            Ok(query) => query,
            Err(err) => panic!("canary query `{}`: {err}", canary.query),
        };
        match log.search(AGENT, query).await {
            Ok(hits) => all.push(hits.iter().map(|hit| (hit.id, hit.n)).collect()),
            Err(err) => panic!("searching the log: {err}"),
        }
    }
    all
}
