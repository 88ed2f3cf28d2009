//! How the keeper waits out failed compaction calls.
//!
//! Two kinds of failure, told apart by the error's variant:
//!
//! - **An outage**: the provider is down, slow, rate-limited, refuses the
//!   key or its billing, or the daemon's own budget is spent. Nothing is
//!   wrong with the node, so no node is given up on: every queued node
//!   waits, the calls stop, and after a growing wait (at most
//!   [`MAX_OUTAGE_WAIT`]) one call tries again; the first that succeeds
//!   ends the outage and the queue goes on. A turn that waits for these
//!   summaries says what they wait for in its activity.
//! - **The node's own**: the model refused the content, the request is too
//!   long for it, or it answered nothing usable. After the layout's
//!   `compactor_failures` tries the node gets a mechanical line (its text
//!   cut at the line budget), and an `error` event says so in words, so one
//!   bad message never freezes the agent.
//!
//! A third is neither: **the provider refuses the model** (it does not
//! know it, or this key may not use it). When the memory model is the
//! provider's small one by default, the turns' model writes the summaries
//! from then on, said once in an `error` event, and the call's nodes are
//! asked again at once: no node is cut for it. A model the user chose in
//! `[memory] model` is never replaced: its refusal is said once, and the
//! nodes wait as in an outage until a reload names a model the key may use.

use super::{Keeper, MemoryModel};
use crate::log::LogError;
use crate::memory::tree::Node;
use crate::model::{Model, ModelError};
use hearth_protocol::{Event, EventKind};
use std::time::Duration;
use tokio::time::Instant;

/// The longest wait between two tries while the provider is out.
pub const MAX_OUTAGE_WAIT: Duration = Duration::from_secs(300);
/// How often a spent budget is looked at again (a reload or a new period
/// may allow calls).
pub const BUDGET_RECHECK: Duration = Duration::from_secs(60);

/// Why a compaction call failed, and whether the failure is the node's.
#[derive(Debug, Clone)]
pub struct Failure {
    pub why: String,
    /// The node itself cannot be summarized by this model (refused
    /// content, too long, nothing usable); otherwise the provider is out.
    pub own: bool,
    /// The model the call asked (`provider/model`).
    pub model: String,
    /// The provider does not know that model or does not let this key use
    /// it: its status and words.
    pub refusal: Option<String>,
}

impl Failure {
    /// The failure `err` of a call to the model labelled `model`.
    pub fn of(err: &ModelError, model: String) -> Failure {
        let refusal = match err {
            ModelError::UnknownModel {
                status, message, ..
            }
            | ModelError::Auth {
                status: status @ 403,
                message,
                ..
            } => Some(format!("{status}: {message}")),
            _ => None,
        };
        let own = match err {
            ModelError::ContextLength { .. } | ModelError::Failed(_) | ModelError::Garbage(_) => {
                true
            }
            // A request the provider will never take, whatever the wait.
            ModelError::Status { status, .. } => matches!(status, 400 | 413 | 422),
            ModelError::Auth { .. }
            | ModelError::UnknownModel { .. }
            | ModelError::Quota { .. }
            | ModelError::SignIn(_)
            | ModelError::PlanLimit(_)
            | ModelError::NoTools { .. }
            | ModelError::Unavailable { .. }
            | ModelError::Network { .. }
            | ModelError::Timeout(_)
            | ModelError::Cut => false,
        };
        Failure {
            why: err.to_string(),
            own,
            model,
            refusal,
        }
    }
}

/// The provider is out: since when it has failed, and when to try again.
#[derive(Debug, Clone)]
pub struct Outage {
    pub why: String,
    /// Calls that failed in a row.
    pub tries: u32,
    pub until: Instant,
}

impl Keeper {
    /// A call for `node` failed.
    pub(super) async fn failed(&mut self, node: Node, failure: Failure) -> Result<(), LogError> {
        if !failure.own {
            self.out(failure.why, None);
            return Ok(());
        }
        let config = self.config.clone();
        let layout = &config.layout;
        let count = self.failures.entry(node).or_insert(0);
        *count += 1;
        let count = *count;
        let why = failure.why;
        if count == 1 {
            tracing::warn!(agent = %self.config.agent, "compacting {node} failed: {why}; will try again");
        }
        if count < layout.compactor_failures {
            let wait = layout
                .compactor_backoff_ms
                .saturating_mul(1 << (count - 1).min(10));
            self.not_before
                .insert(node, Instant::now() + Duration::from_millis(wait));
            return Ok(());
        }
        let Some(task) = self.task(node).await? else {
            return Ok(());
        };
        let budget = layout.line_budget;
        let line = task.mechanical(budget);
        let what = if node.level == 0 {
            format!("message {}", node.first())
        } else {
            format!("messages {} to {}", node.first(), node.last())
        };
        let _ = self.config.events.send(Event::signal(
            EventKind::Error,
            &self.config.agent,
            Some(format!(
                "memory: could not summarize {what} after {count} tries ({why}); its line \
                 keeps the first {budget} bytes of its text instead (`zoom` still opens it whole)"
            )),
        ));
        self.build(vec![(node, line, true)]).await
    }

