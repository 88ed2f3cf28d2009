//! How a turn's request is laid out, as a pure function of the log.
//!
//! Stable parts first, so the provider's prompt cache serves them: the
//! instructions and tools; the view (the memory's lines for every earlier
//! message, in blocks of a fixed number of lines so block boundaries never
//! move); the
//! state message, which begins `</chat>` and holds the only volatile facts
//! (the date and time); then the messages the turn took, whole, and its chain
//! (each step's echo and tool calls, their results, and any messages taken
//! mid-turn after them).
//!
//! A taken message or tool result over the layout's `huge_message` bytes
//! is sent as its head and tail (`memory/huge.rs`); `zoom` pages through it.
//!
//! A taken message with images carries them whole, read from the image
//! store through [`Images`]; its text says how many there are. Images that a
//! tool call brought back (`zoom(id, 1)` of a message with images) follow the
//! step's tool results as a user item: Chat Completions cannot put images in
//! a tool result, so every provider gets them the same way.
//!
//! Every image of a request is fitted to what the providers take of an
//! image in a request of that many ([`fit::for_models`]: past 20 images,
//! Anthropic takes smaller sides), so the images are counted before any is
//! loaded. An image that cannot be loaded or fitted goes as a line in its
//! item's text saying it was left out and why; [`Built::left_out`] lists
//! them so the turn can tell the user.

use crate::images::{self, ImageStore, LoadError};
use crate::log::{waits_for_turn, Entry, TurnRecord};
use crate::memory;
use crate::model::{Carry, Image, Item, Request, ToolCall, ToolSpec};
use hearth_protocol::image::fit::{self, Destination};
use hearth_protocol::{ImageRef, Kind};

use std::collections::BTreeMap;

/// What the model is told about the shape of its context, before the agent's prompt.
pub const PREAMBLE: &str = "You are a personal agent in a conversation that never ends. \
Your memory of it is shown between <chat> and </chat>, one line per message: \
`id+n|kind: text`, where kind is user (a person), reply (your answers), echo (what you said \
beside tool calls), tool (a call and its result), note (what the daemon recorded) or work \
(a subagent's report). After </chat> come the current state (with your pinned facts) and then the new messages, whole. Lines are summaries: `zoom(id, n)` opens line `id+n` into what it was made from, down to the message itself. `search` finds any message or line by its words, however old: search before you say you do not know or do not remember, and when a line is too coarse to answer from. `remember` pins a lasting fact (a name, a preference, a commitment) in view for good; `forget` unpins one.";

/// No reasoning to hand back: for a chain's first request, and for replays.
pub static NO_CARRIES: BTreeMap<u32, Carry> = BTreeMap::new();

/// Where a request's images are read from.
pub trait Images: Sync {
    /// The image's bytes as a request carries them, fitted to
    /// `destination`; the error says why it cannot go (the item then goes
    /// without it, saying so).
    fn load(&self, image: &ImageRef, destination: &Destination) -> Result<Image, LoadError>;
}

impl Images for ImageStore {
    fn load(&self, image: &ImageRef, destination: &Destination) -> Result<Image, LoadError> {
        ImageStore::load(self, image, destination)
    }
}

/// No images at all: for replays and tests of logs without any.
pub struct NoImages;

impl Images for NoImages {
    fn load(&self, _: &ImageRef, _: &Destination) -> Result<Image, LoadError> {
        Err(LoadError::NoStore)
    }
}

/// An image a request went without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The log message that names it (a taken message, or the tool call
    /// that recalled it).
    pub message: u64,
    pub image: ImageRef,
    /// Why, in words: the store's or the fitting's error.
    pub why: String,
}

/// A request, and the images it went without.
#[derive(Debug, Clone)]
pub struct Built {
    pub request: Request,
    pub left_out: Vec<LeftOut>,
}

/// Loads the images of one request. A first pass only counts them (the
/// limit on each image depends on how many the request carries); the
/// second loads each to that limit and keeps what was left out.
struct Loader<'a> {
    images: &'a dyn Images,
    /// `None` while counting.
    destination: Option<Destination>,
    /// The images named so far.
    named: usize,
    left_out: Vec<LeftOut>,
}

