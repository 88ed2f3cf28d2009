//! [`Model`]: the configured model and its fallbacks, tried in order.
//!
//! A call goes to the first model that is not cooling down. When it keeps
//! failing for a passing reason (its retries spent) before it produced any
//! output, it cools down for [`COOL_DOWN`] and the next model takes the same
//! request; each such switch is told to the caller as a note. A failure the
//! user must fix (key, billing, a request too long) or one after output
//! ends the call at once: another model would not fix it, or would repeat
//! what the clients already saw. When every model is cooling down, all are
//! tried anyway, in order: a call is never refused untried.

use super::provider::Provider;
use super::retry::{self, Attempt, RetryNotice, RetryPolicy};
use super::{Bill, ModelError, Request, Response};
use crate::model::ModelConfig;
use futures_util::future::BoxFuture;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// How long a model that kept failing is skipped.
pub const COOL_DOWN: Duration = Duration::from_secs(5 * 60);

/// What a call tells its caller while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum CallNews {
    /// It switched models (or went back to one): a line for the log.
    Switched(String),
    /// A try failed for a passing reason: try `attempt` of `attempts` (on
    /// this model) follows after `wait`.
    Retrying {
        attempt: u32,
        attempts: u32,
        reason: String,
        wait: Duration,
    },
}

/// The models a call may go to, in order, and how they have fared. Clones
/// share the cool-downs.
#[derive(Clone)]
pub struct Model {
    /// The configured model first, then its fallbacks.
    providers: Arc<[Provider]>,
    state: Arc<Mutex<ChainState>>,
}

/// What the chain remembers between calls.
#[derive(Debug, Default)]
struct ChainState {
    /// Per model: skipped until then, after it kept failing.
    cooling_until: Vec<Option<Instant>>,
    /// The model that served the last call, so going back to an earlier
    /// one is noted.
    serving: usize,
}

impl Model {
    /// Builds the chain of `config` and its fallbacks; `key_for` finds the
    /// key in the environment variable each one names.
    pub fn new(config: ModelConfig, key_for: impl Fn(&str) -> Option<String>) -> Model {
        let tokens_file = config.tokens_file.clone();
        let providers: Vec<Provider> = config
            .chain()
            .into_iter()
            .map(|mut config| {
                // A ChatGPT plan signs in with tokens, never a key.
                if config.provider == crate::model::ProviderKind::ChatGpt {
                    config.tokens_file = config.tokens_file.or_else(|| tokens_file.clone());
                    return Provider::new(config, None);
                }
                let key = key_for(config.key_env());
                Provider::new(config, key)
            })
            .collect();
        let state = ChainState {
            cooling_until: vec![None; providers.len()],
            serving: 0,
        };
        Model {
            providers: providers.into(),
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// `provider/model` of the configured model, for status and errors.
    pub fn label(&self) -> String {
        self.providers
            .first()
            .map(Provider::label)
            .unwrap_or_default()
    }

    /// The configuration of every model, fallbacks after the configured one.
    pub fn configs(&self) -> impl Iterator<Item = &ModelConfig> {
        self.providers.iter().map(|provider| &provider.config)
    }

    /// Whether the configured model is served by a server of the owner's
    /// (Chat Completions at a local address: `served.rs`).
    pub fn is_local_server(&self) -> bool {
        self.configs()
            .next()
            .is_some_and(super::served::is_local_server)
    }

    /// `provider/model` of every model, fallbacks after the configured one.
    pub fn labels(&self) -> Vec<String> {
        self.providers.iter().map(Provider::label).collect()
    }

    /// Sends one request, retrying and falling back as the module says.
    /// `on_text` receives reply text as it streams; `on_news` hears of each
    /// retry's wait, and a line for the log each time the call switches
    /// models. On success the
    /// response's `model` names the model that answered. On failure the
    /// error is the last model's. Either way `bills` gets one [`Bill`] per
    /// try a provider accepted, in order — the tries that failed, were cut
    /// or were retried as well as the answer — for the caller to store.
    pub async fn complete(
        &self,
        request: &Request,
        on_text: &mut (dyn FnMut(&str) + Send),
        on_news: &mut (dyn FnMut(CallNews) + Send),
        bills: &mut Vec<Bill>,
    ) -> Result<Response, ModelError> {
        let live = Live {
            providers: &self.providers,
            request,
            bills: Mutex::new(Vec::new()),
        };
        let result = run(&live, &self.state, on_text, on_news).await;
        bills.extend(
            live.bills
                .into_inner()
                .unwrap_or_else(PoisonError::into_inner),
        );
        result
    }
}

impl fmt::Debug for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Model")
            .field("providers", &self.providers)
            .finish_non_exhaustive()
    }
}