    /// A call failed for `failure`: when the provider refused the model it
    /// asked, the model to ask its nodes again with now — the turns' model
    /// in place of a default one (said once), or the model a reload or a
    /// switch put in place while the call ran. None when the nodes are to
    /// wait: the refused model is one the user chose, said once.
    pub(super) fn refused(&mut self, failure: &Failure) -> Option<MemoryModel> {
        let refusal = failure.refusal.as_ref()?;
        let current = self.model.clone()?;
        let label = current.model.label();
        if label != failure.model {
            return Some(current);
        }
        let agent = &self.config.agent;
        let Some(turns) = current.turns else {
            if self.refusals_said.insert(label.clone()) {
                let fix = if current.own {
                    "set [memory] model to a model this key may use, or remove it to have \
                     the provider's small model or the turns' own write them"
                } else {
                    "it is the turns' model too: set [model] model to a model this key may use"
                };
                let said = format!(
                    "summaries wait: {label} is not available to this key ({refusal}); {fix}"
                );
                tracing::warn!(agent = %agent, "{said}");
                let _ = self
                    .config
                    .events
                    .send(Event::signal(EventKind::Error, agent, Some(said)));
            }
            return None;
        };
        let said = format!(
            "summaries: {label} is not available to this key ({refusal}); the turns' model \
             {} writes them from now on. Set [memory] model to choose the model that writes \
             summaries.",
            turns.label()
        );
        tracing::warn!(agent = %agent, "{said}");
        let _ = self
            .config
            .events
            .send(Event::signal(EventKind::Error, agent, Some(said)));
        self.refused_defaults.insert(label);
        Some(self.write_with(turns))
    }

    /// The memory model from now on (a reload's): a default one this run
    /// already found refused gives way to the turns' model at once. Another
    /// model than the one that waits is tried at once: it may be the fix.
    pub(super) fn set_model(&mut self, model: Option<MemoryModel>) {
        let label = |model: Option<&MemoryModel>| model.map(|m| m.model.label());
        if label(model.as_ref()) != label(self.model.as_ref()) {
            self.outage = None;
        }
        self.model = match model {
            Some(MemoryModel {
                model,
                turns: Some(turns),
                ..
            }) if self.refused_defaults.contains(&model.label()) => Some(self.write_with(turns)),
            model => model,
        };
    }

    /// The turns' model writes the summaries, in the same-model form: the
    /// turn-end call extends the turn's chain, and `status` names no memory
    /// model of its own.
    fn write_with(&mut self, turns: Model) -> MemoryModel {
        let model = MemoryModel {
            model: turns,
            own: false,
            turns: None,
        };
        *self
            .own_model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        self.model = Some(model.clone());
        model
    }

    /// The daemon's budget refuses calls: every node waits until it allows
    /// them again (looked at every [`BUDGET_RECHECK`]).
    pub(super) fn spent(&mut self, why: String) {
        self.out(why, Some(BUDGET_RECHECK));
    }

    /// Calls fail for a reason that is not the nodes': they stop, and one
    /// tries again after `wait` (by default a wait that doubles with each
    /// failure in a row, up to [`MAX_OUTAGE_WAIT`]).
    pub(super) fn out(&mut self, why: String, wait: Option<Duration>) {
        let tries = self.outage.as_ref().map_or(0, |outage| outage.tries) + 1;
        if tries == 1 {
            tracing::warn!(agent = %self.config.agent, "summaries wait: {why}");
        }
        let wait = wait.unwrap_or_else(|| {
            let first = Duration::from_millis(self.config.layout.compactor_backoff_ms);
            first
                .saturating_mul(1 << (tries - 1).min(16))
                .min(MAX_OUTAGE_WAIT)
        });
        self.outage = Some(Outage {
            why,
            tries,
            until: Instant::now() + wait,
        });
    }

    /// A call succeeded: an outage is over, and the queue goes on.
    pub(super) fn recovered(&mut self) {
        if self.outage.take().is_some() {
            tracing::info!(agent = %self.config.agent, "summaries go on: the model answers again");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_never_the_nodes_failure() {
        let outages = [
            ModelError::Status {
                provider: "openai",
                status: 503,
                message: "down".into(),
                retry_after: None,
            },
            ModelError::Status {
                provider: "openai",
                status: 429,
                message: "slow down".into(),
                retry_after: None,
            },
            ModelError::Timeout(60),
            ModelError::Network {
                url: "http://x".into(),
                message: "refused".into(),
            },
            ModelError::Quota {
                provider: "openai",
                message: "no credit".into(),
            },
        ];
        for err in &outages {
            let failure = Failure::of(err, "openai/m".into());
            assert!(!failure.own && failure.refusal.is_none(), "{err}");
        }
        let own = [
            ModelError::Failed("the model refused to summarize it".into()),
            ModelError::ContextLength {
                model: "m".into(),
                message: "too long".into(),
                window: None,
            },
        ];
        for err in &own {
            assert!(Failure::of(err, "openai/m".into()).own, "{err}");
        }
    }

    #[test]
    fn a_refused_model_is_no_outage_and_no_failure_of_the_node() {
        let refused = [
            ModelError::UnknownModel {
                provider: "openai",
                model: "gpt-5-nano".into(),
                status: 404,
                message: "The model `gpt-5-nano` does not exist".into(),
            },
            ModelError::Auth {
                provider: "openai",
                status: 403,
                message: "not for this project".into(),
                hint: "check $OPENAI_API_KEY".into(),
            },
        ];
        for err in &refused {
            let failure = Failure::of(err, "openai/gpt-5-nano".into());
            assert!(!failure.own, "{err}");
            assert!(failure.refusal.is_some(), "{err}");
        }
        let failure = Failure::of(&refused[0], "openai/gpt-5-nano".into());
        assert_eq!(
            failure.refusal.as_deref(),
            Some("404: The model `gpt-5-nano` does not exist")
        );
        // A key refused outright is not a refusal of the model.
        let key = ModelError::Auth {
            provider: "openai",
            status: 401,
            message: "bad key".into(),
            hint: String::new(),
        };
        assert!(Failure::of(&key, "openai/m".into()).refusal.is_none());
    }
}
