//! One compaction: a model call that writes the line for a node — a long
//! message compressed, or two sibling lines merged.
//!
//! The request begins like a turn's (the same instructions and tools, so the
//! cache serves them, unless the layout names a separate compaction prompt),
//! then the compaction view before the node, then the task as the last user
//! message with a ruler of as many dashes as the line budget, because models
//! cannot count bytes. An answer still over budget is asked again, up to the
//! layout's tries; the shortest is kept and cut at the guard. Each try is
//! a request of its own, and its usage is stored as one.

use super::tree::{cut, one_line, Node};
use crate::layout::Layout;
use crate::model::{Item, Model, ModelError, Request, Response, ToolSpec};
use crate::usage::{Meter, Purpose};

/// The instructions of compaction calls sent to a memory model of their
/// own (`[memory] model`, a cheaper one than the turns'), when the layout
/// names no `compaction_prompt`: such calls cannot share the turns' cached
/// prefix, so they carry a short prompt of their own and no tools.
pub const PROMPT: &str = "You write the one-line summaries that stand for older parts of a \
     conversation in an assistant's memory. Keep names, numbers, dates, decisions and anything \
     still to do; drop pleasantries. Answer with the lines only, each after its item's number \
     when several are asked for: no preamble, no quotes, no line breaks within a line.";

/// The instructions of compaction calls on a memory model of their own:
/// the layout's `compaction_prompt`, or [`PROMPT`].
pub fn own_prompt(layout: &Layout) -> &str {
    layout.compaction_prompt.as_deref().unwrap_or(PROMPT)
}

/// A compaction request's cache mark: the context's last whole block (of
/// `context` lines in blocks of `block_lines`), whose prefix the next call
/// shares, as a turn marks its view's. Not the task, which no call
/// repeats (a mark there would pay to write it), nor a partial block,
/// which the next call's longer block no longer matches. None when the
/// context has no whole block.
pub(crate) fn context_marks(context: usize, block_lines: usize) -> Vec<usize> {
    (context / block_lines.max(1))
        .checked_sub(1)
        .into_iter()
        .collect()
}

/// What a compaction call is asked to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Task {
    /// Compress message `id` (its whole `kind: text`) into one line.
    Compress { id: u64, line: String },
    /// Merge the two child lines of `parent` into one.
    Merge {
        parent: Node,
        left: String,
        right: String,
    },
}

impl Task {
    pub fn node(&self) -> Node {
        match self {
            Task::Compress { id, .. } => Node::message(*id),
            Task::Merge { parent, .. } => *parent,
        }
    }

    /// A summary of one message names its speaker as the message does:
    /// an answer that opens with another kind's `user: ` (small models copy
    /// the form of the lines around it) gets the message's own kind
    /// instead, so a reply is never remembered as the user's words.
    pub fn keep_speaker(&self, answer: String) -> String {
        let Task::Compress { line, .. } = self else {
            return answer;
        };
        let own = line.split_once(": ").map(|(kind, _)| kind);
        let Some(own) = own.filter(|kind| hearth_protocol::Kind::parse(kind).is_some()) else {
            return answer;
        };
        match answer.split_once(": ") {
            Some((said, rest)) if said != own && hearth_protocol::Kind::parse(said).is_some() => {
                format!("{own}: {rest}")
            }
            _ => answer,
        }
    }

    /// The line used when the compactor gives up: the text cut at the budget.
    pub fn mechanical(&self, budget: usize) -> String {
        match self {
            Task::Compress { line, .. } => cut(&one_line(line), budget),
            Task::Merge { left, right, .. } => cut(&one_line(&format!("{left} {right}")), budget),
        }
    }

    /// The task's text. Its first part — what to write, and the ruler — is
    /// the same for every task, and the parts that name the node come after
    /// the ruler: calls that follow the same context (a message's compress
    /// call and the merges that start at that message) find the first part
    /// in the cache as well.
    fn prompt(&self, budget: usize) -> String {
        let ruler = "-".repeat(budget);
        let head = format!(
            "Write the one line that will stand for the text below the ruler in your memory \
             from now on: at most {budget} bytes (the ruler is exactly that long), no line \
             breaks. Answer with the line only.\n{ruler}\n"
        );
        match self {
            Task::Compress { id, line } => format!(
                "{head}Message {id}, whole; keep its names, numbers, decisions and anything \
                 still to do:\n{id}+0|{line}"
            ),
            Task::Merge {
                parent,
                left,
                right,
            } => {
                let (l, r) = parent.children().unwrap_or((*parent, *parent));
                format!(
                    "{head}Two lines that cover messages {} to {}, to merge into one; keep \
                     what matters most:\n{l}|{}\n{r}|{}",
                    parent.first(),
                    parent.last(),
                    one_line(left),
                    one_line(right)
                )
            }
        }
    }
}

/// The request for one try of `task`, after `context` (rendered compaction
/// view lines that all come before the node). It carries the agent's cache
/// key, as its turns do, so it is routed to the cache they warmed.
pub fn request(
    agent: &str,
    instructions: &str,
    tools: &[ToolSpec],
    context: &[String],
    layout: &Layout,
    task: &Task,
) -> Request {
    let mut items = crate::prefix::view_items(context, layout.block_lines);
    items.push(Item::user(format!(
        "</chat>\n{}",
        task.prompt(layout.summary_budget())
    )));
    Request {
        instructions: instructions.to_string(),
        tools: tools.to_vec(),
        cache_marks: context_marks(context.len(), layout.block_lines),
        items,
        cache_key: Some(crate::prefix::cache_key(agent)),
    }
}

