//! The prompt cache as OpenAI runs it, simulated over the bytes of requests.
//!
//! A request is serialized deterministically as a Chat-Completions-like JSON
//! body (tools, then the system message, then the items in order), and
//! counted at 4 bytes per token. The cache serves the longest prefix it has
//! seen within its time-to-live, in 128-token steps, and nothing below 1,024
//! tokens (reference/wire.md A.2). To stay fast over millions of tokens the
//! body is cut into blocks of 512 bytes (128 tokens) hashed in a chain — block
//! k's hash covers block k−1's — and the cache keeps each chain hash with the
//! time it was last used: the cached prefix is the run of leading blocks it
//! finds fresh.

use hearth_daemon::model::{Item, Request, ToolSpec};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Bytes per token, as counted here.
pub const BYTES_PER_TOKEN: u64 = 4;
/// Bytes per cache block: 128 tokens, OpenAI's step.
pub const BLOCK: usize = 512;
/// Below this many tokens a request is neither served nor cached.
pub const MIN_TOKENS: u64 = 1_024;

pub fn tokens(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// A request body with the chain hashes of its whole blocks, kept from one
/// request to the next so only the bytes after the common prefix are hashed.
#[derive(Debug, Default)]
pub struct Body {
    bytes: Vec<u8>,
    /// The chain hash of each whole block hashed so far.
    chain: Vec<u64>,
}

impl Body {
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn truncate(&mut self, len: usize) {
        self.bytes.truncate(len);
        self.chain.truncate(len / BLOCK);
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    /// Becomes `new`, rehashing only from the first byte that differs.
    pub fn replace(&mut self, new: &[u8]) {
        let common = common_prefix(&self.bytes, new);
        self.truncate(common);
        self.push(&new[common..]);
    }

    /// The chain hashes of every whole block.
    pub fn chain(&mut self) -> &[u64] {
        while (self.chain.len() + 1) * BLOCK <= self.bytes.len() {
            let k = self.chain.len();
            let previous = self.chain.last().copied().unwrap_or(0x5EED);
            let block = &self.bytes[k * BLOCK..(k + 1) * BLOCK];
            self.chain.push(hash_block(previous, block));
        }
        &self.chain
    }
}

/// The length of the longest common prefix of two byte strings.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + 64 <= n && a[at..at + 64] == b[at..at + 64] {
        at += 64;
    }
    while at < n && a[at] == b[at] {
        at += 1;
    }
    at
}

/// A 64-bit hash of one block, chained to the hash of the block before.
fn hash_block(previous: u64, block: &[u8]) -> u64 {
    let mut hash = previous ^ 0x9E37_79B9_7F4A_7C15;
    let (words, _) = block.as_chunks::<8>();
    for word in words {
        hash = (hash ^ u64::from_le_bytes(*word)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        hash ^= hash >> 32;
    }
    hash ^= hash >> 29;
    hash.wrapping_mul(0xC4CE_B9FE_1A85_EC53) ^ (hash >> 32)
}

/// Keys that are hashes already need no hashing again.
#[derive(Default)]
struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 << 8) | u64::from(byte);
        }
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// One organisation's prompt cache with one time-to-live.
pub struct Cache {
    /// Seconds of simulated time after its last use that an entry goes cold.
    pub ttl: u64,
    /// Below this many tokens a request is neither served nor cached.
    pub min_tokens: u64,
    /// Chain hash → when it was last used.
    seen: HashMap<u64, u64, BuildHasherDefault<Identity>>,
}

impl Cache {
    pub fn new(ttl: u64) -> Cache {
        Cache::with_minimum(ttl, MIN_TOKENS)
    }

    /// A cache that skips prefixes under `min_tokens` (Anthropic's minimum
    /// cacheable length depends on the model).
    pub fn with_minimum(ttl: u64, min_tokens: u64) -> Cache {
        Cache {
            ttl,
            min_tokens,
            seen: HashMap::default(),
        }
    }

    /// Sends `body` at `now`: returns the cached input tokens and keeps the
    /// body's blocks fresh for later requests.
    pub fn serve(&mut self, body: &mut Body, now: u64) -> u64 {
        if tokens(body.len() as u64) < self.min_tokens {
            return 0;
        }
        let ttl = self.ttl;
        let chain = body.chain();
        let fresh = chain
            .iter()
            .take_while(|hash| {
                self.seen
                    .get(hash)
                    .is_some_and(|&used| now.saturating_sub(used) <= ttl)
            })
            .count();
        for &hash in chain {
            self.seen.insert(hash, now);
        }
        let cached = fresh as u64 * (BLOCK as u64 / BYTES_PER_TOKEN);
        if cached < self.min_tokens {
            0
        } else {
            cached
        }
    }
}

/// The start of a body: `{"tools":[…],"messages":[{system}` — everything
/// before the first item.
pub fn head(instructions: &str, tools: &[ToolSpec]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"tools\":[");
    for (at, tool) in tools.iter().enumerate() {
        if at > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"type\":\"function\",\"function\":{\"name\":");
        string(&mut out, &tool.name);
        out.extend_from_slice(b",\"description\":");
        string(&mut out, &tool.description);
        out.extend_from_slice(b",\"parameters\":");
        out.extend_from_slice(tool.parameters.to_string().as_bytes());
        out.extend_from_slice(b"}}");
    }
    out.extend_from_slice(b"],\"messages\":[{\"role\":\"system\",\"content\":");
    string(&mut out, instructions);
    out.push(b'}');
    out
}

/// The end of a body, after the last item.
pub const END: &[u8] = b"]}";

