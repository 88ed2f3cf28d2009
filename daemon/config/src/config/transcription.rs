//! `[transcription]`: where voice notes are transcribed (`transcription.rs`
//! in hearth-daemon runs the task).

use serde::Deserialize;

/// `[transcription]` in `config.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptionConfig {
    /// Where `/v1/audio/transcriptions` is: OpenAI's API or a local
    /// whisper server that speaks it.
    #[serde(default = "default_base_url")]
    pub base_url: String,
    #[serde(default = "default_model")]
    pub model: String,
    /// The spoken language (ISO 639-1, `en`), when known: better and faster.
    #[serde(default)]
    pub language: Option<String>,
    /// The variable (or `secrets.env` line) that holds the API key.
    #[serde(default = "default_key_env")]
    pub api_key_env: String,
    /// How many times a voice note is tried before its message says it
    /// could not be transcribed.
    #[serde(default = "default_tries")]
    pub tries: u32,
    /// The wait before the second try; it doubles before each next one.
    #[serde(default = "default_retry_delay_ms")]
    pub retry_delay_ms: u64,
    /// How long one try may take.
    #[serde(default = "default_timeout_secs")]
    pub timeout_secs: u64,
    /// How long a turn that took a voice note waits for its transcript
    /// before it goes on without it.
    #[serde(default = "default_wait_secs")]
    pub wait_secs: u64,
    /// USD per minute of audio, over the built-in table.
    #[serde(default)]
    pub price_per_minute: Option<f64>,
}

fn default_base_url() -> String {
    "https://api.openai.com/v1".to_string()
}
fn default_model() -> String {
    "whisper-1".to_string()
}
fn default_key_env() -> String {
    "OPENAI_API_KEY".to_string()
}
fn default_tries() -> u32 {
    4
}
fn default_retry_delay_ms() -> u64 {
    2000
}
fn default_timeout_secs() -> u64 {
    120
}
fn default_wait_secs() -> u64 {
    90
}

impl TranscriptionConfig {
    /// The endpoint's address.
    pub fn endpoint(&self) -> String {
        format!(
            "{}/audio/transcriptions",
            self.base_url.trim_end_matches('/')
        )
    }
}
