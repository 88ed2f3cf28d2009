//! Server-sent events: bytes in, whole events out.
//!
//! A pure parser that follows the HTML living standard's event-stream rules
//! as far as model providers use them: lines end in `\n`, `\r\n` or `\r`; a
//! blank line ends an event; `data:` lines join with `\n`; lines starting with
//! `:` are comments; one space after the colon is dropped. Bytes are kept
//! until a line is whole, so a chunk may end anywhere — inside a line, between
//! `\r` and `\n`, or inside a UTF-8 character.
//!
//! What is kept is bounded: a line, or an event's data, longer than
//! [`MAX_EVENT_BYTES`] is [`TooLong`] rather than memory a server chose.

/// The most bytes one line, or one event's joined data, may hold: far above
/// any provider's event (a whole answer repeated in a final event is a few
/// hundred kilobytes), far below what a hostile server could make hearthd hold.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// A line or an event past the parser's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an event-stream line or event is longer than {limit} bytes")]
pub struct TooLong {
    pub limit: usize,
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server named the event.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Splits a byte stream into events; feed it chunks as they arrive.
#[derive(Debug)]
pub struct SseParser {
    /// The most bytes a line or an event's data may hold.
    limit: usize,
    /// The bytes of the line not yet ended; decoded only once whole, so a
    /// UTF-8 character split across chunks survives.
    line: Vec<u8>,
    /// The last byte seen ended a line with `\r`: a `\n` right after it
    /// belongs to the same line end, even in the next chunk.
    after_cr: bool,
    /// The `event:` field of the event being read.
    event: Option<String>,
    /// The `data:` lines of the event being read, joined with `\n`.
    data: String,
    /// Whether the event being read has a `data:` line; an event without one
    /// is not dispatched, as the standard says.
    has_data: bool,
}

impl Default for SseParser {
    fn default() -> SseParser {
        SseParser::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// A parser that refuses lines and events longer than `limit` bytes.
    pub fn with_limit(limit: usize) -> SseParser {
        SseParser {
            limit,
            line: Vec::new(),
            after_cr: false,
            event: None,
            data: String::new(),
            has_data: false,
        }
    }

    /// Takes the next chunk and returns the events it completed, in order.
    /// An event whose blank line has not arrived yet stays buffered; one cut
    /// off by the end of the stream is never returned. A line or an event
    /// past the limit is [`TooLong`]; the stream is not worth reading on.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, TooLong> {
        let too_long = TooLong { limit: self.limit };
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            if self.line.len() + end > self.limit {
                return Err(too_long);
            }
            self.line.extend_from_slice(&rest[..end]);
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.take_line(&line) {
                events.push(event);
            }
            if self.data.len() > self.limit {
                return Err(too_long);
            }
            let ended_by_cr = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if ended_by_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    // The `\n` of a `\r\n` may open the next chunk.
                    None => self.after_cr = true,
                }
            }
        }
        if self.line.len() + rest.len() > self.limit {
            return Err(too_long);
        }
        self.line.extend_from_slice(rest);
        Ok(events)
    }

    /// Handles one whole line; returns an event when the line is blank.
    fn take_line(&mut self, line: &[u8]) -> Option<SseEvent> {
        if line.is_empty() {
            let data = std::mem::take(&mut self.data);
            let event = self.event.take();
            let has_data = std::mem::replace(&mut self.has_data, false);
            return has_data.then_some(SseEvent { event, data });
        }
        if line[0] == b':' {
            return None;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            // `id` and `retry` matter to reconnecting browsers, not to one
            // model request; unknown fields are ignored by the standard.
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: name.map(str::to_string),
            data: data.to_string(),
        }
    }

    fn feed_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        chunks
            .iter()
            .flat_map(|chunk| parser.feed(chunk).unwrap())
            .collect()
    }

    #[test]
    fn events_split_on_blank_lines() {
        let events = feed_all(&[b"data: one\n\ndata: two\n\n"]);
        assert_eq!(events, vec![event(None, "one"), event(None, "two")]);
    }

    #[test]
    fn crlf_lines_split_like_lf_lines() {
        let events = feed_all(&[b"event: a\r\ndata: one\r\n\r\ndata: two\r\n\r\n"]);
        assert_eq!(events, vec![event(Some("a"), "one"), event(None, "two")]);
    }

    #[test]
    fn lone_cr_ends_a_line() {
        let events = feed_all(&[b"data: one\r\rdata: two\r\r"]);
        assert_eq!(events, vec![event(None, "one"), event(None, "two")]);
    }

    #[test]
    fn multi_line_data_joins_with_newline() {
        let events = feed_all(&[b"data: first\ndata: second\ndata:third\n\n"]);
        assert_eq!(events, vec![event(None, "first\nsecond\nthird")]);
    }

    #[test]
    fn comments_and_unknown_fields_are_skipped() {
        let events = feed_all(&[b": keep-alive\n\nid: 7\nretry: 10\n: note\ndata: x\n\n"]);
        assert_eq!(events, vec![event(None, "x")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched() {
        let events = feed_all(&[b"event: ping\n\ndata: x\n\n"]);
        assert_eq!(events, vec![event(None, "x")]);
    }

    #[test]
    fn empty_data_line_is_an_empty_event() {
        let events = feed_all(&[b"data:\n\n"]);
        assert_eq!(events, vec![event(None, "")]);
    }

    #[test]
    fn only_one_space_after_the_colon_is_dropped() {
        let events = feed_all(&[b"data:  two spaces\n\n"]);
        assert_eq!(events, vec![event(None, " two spaces")]);
    }

    #[test]
    fn event_field_applies_to_its_event_only() {
        let events = feed_all(&[b"event: response.created\ndata: {}\n\ndata: [DONE]\n\n"]);
        assert_eq!(
            events,
            vec![event(Some("response.created"), "{}"), event(None, "[DONE]")]
        );
    }

    #[test]
    fn a_chunk_boundary_anywhere_gives_the_same_events() {
        let stream =
            "event: e\r\ndata: héllo ✓\r\n\r\n: c\ndata: a\ndata: b\n\ndata: z\r\r".as_bytes();
        let whole = feed_all(&[stream]);
        assert_eq!(
            whole,
            vec![
                event(Some("e"), "héllo ✓"),
                event(None, "a\nb"),
                event(None, "z")
            ]
        );
        for cut in 0..=stream.len() {
            let (head, tail) = stream.split_at(cut);
            assert_eq!(feed_all(&[head, tail]), whole, "cut at byte {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(feed_all(&bytes), whole);
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_end() {
        let events = feed_all(&[b"data: a\r", b"\n\r", b"\n", b"data: b\r", b"", b"\n\r\n"]);
        assert_eq!(events, vec![event(None, "a"), event(None, "b")]);
    }

    #[test]
    fn an_event_cut_off_is_held_back() {
        let mut parser = SseParser::new();
        assert_eq!(parser.feed(b"data: {\"a\":"), Ok(vec![]));
        assert_eq!(parser.feed(b"1}\n"), Ok(vec![]));
        assert_eq!(parser.feed(b"\n"), Ok(vec![event(None, "{\"a\":1}")]));
    }

    /// Issue 18: a line that never ends, or an event of endless data lines,
    /// is refused at the limit rather than buffered whole.
    #[test]
    fn a_line_or_event_past_the_limit_is_too_long() {
        let mut parser = SseParser::with_limit(16);
        assert_eq!(parser.feed(b"data: 0123456789"), Ok(vec![]));
        assert_eq!(parser.feed(b"abcdef"), Err(TooLong { limit: 16 }));
        let mut parser = SseParser::with_limit(16);
        assert_eq!(
            parser.feed(b"data: 0123456789ABCDEFG\n"),
            Err(TooLong { limit: 16 })
        );
        let mut parser = SseParser::with_limit(16);
        assert_eq!(
            parser.feed(b"data: 01234\ndata: 56789\ndata: abcde\n"),
            Err(TooLong { limit: 16 })
        );
        // Comments count against nothing once their line ends.
        let mut parser = SseParser::with_limit(16);
        for _ in 0..100 {
            assert_eq!(parser.feed(b": keep-alive\n"), Ok(vec![]));
        }
        assert_eq!(parser.feed(b"data: x\n\n"), Ok(vec![event(None, "x")]));
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let events = feed_all(&[b"data: a\xffb\n\n"]);
        assert_eq!(events, vec![event(None, "a\u{fffd}b")]);
    }
}

#[cfg(test)]
mod fuzz {
    //! Property tests: a stream cut into arbitrary chunks gives the events it
    //! gives whole, and no bytes at all can make the parser panic.
    use super::*;
    use proptest::prelude::*;

    /// A field value: anything but a line break.
    fn value() -> impl Strategy<Value = String> {
        "[^\r\n]{0,12}"
    }

    /// Events to send: an optional name and one or more data lines.
    fn events() -> impl Strategy<Value = Vec<(Option<String>, Vec<String>)>> {
        proptest::collection::vec(
            (
                proptest::option::of(value()),
                proptest::collection::vec(value(), 1..4),
            ),
            0..6,
        )
    }

    /// The stream of `events`, each line ended by `ends` in turn (`\n`,
    /// `\r\n` or `\r`), with comments sprinkled in.
    fn render(events: &[(Option<String>, Vec<String>)], ends: &[u8], comments: bool) -> Vec<u8> {
        let mut lines = Vec::new();
        for (name, data) in events {
            if comments {
                lines.push(": keep-alive".to_string());
            }
            if let Some(name) = name {
                lines.push(format!("event: {name}"));
            }
            lines.extend(data.iter().map(|line| format!("data: {line}")));
            lines.push(String::new());
        }
        let mut stream = Vec::new();
        let mut after_cr = false;
        for (n, line) in lines.iter().enumerate() {
            stream.extend_from_slice(line.as_bytes());
            let end: &[u8] = match ends[n % ends.len()] % 3 {
                // A blank line after a lone `\r` cannot start with `\n`:
                // the two would read as one `\r\n`.
                _ if after_cr && line.is_empty() => b"\r",
                0 => b"\n",
                1 => b"\r\n",
                _ => b"\r",
            };
            after_cr = end == b"\r";
            stream.extend_from_slice(end);
        }
        stream
    }

    /// `bytes` fed in the chunks that `cuts` (positions, any order) make.
    fn feed_cut(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut from = 0;
        for cut in cuts.into_iter().chain([bytes.len()]) {
            events.extend(parser.feed(&bytes[from..cut]).unwrap());
            from = cut;
        }
        events
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_chunking_of_a_stream_gives_its_events(
            sent in events(),
            ends in proptest::collection::vec(any::<u8>(), 1..8),
            comments in any::<bool>(),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            let stream = render(&sent, &ends, comments);
            let expected: Vec<SseEvent> = sent
                .iter()
                .map(|(name, data)| SseEvent { event: name.clone(), data: data.join("\n") })
                .collect();
            prop_assert_eq!(feed_cut(&stream, &[]), expected.clone());
            prop_assert_eq!(feed_cut(&stream, &cuts), expected);
        }

        #[test]
        fn arbitrary_bytes_never_panic_and_chunking_does_not_matter(
            bytes in proptest::collection::vec(
                prop_oneof![any::<u8>(), Just(b'\n'), Just(b'\r'), Just(b':')],
                0..256,
            ),
            cuts in proptest::collection::vec(any::<usize>(), 0..16),
        ) {
            let whole = feed_cut(&bytes, &[]);
            prop_assert_eq!(feed_cut(&bytes, &cuts), whole);
        }
    }
}
