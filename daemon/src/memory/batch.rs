//! Several lines asked for in one compaction call, answered as numbered
//! lines — the form that rides the prompt cache.
//!
//! At the end of a turn, the lines of its long messages (and the merges
//! ready then) are asked for in one request that extends the turn's own
//! chain: the turn's last request, its reply, then the numbered tasks. The
//! cache serves everything but the reply and the tasks, and no long message
//! is sent twice: the tasks name the messages above rather than repeat them.
//! Outside a turn (a note, a batch of the view waiting for a parent, after a
//! restart) the tasks follow the compaction view as a single call does, the
//! messages whole.
//!
//! A batch is one try: a line missing from the answer, over the line
//! budget, or a call that failed for a reason of its own (refused, too
//! long) leaves its nodes to be asked again each on its own
//! (`compactor.rs`: tries, then a cut at the guard). A line is never
//! invented for a node the answer does not give.

use super::compactor::{clean, complete_metered, Task};
use super::tree::{cut, one_line, Node};
use crate::layout::Layout;
use crate::model::{Ending, Item, Model, ModelError, Request};
use crate::usage::Meter;
use std::fmt::Write;

/// The most tasks one call asks for.
pub const BATCH: usize = 16;

/// How much of a message a task in a turn's chain quotes, to say which one
/// it means.
const QUOTE: usize = 60;

/// The tasks' text: what to write and a ruler as long as the summary budget
/// (models cannot count bytes), then the numbered items. `in_chain`: the
/// request is the turn's own chain, which holds the messages whole.
pub fn prompt(tasks: &[Task], budget: usize, in_chain: bool) -> String {
    let ruler = "-".repeat(budget);
    let mut out = format!(
        "Write the lines that will stand for the items below in your memory from now on, one \
         for each: at most {budget} bytes each (the ruler is exactly that long), no line \
         breaks. Answer with the lines only, each after its item's number (`1. `), in order.\n\
         {ruler}\n"
    );
    for (at, task) in tasks.iter().enumerate() {
        let n = at + 1;
        let _ = match task {
            Task::Compress { id, line } if in_chain => writeln!(
                out,
                "{n}. Message {id}, above in full (it begins `{}`); keep its names, numbers, \
                 decisions and anything still to do.",
                cut(&one_line(line), QUOTE)
            ),
            Task::Compress { id, line } => writeln!(
                out,
                "{n}. Message {id}, whole; keep its names, numbers, decisions and anything \
                 still to do:\n{id}+0|{}",
                one_line(line)
            ),
            Task::Merge {
                parent,
                left,
                right,
            } => {
                let (l, r) = parent.children().unwrap_or((*parent, *parent));
                writeln!(
                    out,
                    "{n}. Two lines that cover messages {} to {}, to merge into one; keep what \
                     matters most:\n{l}|{}\n{r}|{}",
                    parent.first(),
                    parent.last(),
                    one_line(left),
                    one_line(right)
                )
            }
        };
    }
    out.truncate(out.trim_end().len());
    out
}

/// The request that asks for `tasks` at the end of a turn: its last
/// request `turn`, the turn's `reply`, then the tasks.
pub fn chain_request(turn: &Request, reply: &str, tasks: &[Task], layout: &Layout) -> Request {
    let mut request = turn.clone();
    request.items.push(Item::Assistant {
        text: Some(reply.to_string()),
        tool_calls: Vec::new(),
        carry: Default::default(),
    });
    request
        .items
        .push(Item::user(prompt(tasks, layout.summary_budget(), true)));
    // The turn's end is cached already; the new end is worth a mark too.
    let last = request.items.len() - 1;
    request.cache_marks = turn
        .cache_marks
        .last()
        .copied()
        .into_iter()
        .chain([last])
        .collect();
    request
}

/// The request that asks for `tasks` outside a turn: like a single call's,
/// after `context` (compaction view lines before every task's node).
pub fn request(
    agent: &str,
    instructions: &str,
    tools: &[crate::model::ToolSpec],
    context: &[String],
    layout: &Layout,
    tasks: &[Task],
) -> Request {
    let mut items = crate::prefix::view_items(context, layout.block_lines);
    items.push(Item::user(format!(
        "</chat>\n{}",
        prompt(tasks, layout.summary_budget(), false)
    )));
    Request {
        instructions: instructions.to_string(),
        tools: tools.to_vec(),
        cache_marks: super::compactor::context_marks(context.len(), layout.block_lines),
        items,
        cache_key: Some(crate::prefix::cache_key(agent)),
    }
}

