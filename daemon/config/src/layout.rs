//! Layouts: TOML files that size an agent's memory and split its view into
//! request messages. The files in `layouts/` are built into the daemon; an
//! agent names one in `[agent] layout` (`default`, `small`) or gives a path to
//! its own. A layout that is unknown, unreadable or wrong stops the start with
//! the file, the key and the reason.

use crate::model::ModelConfig;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The layouts built into the daemon, by name.
const BUILT_IN: &[(&str, &str)] = &[
    ("default", include_str!("../../../layouts/default.toml")),
    ("small", include_str!("../../../layouts/small.toml")),
];

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// Lines of the view per request message.
    pub block_lines: usize,
    /// Bytes a line may take: a message this short is its own line, and
    /// two lines that fit together are their parent …
    pub line_budget: usize,
    /// … the length a summary the compactor writes is asked for (its
    /// ruler); none: the line budget. Half of it lets two summaries side
    /// by side be their parent with no call.
    #[serde(default)]
    pub summary_budget: Option<usize>,
    /// … and where a line still too long after every try is cut.
    pub line_guard: usize,
    /// The turn view's budgets.
    pub high_budget: usize,
    pub low_budget: usize,
    /// A message logged more than `idle_secs` after the one before it finds
    /// the provider's cache empty: taking it, the turn view starts its batch
    /// once past `idle_budget` rather than `high_budget`, so the batch due
    /// soon breaks no warm cache. None: no early batch.
    #[serde(default)]
    pub idle_secs: Option<u64>,
    #[serde(default)]
    pub idle_budget: Option<usize>,
    /// The compaction view's budgets.
    pub compaction_high_budget: usize,
    pub compaction_low_budget: usize,
    pub compactor_concurrency: usize,
    pub compactor_ahead: usize,
    pub compactor_tries: u32,
    pub compactor_failures: u32,
    pub compactor_backoff_ms: u64,
    /// A message or tool output longer than this many bytes goes into
    /// requests as its head and tail (`memory/huge.rs`); none: an eighth
    /// of `low_budget`.
    #[serde(default)]
    pub huge_message: Option<usize>,
    /// A separate prompt for compaction requests; none: the turn's own.
    #[serde(default)]
    pub compaction_prompt: Option<String>,
    /// The view budgets are ceilings: for a model whose window is smaller
    /// than the layout's largest request needs, the start shrinks them to
    /// fit ([`Layout::shrunk_to`]) rather than refusing, down to
    /// [`Layout::least_view`]. The `small` layout does, so it serves 8k
    /// windows as well as 32k ones.
    #[serde(default)]
    pub shrink_to_window: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error(
        "unknown layout `{name}`; the built-in layouts are {known}, or give a path to a .toml file"
    )]
    Unknown { name: String, known: String },
    #[error("cannot read layout {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("layout {file}: {message}")]
    Broken { file: String, message: String },
}

