//! Conformance of carried reasoning. Within a turn's chain of tool rounds,
//! hearth hands each step's reasoning back to the model that made it; the
//! rules below are the providers' written ones for that, each checked on
//! every body the fakes capture.
//!
//! OpenAI Responses (API reference "Create a model response", input item
//! `reasoning`; the `include` value `reasoning.encrypted_content`, which
//! "enables reasoning items to be used in multi-turn conversations when
//! using the Responses API statelessly (like when the store parameter is
//! set to false)"; the reasoning guide's "Keeping reasoning items in
//! context"; read 2026-12-01):
//!  R1. A reasoning item re-sent with `store: false` carries its
//!      `encrypted_content` and its `summary` (a list of `summary_text`
//!      parts), and no `id` or `status`: nothing is stored for an id to
//!      name. (The OpenAPI document lists `id` as required on the input
//!      item; OpenAI's own Codex client sends reasoning without it, and a
//!      stored-item id under `store: false` is refused as not found.)
//!  R2. A body that carries reasoning asks for it again: `store: false`,
//!      `include` naming `reasoning.encrypted_content`, and `reasoning`.
//!  R3. Each item goes back unmodified, as the response gave it.
//!  R4. A reasoning item is followed by the output that followed it in its
//!      response (more reasoning, the assistant's message or a function
//!      call), never by a user message or a result, and never comes last
//!      ("provided without its required following item").
//!
//! Anthropic Messages (platform.claude.com/docs/en/build-with-claude/
//! thinking, "Thinking with tool use" and "Preserving thinking blocks";
//! .../thinking-tool-workflows; .../extended-thinking; read 2026-12-01):
//!  A1. A `thinking` block is `thinking` and a non-empty `signature`; a
//!      `redacted_thinking` block is its non-empty `data`; neither takes
//!      `cache_control` (the Messages schema of `conformance.rs`).
//!  A2. Thinking blocks belong to assistant messages and open them: "a
//!      final assistant message must start with a thinking block".
//!  A3. "Pass thinking blocks back complete and unmodified", redacted ones
//!      included ("filtering out redacted_thinking blocks triggers a 400
//!      error"), in the order the response gave them.
//!  A4. "Keep one thinking configuration per assistant turn": every request
//!      of one tool loop has the same `thinking`.
//!  A5. With manual extended thinking (`type: "enabled"`), `tool_choice`
//!      is absent, `auto` or `none`.
//!
//! The fake model answers each tool round with reasoning in its API's
//! form ([`Reply::thinking`]), streamed and whole.

use super::*;
use hearth_tests::fake_model::Thought;
use serde_json::json;

/// What the fake model reasons before each answer of the chain.
fn chain_thoughts() -> [Vec<Thought>; 2] {
    [
        vec![
            Thought::Shown {
                text: "The user wants the date; the tool has it.".into(),
                sealed: "sealed-step-0-a".into(),
            },
            Thought::Hidden {
                sealed: "sealed-step-0-b".into(),
            },
        ],
        vec![Thought::Shown {
            text: "Once more, to be sure.".into(),
            sealed: "sealed-step-1".into(),
        }],
    ]
}

/// A turn of two tool rounds, each answer reasoned, then its reply; then
/// a second turn. Every request the fake model took.
async fn reasoned_conversation(provider: &str, model_name: &str, extra: &str) -> Vec<Recorded> {
    let model = FakeModel::start().await;
    let home = TestHome::new(bins!());
    home.write_config(&format!(
        "[model]\nprovider = \"{provider}\"\nmodel = \"{model_name}\"\nbase_url = \"{}\"\n\
         api_key_env = \"HEARTH_TEST_KEY\"\ntimeout_secs = 30\n{extra}",
        model.base_url()
    ));
    let _daemon = home.start();
    let mut client = home.connect("terminal", None).await;
    let [first, second] = chain_thoughts();
    model.push(Reply::thinking(
        first,
        Reply::ToolCalls {
            text: Some("Let me look.".into()),
            calls: vec![("date".into(), "{}".into())],
        },
    ));
    model.push(Reply::thinking(second, Reply::tool_call("date", "{}")));
    model.push(Reply::text("It is today."));
    let (id, _) = client.submit("what day is it?", "terminal", None).await;
    client.reply_to(id).await;
    model.push(Reply::text("Still today."));
    let (id, _) = client.submit("and now?", "terminal", None).await;
    client.reply_to(id).await;
    let requests = model.requests();
    assert_eq!(requests.len(), 4, "{provider}: two tool rounds, two turns");
    requests
}