/// The models a call can go to: one try at one of them.
pub(super) trait Transport: Sync {
    fn len(&self) -> usize;
    fn label(&self, target: usize) -> String;
    fn policy(&self, target: usize) -> RetryPolicy;
    fn send<'a>(
        &'a self,
        target: usize,
        on_text: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<Response, ModelError>>;
}

/// The configured providers and the request they are sent.
struct Live<'r> {
    providers: &'r [Provider],
    request: &'r Request,
    /// The bill of every try so far.
    bills: Mutex<Vec<Bill>>,
}

impl Transport for Live<'_> {
    fn len(&self) -> usize {
        self.providers.len()
    }

    fn label(&self, target: usize) -> String {
        self.providers[target].label()
    }

    fn policy(&self, target: usize) -> RetryPolicy {
        RetryPolicy::of(&self.providers[target].config)
    }

    fn send<'a>(
        &'a self,
        target: usize,
        on_text: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<Response, ModelError>> {
        Box::pin(async move {
            let (result, bill) = self.providers[target].complete(self.request, on_text).await;
            if let Some(bill) = bill {
                self.bills
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(bill);
            }
            result
        })
    }
}

/// One of the models, as one call's retries see it.
struct To<'t, T> {
    transport: &'t T,
    target: usize,
}

impl<T: Transport> Attempt for To<'_, T> {
    fn attempt<'a>(
        &'a self,
        on_text: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<Response, ModelError>> {
        self.transport.send(self.target, on_text)
    }
}

/// One call through the chain.
async fn run(
    transport: &impl Transport,
    state: &Mutex<ChainState>,
    on_text: &mut (dyn FnMut(&str) + Send),
    on_news: &mut (dyn FnMut(CallNews) + Send),
) -> Result<Response, ModelError> {
    let lock = || state.lock().unwrap_or_else(PoisonError::into_inner);
    let (order, serving) = {
        let state = lock();
        let now = Instant::now();
        let ready: Vec<usize> = (0..transport.len())
            .filter(|&target| {
                state
                    .cooling_until
                    .get(target)
                    .copied()
                    .flatten()
                    .is_none_or(|until| until <= now)
            })
            .collect();
        let order = if ready.is_empty() {
            (0..transport.len()).collect()
        } else {
            ready
        };
        (order, state.serving)
    };
    if let Some(&first) = order.first() {
        if first < serving {
            on_news(CallNews::Switched(format!(
                "trying {} again after its cool-down",
                transport.label(first)
            )));
        }
    }
    let mut last_error = None;
    for (position, &target) in order.iter().enumerate() {
        let policy = transport.policy(target);
        let call = To { transport, target };
        let mut on_retry = |notice: RetryNotice<'_>| {
            on_news(CallNews::Retrying {
                attempt: notice.attempt,
                attempts: notice.attempts,
                reason: notice.error.to_string(),
                wait: notice.wait,
            });
        };
        let sent = retry::with_retries(&policy, &call, on_text, &mut on_retry).await;
        let failure = match sent {
            Ok(mut response) => {
                lock().serving = target;
                response.model = transport.label(target);
                return Ok(response);
            }
            Err(failure) => failure,
        };
        if failure.after_output || !failure.error.is_transient() {
            return Err(failure.error);
        }
        if let Some(until) = lock().cooling_until.get_mut(target) {
            *until = Some(Instant::now() + COOL_DOWN);
        }
        if let Some(&next) = order.get(position + 1) {
            let minutes = COOL_DOWN.as_secs() / 60;
            on_news(CallNews::Switched(format!(
                "{} keeps failing ({}); switching to {} and skipping it for {minutes} minutes",
                transport.label(target),
                failure.error,
                transport.label(next),
            )));
        }
        last_error = Some(failure.error);
    }
    Err(last_error.unwrap_or_else(|| ModelError::Failed("no model is configured".into())))
}

#[cfg(test)]
mod tests;