impl Layout {
    /// A built-in layout by name, or a layout file by path.
    pub fn find(name: &str) -> Result<Layout, LayoutError> {
        if let Some((_, text)) = BUILT_IN.iter().find(|(known, _)| *known == name) {
            return Layout::parse(&format!("layouts/{name}.toml"), text);
        }
        if name.ends_with(".toml") || name.contains('/') {
            let path = Path::new(name);
            let text = std::fs::read_to_string(path).map_err(|source| LayoutError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            return Layout::parse(name, &text);
        }
        Err(LayoutError::Unknown {
            name: name.to_string(),
            known: BUILT_IN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        })
    }

    pub fn parse(file: &str, text: &str) -> Result<Layout, LayoutError> {
        let broken = |message: String| LayoutError::Broken {
            file: file.to_string(),
            message,
        };
        let layout: Layout = toml::from_str(text).map_err(|err| {
            let line = crate::toml_error::toml_error_line(text, &err);
            broken(format!("line {line}: {}", err.message().trim()))
        })?;
        let checks = [
            (layout.block_lines == 0, "`block_lines` must be at least 1"),
            (
                layout.line_budget < 16,
                "`line_budget` must be at least 16 bytes",
            ),
            (
                layout
                    .summary_budget
                    .is_some_and(|bytes| bytes < 16 || bytes > layout.line_budget),
                "`summary_budget` must be at least 16 bytes and at most `line_budget`",
            ),
            (
                layout.line_guard < layout.line_budget,
                "`line_guard` must be at least `line_budget`",
            ),
            (
                layout.low_budget > layout.high_budget,
                "`low_budget` must be at most `high_budget`",
            ),
            (
                layout.idle_secs.is_some() != layout.idle_budget.is_some(),
                "`idle_secs` and `idle_budget` go together",
            ),
            (
                layout
                    .idle_budget
                    .is_some_and(|bytes| bytes < layout.low_budget || bytes > layout.high_budget),
                "`idle_budget` must be at least `low_budget` and at most `high_budget`",
            ),
            (
                layout.idle_secs.is_some_and(|secs| secs < 60),
                "`idle_secs` must be at least 60",
            ),
            (
                layout.compaction_low_budget > layout.compaction_high_budget,
                "`compaction_low_budget` must be at most `compaction_high_budget`",
            ),
            (
                layout.compactor_concurrency == 0,
                "`compactor_concurrency` must be at least 1",
            ),
            (
                layout.compactor_ahead == 0,
                "`compactor_ahead` must be at least 1",
            ),
            (
                layout.compactor_tries == 0,
                "`compactor_tries` must be at least 1",
            ),
            (
                layout.compactor_failures == 0,
                "`compactor_failures` must be at least 1",
            ),
        ];
        match checks.iter().find(|(wrong, _)| *wrong) {
            Some((_, why)) => Err(broken(why.to_string())),
            None => Ok(layout),
        }
    }

    /// The length a summary is asked for: its ruler.
    pub fn summary_budget(&self) -> usize {
        self.summary_budget.unwrap_or(self.line_budget)
    }

    /// The idle gap, in seconds, after which a message may start the turn
    /// view's batch early; none when the layout has no early batch.
    pub fn idle_gap(&self) -> Option<u64> {
        self.idle_budget.and(self.idle_secs)
    }

    /// Whether the view budgets shrink to a smaller window.
    pub fn shrinks_to_window(&self) -> bool {
        self.shrink_to_window
    }

    /// The least view a shrunk layout keeps: two blocks of lines at their
    /// guard, so a turn still sees the last exchanges whole.
    pub fn least_view(&self) -> usize {
        2 * self.block_lines * self.line_guard
    }

    /// This layout with its turn view's budgets at most `turn_view` bytes
    /// and its compaction view's at most `compaction_view` (never below
    /// [`Layout::least_view`]), each low budget (and the idle one) kept in
    /// the same proportion to its high one.
    pub fn shrunk_to(&self, turn_view: usize, compaction_view: usize) -> Layout {
        let least = self.least_view();
        let scale = |value: usize, from: usize, to: usize| {
            if from == 0 {
                value
            } else {
                (value as u128 * to as u128 / from as u128) as usize
            }
        };
        let mut layout = self.clone();
        let high = self.high_budget.min(turn_view.max(least));
        layout.high_budget = high;
        layout.low_budget = scale(self.low_budget, self.high_budget, high);
        layout.idle_budget = self
            .idle_budget
            .map(|idle| scale(idle, self.high_budget, high));
        let compaction_high = self.compaction_high_budget.min(compaction_view.max(least));
        layout.compaction_high_budget = compaction_high;
        layout.compaction_low_budget = scale(
            self.compaction_low_budget,
            self.compaction_high_budget,
            compaction_high,
        );
        layout
    }

    /// Where a message is too large to go into a request whole.
    pub fn huge_limit(&self) -> usize {
        self.huge_message.unwrap_or(self.low_budget / 8).max(64)
    }
}

/// A view's budgets, in rendered bytes: past `high` a batch starts, and it
/// ends within `low`; taking a message that follows an idle gap, a batch
/// starts past `idle` already.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    pub high: usize,
    pub low: usize,
    pub idle: usize,
}

