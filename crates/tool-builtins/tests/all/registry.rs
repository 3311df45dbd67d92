//! The set of built-ins as registered: names, flags and what the model is told.

use serde_json::json;
use tool_builtins::Builtins;
use tool_core::ToolRegistry;

use crate::support::Env;

#[test]
fn registers_every_tool_by_name() {
    let registry = ToolRegistry::new();
    Builtins::new().register_all(&registry).unwrap();
    let mut expected: Vec<&str> = vec![
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "grep",
        "shell",
        "web_fetch",
        "enter_plan_mode",
        "exit_plan_mode",
        "todo_write",
    ];
    expected.sort_unstable();
    assert_eq!(registry.names(), expected);
}

#[test]
fn specs_as_the_model_sees_them() {
    let tools = Builtins::new().tools();
    let specs: Vec<_> = tools
        .iter()
        .map(|t| {
            let spec = t.spec();
            assert!(spec.search_hint.is_some(), "{}", spec.name);
            json!({
                "name": spec.name,
                "description": spec.description,
                "search_hint": spec.search_hint,
                "loading": spec.loading,
                "input_schema": spec.input_schema,
            })
        })
        .collect();
    insta::assert_json_snapshot!(specs);
}

#[test]
fn read_only_and_concurrency_flags() {
    let env = Env::new();
    let cases = [
        ("read_file", json!({"path": "a"}), true, true),
        ("glob", json!({"pattern": "*"}), true, true),
        ("grep", json!({"pattern": "x"}), true, true),
        (
            "web_fetch",
            json!({"url": "https://example.com"}),
            true,
            true,
        ),
        ("shell", json!({"command": "git status"}), true, true),
        ("shell", json!({"command": "rm x"}), false, false),
        (
            "write_file",
            json!({"path": "a", "content": ""}),
            false,
            false,
        ),
        (
            "edit_file",
            json!({"path": "a", "old_string": "a", "new_string": "b"}),
            false,
            false,
        ),
        ("exit_plan_mode", json!({"plan": "p"}), true, false),
    ];
    for (name, input, read_only, concurrent) in cases {
        let tool = env.tool(name);
        assert_eq!(tool.is_read_only(&input), read_only, "{name}");
        assert_eq!(tool.is_concurrency_safe(&input), concurrent, "{name}");
    }
    let read = env.tool("read_file");
    assert_eq!(
        read.activity(&json!({"path": "src/main.rs"})),
        Some("Reading src/main.rs".to_owned())
    );
    assert_eq!(
        read.path(&json!({"path": "src/../Cargo.toml"})),
        Some("Cargo.toml".into())
    );
}
