//! The `type` names of the client frames, read from [`ClientFrame`]'s own
//! serde definition rather than copied beside it: a frame added to the enum
//! is known to [`ClientFrame::decode`] at once.
//!
//! How: deserializing a frame whose `type` is no variant's name makes serde
//! report the names it expected, as a `'static` list, through
//! [`de::Error::unknown_variant`]. An error type that keeps that list is all
//! it takes.

use super::ClientFrame;
use serde::de::{self, value::MapDeserializer, Deserialize};
use std::fmt;
use std::sync::OnceLock;

/// Every client frame's `type`, in the enum's order.
pub fn client_frame_types() -> &'static [&'static str] {
    static TYPES: OnceLock<&'static [&'static str]> = OnceLock::new();
    TYPES.get_or_init(|| {
        // A `type` that no frame has: serde names those it expected.
        let frame = std::iter::once(("type", ""));
        match ClientFrame::deserialize(MapDeserializer::<_, Expected>::new(frame)) {
            Err(Expected(Some(types))) => types,
            // Cannot happen: "" is no variant's name, and the tag is read
            // before anything else. Tests pin the list.
            _ => &[],
        }
    })
}

/// The error that keeps the variant names serde expected.
#[derive(Debug)]
struct Expected(Option<&'static [&'static str]>);

impl de::Error for Expected {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Expected(None)
    }

    fn unknown_variant(_: &str, expected: &'static [&'static str]) -> Self {
        Expected(Some(expected))
    }
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected a client frame type")
    }
}

impl std::error::Error for Expected {}

#[cfg(test)]
mod tests {
    use super::*;

    /// One frame of every kind: the match has no wildcard, so a new frame
    /// fails to compile here until it has a sample.
    fn samples() -> Vec<ClientFrame> {
        let samples = vec![
            ClientFrame::Hello {
                client: "c".into(),
                version: 1,
                since: None,
                agent: None,
                token: None,
                owner_key: None,
            },
            ClientFrame::Submit {
                text: "t".into(),
                source: "s".into(),
                key: None,
                images: vec![],
                person: None,
                media: vec![],
            },
            ClientFrame::MediaPut {
                media_type: "audio/ogg".into(),
                data_base64: String::new(),
                name: None,
                duration_secs: None,
            },
            ClientFrame::ImagePut {
                media_type: "image/png".into(),
                data_base64: String::new(),
            },
            ClientFrame::Transcribe { id: 0 },
            ClientFrame::ImageGet { sha256: "x".into() },
            ClientFrame::Note {
                text: "t".into(),
                source: "s".into(),
            },
            ClientFrame::Interrupt,
            ClientFrame::History {
                before: None,
                limit: None,
            },
            ClientFrame::Status,
            ClientFrame::Mcp,
            ClientFrame::Notify {
                key: "k".into(),
                text: "t".into(),
                source: "s".into(),
            },
            ClientFrame::ScheduleAdd {
                when: "w".into(),
                text: "t".into(),
            },
            ClientFrame::ScheduleList,
            ClientFrame::ScheduleCancel { id: 1 },
            ClientFrame::Backup { path: "/p".into() },
            ClientFrame::StateGet { name: "n".into() },
            ClientFrame::StateSet {
                name: "n".into(),
                value: "v".into(),
            },
            ClientFrame::Stats { days: None },
            ClientFrame::Approve {
                id: "a".into(),
                allow: true,
                by: None,
            },
            serde_json::from_value(serde_json::json!({"type": "search", "query": "q"})).unwrap(),
            ClientFrame::Memory,
            ClientFrame::MemoryShow { id: 0, n: 1 },
            ClientFrame::Facts {
                add: None,
                remove: None,
            },
            ClientFrame::WebLogin,
            ClientFrame::WebSessions,
            ClientFrame::WebRevoke { id: 1 },
            ClientFrame::Stop { restart: false },
            ClientFrame::Reload,
            ClientFrame::Import {
                from: "openclaw".into(),
                messages: vec![],
                force: false,
                dry_run: false,
            },
        ];
        for sample in &samples {
            match sample {
                ClientFrame::Hello { .. }
                | ClientFrame::Submit { .. }
                | ClientFrame::ImagePut { .. }
                | ClientFrame::MediaPut { .. }
                | ClientFrame::Transcribe { .. }
                | ClientFrame::ImageGet { .. }
                | ClientFrame::Note { .. }
                | ClientFrame::Interrupt
                | ClientFrame::History { .. }
                | ClientFrame::Status
                | ClientFrame::Mcp
                | ClientFrame::Notify { .. }
                | ClientFrame::ScheduleAdd { .. }
                | ClientFrame::ScheduleList
                | ClientFrame::ScheduleCancel { .. }
                | ClientFrame::Backup { .. }
                | ClientFrame::StateGet { .. }
                | ClientFrame::StateSet { .. }
                | ClientFrame::Stats { .. }
                | ClientFrame::Approve { .. }
                | ClientFrame::Search { .. }
                | ClientFrame::Memory
                | ClientFrame::MemoryShow { .. }
                | ClientFrame::Facts { .. }
                | ClientFrame::WebLogin
                | ClientFrame::WebSessions
                | ClientFrame::WebRevoke { .. }
                | ClientFrame::Stop { .. }
                | ClientFrame::Reload
                | ClientFrame::Import { .. } => {}
            }
        }
        samples
    }

    #[test]
    fn the_types_are_the_serialized_names_of_every_frame() {
        let serialized: Vec<String> = samples()
            .iter()
            .map(|frame| {
                let value = serde_json::to_value(frame).unwrap();
                value["type"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(client_frame_types(), serialized);
    }

    #[test]
    fn the_types_include_the_frames_clients_send_most() {
        for name in ["hello", "submit", "schedule_add", "image_put", "approve"] {
            assert!(client_frame_types().contains(&name), "{name}");
        }
    }
}