impl Loader<'_> {
    /// The images of log message `id` as its item carries them, and the
    /// lines its text gets for those left out (empty when none was).
    fn load(&mut self, id: u64, refs: &[ImageRef]) -> (Vec<Image>, String) {
        self.named += refs.len();
        let Some(destination) = self.destination else {
            return (Vec::new(), String::new());
        };
        let mut loaded = Vec::with_capacity(refs.len());
        let mut said = String::new();
        for (n, image) in refs.iter().enumerate() {
            match self.images.load(image, &destination) {
                Ok(bytes) => loaded.push(bytes),
                Err(err) => {
                    let why = err.to_string();
                    said.push_str(&format!(
                        "\n[image {} of {} ({}) was left out of this request: {why}]",
                        n + 1,
                        refs.len(),
                        image.label()
                    ));
                    self.left_out.push(LeftOut {
                        message: id,
                        image: image.clone(),
                        why,
                    });
                }
            }
        }
        (loaded, said)
    }
}

pub static NO_IMAGES: NoImages = NoImages;

/// The prompt cache key of an agent's requests, its turns' and its
/// compactor's alike: OpenAI routes the requests of one key to the same
/// cache, so a compaction call finds the instructions and tools its agent's
/// turns left there.
pub fn cache_key(agent: &str) -> String {
    format!("hearth-{agent}")
}

/// A turn's instructions: the fixed preamble, the agent's prompt file, then
/// its skills' names and descriptions, sorted (`crate::skills`; nothing
/// when it has none). A missing or unreadable file leaves the preamble
/// alone; an edit, or a skill added, changed or removed, applies at the
/// next request, and only then does the cached prefix change.
pub fn instructions(prompt_file: &std::path::Path) -> String {
    let prompt = std::fs::read_to_string(prompt_file).unwrap_or_default();
    let skills = crate::skills::Folders::of_prompt(prompt_file)
        .map(|folders| folders.scan().listing())
        .unwrap_or_default();
    if skills.is_empty() {
        format!("{PREAMBLE}\n\n{}", prompt.trim())
    } else {
        format!("{PREAMBLE}\n\n{}\n\n{skills}", prompt.trim())
    }
}

/// Everything a request is built from.
pub struct TurnContext<'a> {
    pub instructions: &'a str,
    pub tools: &'a [ToolSpec],
    /// The view's rendered lines (`id+n|text`), settled at the turn's start.
    pub view: &'a [String],
    /// The log from the turn's first taken message on, oldest first.
    pub log: &'a [Entry],
    pub turn: TurnRecord,
    /// The state message's text after `</chat>`: the date and time, the agent.
    pub state: &'a str,
    /// Lines per view message.
    pub block_lines: usize,
    pub cache_key: Option<String>,
    /// What each step's model needs to continue its reasoning (encrypted
    /// reasoning, thinking blocks), kept in memory for the chain only: never
    /// logged, never shown.
    pub carries: &'a BTreeMap<u32, Carry>,
    /// Where the images of taken messages and tool results are read from.
    pub images: &'a dyn Images,
    /// Taken messages and tool results longer than this many bytes are sent
    /// as their head and tail (the layout's `huge_limit`).
    pub huge_message: usize,
}

impl TurnContext<'_> {
    /// Whether the turn took this message (a user message or report it answers).
    pub fn took(&self, entry: &Entry) -> bool {
        let id = entry.message.id;
        waits_for_turn(entry.message.kind, entry.message.status.as_deref())
            && self.turn.taken_after.is_none_or(|after| id > after)
            && id <= self.turn.taken_through
    }

    /// The ids the turn took, in order.
    pub fn taken_ids(&self) -> Vec<u64> {
        self.log
            .iter()
            .filter(|entry| self.took(entry))
            .map(|entry| entry.message.id)
            .collect()
    }

    /// The ids of the turn's own messages that its request carries whole
    /// (echoes, tool calls and results, what it took mid-chain), in order:
    /// the messages whose lines the turn's end can ask for in its chain.
    pub fn chained_ids(&self) -> Vec<u64> {
        self.log
            .iter()
            .filter(|entry| entry.message.id >= self.turn.start_id)
            .filter(|entry| match entry.message.kind {
                Kind::Echo => true,
                Kind::Tool => tool_call(entry).is_some(),
                Kind::User | Kind::Work => self.took(entry),
                _ => false,
            })
            .map(|entry| entry.message.id)
            .collect()
    }

    /// The step number the next model response's tool calls get.
    pub fn next_step(&self) -> u32 {
        self.log
            .iter()
            .filter(|entry| entry.message.id >= self.turn.start_id)
            .filter_map(step_of)
            .max()
            .map_or(0, |step| step + 1)
    }
}