/// The budgets a layout gives the two views (the memory's view reads
/// them; `memory/view.rs`).
impl Layout {
    pub fn turn_budgets(&self) -> Budgets {
        Budgets {
            high: self.high_budget,
            low: self.low_budget,
            idle: self.idle_budget.unwrap_or(self.high_budget),
        }
    }

    pub fn compaction_budgets(&self) -> Budgets {
        Budgets {
            high: self.compaction_high_budget,
            low: self.compaction_low_budget,
            idle: self.compaction_high_budget,
        }
    }
}

/// The instructions and tools the daemon sends besides the view, in bytes,
/// as estimated where they are not at hand yet (setup, the no-configuration
/// path): generously (the built-in tools and prompt take about 8,200), since
/// the start checks the real ones.
pub const FIXED_ESTIMATE: usize = 12_000;

/// The built-in layout for a model with `window` tokens, as setup and the
/// daemon's no-configuration path both pick it: `default` when its largest
/// turn fits, else `small` (which shrinks to the window), else none, with
/// what `small` would need. `fixed_bytes` estimates the instructions and
/// tools.
pub fn pick_layout(
    config: &ModelConfig,
    window: u32,
    fixed_bytes: usize,
) -> Result<&'static str, u32> {
    let mut config = config.clone();
    config.context_window = Some(window);
    let turn = |layout: &Layout, view_bytes: usize| crate::model::window::Largest {
        purpose: "turn",
        view_bytes,
        fixed_bytes,
        own_bytes: layout.huge_limit(),
    };
    let fits = |name: &str| {
        let layout = Layout::find(name).ok()?;
        let least = if layout.shrinks_to_window() {
            layout.least_view()
        } else {
            layout.high_budget
        };
        let need = turn(&layout, least).tokens(&config);
        Some((need <= window, need))
    };
    match (fits("default"), fits("small")) {
        (Some((true, _)), _) => Ok("default"),
        (_, Some((true, _))) => Ok("small"),
        (_, small) => Err(small.map_or(u32::MAX, |(_, need)| need)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_layout_reads() {
        for (name, _) in BUILT_IN {
            Layout::find(name).unwrap();
        }
        assert_eq!(Layout::find("default").unwrap().block_lines, 4);
        assert!(Layout::find("small").unwrap().compaction_prompt.is_some());
        assert_eq!(Layout::find("default").unwrap().huge_limit(), 8_000);
    }

    #[test]
    fn a_shrunk_layout_keeps_its_proportions_and_its_least_view() {
        let small = Layout::find("small").unwrap();
        assert!(small.shrinks_to_window());
        assert!(!Layout::find("default").unwrap().shrinks_to_window());
        let shrunk = small.shrunk_to(6_000, 5_000);
        assert_eq!(shrunk.high_budget, 6_000);
        assert_eq!(shrunk.low_budget, 3_000);
        assert_eq!(shrunk.compaction_high_budget, 5_000);
        assert_eq!(shrunk.compaction_low_budget, 2_500);
        assert!(shrunk.huge_limit() < small.huge_limit());
        // A larger room changes nothing; a tiny one stops at the least view.
        assert_eq!(small.shrunk_to(1_000_000, 1_000_000), small);
        assert_eq!(small.shrunk_to(10, 10).high_budget, small.least_view());
        let default = Layout::find("default").unwrap().shrunk_to(60_000, 60_000);
        let idle = default.idle_budget.unwrap();
        assert!(default.low_budget <= idle && idle <= default.high_budget);
    }

    #[test]
    fn an_unknown_layout_names_the_known_ones() {
        let err = Layout::find("huge").unwrap_err().to_string();
        assert!(err.contains("default, small"), "{err}");
    }

    #[test]
    fn a_wrong_layout_names_the_file_and_the_key() {
        let text = include_str!("../../../layouts/default.toml")
            .replace("low_budget = 64000", "low_budget = 999999");
        let err = Layout::parse("mine.toml", &text).unwrap_err().to_string();
        assert_eq!(
            err,
            "layout mine.toml: `low_budget` must be at most `high_budget`"
        );
        let err = Layout::parse("mine.toml", "block_lines = 4\nfoo = 1")
            .unwrap_err()
            .to_string();
        assert!(err.contains("mine.toml") && err.contains("foo"), "{err}");
    }

    #[test]
    fn a_summary_is_asked_for_at_most_a_line() {
        let default = Layout::find("default").unwrap();
        // Two summaries and the newline between them fit one line.
        assert!(2 * default.summary_budget() < default.line_budget);
        let text = include_str!("../../../layouts/default.toml")
            .replace("summary_budget = 255", "summary_budget = 600");
        let err = Layout::parse("mine.toml", &text).unwrap_err().to_string();
        assert!(err.contains("`summary_budget` must be"), "{err}");
        // A layout that names none asks for lines as long as the budget.
        let small = Layout::find("small").unwrap();
        assert_eq!(small.summary_budget(), small.line_budget);
    }

    #[test]
    fn an_early_batch_needs_both_its_keys_and_a_budget_between_the_two() {
        let default = Layout::find("default").unwrap();
        assert_eq!(default.idle_gap(), Some(3600));
        assert!(Layout::find("small").unwrap().idle_gap().is_none());
        let text = include_str!("../../../layouts/default.toml");
        for (from, to, said) in [
            (
                "idle_secs = 3600",
                "",
                "`idle_secs` and `idle_budget` go together",
            ),
            (
                "idle_budget = 120000",
                "idle_budget = 130000",
                "`idle_budget` must be at least",
            ),
            (
                "idle_budget = 120000",
                "idle_budget = 1000",
                "`idle_budget` must be at least",
            ),
            (
                "idle_secs = 3600",
                "idle_secs = 5",
                "`idle_secs` must be at least 60",
            ),
        ] {
            assert!(text.contains(from));
            let err = Layout::parse("mine.toml", &text.replace(from, to))
                .unwrap_err()
                .to_string();
            assert!(err.contains(said), "{err}");
        }
    }
}

#[cfg(test)]
mod fuzz {
    //! Property tests: no text makes `Layout::parse` panic, and every
    //! refusal names the file and a line or a key.
    use super::*;
    use proptest::prelude::*;

    /// The default layout's lines, some changed or dropped, and noise.
    fn file() -> impl Strategy<Value = String> {
        let lines: Vec<String> = include_str!("../../../layouts/default.toml")
            .lines()
            .map(str::to_string)
            .collect();
        let count = lines.len();
        proptest::collection::vec(
            prop_oneof![
                (0..count).prop_map(move |n| lines[n].clone()),
                "[a-z_]{1,24} = -?[0-9]{1,7}",
                "[\\[\\]=\"a-zé✓ .#0-9_]{0,20}",
                any::<String>(),
            ],
            0..24,
        )
        .prop_map(|lines| lines.join("\n"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_text_parses_or_names_a_line_or_key(text in file()) {
            match Layout::parse("mine.toml", &text) {
                Ok(layout) => prop_assert!(layout.block_lines >= 1 && layout.low_budget <= layout.high_budget),
                Err(err) => {
                    let said = err.to_string();
                    prop_assert!(said.starts_with("layout mine.toml"), "{}", said);
                    prop_assert!(said.contains(" line ") || said.contains('`'), "{}", said);
                }
            }
        }
    }
}
