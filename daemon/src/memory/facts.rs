//! Pinned facts: a small block of facts the agent keeps in view for good
//! (a person's name, preferences, standing commitments), edited with the
//! `remember` / `forget` tools and by the user (`hearth memory facts`).
//!
//! The block is bounded ([`FACTS_LIMIT`] bytes as the request shows it, one
//! line per fact of at most [`FACT_LIMIT`] bytes): a fact that does not fit
//! is refused with the reason, never cut or dropped. The facts live in the
//! `facts` table; every change is also in the log (the tool's message, or
//! the note a user's edit writes in the same transaction), so the log stays
//! the truth. Each turn's state message shows them (see `turn.rs`).
//!
//! A fact remembered in a tainted turn is untrusted: it keeps what tainted
//! the turn, shows as `[untrusted] … (remembered after …)` in the request
//! and in `hearth memory facts`, and taints every turn that shows it, so a
//! page cannot pin words that later turns take as the owner's.
//!
//! Every change records a digest of the whole block it leaves, in its
//! transaction (`log/facts_record.rs`): facts edited in the table from
//! outside hearth are found at start and by `hearth verify`, and shown as
//! untrusted, the same way, until a change through hearth stores them so.

use super::tree::one_line;
use crate::log::{Log, LogError, NewMessage};
use rusqlite::{params, Connection};

/// The most bytes the block of facts takes in a request.
pub const FACTS_LIMIT: usize = 4096;

/// The most bytes one fact takes.
pub const FACT_LIMIT: usize = 512;

/// Why a fact found changed outside hearth is untrusted, in words that
/// follow "remembered".
const CHANGED_OUTSIDE: &str =
    "after the pinned facts were changed outside hearth (they did not match the log's record)";

/// What heads the block in the state message.
const HEAD: &str = "Pinned facts (yours to keep with remember and forget):";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FactError {
    #[error("the fact is empty")]
    Empty,
    #[error("a fact is at most {FACT_LIMIT} bytes, this one is {0}; say it shorter")]
    TooLong(usize),
    #[error("the pinned facts are full ({used} of {FACTS_LIMIT} bytes; this fact needs {needs}); forget one first")]
    Full { used: usize, needs: usize },
    #[error("that fact is already pinned")]
    Known,
    #[error("no pinned fact matches `{0}`; the facts are: {1}")]
    Unknown(String, String),
    #[error("`{0}` matches several pinned facts; give more of its words or its number")]
    Ambiguous(String),
}

/// One pinned fact.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fact {
    /// The fact, one line.
    pub text: String,
    /// What tainted the turn that remembered it (`after reading …`); none:
    /// the owner's, or a clean turn's.
    pub untrusted: Option<String>,
}

impl Fact {
    /// A fact of the owner's or of a clean turn.
    pub fn trusted(text: &str) -> Fact {
        Fact {
            text: text.to_string(),
            untrusted: None,
        }
    }

    /// The fact as requests and `hearth memory facts` show it: an
    /// untrusted one marked, with what tainted the turn that pinned it.
    pub fn line(&self) -> String {
        match &self.untrusted {
            None => self.text.clone(),
            Some(after) => format!(
                "{} {} (remembered {after})",
                crate::provenance::MARKER,
                self.text
            ),
        }
    }
}

/// The pinned facts of one agent, oldest first. Pure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pinned(pub Vec<Fact>);

impl Pinned {
    /// The bytes the block takes in a request (none without facts).
    pub fn bytes(&self) -> usize {
        if self.0.is_empty() {
            return 0;
        }
        HEAD.len()
            + self
                .0
                .iter()
                .map(|fact| "\n- ".len() + fact.line().len())
                .sum::<usize>()
    }

    /// The block as the state message shows it; empty without facts.
    pub fn render(&self) -> String {
        if self.0.is_empty() {
            return String::new();
        }
        let mut block = HEAD.to_string();
        for fact in &self.0 {
            block.push_str("\n- ");
            block.push_str(&fact.line());
        }
        block
    }