/// A message the turn took, whole: `id+0|kind from source: text`, the text
/// saying how many images follow (`[1 image] text`).
pub fn whole(entry: &Entry) -> String {
    let message = &entry.message;
    format!(
        "{}+0|{} from {}: {}",
        message.id,
        message.kind,
        message.source,
        images::labelled(&message.text, message.images.len())
    )
}

/// A taken message as a user item, with its images; a huge one as its
/// head and tail.
fn taken_item(context: &TurnContext, loader: &mut Loader, entry: &Entry) -> Item {
    let message = &entry.message;
    let text = memory::head_and_tail(&message.text, context.huge_message, message.id, 0);
    let (images, left_out) = loader.load(message.id, &message.images);
    Item::User {
        text: format!(
            "{}+0|{} from {}: {}{left_out}",
            message.id,
            message.kind,
            message.source,
            images::labelled(&text, message.images.len())
        ),
        images,
    }
}

/// A tool result as sent: a huge output as its head and tail, whose
/// offsets are those of the tool message's text (which ends with the
/// output). `zoom`'s own pages are sent whole: they are bounded already.
fn sent_output(context: &TurnContext, entry: &Entry, call: &ToolCall, output: String) -> String {
    if call.name == "zoom" || output.len() <= context.huge_message {
        return output;
    }
    let text = &entry.message.text;
    let base = if text.ends_with(&output) {
        text.len() - output.len()
    } else {
        0
    };
    memory::head_and_tail(&output, context.huge_message, entry.message.id, base).into_owned()
}

/// The view as request messages: `<chat>` then blocks of `block_lines`
/// lines. A block's boundaries never move as lines are appended, so earlier
/// blocks stay byte-identical. Turn and compaction requests share this.
pub fn view_items(lines: &[String], block_lines: usize) -> Vec<Item> {
    let mut blocks = lines.chunks(block_lines.max(1));
    let mut first = String::from("<chat>");
    if let Some(block) = blocks.next() {
        for line in block {
            first.push('\n');
            first.push_str(line);
        }
    }
    let mut items = vec![Item::user(first)];
    items.extend(blocks.map(|block| Item::user(block.join("\n"))));
    items
}

/// Builds the request for the next step of a turn: its images counted
/// first, then each loaded to the limit of a request of that many.
pub fn build(context: &TurnContext) -> Built {
    let mut counting = Loader {
        images: context.images,
        destination: None,
        named: 0,
        left_out: Vec::new(),
    };
    build_with(context, &mut counting);
    let mut loader = Loader {
        images: context.images,
        destination: Some(fit::for_models(counting.named)),
        named: 0,
        left_out: Vec::new(),
    };
    let request = build_with(context, &mut loader);
    Built {
        request,
        left_out: loader.left_out,
    }
}

fn build_with(context: &TurnContext, loader: &mut Loader) -> Request {
    let view = context.view;
    let block_lines = context.block_lines.max(1);
    let mut items = view_items(view, block_lines);
    // The last whole block keeps its bytes until the next batch of merges:
    // the longest prefix worth an explicit cache mark.
    let whole_blocks = view.len() / block_lines;
    let mut cache_marks = Vec::new();
    if whole_blocks > 0 {
        cache_marks.push(whole_blocks - 1);
    }
    items.push(Item::user(format!("</chat>\n{}", context.state)));
    for entry in context
        .log
        .iter()
        .filter(|entry| entry.message.id < context.turn.start_id && context.took(entry))
    {
        items.push(taken_item(context, loader, entry));
    }
    chain(context, loader, &mut items);
    cache_marks.push(items.len() - 1);
    Request {
        instructions: context.instructions.to_string(),
        tools: context.tools.to_vec(),
        items,
        cache_key: context.cache_key.clone(),
        cache_marks,
    }
}