/// The numbered lines of an answer to `count` tasks: entry k is the line
/// after `k+1.` (or `k+1)`, `k+1:`), cleaned, with any line that follows
/// it unnumbered joined to it; none where the answer has no such line.
/// An answer to a single task that numbers nothing is its line.
pub fn parse(answer: &str, count: usize) -> Vec<Option<String>> {
    if count == 1 && answer.lines().all(|line| numbered(line.trim()).is_none()) {
        let line = clean(answer);
        return vec![(!line.is_empty()).then_some(line)];
    }
    let mut out: Vec<Option<String>> = vec![None; count];
    let mut current: Option<usize> = None;
    for raw in answer.lines() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        match numbered(line) {
            Some((n, rest)) if (1..=count).contains(&n) && out[n - 1].is_none() => {
                out[n - 1] = Some(rest.to_string());
                current = Some(n - 1);
            }
            Some(_) => current = None,
            None => {
                if let Some(slot) = current.and_then(|at| out[at].as_mut()) {
                    slot.push(' ');
                    slot.push_str(line);
                }
            }
        }
    }
    out.into_iter()
        .map(|line| line.map(|l| clean(&l)).filter(|l| !l.is_empty()))
        .collect()
}

/// `12. text` as (12, "text").
fn numbered(line: &str) -> Option<(usize, &str)> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &line[digits..];
    let rest = rest
        .strip_prefix('.')
        .or_else(|| rest.strip_prefix(')'))
        .or_else(|| rest.strip_prefix(':'))?;
    Some((line[..digits].parse().ok()?, rest.trim_start()))
}

/// The lines an answer gives `tasks`: each within the line budget, or none
/// (missing, or too long: that node is asked again on its own).
pub fn lines(answer: &str, tasks: &[Task], layout: &Layout) -> Vec<(Node, Option<String>)> {
    parse(answer, tasks.len())
        .into_iter()
        .zip(tasks)
        .map(|(line, task)| {
            let line = line
                .map(|line| task.keep_speaker(line))
                .filter(|line| line.len() <= layout.line_budget);
            (task.node(), line)
        })
        .collect()
}

