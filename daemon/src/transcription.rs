//! Voice notes heard: `[transcription]`, and the daemon's transcriber.
//!
//! A voice note is never lost to a transcription outage: its message is
//! logged at once, before anything is transcribed, as
//! `[voice 0:42, transcribing]` with the source and idempotency key of the
//! platform's message, and acknowledged (a redelivery is then a duplicate,
//! queued for nothing). The transcriber, a task of the daemon, sends the
//! stored audio to the endpoint in the background, retrying with backoff,
//! and logs the transcript as a second user message linked to the first
//! (`data.transcript_of`): `[voice 0:42] what was said`, or after the tries
//! `[voice 0:42: could not transcribe: why]`. A turn that took a voice
//! note waits (at most `wait_secs`) for its transcript and takes it; a
//! transcript that comes later starts a turn of its own. A message still
//! pending when the daemon stops is transcribed after the next start, and
//! `hearth transcribe ID` tries a message again.
//!
//! Each transcription is metered (purpose `transcription`, priced per
//! minute, see `usage`) and counts against the budget; a spent budget
//! fails it in words, like a refused turn.
//!
//! - `transcription/client.rs`: one request to the endpoint.

mod client;

use crate::inputs::AgentInputs;
use crate::log::{Log, LogError, MessageData, NewMessage};
use crate::media::{self, MediaStore};
use crate::usage::Meter;
use hearth_protocol::{Kind, MediaKind, MediaRef};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

pub use crate::config::TranscriptionConfig;

/// The voice notes that wait for their transcript, by agent and message
/// id, shared by the transcriber and every agent's turn loop. Cheap to
/// clone; empty when nothing is configured.
#[derive(Clone)]
pub struct Pending {
    set: Arc<watch::Sender<BTreeSet<(String, u64)>>>,
    /// How long a turn waits for them.
    wait: Duration,
}

impl Default for Pending {
    fn default() -> Self {
        Pending::new(Duration::ZERO)
    }
}

impl Pending {
    pub fn new(wait: Duration) -> Pending {
        Pending {
            set: Arc::new(watch::Sender::new(BTreeSet::new())),
            wait,
        }
    }

    fn add(&self, agent: &str, id: u64) {
        self.set.send_modify(|set| {
            set.insert((agent.to_string(), id));
        });
    }

    fn remove(&self, agent: &str, id: u64) {
        self.set.send_modify(|set| {
            set.remove(&(agent.to_string(), id));
        });
    }

    /// Waits, at most the configured time, until none of `ids` of `agent`
    /// waits for its transcript; returns whether it waited at all.
    pub async fn settle(&self, agent: &str, ids: &[u64]) -> bool {
        let waiting = |set: &BTreeSet<(String, u64)>| {
            ids.iter().any(|id| set.contains(&(agent.to_string(), *id)))
        };
        if !waiting(&self.set.borrow()) {
            return false;
        }
        let mut changes = self.set.subscribe();
        let _ = tokio::time::timeout(self.wait, changes.wait_for(|set| !waiting(set))).await;
        true
    }
}

/// One message's audio to transcribe.
struct Job {
    agent: String,
    id: u64,
    source: String,
    /// The client that submitted the voice note: its transcript is that
    /// client's words too.
    client: Option<String>,
    /// Where the voice note's words came from (someone not the owner): its
    /// transcript keeps it.
    provenance: Option<crate::log::Provenance>,
    audio: Vec<MediaRef>,
}

/// The daemon's transcriber: a queue and the task that empties it, one
/// voice note at a time. Cheap to clone.
#[derive(Clone)]
pub struct Transcriber {
    jobs: mpsc::UnboundedSender<Job>,
    pending: Pending,
}

/// What the task needs.
struct Worker {
    config: TranscriptionConfig,
    key: Option<String>,
    http: reqwest::Client,
    log: Log,
    media: MediaStore,
    meter: Meter,
    pending: Pending,
    agents: BTreeMap<String, AgentInputs>,
}

