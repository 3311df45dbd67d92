//! Our tools served over MCP, checked with the official Python SDK's client.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::support::*;

/// The `serve_demo` example, which `cargo test` builds next to the test binaries.
fn serve_demo() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples/serve_demo");
    assert!(
        path.is_file(),
        "{} is missing: run the tests with `cargo test -p tool-mcp`, which builds the examples",
        path.display()
    );
    path
}

#[test]
fn the_python_sdk_client_lists_and_calls_our_tools() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let output = Command::new(venv_python())
        .arg(fixture!("python_client.py"))
        .arg(serve_demo())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "python client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        seen,
        json!({
            "add": {"is_error": false, "text": ["42"]},
            "add_progress": [[1.0, 1.0, "adding"]],
            "echo": {"is_error": false, "text": ["hello from python"]},
            "denied_is_error": true,
            "invalid_is_error": true,
            "tools": {
                "add": {"read_only": false, "required": ["a", "b"]},
                "delete_everything": {"read_only": false, "required": []},
                "echo": {"read_only": false, "required": ["message"]},
            },
        })
    );
}

#[tokio::test]
async fn our_client_reaches_our_server() {
    let (manager, registry) = start(
        vec![("demo", stdio(serve_demo().to_str().unwrap(), &[]))],
        options(),
    );
    let states = settled(&manager).await;
    assert_eq!(connected(&states, "demo"), 3);
    let sum = call(&registry, "mcp__demo__add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(sum.joined_text(), "3");
    let denied = call(&registry, "mcp__demo__delete_everything", json!({}))
        .await
        .unwrap();
    assert!(denied.is_error);
}