/// R1, R2 and R4 on one Responses body.
fn responses_reasoning_problems(body: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let input = body["input"].as_array().cloned().unwrap_or_default();
    let mut carried = false;
    for (n, item) in input.iter().enumerate() {
        if item["type"] != "reasoning" {
            continue;
        }
        carried = true;
        let keys: Vec<&str> = item
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        for key in &keys {
            if !["type", "summary", "encrypted_content", "content"].contains(key) {
                problems.push(format!(
                    "input[{n}]: R1: `{key}` on a re-sent reasoning item"
                ));
            }
        }
        if item["encrypted_content"].as_str().is_none_or(str::is_empty) {
            problems.push(format!("input[{n}]: R1: no encrypted_content"));
        }
        let summary_ok = item["summary"].as_array().is_some_and(|parts| {
            parts
                .iter()
                .all(|part| part["type"] == "summary_text" && part["text"].is_string())
        });
        if !summary_ok {
            problems.push(format!(
                "input[{n}]: R1: summary is not a list of summary_text"
            ));
        }
        let next = input.get(n + 1);
        let follows = next.is_some_and(|next| {
            next["type"] == "reasoning"
                || next["type"] == "function_call"
                || (next["type"] == "message" && next["role"] == "assistant")
        });
        if !follows {
            problems.push(format!("input[{n}]: R4: followed by {next:?}"));
        }
    }
    if carried {
        if body["store"] != false {
            problems.push("R2: reasoning carried without store: false".into());
        }
        let include = body["include"].as_array().cloned().unwrap_or_default();
        if !include.contains(&json!("reasoning.encrypted_content")) {
            problems.push("R2: include does not ask for reasoning.encrypted_content".into());
        }
        if !body["reasoning"].is_object() {
            problems.push("R2: no reasoning settings".into());
        }
    }
    problems
}