/// An answer as a line: one line, trimmed, without an `id+n|` head copied
/// from the view.
pub fn clean(answer: &str) -> String {
    let line = one_line(answer.trim());
    let line = line.trim();
    let head_len = line
        .find('|')
        .filter(|&bar| {
            let head = &line[..bar];
            head.split_once('+').is_some_and(|(id, n)| {
                !id.is_empty()
                    && !n.is_empty()
                    && id.bytes().all(|b| b.is_ascii_digit())
                    && n.bytes().all(|b| b.is_ascii_digit())
            })
        })
        .map(|bar| bar + 1);
    let line = head_len.map_or(line, |len| line[len..].trim_start());
    line.trim_matches('"').trim().to_string()
}

/// Sends one compaction request and stores what the provider billed for it
/// through `meter`, answered or failed; a refusal comes back as the answer
/// it is, for the caller to judge.
pub async fn complete_metered(
    model: &Model,
    meter: &Meter,
    request: &Request,
) -> Result<Response, ModelError> {
    let mut bills = Vec::new();
    let response = model
        .complete(request, &mut |_| {}, &mut |_| {}, &mut bills)
        .await;
    if let Err(err) = meter.record(Purpose::Compaction, &bills).await {
        // The keeper stops on the log's next failure; the answer is still good.
        tracing::error!("cannot store a compaction's usage: {err}");
    }
    response
}

/// Runs the tries of one compaction, each sending `request` (see
/// [`request`]); the shortest answer wins, cut at the guard. Every try the
/// provider billed, answered or failed, is stored through `meter`.
pub async fn compact(
    model: &Model,
    meter: &Meter,
    request: &Request,
    layout: &Layout,
) -> Result<String, ModelError> {
    let mut best: Option<String> = None;
    let mut refused = false;
    for _ in 0..layout.compactor_tries {
        let response = complete_metered(model, meter, request).await?;
        // A refusal's words are no summary of the node.
        if response.ending == crate::model::Ending::Refused {
            refused = true;
            continue;
        }
        let line = clean(&response.text);
        if line.is_empty() {
            continue;
        }
        if line.len() <= layout.line_budget {
            return Ok(line);
        }
        if best.as_ref().is_none_or(|b| line.len() < b.len()) {
            best = Some(line);
        }
    }
    match best {
        Some(line) => Ok(cut(&line, layout.line_guard)),
        None if refused => Err(ModelError::Failed(
            "the model refused to summarize it".into(),
        )),
        None => Err(ModelError::Garbage(
            "the model answered with an empty line".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_names_the_messages_own_speaker() {
        let reply = Task::Compress {
            id: 7,
            line: "reply: Here is the plan for Tuesday".into(),
        };
        assert_eq!(
            reply.keep_speaker("user: the plan for Tuesday".into()),
            "reply: the plan for Tuesday"
        );
        assert_eq!(
            reply.keep_speaker("reply: the plan".into()),
            "reply: the plan"
        );
        // No speaker named, or words that are no kind: kept as written.
        assert_eq!(reply.keep_speaker("the plan".into()), "the plan");
        assert_eq!(reply.keep_speaker("Note: x".into()), "Note: x");
        let merge = Task::Merge {
            parent: Node::new(1, 0),
            left: "user: a".into(),
            right: "reply: b".into(),
        };
        assert_eq!(merge.keep_speaker("user: a, b".into()), "user: a, b");
    }

    #[test]
    fn clean_strips_a_copied_head_and_line_breaks() {
        assert_eq!(
            clean("12+4|user asked\nabout rust"),
            "user asked about rust"
        );
        assert_eq!(clean("  \"plain line\" "), "plain line");
        assert_eq!(clean("a|b stays"), "a|b stays");
    }

    #[test]
    fn the_task_is_the_last_message_with_a_ruler() {
        let layout = Layout::find("default").unwrap();
        let task = Task::Merge {
            parent: Node::new(1, 3),
            left: "left line".into(),
            right: "right line".into(),
        };
        let context = vec!["0+4|older".to_string(), "4+2|old".to_string()];
        let request = request("a", "instr", &[], &context, &layout, &task);
        let Some(Item::User { text, .. }) = request.items.last() else {
            panic!("no task");
        };
        assert!(text.starts_with("</chat>\nWrite the one line"));
        assert!(text.contains(&format!(
            "\n{}\nTwo lines that cover messages 6 to 7",
            "-".repeat(layout.summary_budget())
        )));
        assert!(text.ends_with("6+1|left line\n7+1|right line"));
        assert_eq!(request.items[0], Item::user("<chat>\n0+4|older\n4+2|old"));
    }

    #[test]
    fn compaction_requests_carry_the_agents_cache_key_as_its_turns_do() {
        let layout = Layout::find("default").unwrap();
        let task = Task::Compress {
            id: 9,
            line: "user: a long story".into(),
        };
        let request = request("main", "instr", &[], &[], &layout, &task);
        assert_eq!(
            request.cache_key.as_deref(),
            Some(crate::prefix::cache_key("main").as_str())
        );
    }

    #[test]
    fn mechanical_lines_fit_the_budget() {
        let task = Task::Compress {
            id: 3,
            line: "user: ".to_string() + &"word ".repeat(200),
        };
        assert!(task.mechanical(512).len() <= 512);
    }
}