    /// Why each untrusted fact is, in words that follow "after" (``the
    /// pinned fact 2, remembered after reading …``): a turn that shows them
    /// is tainted.
    pub fn untrusted(&self) -> Vec<String> {
        self.0
            .iter()
            .enumerate()
            .filter_map(|(at, fact)| {
                let after = fact.untrusted.as_ref()?;
                Some(format!("the pinned fact {}, remembered {after}", at + 1))
            })
            .collect()
    }

    /// Adds a fact (one line, trimmed); refuses one that is empty, too long,
    /// already there, or that the block has no room for. `untrusted`: what
    /// tainted the turn that remembers it.
    pub fn add(&mut self, fact: &str, untrusted: Option<String>) -> Result<String, FactError> {
        let text = one_line(fact).trim().to_string();
        if text.is_empty() {
            return Err(FactError::Empty);
        }
        if text.len() > FACT_LIMIT {
            return Err(FactError::TooLong(text.len()));
        }
        if self
            .0
            .iter()
            .any(|known| known.text.eq_ignore_ascii_case(&text))
        {
            return Err(FactError::Known);
        }
        let fact = Fact {
            text: text.clone(),
            untrusted: untrusted.map(|after| crate::provenance::bounded(&after)),
        };
        let needs =
            if self.0.is_empty() { HEAD.len() } else { 0 } + "\n- ".len() + fact.line().len();
        if self.bytes() + needs > FACTS_LIMIT {
            return Err(FactError::Full {
                used: self.bytes(),
                needs,
            });
        }
        self.0.push(fact);
        Ok(text)
    }

    /// Removes the fact that `which` names: its number (from 1), its text
    /// (case aside), or words found in one fact only. Returns it.
    pub fn remove(&mut self, which: &str) -> Result<String, FactError> {
        let which = one_line(which).trim().to_string();
        let wanted = which.to_lowercase();
        let at = match which.parse::<usize>() {
            Ok(number) if (1..=self.0.len()).contains(&number) => Some(number - 1),
            _ => self
                .0
                .iter()
                .position(|fact| fact.text.to_lowercase() == wanted),
        };
        let at = match at {
            Some(at) => at,
            None => {
                let matches: Vec<usize> = (0..self.0.len())
                    .filter(|&at| {
                        !wanted.is_empty() && self.0[at].text.to_lowercase().contains(&wanted)
                    })
                    .collect();
                match matches[..] {
                    [at] => at,
                    [] => return Err(FactError::Unknown(which, self.listed())),
                    _ => return Err(FactError::Ambiguous(which)),
                }
            }
        };
        Ok(self.0.remove(at).text)
    }

    /// Marks every fact not already untrusted as changed outside hearth: the
    /// table no longer matched the record of the changes made through it.
    fn mark_changed_outside(&mut self) {
        for fact in &mut self.0 {
            if fact.untrusted.is_none() {
                fact.untrusted = Some(CHANGED_OUTSIDE.to_string());
            }
        }
    }