/// The turn's chain from the log: per step, the assistant's echo and calls,
/// then the results, then the images the results brought back, then the
/// messages taken while the step ran.
fn chain(context: &TurnContext, loader: &mut Loader, items: &mut Vec<Item>) {
    let mut step: Option<u32> = None;
    let mut echo: Option<String> = None;
    let mut calls: Vec<ToolCall> = Vec::new();
    let mut results: Vec<Item> = Vec::new();
    let mut deferred: Vec<Item> = Vec::new();
    let flush = |step: Option<u32>,
                 echo: &mut Option<String>,
                 calls: &mut Vec<ToolCall>,
                 results: &mut Vec<Item>,
                 deferred: &mut Vec<Item>,
                 items: &mut Vec<Item>| {
        // Recalled images sit among the results until here: after every
        // result of the step, since providers want the results together.
        let (recalled, results): (Vec<Item>, Vec<Item>) = results
            .drain(..)
            .partition(|item| matches!(item, Item::User { .. }));
        if echo.is_some() || !calls.is_empty() {
            items.push(Item::Assistant {
                text: echo.take(),
                tool_calls: std::mem::take(calls),
                carry: step
                    .and_then(|step| context.carries.get(&step).cloned())
                    .unwrap_or_default(),
            });
        }
        items.extend(results);
        items.extend(recalled);
        items.append(deferred);
    };
    for entry in context
        .log
        .iter()
        .filter(|entry| entry.message.id >= context.turn.start_id)
    {
        match entry.message.kind {
            Kind::Echo | Kind::Tool => {
                let this_step = step_of(entry);
                if this_step != step {
                    flush(
                        step,
                        &mut echo,
                        &mut calls,
                        &mut results,
                        &mut deferred,
                        items,
                    );
                    step = this_step;
                }
                if entry.message.kind == Kind::Echo {
                    echo = Some(entry.message.text.clone());
                } else if let Some((call, output)) = tool_call(entry) {
                    results.push(Item::ToolResult {
                        call_id: call.id.clone(),
                        output: sent_output(context, entry, &call, output),
                    });
                    let recalled = &entry.data.recalled;
                    if !recalled.is_empty() {
                        let (images, left_out) = loader.load(entry.message.id, recalled);
                        results.push(Item::User {
                            text: format!(
                                "{} returned by {}({}){left_out}",
                                images::labelled("", recalled.len()).trim_end(),
                                call.name,
                                call.arguments
                            ),
                            images,
                        });
                    }
                    calls.push(call);
                }
            }
            Kind::User | Kind::Work if context.took(entry) => {
                deferred.push(taken_item(context, loader, entry));
            }
            _ => {}
        }
    }
    flush(
        step,
        &mut echo,
        &mut calls,
        &mut results,
        &mut deferred,
        items,
    );
}

fn step_of(entry: &Entry) -> Option<u32> {
    entry.data.step
}

