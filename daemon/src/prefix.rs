//! What every request of an agent begins with, a turn's or its
//! compactor's alike, so both are served by one cached prefix: the cache
//! key, the instructions, and the view as request items in blocks that
//! never move. `request.rs` lays out a turn's request after it; the
//! compactor's calls (`memory/`) lay out theirs.

use crate::model::Item;

/// What the model is told about the shape of its context, before the agent's prompt.
pub const PREAMBLE: &str = "You are a personal agent in a conversation that never ends. \
Your memory of it is shown between <chat> and </chat>, one line per message: \
`id+n|kind: text`, where kind is user (a person), reply (your answers), echo (what you said \
beside tool calls), tool (a call and its result), note (what the daemon recorded) or work \
(a subagent's report). After </chat> come the current state (with your pinned facts) and then the new messages, whole. Lines are summaries: `zoom(id, n)` opens line `id+n` into what it was made from, down to the message itself. `search` finds any message or line by its words, however old: search before you say you do not know or do not remember, and when a line is too coarse to answer from. `remember` pins a lasting fact (a name, a preference, a commitment) in view for good; `forget` unpins one.";

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