/// A user item.
pub fn user(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(b",{\"role\":\"user\",\"content\":");
    string(out, text);
    out.push(b'}');
}

/// An assistant item: its text and its calls as (id, name, arguments).
pub fn assistant(out: &mut Vec<u8>, text: Option<&str>, calls: &[(&str, &str, &str)]) {
    out.extend_from_slice(b",{\"role\":\"assistant\",\"content\":");
    match text {
        Some(text) => string(out, text),
        None => out.extend_from_slice(b"null"),
    }
    if !calls.is_empty() {
        out.extend_from_slice(b",\"tool_calls\":[");
        for (at, (id, name, arguments)) in calls.iter().enumerate() {
            if at > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"id\":");
            string(out, id);
            out.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
            string(out, name);
            out.extend_from_slice(b",\"arguments\":");
            string(out, arguments);
            out.extend_from_slice(b"}}");
        }
        out.push(b']');
    }
    out.push(b'}');
}

/// A tool result item.
pub fn tool_result(out: &mut Vec<u8>, call_id: &str, output: &str) {
    out.extend_from_slice(b",{\"role\":\"tool\",\"tool_call_id\":");
    string(out, call_id);
    out.extend_from_slice(b",\"content\":");
    string(out, output);
    out.push(b'}');
}

/// One item of a request.
pub fn item(out: &mut Vec<u8>, item: &Item) {
    match item {
        Item::User { text, .. } => user(out, text),
        Item::Assistant {
            text, tool_calls, ..
        } => {
            let calls: Vec<(&str, &str, &str)> = tool_calls
                .iter()
                .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
                .collect();
            assistant(out, text.as_deref(), &calls);
        }
        Item::ToolResult { call_id, output } => tool_result(out, call_id, output),
    }
}

/// The bodies of a series of requests, each serialized again only from the
/// first item that differs from the request before.
#[derive(Default)]
pub struct RequestBody {
    pub body: Body,
    /// The previous request's head and items, and where each item ends.
    instructions: String,
    tools: Vec<ToolSpec>,
    items: Vec<Item>,
    head_end: usize,
    ends: Vec<usize>,
}

impl RequestBody {
    /// Becomes the body of `request`.
    pub fn set(&mut self, request: &Request) -> &mut Body {
        if self.body.is_empty()
            || request.instructions != self.instructions
            || request.tools != self.tools
        {
            self.body
                .replace(&head(&request.instructions, &request.tools));
            self.instructions = request.instructions.clone();
            self.tools = request.tools.clone();
            self.head_end = self.body.len();
            self.items.clear();
            self.ends.clear();
        }
        let same = self
            .items
            .iter()
            .zip(&request.items)
            .take_while(|(a, b)| a == b)
            .count();
        let keep = if same == 0 {
            self.head_end
        } else {
            self.ends[same - 1]
        };
        self.items.truncate(same);
        self.ends.truncate(same);
        let mut out = Vec::new();
        for next in &request.items[same..] {
            item(&mut out, next);
            self.ends.push(keep + out.len());
            self.items.push(next.clone());
        }
        out.extend_from_slice(END);
        self.body.truncate(keep);
        self.body.push(&out);
        &mut self.body
    }

    /// Where the last cache mark of `request` (the body's last one set)
    /// ends, in bytes: the end of its marked item, or the head's end when
    /// it has no mark.
    pub fn marked(&self, request: &Request) -> usize {
        request
            .cache_marks
            .iter()
            .max()
            .and_then(|&item| self.ends.get(item).copied())
            .unwrap_or(self.head_end)
    }
}

/// A JSON string literal.
fn string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    for &byte in text.as_bytes() {
        match byte {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0..=0x1f => out.extend_from_slice(format!("\\u{byte:04x}").as_bytes()),
            _ => out.push(byte),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(text: &str) -> Body {
        let mut body = Body::default();
        body.push(text.as_bytes());
        body
    }

    #[test]
    fn the_cache_serves_the_longest_fresh_prefix_in_whole_blocks() {
        let mut cache = Cache::new(600);
        let first = "a".repeat(BLOCK * 10 + 100);
        assert_eq!(cache.serve(&mut body(&first), 0), 0);
        // The same ten blocks and more: ten blocks cached.
        let longer = format!("{first}{}", "b".repeat(BLOCK * 3));
        assert_eq!(cache.serve(&mut body(&longer), 60), 10 * 128);
        // A change in block 9 leaves nine blocks: 1,152 tokens.
        let mut changed = longer.clone().into_bytes();
        changed[BLOCK * 9 + 5] = b'x';
        let mut changed_body = Body::default();
        changed_body.push(&changed);
        assert_eq!(cache.serve(&mut changed_body, 120), 9 * 128);
        // Past the time-to-live nothing is served.
        assert_eq!(cache.serve(&mut body(&longer), 120 + 601), 0);
    }

    #[test]
    fn below_the_minimum_nothing_is_cached() {
        let mut cache = Cache::new(600);
        let short = "a".repeat(BLOCK * 7);
        cache.serve(&mut body(&short), 0);
        assert_eq!(cache.serve(&mut body(&short), 1), 0);
    }

    #[test]
    fn replace_rehashes_only_after_the_common_prefix() {
        let mut a = body(&"q".repeat(BLOCK * 4));
        let before = a.chain().to_vec();
        let mut changed = "q".repeat(BLOCK * 4).into_bytes();
        changed[BLOCK * 2 + 1] = b'r';
        a.replace(&changed);
        let after = a.chain().to_vec();
        assert_eq!(before[..2], after[..2]);
        assert_ne!(before[2], after[2]);
        assert_eq!(after, body(std::str::from_utf8(&changed).unwrap()).chain());
    }
}
