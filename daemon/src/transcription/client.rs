//! One request to an OpenAI-compatible `/v1/audio/transcriptions`
//! endpoint (OpenAI itself, or a local whisper server that speaks the same
//! API): a `multipart/form-data` body with `file`, `model`, `language` when
//! set and `response_format=json`, answered with `{"text": …}` and, for
//! models billed by time, `usage: {"type": "duration", "seconds": …}`.

use super::TranscriptionConfig;
use serde::Deserialize;
use std::time::Duration;

/// Why one try failed; `retry` says whether another try may succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct TryError {
    pub why: String,
    pub retry: bool,
}

/// What the endpoint said.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    pub text: String,
    /// The audio's length as the endpoint measured it, when it says.
    pub seconds: Option<f64>,
}

#[derive(Deserialize)]
struct Answer {
    text: String,
    #[serde(default)]
    usage: Option<AnswerUsage>,
}

#[derive(Deserialize)]
struct AnswerUsage {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    seconds: Option<f64>,
}

/// Sends `audio` (of `media_type`, called `file_name`) once.
pub async fn transcribe(
    http: &reqwest::Client,
    config: &TranscriptionConfig,
    key: Option<&str>,
    audio: &[u8],
    media_type: &str,
    file_name: &str,
) -> Result<Transcript, TryError> {
    let boundary = format!("hearth-{:016x}", rand_u64());
    let body = multipart(&boundary, config, audio, media_type, file_name);
    let mut request = http
        .post(config.endpoint())
        .timeout(Duration::from_secs(config.timeout_secs))
        .header(
            reqwest::header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.map_err(|err| TryError {
        why: if err.is_timeout() {
            format!(
                "the transcription service did not answer within {} seconds",
                config.timeout_secs
            )
        } else {
            format!("the transcription service cannot be reached: {err}")
        },
        retry: true,
    })?;
    let status = response.status();
    let text = response.text().await.map_err(|err| TryError {
        why: format!("the transcription's answer was cut off: {err}"),
        retry: true,
    })?;
    if !status.is_success() {
        let said: String = text.chars().take(300).collect();
        let code = status.as_u16();
        return Err(TryError {
            why: format!("the transcription service answered {code}: {said}"),
            retry: code == 408 || code == 429 || status.is_server_error(),
        });
    }
    let answer: Answer = serde_json::from_str(&text).map_err(|err| TryError {
        why: format!("the transcription service's answer is not its JSON: {err}"),
        retry: false,
    })?;
    let seconds = answer
        .usage
        .filter(|usage| usage.kind == "duration")
        .and_then(|usage| usage.seconds);
    Ok(Transcript {
        text: answer.text.trim().to_string(),
        seconds,
    })
}

/// The request's body: one part per field, the audio last.
fn multipart(
    boundary: &str,
    config: &TranscriptionConfig,
    audio: &[u8],
    media_type: &str,
    file_name: &str,
) -> Vec<u8> {
    let mut body = Vec::with_capacity(audio.len() + 1024);
    let mut field = |name: &str, value: &str| {
        body.extend(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .bytes(),
        );
    };
    field("model", &config.model);
    if let Some(language) = &config.language {
        field("language", language);
    }
    field("response_format", "json");
    // The name is the store's (`<sha256>.<ext>`): nothing to escape.
    let file_name: String = file_name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '.')
        .collect();
    body.extend(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\nContent-Type: {media_type}\r\n\r\n"
        )
        .bytes(),
    );
    body.extend_from_slice(audio);
    body.extend(format!("\r\n--{boundary}--\r\n").bytes());
    body
}

/// A boundary that the audio's bytes will not hold by chance.
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos()),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_has_openais_fields_and_the_audio_last() {
        let config = TranscriptionConfig {
            language: Some("en".into()),
            ..toml::from_str::<TranscriptionConfig>("base_url = \"http://127.0.0.1:1\"").unwrap()
        };
        let body = multipart("B", &config, b"OggS", "audio/ogg", "ab.ogg");
        let text = String::from_utf8(body).unwrap();
        assert!(text.starts_with(
            "--B\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nwhisper-1\r\n"
        ));
        assert!(text.contains("name=\"language\"\r\n\r\nen\r\n"));
        assert!(text.contains("name=\"response_format\"\r\n\r\njson\r\n"));
        assert!(text.ends_with(
            "name=\"file\"; filename=\"ab.ogg\"\r\nContent-Type: audio/ogg\r\n\r\nOggS\r\n--B--\r\n"
        ));
    }
}