/// A logged tool message's call and output.
fn tool_call(entry: &Entry) -> Option<(ToolCall, String)> {
    entry.data.logged_call()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::MessageData;
    use hearth_protocol::Message;
    use serde_json::{json, Value};

    fn entry(id: u64, kind: Kind, text: &str, data: Option<Value>) -> Entry {
        let data = MessageData::read(data.map(|data| data.to_string()).as_deref());
        Entry {
            message: Message {
                agent: "a".into(),
                id,
                kind,
                source: "terminal".into(),
                text: text.into(),
                status: None,
                at: "2026-11-30T10:00:00+00:00".into(),
                answers: vec![],
                images: data.images.clone(),
                outbox: None,
                client: None,
                transcript_of: None,
            },
            data,
        }
    }

    /// One message as one view line, as the memory renders a short message.
    fn view_line(entry: &Entry) -> String {
        let message = &entry.message;
        let text = message.text.replace(['\n', '\r'], " ");
        format!("{}+1|{}: {}", message.id, message.kind, text)
    }

    fn context<'a>(view: &'a [String], log: &'a [Entry], turn: TurnRecord) -> TurnContext<'a> {
        TurnContext {
            instructions: "be kind",
            tools: &[],
            view,
            log,
            turn,
            state: "now",
            block_lines: 2,
            cache_key: None,
            carries: &NO_CARRIES,
            images: &NO_IMAGES,
            huge_message: 8_000,
        }
    }

    #[test]
    fn view_leaves_out_taken_messages_and_blocks_are_fixed() {
        let log = vec![
            entry(0, Kind::User, "a\nb", None),
            entry(1, Kind::Reply, "c", None),
            entry(2, Kind::Note, "d", None),
            entry(3, Kind::User, "e", None),
        ];
        let turn = TurnRecord {
            seq: 1,
            start_id: 4,
            taken_after: Some(1),
            taken_through: 3,
        };
        let view: Vec<String> = log
            .iter()
            .filter(|e| e.message.id != 3)
            .map(view_line)
            .collect();
        let request = build(&context(&view, &log, turn)).request;
        let texts: Vec<_> = request
            .items
            .iter()
            .map(|item| match item {
                Item::User { text, .. } => text.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            vec![
                "<chat>\n0+1|user: a b\n1+1|reply: c",
                "2+1|note: d",
                "</chat>\nnow",
                "3+0|user from terminal: e",
            ]
        );
        // One whole block (2 lines) before the partial one, and the end.
        assert_eq!(request.cache_marks, vec![0, 3]);
    }

    /// The bytes a provider's cache keys on. A change to this snapshot moves
    /// every cached prefix: review it as such.
    #[test]
    fn snapshot_of_a_rendered_request() {
        let log = vec![
            entry(0, Kind::User, "hello", None),
            entry(1, Kind::Reply, "hi", None),
            entry(2, Kind::User, "what now?", None),
        ];
        let view = vec!["0+1|user: hello".to_string(), "1+1|reply: hi".to_string()];
        let turn = TurnRecord {
            seq: 1,
            start_id: 3,
            taken_after: Some(0),
            taken_through: 2,
        };
        let request = build(&context(&view, &log, turn)).request;
        let rendered: Vec<String> = request
            .items
            .iter()
            .map(|item| format!("{item:?}"))
            .collect();
        assert_eq!(
            rendered.join("\n"),
            "User { text: \"<chat>\\n0+1|user: hello\\n1+1|reply: hi\", images: [] }\n\
             User { text: \"</chat>\\nnow\", images: [] }\n\
             User { text: \"2+0|user from terminal: what now?\", images: [] }"
        );
        assert_eq!(request.instructions, "be kind");
        assert_eq!(request.cache_marks, vec![0, 2]);
    }

    #[test]
    fn chain_puts_mid_turn_messages_after_the_step_results() {
        let call = |id: u64, call_id: &str, step: u32| {
            entry(
                id,
                Kind::Tool,
                "date()",
                Some(
                    json!({"call_id": call_id, "name": "date", "arguments": "{}", "output": "now", "step": step}),
                ),
            )
        };
        let log = vec![
            entry(0, Kind::User, "hi", None),
            entry(1, Kind::Echo, "checking", Some(json!({"step": 0}))),
            entry(2, Kind::User, "also this", None),
            call(3, "c1", 0),
            call(4, "c2", 1),
        ];
        let turn = TurnRecord {
            seq: 0,
            start_id: 1,
            taken_after: None,
            taken_through: 2,
        };
        let context = context(&[], &log, turn);
        assert_eq!(context.taken_ids(), vec![0, 2]);
        assert_eq!(context.next_step(), 2);
        let request = build(&context).request;
        let tail: Vec<String> = request.items[2..]
            .iter()
            .map(|item| match item {
                Item::User { text, .. } => format!("user {text}"),
                Item::Assistant {
                    text, tool_calls, ..
                } => format!(
                    "assistant {:?} {:?}",
                    text,
                    tool_calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>()
                ),
                Item::ToolResult { call_id, .. } => format!("result {call_id}"),
            })
            .collect();
        assert_eq!(
            tail,
            vec![
                "user 0+0|user from terminal: hi",
                "assistant Some(\"checking\") [\"c1\"]",
                "result c1",
                "user 2+0|user from terminal: also this",
                "assistant None [\"c2\"]",
                "result c2",
            ]
        );
    }

    /// Images by hash, as the store would give them.
    struct Stored;

    impl Images for Stored {
        fn load(&self, image: &ImageRef, destination: &Destination) -> Result<Image, LoadError> {
            if image.sha256 == "gone" {
                return Err(images::StoreError::Missing(image.sha256.clone()).into());
            }
            Ok(Image {
                media_type: image.media_type.clone(),
                data_base64: format!("bytes-of-{}-to-{}", image.sha256, destination.file_tag),
            })
        }
    }

    fn image(sha256: &str) -> Value {
        json!({"sha256": sha256, "media_type": "image/png"})
    }

    #[test]
    fn taken_images_go_whole_and_recalled_ones_follow_the_results() {
        let zoom = json!({"call_id": "c1", "name": "zoom", "arguments": "{\"id\":0,\"n\":1}",
            "output": "0+0|user: [2 images] look", "step": 0, "recalled": [image("a"), image("b")]});
        let log = vec![
            entry(
                0,
                Kind::User,
                "look",
                Some(json!({"images": [image("a"), image("gone")]})),
            ),
            entry(1, Kind::Tool, "zoom", Some(zoom)),
            entry(
                2,
                Kind::User,
                "and this",
                Some(json!({"images": [image("c")]})),
            ),
        ];
        let turn = TurnRecord {
            seq: 0,
            start_id: 1,
            taken_after: None,
            taken_through: 2,
        };
        let mut context = context(&[], &log, turn);
        context.images = &Stored;
        let built = build(&context);
        let request = built.request;
        let users: Vec<(String, Vec<String>)> = request
            .items
            .iter()
            .filter_map(|item| match item {
                Item::User { text, images } => Some((
                    text.clone(),
                    images.iter().map(|i| i.data_base64.clone()).collect(),
                )),
                _ => None,
            })
            .skip(2)
            .collect();
        assert_eq!(
            users,
            vec![
                (
                    "0+0|user from terminal: [2 images] look\n[image 2 of 2 (gone) was left \
                     out of this request: there is no stored image gone; store it with \
                     `image_put` first]"
                        .to_string(),
                    vec!["bytes-of-a-to-models".to_string()]
                ),
                (
                    "[2 images] returned by zoom({\"id\":0,\"n\":1})".to_string(),
                    vec![
                        "bytes-of-a-to-models".to_string(),
                        "bytes-of-b-to-models".to_string()
                    ]
                ),
                (
                    "2+0|user from terminal: [1 image] and this".to_string(),
                    vec!["bytes-of-c-to-models".to_string()]
                ),
            ]
        );
        assert_eq!(
            built.left_out,
            vec![LeftOut {
                message: 0,
                image: serde_json::from_value(image("gone")).unwrap(),
                why: "there is no stored image gone; store it with `image_put` first".into(),
            }]
        );
        // The recalled images come after the step's result, never between results.
        let kinds: Vec<&str> = request.items[2..]
            .iter()
            .map(|item| match item {
                Item::User { .. } => "user",
                Item::Assistant { .. } => "assistant",
                Item::ToolResult { .. } => "result",
            })
            .collect();
        assert_eq!(kinds, ["user", "assistant", "result", "user", "user"]);
    }

    #[test]
    fn a_request_of_more_than_twenty_images_fits_every_one_to_the_smaller_limit() {
        let many = |n: usize| -> Vec<Value> { (0..n).map(|i| image(&format!("i{i}"))).collect() };
        for (count, tag) in [(20, "models"), (21, "models-many")] {
            let log = vec![
                entry(0, Kind::User, "some", Some(json!({"images": many(16)}))),
                entry(
                    1,
                    Kind::User,
                    "more",
                    Some(json!({"images": many(count - 16)})),
                ),
            ];
            let turn = TurnRecord {
                seq: 0,
                start_id: 2,
                taken_after: None,
                taken_through: 1,
            };
            let mut context = context(&[], &log, turn);
            context.images = &Stored;
            let request = build(&context).request;
            let sent: Vec<String> = request
                .items
                .iter()
                .flat_map(|item| match item {
                    Item::User { images, .. } => images.clone(),
                    _ => Vec::new(),
                })
                .map(|image| image.data_base64)
                .collect();
            assert_eq!(sent.len(), count);
            assert!(
                sent.iter()
                    .all(|bytes| bytes.ends_with(&format!("-to-{tag}"))),
                "{count} images: {sent:?}"
            );
        }
    }
}