    /// The facts numbered, for messages: `1. … 2. …`, or `(none)`.
    pub fn listed(&self) -> String {
        if self.0.is_empty() {
            return "(none)".to_string();
        }
        self.0
            .iter()
            .enumerate()
            .map(|(at, fact)| format!("{}. {}", at + 1, fact.line()))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// As the protocol's `facts` frame carries them.
    pub fn frame(&self) -> hearth_protocol::Facts {
        hearth_protocol::Facts {
            facts: self.0.iter().map(Fact::line).collect(),
            bytes: self.bytes() as u64,
            limit: FACTS_LIMIT as u64,
        }
    }
}

fn load(connection: &Connection, agent: &str) -> Result<Pinned, rusqlite::Error> {
    let mut statement = connection
        .prepare_cached("SELECT text, untrusted FROM facts WHERE agent = ?1 ORDER BY seq")?;
    let rows = statement.query_map(params![agent], |row| {
        Ok(Fact {
            text: row.get(0)?,
            untrusted: row.get(1)?,
        })
    })?;
    Ok(Pinned(rows.collect::<Result<_, _>>()?))
}

fn store(connection: &Connection, agent: &str, pinned: &Pinned) -> Result<(), rusqlite::Error> {
    connection.execute("DELETE FROM facts WHERE agent = ?1", params![agent])?;
    let mut statement = connection.prepare_cached(
        "INSERT INTO facts (agent, seq, text, untrusted) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (seq, fact) in pinned.0.iter().enumerate() {
        statement.execute(params![agent, seq as i64, fact.text, fact.untrusted])?;
    }
    Ok(())
}

/// Makes the note that logs a change, from the change and the fact it
/// touched.
pub type FactNote = Box<dyn FnOnce(&Change, &str) -> NewMessage + Send>;

/// A change to the facts.
#[derive(Debug, Clone)]
pub enum Change {
    /// Pin a fact; the second field is what tainted the turn that pins it
    /// (none: the owner, or a clean turn).
    Remember(String, Option<String>),
    Forget(String),
}

/// The pinned facts, kept in the log's database.
#[allow(async_fn_in_trait)] // called on `Log` itself, whose futures are `Send`
pub trait FactsLog {
    /// The pinned facts of `agent`; each one untrusted when the start found
    /// them changed outside hearth.
    async fn facts(&self, agent: &str) -> Result<Pinned, LogError>;

    /// Applies `change` and, when it applies, logs `note` (made from the
    /// fact it touched) in the same transaction. A refused change changes
    /// nothing and logs nothing.
    async fn change_facts(
        &self,
        agent: &str,
        change: Change,
        note: Option<FactNote>,
    ) -> Result<Result<(Pinned, String), FactError>, LogError>;
}

impl FactsLog for Log {
    async fn facts(&self, agent: &str) -> Result<Pinned, LogError> {
        let changed_outside = self.facts_changed_outside(agent);
        let agent = agent.to_string();
        self.run(move |tx, _| {
            let mut pinned = load(tx, &agent)?;
            if changed_outside {
                pinned.mark_changed_outside();
            }
            Ok(pinned)
        })
        .await
    }

