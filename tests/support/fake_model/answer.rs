//! One scripted reply turned into wire-neutral values: the text and calls
//! with their ids, and the facts about the request the answer is rendered
//! for. Both API formats render from these, so a streamed answer ends in
//! exactly the object the non-streamed one would have returned.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::script::{Finish, Thought, Usage};

/// What the model says in one answer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Answer {
    /// The assistant text; empty means the answer has no text part.
    pub text: String,
    /// Function calls, in output order, after the text.
    pub calls: Vec<Call>,
    /// The usage a test scripted; the rough counts when none.
    pub usage: Option<Usage>,
    /// How it ends, when not as a whole answer.
    pub finish: Option<Finish>,
    /// The reasoning before the text and calls.
    pub thoughts: Vec<Thought>,
}

/// One function call the model makes.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    /// `call_<n>`: the id the client echoes in its tool result.
    pub call_id: String,
    /// `fc_<n>`: the Responses API's id of the output item itself.
    pub item_id: String,
    pub name: String,
    /// The arguments as the JSON string the model wrote, never parsed.
    pub arguments: String,
}

impl Answer {
    /// The text, or `None` when the answer has none.
    pub fn text(&self) -> Option<&str> {
        (!self.text.is_empty()).then_some(self.text.as_str())
    }

    /// A rough token count (four bytes a token, at least one) for usage.
    pub fn output_tokens(&self) -> u64 {
        if let Some(usage) = self.usage {
            return usage.output;
        }
        let bytes = self.text.len() + self.calls.iter().map(|c| c.arguments.len()).sum::<usize>();
        (bytes as u64 / 4).max(1)
    }

    /// The usage this answer reports for `exchange`: the scripted one, or
    /// the request's rough size uncached and the rough output.
    pub fn usage(&self, exchange: &Exchange) -> Usage {
        self.usage.unwrap_or(Usage {
            input: exchange.input_tokens,
            cached_input: 0,
            cache_write: 0,
            output: self.output_tokens(),
        })
    }
}

impl Call {
    /// The `n`th call made by a server.
    pub fn new(n: u64, name: String, arguments: String) -> Call {
        Call {
            call_id: format!("call_{n}"),
            item_id: format!("fc_{n}"),
            name,
            arguments,
        }
    }
}

/// The request an answer is rendered for: what the answer echoes from it
/// and the ids it carries.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Exchange {
    /// Counts exchanges per server from 1; ids such as `resp_<n>` use it.
    pub number: u64,
    /// The request's `model`, echoed back like the real APIs do.
    pub model: String,
    /// Unix seconds when the answer was made.
    pub created: u64,
    /// A rough prompt size: request body bytes / 4.
    pub input_tokens: u64,
    /// Chat Completions' `stream_options.include_usage`: whether a streamed
    /// answer ends with a usage chunk.
    pub include_usage: bool,
    /// The Responses request's `previous_response_id`, echoed back.
    pub previous_response_id: Value,
}

impl Exchange {
    /// Reads what an answer needs from the request `body` (`body_len` raw
    /// bytes). Missing or mistyped fields fall back to defaults: checking the
    /// request is the test's job, through the recorded requests.
    pub fn new(number: u64, body: &Value, body_len: usize) -> Exchange {
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        Exchange {
            number,
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("fake-model")
                .to_string(),
            created,
            input_tokens: body_len as u64 / 4,
            include_usage: body
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            previous_response_id: body
                .get("previous_response_id")
                .cloned()
                .unwrap_or(Value::Null),
        }
    }

    pub fn chat_id(&self) -> String {
        format!("chatcmpl-{}", self.number)
    }

    pub fn response_id(&self) -> String {
        format!("resp_{}", self.number)
    }

    pub fn message_id(&self) -> String {
        format!("msg_{}", self.number)
    }
}

/// How far a streamed answer goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// To the end: finish reason, usage and the format's terminator.
    Complete,
    /// Up to the last text delta, as if the model were still generating.
    Hold,
    /// Up to the last text delta, and then the connection closes.
    Drop,
    /// Up to the last text delta, and then the connection is reset (a
    /// server or a proxy that died mid-answer).
    Reset,
}

impl StreamEnd {
    /// Whether the frames stop after the text deltas.
    pub fn stops_after_text(self) -> bool {
        self != StreamEnd::Complete
    }
}

/// Characters per streamed delta: about a token's worth, so even a short
/// text arrives in several deltas.
const PIECE_CHARS: usize = 4;

/// Splits `text` into the pieces a stream sends, on character boundaries.
/// Empty text gives no pieces.
pub(crate) fn pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest
            .char_indices()
            .nth(PIECE_CHARS)
            .map_or(rest.len(), |(index, _)| index);
        let (piece, tail) = rest.split_at(end);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_rejoin_to_the_text_on_char_boundaries() {
        let text = "héllo wörld ✓";
        let pieces = pieces(text);
        assert_eq!(pieces, ["héll", "o wö", "rld ", "✓"]);
        assert_eq!(pieces.concat(), text);
    }

    #[test]
    fn empty_text_has_no_pieces() {
        assert!(pieces("").is_empty());
    }
}