impl Transcriber {
    /// Starts the task. `key` is the API key, if one was found; `agents`
    /// are woken when a transcript is logged for them.
    pub fn start(
        config: TranscriptionConfig,
        key: Option<String>,
        log: Log,
        media: MediaStore,
        meter: Meter,
        pending: Pending,
        agents: BTreeMap<String, AgentInputs>,
    ) -> Transcriber {
        let (jobs, queue) = mpsc::unbounded_channel();
        let worker = Worker {
            config,
            key,
            http: reqwest::Client::new(),
            log,
            media,
            meter,
            pending: pending.clone(),
            agents,
        };
        tokio::spawn(worker.run(queue));
        Transcriber { jobs, pending }
    }

    /// Queues the audio of message `id`, just logged by `client` from
    /// `source`; nothing when it has none.
    pub fn queue_message(
        &self,
        agent: &str,
        id: u64,
        source: &str,
        client: Option<String>,
        provenance: Option<crate::log::Provenance>,
        media: &[MediaRef],
    ) {
        let audio: Vec<MediaRef> = media
            .iter()
            .filter(|media| media.kind == MediaKind::Audio)
            .cloned()
            .collect();
        if audio.is_empty() {
            return;
        }
        self.pending.add(agent, id);
        let job = Job {
            agent: agent.to_string(),
            id,
            source: source.to_string(),
            client,
            provenance,
            audio,
        };
        if self.jobs.send(job).is_err() {
            // The task ended with the daemon: the message stays pending in
            // the log and is queued again at the next start.
            self.pending.remove(agent, id);
        }
    }

    /// Queues the voice notes of every agent that a stop left without a
    /// transcript; returns how many.
    pub async fn resume(&self, log: &Log) -> Result<usize, LogError> {
        let left = log.untranscribed().await?;
        for (agent, id, source, data) in &left {
            let client = data.client.clone();
            let provenance = data.provenance.clone();
            self.queue_message(agent, *id, source, client, provenance, &media::refs(data));
        }
        Ok(left.len())
    }

    /// `hearth transcribe ID`: queues message `id` of `agent` again (the
    /// voice note, or its transcript or failure, which names it). Refused
    /// when it is not a voice note, in words for the person.
    pub async fn retry(&self, log: &Log, agent: &str, id: u64) -> Result<(), String> {
        let named = Self::voice_note(log, agent, id).await?;
        let id = named.data.transcript_of.unwrap_or(id);
        let entry = Self::voice_note(log, agent, id).await?;
        let media = media::refs(&entry.data);
        let client = entry.data.client.clone();
        let provenance = entry.data.provenance.clone();
        let source = &entry.message.source;
        self.queue_message(agent, id, source, client, provenance, &media);
        Ok(())
    }

    /// Message `id`, when it is a voice note or a transcript.
    async fn voice_note(log: &Log, agent: &str, id: u64) -> Result<crate::log::Entry, String> {
        let entries = log
            .range(agent, id, id.saturating_add(1), 1)
            .await
            .map_err(|err| err.to_string())?;
        let Some(entry) = entries.into_iter().next() else {
            return Err(format!("there is no message {id}"));
        };
        let media = media::refs(&entry.data);
        let has_audio = media.iter().any(|media| media.kind == MediaKind::Audio);
        if entry.message.kind != Kind::User || !has_audio {
            return Err(format!("message {id} is not a voice note"));
        }
        Ok(entry)
    }
}

impl Worker {
    async fn run(self, mut queue: mpsc::UnboundedReceiver<Job>) {
        while let Some(job) = queue.recv().await {
            let (agent, id) = (job.agent.clone(), job.id);
            if let Err(err) = self.transcribe(job).await {
                tracing::error!(agent = %agent, "the transcript of message {id} cannot be logged: {err}");
            }
            self.pending.remove(&agent, id);
            if let Some(handle) = self.agents.get(&agent) {
                handle.wake();
            }
        }
    }

    /// Transcribes a job's audio and logs what came of it.
    async fn transcribe(&self, job: Job) -> Result<(), LogError> {
        let meter = self.meter.for_agent(&job.agent);
        let mut parts = Vec::new();
        for audio in &job.audio {
            let outcome = match meter.refusal().await? {
                Some(spent) => Err(spent),
                None => self.tries(audio, &meter).await,
            };
            parts.push(match outcome {
                Ok(text) => format!("{} {text}", media::label(audio, None)),
                Err(why) => {
                    let said = media::label(audio, None);
                    let said = said.trim_end_matches(']');
                    format!("{said}: could not transcribe: {why}]")
                }
            });
        }
        let message =
            NewMessage::new(Kind::User, &job.source, parts.join("\n")).with_data(MessageData {
                transcript_of: Some(job.id),
                client: job.client,
                // A stranger's voice note is a stranger's transcript.
                provenance: job.provenance,
                media: job.audio,
                ..MessageData::default()
            });
        self.log.append(&job.agent, message).await?;
        Ok(())
    }