/// The encrypted contents of the reasoning items in a Responses body, in
/// order, each with the type of the item after it.
fn carried_reasoning(body: &Value) -> Vec<(String, String)> {
    let input = body["input"].as_array().cloned().unwrap_or_default();
    input
        .iter()
        .enumerate()
        .filter(|(_, item)| item["type"] == "reasoning")
        .map(|(n, item)| {
            (
                item["encrypted_content"].as_str().unwrap().to_string(),
                input[n + 1]["type"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn openai_responses_carried_reasoning_is_as_documented() {
    for extra in [
        "stream = true\neffort = \"low\"\n",
        "stream = false\neffort = \"high\"\n",
    ] {
        let requests = reasoned_conversation("openai", "gpt-5-mini", extra).await;
        let bodies: Vec<&Value> = requests.iter().map(|r| &r.body).collect();
        assert_conform("responses (reasoning)", &responses(), &bodies);
        let problems: Vec<String> = bodies
            .iter()
            .enumerate()
            .flat_map(|(n, body)| {
                responses_reasoning_problems(body)
                    .into_iter()
                    .map(move |p| format!("request {n}: {p}"))
            })
            .collect();
        assert!(problems.is_empty(), "{extra}{}", problems.join("\n"));
        // R3: what each response gave, unmodified, before what followed it.
        let [first, second] = chain_thoughts();
        let given = |thoughts: &[Thought]| -> Vec<Value> {
            thoughts
                .iter()
                .map(|thought| match thought {
                    Thought::Shown { text, sealed } => json!({"type": "reasoning",
                        "summary": [{"type": "summary_text", "text": text}],
                        "encrypted_content": sealed}),
                    Thought::Hidden { sealed } => json!({"type": "reasoning",
                        "summary": [], "encrypted_content": sealed}),
                })
                .collect()
        };
        let sent: Vec<Value> = bodies[2]["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["type"] == "reasoning")
            .cloned()
            .collect();
        assert_eq!(sent, [given(&first), given(&second)].concat(), "{extra}");
        assert!(carried_reasoning(bodies[0]).is_empty());
        let pair = |sealed: &str, next: &str| (sealed.to_string(), next.to_string());
        assert_eq!(
            carried_reasoning(bodies[1]),
            vec![
                pair("sealed-step-0-a", "reasoning"),
                pair("sealed-step-0-b", "message"),
            ],
            "{extra}"
        );
        assert_eq!(
            carried_reasoning(bodies[2]),
            vec![
                pair("sealed-step-0-a", "reasoning"),
                pair("sealed-step-0-b", "message"),
                pair("sealed-step-1", "function_call"),
            ],
            "{extra}"
        );
        assert!(
            carried_reasoning(bodies[3]).is_empty(),
            "a finished turn's reasoning is not carried"
        );
    }
}

/// A2 and A5 on one Messages body.
fn anthropic_thinking_problems(body: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let thinking =
        |block: &Value| block["type"] == "thinking" || block["type"] == "redacted_thinking";
    for (n, message) in body["messages"].as_array().unwrap().iter().enumerate() {
        let Some(blocks) = message["content"].as_array() else {
            continue;
        };
        let opening = blocks.iter().take_while(|block| thinking(block)).count();
        for (at, _) in blocks
            .iter()
            .enumerate()
            .filter(|(_, block)| thinking(block))
        {
            if message["role"] != "assistant" {
                problems.push(format!(
                    "messages[{n}].content[{at}]: A2: thinking in a user message"
                ));
            } else if at >= opening {
                problems.push(format!(
                    "messages[{n}].content[{at}]: A2: thinking after other blocks"
                ));
            }
        }
    }
    if body["thinking"]["type"] == "enabled" {
        let choice = &body["tool_choice"];
        if !(choice.is_null() || choice["type"] == "auto" || choice["type"] == "none") {
            problems.push(format!("A5: tool_choice {choice} with extended thinking"));
        }
    }
    problems
}

#[tokio::test]
async fn anthropic_carried_thinking_is_as_documented() {
    for (model, extra) in [
        (
            "claude-sonnet-4-5",
            "stream = true\neffort = \"medium\"\nmax_tokens = 8192\n",
        ),
        ("claude-opus-4-6", "stream = false\neffort = \"high\"\n"),
        ("claude-sonnet-4-6", "stream = true\neffort = \"low\"\n"),
    ] {
        let requests = reasoned_conversation("anthropic", model, extra).await;
        let bodies: Vec<&Value> = requests.iter().map(|r| &r.body).collect();
        assert_conform(
            &format!("messages ({model}, thinking)"),
            &anthropic_messages(),
            &bodies,
        );
        let problems: Vec<String> = bodies
            .iter()
            .enumerate()
            .flat_map(|(n, body)| {
                anthropic_thinking_problems(body)
                    .into_iter()
                    .map(move |p| format!("request {n}: {p}"))
            })
            .collect();
        assert!(problems.is_empty(), "{model}: {}", problems.join("\n"));
        // A4: one thinking configuration for the whole tool loop.
        assert!(bodies[0]["thinking"].is_object(), "{model}: thinking is on");
        for body in &bodies[1..3] {
            assert_eq!(body["thinking"], bodies[0]["thinking"], "{model}: A4");
            assert_eq!(
                body["output_config"], bodies[0]["output_config"],
                "{model}: A4"
            );
        }
        // A3: each assistant message of the loop, as the response gave it.
        let [first, second] = chain_thoughts();
        let block = |thought: &Thought| match thought {
            Thought::Shown { text, sealed } => {
                json!({"type": "thinking", "thinking": text, "signature": sealed})
            }
            Thought::Hidden { sealed } => json!({"type": "redacted_thinking", "data": sealed}),
        };
        let assistant: Vec<Vec<Value>> = bodies[2]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|message| message["role"] == "assistant")
            .map(|message| message["content"].as_array().unwrap().clone())
            .collect();
        assert_eq!(assistant.len(), 2, "{model}: the loop's two answers");
        let kinds = |blocks: &[Value]| -> Vec<String> {
            blocks
                .iter()
                .map(|b| b["type"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(
            kinds(&assistant[0]),
            ["thinking", "redacted_thinking", "text", "tool_use"],
            "{model}"
        );
        assert_eq!(
            assistant[0][..2],
            first.iter().map(block).collect::<Vec<_>>()[..]
        );
        assert_eq!(kinds(&assistant[1]), ["thinking", "tool_use"], "{model}");
        assert_eq!(
            assistant[1][..1],
            second.iter().map(block).collect::<Vec<_>>()[..]
        );
        // The same blocks in the request before, byte for byte.
        let earlier: Vec<&Value> = bodies[1]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|message| message["role"] == "assistant")
            .collect();
        assert_eq!(earlier[0]["content"], json!(assistant[0]), "{model}");
    }
}

#[test]
fn the_reasoning_rules_bite() {
    let responses_body = json!({"store": true, "input": [
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "reasoning", "summary": [{"type": "text"}]},
    ]});
    let found = responses_reasoning_problems(&responses_body);
    for rule in [
        "R1: `id`",
        "R4: followed by",
        "R1: no encrypted_content",
        "R1: summary",
        "R2",
    ] {
        assert!(found.iter().any(|p| p.contains(rule)), "{rule}: {found:?}");
    }
    let messages_body = json!({"thinking": {"type": "enabled", "budget_tokens": 2048},
        "tool_choice": {"type": "any"}, "messages": [
        {"role": "user", "content": [{"type": "thinking", "thinking": "", "signature": "s"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "a"},
            {"type": "redacted_thinking", "data": "d"}]},
    ]});
    let found = anthropic_thinking_problems(&messages_body);
    for rule in ["in a user message", "after other blocks", "A5"] {
        assert!(found.iter().any(|p| p.contains(rule)), "{rule}: {found:?}");
    }
}