/// Sends one batched `request` for `tasks` and reads its answer: a line, or
/// none, for each task in order. The call's usage is stored through
/// `meter`, answered or failed.
pub async fn ask(
    model: &Model,
    meter: &Meter,
    request: &Request,
    tasks: &[Task],
    layout: &Layout,
) -> Result<Vec<(Node, Option<String>)>, ModelError> {
    let response = complete_metered(model, meter, request).await?;
    // A refusal's words are no summary of any of the nodes.
    if response.ending == Ending::Refused {
        return Err(ModelError::Failed(
            "the model refused to summarize them".into(),
        ));
    }
    Ok(lines(&response.text, tasks, layout))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        match Layout::find("default") {
            Ok(layout) => layout,
            Err(err) => panic!("{err}"),
        }
    }

    /// Two messages to compress, 3 and 4.
    fn two_messages() -> [Task; 2] {
        [3, 4].map(|id| Task::Compress {
            id,
            line: format!("user: message {id}"),
        })
    }

    #[test]
    fn numbered_answers_are_read_in_any_order_and_wrapped_lines_joined() {
        let answer = "2. the second\n1) the first, which\nwraps onto a second line\n\n7. too far\n3: 4+2|a copied head";
        assert_eq!(
            parse(answer, 4),
            vec![
                Some("the first, which wraps onto a second line".to_string()),
                Some("the second".to_string()),
                Some("a copied head".to_string()),
                None
            ]
        );
        assert_eq!(parse("no numbers at all", 2), vec![None, None]);
    }

    #[test]
    fn a_garbled_answer_gives_no_line_it_does_not_number() {
        // Prose, a repeated number, numbers out of range, an empty item:
        // only the lines the answer numbers once, and not empty, count.
        let answer = "Sure! Here are the lines you asked for:\n1. the first\n1. a second first\n\
                      0. nothing\n4. beyond\n3.\n";
        assert_eq!(
            parse(answer, 3),
            vec![Some("the first".to_string()), None, None]
        );
        assert_eq!(parse("", 2), vec![None, None]);
        assert_eq!(parse("I cannot help with that.", 2), vec![None, None]);
        // A reply to one task that numbers nothing is its line; one that
        // numbers another item gives none.
        assert_eq!(parse(" the line \n", 1), vec![Some("the line".to_string())]);
        assert_eq!(parse("2. the wrong item", 1), vec![None]);
        assert_eq!(parse("   ", 1), vec![None]);
    }

    #[test]
    fn a_line_over_the_budget_is_left_to_be_asked_again() {
        let layout = layout();
        let tasks = two_messages();
        let answer = format!("1. fine\n2. {}", "long ".repeat(200));
        let lines = lines(&answer, &tasks, &layout);
        assert_eq!(lines[0], (Node::message(3), Some("fine".to_string())));
        assert_eq!(lines[1], (Node::message(4), None));
    }

    #[test]
    fn a_summary_is_asked_for_at_the_summary_budget_and_kept_up_to_the_line_budget() {
        let layout = layout();
        let tasks = two_messages();
        // Six lines in blocks of four: one whole block, then two lines.
        let context: Vec<String> = (0..6).map(|id| format!("{id}+1|user: hi {id}")).collect();
        let request = request("a", "instr", &[], &context, &layout, &tasks);
        let Some(Item::User { text, .. }) = request.items.last() else {
            panic!("no tasks");
        };
        let ruler = "-".repeat(layout.summary_budget());
        assert!(text.contains(&format!("\n{ruler}\n")), "{text}");
        assert!(
            !text.contains(&format!("{ruler}-")),
            "the ruler is the summary budget"
        );
        assert!(text.contains(&format!("at most {} bytes", layout.summary_budget())));
        // The context's whole block is marked for the cache; its partial
        // block, which the next call's longer one no longer matches, and
        // the task, sent once, are not.
        assert_eq!(request.items.len(), 3);
        assert_eq!(request.cache_marks, vec![0]);
        let short = super::request("a", "instr", &[], &context[..3], &layout, &tasks);
        assert!(short.cache_marks.is_empty(), "no whole block, no mark");
        // An answer past the ruler but within a line is kept.
        let long = "x".repeat(layout.summary_budget() + 100);
        let answer = format!("1. {long}\n2. short");
        let lines = lines(&answer, &tasks, &layout);
        assert_eq!(lines[0].1.as_deref(), Some(long.as_str()));
    }

    #[test]
    fn the_chain_request_extends_the_turns_last_request_by_its_reply_and_the_tasks() {
        let layout = layout();
        let turn = Request {
            instructions: "instr".into(),
            tools: Vec::new(),
            items: vec![
                Item::user("<chat>\n0+1|user: hi"),
                Item::user("</chat>\nLocal time: now"),
                Item::user("1+0|user from terminal: a long story"),
            ],
            cache_key: Some("k".into()),
            cache_marks: vec![0, 2],
        };
        let tasks = [
            Task::Compress {
                id: 1,
                line: "user: a long story".into(),
            },
            Task::Merge {
                parent: Node::new(1, 0),
                left: "hi".into(),
                right: "there".into(),
            },
        ];
        let request = chain_request(&turn, "A reply.", &tasks, &layout);
        assert_eq!(request.items[..3], turn.items[..]);
        assert_eq!(
            request.items[3],
            Item::Assistant {
                text: Some("A reply.".into()),
                tool_calls: Vec::new(),
                carry: Default::default(),
            }
        );
        let Some(Item::User { text, .. }) = request.items.last() else {
            panic!("no tasks");
        };
        assert!(text.starts_with("Write the lines"), "{text}");
        assert!(text.contains("1. Message 1, above in full (it begins `user: a long story`)"));
        assert!(text.ends_with("2. Two lines that cover messages 0 to 1, to merge into one; keep what matters most:\n0+1|hi\n1+1|there"));
        assert!(!text.contains("1+0|"), "the message is not sent twice");
        assert_eq!(request.cache_marks, vec![2, 4]);
        assert_eq!(request.cache_key, turn.cache_key);
    }
}