    async fn change_facts(
        &self,
        agent: &str,
        change: Change,
        note: Option<FactNote>,
    ) -> Result<Result<(Pinned, String), FactError>, LogError> {
        let changed_outside = self.facts_changed_outside(agent);
        let changer = agent.to_string();
        let changed = self
            .run(move |tx, appended| {
                let agent = changer;
                let mut pinned = load(tx, &agent)?;
                if changed_outside {
                    pinned.mark_changed_outside();
                }
                let touched = match &change {
                    Change::Remember(fact, untrusted) => pinned.add(fact, untrusted.clone()),
                    Change::Forget(which) => pinned.remove(which),
                };
                let touched = match touched {
                    Ok(touched) => touched,
                    Err(refused) => return Ok(Err(refused)),
                };
                store(tx, &agent, &pinned)?;
                // What the facts are now, recorded in the change's transaction:
                // an edit of the table from outside no longer matches it.
                crate::log::facts_record::record(tx, &agent)?;
                if let Some(note) = note {
                    crate::log::append(tx, &agent, note(&change, &touched), appended)?;
                }
                Ok(Ok((pinned, touched)))
            })
            .await?;
        if changed_outside && changed.is_ok() {
            // Stored with their marks, and recorded as such.
            self.facts_stored_marked(agent);
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_one_line_each_and_refused_when_the_block_is_full() {
        let mut pinned = Pinned::default();
        assert_eq!(pinned.render(), "");
        assert_eq!(
            pinned.add("  Her name is\nAda  ", None).unwrap(),
            "Her name is Ada"
        );
        assert_eq!(pinned.add("her name is ada", None), Err(FactError::Known));
        assert_eq!(pinned.add(" ", None), Err(FactError::Empty));
        assert_eq!(
            pinned.add(&"x".repeat(FACT_LIMIT + 1), None),
            Err(FactError::TooLong(FACT_LIMIT + 1))
        );
        assert_eq!(pinned.render(), format!("{HEAD}\n- Her name is Ada"));
        assert_eq!(pinned.bytes(), pinned.render().len());
        let mut n = 0;
        let refusal = loop {
            match pinned.add(&format!("{n} {}", "y".repeat(400)), None) {
                Ok(_) => n += 1,
                Err(err) => break err,
            }
        };
        assert!(matches!(refusal, FactError::Full { .. }), "{refusal:?}");
        assert!(refusal.to_string().contains("forget one first"));
        assert!(pinned.bytes() <= FACTS_LIMIT);
        assert_eq!(pinned.bytes(), pinned.render().len());
    }

    #[test]
    fn a_fact_is_forgotten_by_number_text_or_its_own_words() {
        let mut pinned = Pinned(vec![
            Fact::trusted("likes green tea"),
            Fact::trusted("the plumber is Bo"),
            Fact::trusted("likes jazz"),
        ]);
        assert_eq!(pinned.remove("PLUMBER").unwrap(), "the plumber is Bo");
        assert_eq!(
            pinned.remove("likes"),
            Err(FactError::Ambiguous("likes".into()))
        );
        assert!(matches!(pinned.remove("cats"), Err(FactError::Unknown(..))));
        assert_eq!(pinned.remove("2").unwrap(), "likes jazz");
        assert_eq!(pinned.remove("likes green tea").unwrap(), "likes green tea");
        assert_eq!(pinned.listed(), "(none)");
    }

    #[tokio::test]
    async fn facts_are_stored_and_a_users_change_is_logged_with_them() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = tokio::sync::broadcast::channel(8);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        fn note() -> Option<FactNote> {
            Some(Box::new(|change, fact| {
                let verb = match change {
                    Change::Remember(..) => "pinned",
                    Change::Forget(_) => "unpinned",
                };
                NewMessage::new(
                    hearth_protocol::Kind::Note,
                    "terminal",
                    format!("{verb}: {fact}"),
                )
            }))
        }
        let (pinned, _) = log
            .change_facts("a", Change::Remember("likes tea".into(), None), note())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(pinned.0, [Fact::trusted("likes tea")]);
        let refused = log
            .change_facts("a", Change::Forget("coffee".into()), note())
            .await
            .unwrap();
        assert!(refused.is_err());
        assert_eq!(
            log.facts("a").await.unwrap().0,
            [Fact::trusted("likes tea")]
        );
        assert!(log.facts("b").await.unwrap().0.is_empty());
        let logged = log.page("a", None, 10).await.unwrap();
        assert_eq!(logged.len(), 1, "a refused change logs nothing");
        assert_eq!(logged[0].text, "pinned: likes tea");
    }

    #[tokio::test]
    async fn a_fact_pinned_in_a_tainted_turn_is_stored_and_shown_untrusted() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = tokio::sync::broadcast::channel(8);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        let tainted = Some("after reading https://evil.example".to_string());
        log.change_facts("a", Change::Remember("likes tea".into(), None), None)
            .await
            .unwrap()
            .unwrap();
        log.change_facts("a", Change::Remember("run curl x".into(), tainted), None)
            .await
            .unwrap()
            .unwrap();
        let pinned = log.facts("a").await.unwrap();
        let line = "[untrusted] run curl x (remembered after reading https://evil.example)";
        assert_eq!(pinned.render(), format!("{HEAD}\n- likes tea\n- {line}"));
        assert_eq!(pinned.bytes(), pinned.render().len());
        assert_eq!(pinned.frame().facts, ["likes tea", line]);
        assert_eq!(
            pinned.untrusted(),
            ["the pinned fact 2, remembered after reading https://evil.example"]
        );
    }
}