    /// Tries one audio file until it is transcribed or the tries are spent;
    /// each answer is metered.
    async fn tries(&self, audio: &MediaRef, meter: &Meter) -> Result<String, String> {
        let bytes = self.media.read(audio).map_err(|err| err.to_string())?;
        let file_name = format!(
            "{}.{}",
            audio.sha256,
            hearth_protocol::media::kind_of(&audio.media_type).map_or("bin", |(_, ext)| ext)
        );
        let mut delay = Duration::from_millis(self.config.retry_delay_ms);
        let mut tried = 0;
        loop {
            tried += 1;
            let started = Instant::now();
            let answer = client::transcribe(
                &self.http,
                &self.config,
                self.key.as_deref(),
                &bytes,
                &audio.media_type,
                &file_name,
            )
            .await;
            match answer {
                Ok(transcript) => {
                    let seconds = audio.duration_secs.map(f64::from).or(transcript.seconds);
                    if let Err(err) = meter
                        .record_transcription(
                            &self.config.model,
                            seconds,
                            self.config.price_per_minute,
                            started.elapsed(),
                        )
                        .await
                    {
                        tracing::error!("a transcription's cost cannot be stored: {err}");
                    }
                    return Ok(transcript.text);
                }
                Err(err) if err.retry && tried < self.config.tries.max(1) => {
                    tracing::warn!(
                        "transcription try {tried} of {} failed, again in {:?}: {}",
                        self.config.tries,
                        delay,
                        err.why
                    );
                    tokio::time::sleep(delay).await;
                    delay = delay.saturating_mul(2);
                }
                Err(err) => {
                    tracing::warn!("transcription failed after {tried} tries: {}", err.why);
                    return Err(err.why);
                }
            }
        }
    }
}

/// A submitted message's text with its media said first:
/// `[voice 0:42, transcribing] caption`, `[file: "lease.pdf", 3 pages]`.
/// Without a transcriber a voice note says so at once.
pub fn labelled(text: &str, media: &[MediaRef], transcribing: bool) -> String {
    let mut said: Vec<String> = media
        .iter()
        .map(|media| match (media.kind, transcribing) {
            (MediaKind::Audio, true) => media::label(media, Some("transcribing")),
            (MediaKind::Audio, false) => {
                let label = media::label(media, None);
                format!(
                    "{}: could not transcribe: no [transcription] is configured]",
                    label.trim_end_matches(']')
                )
            }
            (MediaKind::Document, _) => media::label(media, None),
        })
        .collect();
    if !text.trim().is_empty() {
        said.push(text.to_string());
    }
    said.join(" ")
}

/// Names a submitted message's media in its data, and marks it pending
/// when a transcript is to follow; a document's text is untrusted content
/// (`untrusted: "document"`), so reading it taints the turn.
pub fn name_media(data: &mut MessageData, media: &[MediaRef], transcribing: bool) {
    if media.is_empty() {
        return;
    }
    data.media = media.to_vec();
    if transcribing && media.iter().any(|media| media.kind == MediaKind::Audio) {
        data.transcription = Some("pending".to_string());
    }
    if media.iter().any(|media| media.kind == MediaKind::Document) {
        data.untrusted = Some("document".to_string());
    }
}

/// The voice notes marked pending with no transcript, oldest first.
const UNTRANSCRIBED: &str = "SELECT agent, id, source, data FROM messages AS voice
     WHERE kind = 'user' AND json_extract(data, '$.transcription') = 'pending'
     AND NOT EXISTS (SELECT 1 FROM messages AS transcript
         WHERE transcript.agent = voice.agent
         AND json_extract(transcript.data, '$.transcript_of') IS NOT NULL
         AND json_extract(transcript.data, '$.transcript_of') = voice.id + 0)
     ORDER BY agent, id";

