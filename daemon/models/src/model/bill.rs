//! What one try of a call costs: every request a provider accepted is
//! billed, whether its answer was whole, cut, failed mid-stream or
//! unreadable, so every one is stored and counts against the budget.
//!
//! A provider reports usage in its answer; a try that ended before the
//! usage came (a broken stream, an error event, a body that is not the
//! format) still cost what the provider read and wrote. Such a try is
//! billed with its input estimated from the request's size and its output
//! from the text that streamed, and marked estimated. The estimate is
//! deliberately high (three bytes a token, where text runs nearer four, and
//! a large image's worth per image), so a budget errs on spending less. A
//! request the provider refused with an HTTP error, or that never reached
//! it, is not billed.

use super::{Item, Request, Usage};

/// One try's bill.
#[derive(Debug, Clone, PartialEq)]
pub struct Bill {
    /// `provider/model` of the model tried, which prices it.
    pub model: String,
    pub usage: Usage,
    /// The usage is hearth's estimate, not the provider's report.
    pub estimated: bool,
    /// From sending this try to its end.
    pub latency: std::time::Duration,
}

/// What a provider's reader learned about billing while it read one try;
/// filled in as the try goes, read after it ended either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Metering {
    /// The provider accepted the request (a success status): it is billed.
    pub accepted: bool,
    /// The latest usage the provider reported, if it reported any.
    pub reported: Option<Usage>,
    /// Bytes of reply text that streamed.
    pub streamed_bytes: u64,
}

/// Bytes a token is taken to be when nothing is reported.
const BYTES_PER_TOKEN: u64 = 3;
/// Tokens an image is taken to cost: about what the providers charge for
/// the largest image they take without scaling it down.
const IMAGE_TOKENS: u64 = 2_000;

/// The input tokens `request` is estimated to cost.
pub fn estimated_input(request: &Request) -> u64 {
    let mut bytes = request.instructions.len() as u64;
    let mut images = 0u64;
    for tool in &request.tools {
        bytes += (tool.name.len() + tool.description.len()) as u64;
        bytes += tool.parameters.to_string().len() as u64;
    }
    for item in &request.items {
        match item {
            Item::User {
                text,
                images: attached,
            } => {
                bytes += text.len() as u64;
                images += attached.len() as u64;
            }
            Item::Assistant {
                text, tool_calls, ..
            } => {
                bytes += text.as_deref().map_or(0, str::len) as u64;
                for call in tool_calls {
                    bytes += (call.name.len() + call.arguments.len()) as u64;
                }
            }
            Item::ToolResult { output, .. } => bytes += output.len() as u64,
        }
    }
    bytes.div_ceil(BYTES_PER_TOKEN) + images * IMAGE_TOKENS
}

impl Metering {
    /// The bill of the try this metering watched, or none when the provider
    /// never accepted the request. A reported usage is taken as it is,
    /// except that a try that ended before its final usage (`whole` false)
    /// reported only what came before (Anthropic's `message_start` counts
    /// one output token): where more output streamed, its output is
    /// estimated from what streamed. No report at all (or one of
    /// nothing, from a server that counts no usage) is an estimate.
    pub fn bill(&self, request: &Request, whole: bool) -> Option<(Usage, bool)> {
        if !self.accepted {
            return None;
        }
        let streamed = self.streamed_bytes.div_ceil(BYTES_PER_TOKEN);
        match self.reported {
            Some(usage) if usage != Usage::default() => {
                if !whole && usage.output < streamed {
                    Some((
                        Usage {
                            output: streamed,
                            ..usage
                        },
                        true,
                    ))
                } else {
                    Some((usage, false))
                }
            }
            _ => Some((
                Usage {
                    input: estimated_input(request),
                    cached_input: 0,
                    cache_write: 0,
                    cache_write_long: 0,
                    output: streamed,
                },
                true,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Image;

    fn request(text: &str, images: usize) -> Request {
        Request {
            instructions: "abc".into(),
            tools: vec![],
            items: vec![Item::User {
                text: text.into(),
                images: (0..images)
                    .map(|_| Image {
                        media_type: "image/png".into(),
                        data_base64: "x".repeat(1_000_000),
                    })
                    .collect(),
            }],
            cache_key: None,
            cache_marks: vec![],
        }
    }

    #[test]
    fn a_refused_request_is_not_billed() {
        assert_eq!(Metering::default().bill(&request("hi", 0), false), None);
    }

    #[test]
    fn reported_usage_is_taken_as_it_is() {
        let usage = Usage {
            input: 10,
            cached_input: 4,
            cache_write: 0,
            cache_write_long: 0,
            output: 5,
        };
        let metering = Metering {
            accepted: true,
            reported: Some(usage),
            streamed_bytes: 300,
        };
        assert_eq!(metering.bill(&request("hi", 0), true), Some((usage, false)));
    }

    #[test]
    fn no_report_is_an_estimate_from_the_size_and_what_streamed() {
        let metering = Metering {
            accepted: true,
            reported: None,
            streamed_bytes: 7,
        };
        // "abc" + 6 bytes = 9 bytes: 3 tokens; one image: 2,000; the
        // image's base64 is not counted as text.
        let (usage, estimated) = metering.bill(&request("123456", 1), false).unwrap();
        assert!(estimated);
        assert_eq!(usage.input, 3 + IMAGE_TOKENS);
        assert_eq!(usage.output, 3);
    }

    #[test]
    fn input_reported_before_a_cut_keeps_the_streamed_output_as_estimate() {
        let metering = Metering {
            accepted: true,
            reported: Some(Usage {
                input: 50,
                output: 1,
                ..Usage::default()
            }),
            streamed_bytes: 30,
        };
        let (usage, estimated) = metering.bill(&request("hi", 0), false).unwrap();
        assert!(estimated);
        assert_eq!((usage.input, usage.output), (50, 10));
    }
}
