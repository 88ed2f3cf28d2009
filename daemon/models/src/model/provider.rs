//! One configured model: its wire protocol, address, key and HTTP client.
//! A call here is one try; retries and fallbacks are `fallback.rs`'s.

use super::bill::{Bill, Metering};
use super::error::Source;
use super::{anthropic, chat, chatgpt, responses, ModelError, Request, Response, Usage};
use crate::model::{ModelConfig, ProviderKind};
use std::fmt;
use std::time::{Duration, Instant};

/// One model as configured. `Debug` hides the key.
#[derive(Clone)]
pub struct Provider {
    pub config: ModelConfig,
    /// The API key, when one was found; sent only in the auth header.
    pub(super) key: Option<String>,
    pub(super) http: reqwest::Client,
}

impl Provider {
    pub fn new(config: ModelConfig, key: Option<String>) -> Provider {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .read_timeout(Duration::from_secs(config.timeout_secs))
            .build()
            // Building a client fails only when the TLS backend cannot load,
            // which the rustls build rules out.
            .unwrap_or_else(|_| reqwest::Client::new());
        Provider { config, key, http }
    }

    /// `provider/model`, for status, notes and [`super::Carry::origin`].
    pub fn label(&self) -> String {
        format!("{}/{}", self.config.provider.name(), self.config.model)
    }

    /// Names for the messages of this model's failures.
    pub fn source(&self) -> Source<'_> {
        let env = self.config.key_env();
        let key_hint = match (&self.key, self.config.provider) {
            (_, ProviderKind::ChatGpt) => "sign in again: run `hearth login chatgpt`".to_string(),
            (Some(_), _) => format!("check the key in ${env} (or secrets.env)"),
            (None, _) => format!("no key was found in ${env} or secrets.env: set it there"),
        };
        Source {
            provider: self.config.provider.name(),
            model: &self.config.model,
            window: super::window::of(&self.config),
            key_hint,
        }
    }

    /// Sends `request` once; streamed text goes to `on_text` as it arrives.
    /// Returns the answer, and the bill when the provider accepted the
    /// request (whatever came of it after).
    pub async fn complete(
        &self,
        request: &Request,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> (Result<Response, ModelError>, Option<Bill>) {
        let started = Instant::now();
        let mut metering = Metering::default();
        let mut streamed = 0u64;
        let result = {
            let mut counted = |text: &str| {
                streamed += text.len() as u64;
                on_text(text);
            };
            let metering = &mut metering;
            match self.config.provider {
                ProviderKind::OpenAiChat => {
                    chat::complete(self, request, &mut counted, metering).await
                }
                ProviderKind::OpenAiResponses => {
                    responses::complete(self, request, &mut counted, metering).await
                }
                ProviderKind::Anthropic => {
                    anthropic::complete(self, request, &mut counted, metering).await
                }
                ProviderKind::ChatGpt => {
                    chatgpt::complete(self, request, &mut counted, metering).await
                }
            }
        };
        metering.streamed_bytes = streamed;
        if let Ok(response) = &result {
            // The answer's own usage is what the provider reported last.
            if response.usage != Usage::default() {
                metering.reported = Some(response.usage);
            }
        }
        let bill = metering
            .bill(request, result.is_ok())
            .map(|(usage, estimated)| Bill {
                model: self.label(),
                usage,
                estimated,
                latency: started.elapsed(),
            });
        (result, bill)
    }
}

/// Written by hand so that the API key never reaches a log line.
impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("config", &self.config)
            .field("key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}
