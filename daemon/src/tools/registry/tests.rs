//! The registry's own tests: the specs' order, bad calls, invalid calls in
//! a row, the calls' order.

use super::*;
use tokio::sync::broadcast;

struct Setup {
    _dir: tempfile::TempDir,
    tools: Tools,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let (events, _) = broadcast::channel(16);
    let log = Log::open(&dir.path().join("hearth.db"), events).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let workspace = Workspace::new(
        &work,
        &dir.path().join("agents/a"),
        &ToolsConfig::default(),
        Processes::new(),
    )
    .unwrap();
    let tools = Tools::new("a", log).with_workspace(workspace);
    Setup { _dir: dir, tools }
}

fn call(name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: format!("call_{name}"),
        name: name.to_string(),
        arguments: arguments.to_string(),
    }
}

#[tokio::test]
async fn the_specs_are_in_a_fixed_order_and_require_only_what_they_need() {
    let s = setup();
    let names: Vec<String> = s.tools.specs().into_iter().map(|spec| spec.name).collect();
    assert_eq!(
        names,
        [
            "date",
            "zoom",
            "search",
            "remember",
            "forget",
            "schedule_add",
            "schedule_list",
            "schedule_cancel",
            "shell",
            "read_file",
            "write_file",
            "edit_file",
            "list_dir",
            "web_fetch"
        ]
    );
    let specs = s.tools.specs();
    let shell = specs.iter().find(|spec| spec.name == "shell").unwrap();
    assert_eq!(shell.parameters["required"], serde_json::json!(["command"]));
}

#[tokio::test]
async fn a_bad_call_is_not_run_and_names_what_is_wrong() {
    let s = setup();
    let outcome = s
        .tools
        .call(&call(
            "write_file",
            r#"{"path": "x.txt", "path": "y.txt", "content": ""}"#,
        ))
        .await;
    assert_eq!(
        outcome,
        Outcome::error("arguments: repeated key `path` at byte 18")
    );
    assert!(!s
        .tools
        .workspace
        .as_ref()
        .unwrap()
        .root()
        .join("x.txt")
        .exists());
    let outcome = s.tools.call(&call("launch", "{}")).await;
    assert!(outcome
        .output
        .starts_with("there is no tool `launch`; the tools are: date, zoom, search, remember"));
}

#[tokio::test]
async fn invalid_calls_in_a_row_are_told_to_stop_and_a_valid_one_resets() {
    let s = setup();
    for n in 1..MAX_INVALID_IN_A_ROW {
        let outcome = s.tools.call(&call("shell", "{}")).await;
        assert_eq!(
            outcome.output, "arguments: missing required property `command`",
            "{n}"
        );
    }
    let outcome = s.tools.call(&call("shell", "{}")).await;
    assert!(outcome
        .output
        .contains("5 invalid tool calls in a row: stop calling tools"));
    assert_eq!(s.tools.invalid_in_a_row(), 5);
    let outcome = s.tools.call(&call("date", "{}")).await;
    assert_eq!(outcome.status, MessageStatus::Ok);
    assert_eq!(s.tools.invalid_in_a_row(), 0);
    s.tools.call(&call("date", "nope")).await;
    s.tools.begin_turn();
    assert_eq!(s.tools.invalid_in_a_row(), 0);
}

#[tokio::test]
async fn call_all_keeps_the_calls_order() {
    let s = setup();
    let calls = [
        call("shell", r#"{"command": "sleep 0.3; echo first"}"#),
        call("shell", r#"{"command": "echo second"}"#),
        call("shell", r#"{"command": 3}"#),
        call("list_dir", "{}"),
    ];
    let outcomes = s.tools.call_all(&calls).await;
    assert_eq!(outcomes.len(), 4);
    assert!(outcomes[0].output.contains("first"));
    assert!(outcomes[1].output.contains("second"));
    assert!(outcomes[2].output.contains("must be a string"));
    assert_eq!(outcomes[3].output, "./ (0 entries)");
}