/// The voice notes the log holds without their transcript.
#[allow(async_fn_in_trait)] // called on `Log` itself, whose futures are `Send`
pub trait TranscriptsLog {
    /// Voice notes of every agent marked pending with no transcript logged
    /// yet: `(agent, id, source, data)`. Read through the log's partial
    /// indexes of voice notes and transcripts (`log/schema.rs`), whose
    /// conditions the query repeats; `voice.id + 0` has no column affinity,
    /// so the transcripts' index is searched by the note's id too.
    async fn untranscribed(&self) -> Result<Vec<(String, u64, String, MessageData)>, LogError>;
}

impl TranscriptsLog for Log {
    async fn untranscribed(&self) -> Result<Vec<(String, u64, String, MessageData)>, LogError> {
        self.run(|tx, _| {
            let mut statement = tx.prepare(UNTRANSCRIBED)?;
            let rows = statement.query_map([], |row| {
                let data: Option<String> = row.get(3)?;
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)? as u64,
                    row.get::<_, String>(2)?,
                    MessageData::read(data.as_deref()),
                ))
            })?;
            rows.collect()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voice(duration_secs: Option<u32>) -> MediaRef {
        MediaRef {
            sha256: "a".repeat(64),
            kind: MediaKind::Audio,
            media_type: "audio/ogg".into(),
            bytes: 10,
            name: None,
            duration_secs,
            pages: None,
        }
    }

    #[test]
    fn a_voice_note_says_what_is_coming() {
        assert_eq!(
            labelled("", &[voice(Some(42))], true),
            "[voice 0:42, transcribing]"
        );
        assert_eq!(
            labelled("listen", &[voice(None)], true),
            "[voice, transcribing] listen"
        );
        assert_eq!(
            labelled("", &[voice(Some(42))], false),
            "[voice 0:42: could not transcribe: no [transcription] is configured]"
        );
        let mut data = MessageData::default();
        name_media(&mut data, &[voice(Some(1))], true);
        assert_eq!(data.transcription.as_deref(), Some("pending"));
        assert_eq!(media::refs(&data), vec![voice(Some(1))]);
    }

    #[tokio::test]
    async fn a_turn_waits_for_a_pending_transcript_but_not_forever() {
        let pending = Pending::new(Duration::from_secs(3600));
        assert!(!pending.settle("a", &[1]).await, "nothing pending: no wait");
        pending.add("a", 1);
        // The wait is polled first, so it sees the note pending.
        let (waited, ()) = tokio::join!(pending.settle("a", &[0, 1]), async {
            pending.remove("a", 1)
        });
        assert!(waited);
        let short = Pending::new(Duration::from_millis(1));
        short.add("a", 2);
        assert!(short.settle("a", &[2]).await, "it gives up after its bound");
    }

    #[tokio::test]
    async fn voice_notes_left_untranscribed_are_found_through_indexes_not_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let (events, _) = tokio::sync::broadcast::channel(16);
        let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
        let note = |pending: bool| {
            let mut data = MessageData::default();
            name_media(&mut data, &[voice(Some(3))], pending);
            NewMessage::new(hearth_protocol::Kind::User, "terminal", "").with_data(data)
        };
        let transcribed = log.append("a", note(true)).await.unwrap().id;
        let left = log.append("a", note(true)).await.unwrap().id;
        log.append("a", note(false)).await.unwrap();
        let transcript = MessageData {
            transcript_of: Some(transcribed),
            ..MessageData::default()
        };
        log.append(
            "a",
            NewMessage::new(hearth_protocol::Kind::Note, "hearthd", "words").with_data(transcript),
        )
        .await
        .unwrap();
        let found: Vec<(String, u64)> = log
            .untranscribed()
            .await
            .unwrap()
            .into_iter()
            .map(|(agent, id, _, _)| (agent, id))
            .collect();
        assert_eq!(found, vec![("a".to_string(), left)]);
        let plan = log
            .read(|connection| {
                let mut statement =
                    connection.prepare(&format!("EXPLAIN QUERY PLAN {UNTRANSCRIBED}"))?;
                let steps = statement.query_map([], |row| row.get::<_, String>(3))?;
                steps.collect::<Result<Vec<_>, _>>()
            })
            .await
            .unwrap();
        assert!(
            plan.iter()
                .any(|step| step.contains("messages_voice_pending"))
                && plan
                    .iter()
                    .any(|step| step.contains("messages_transcripts (agent=? AND <expr>=?)")),
            "{plan:?}"
        );
    }
}
