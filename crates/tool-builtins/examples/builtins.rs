//! Registers every built-in tool in an executor and runs read_file, edit_file and grep on a
//! temporary directory, printing what the model would see.
//!
//! Run with `cargo run -p tool-builtins --example builtins`.

use std::sync::Arc;

use serde_json::json;
use tool_builtins::Builtins;
use tool_core::{
    CancellationToken, Executor, PermissionMode, PermissionRules, Permissions, Session, ToolCall,
    ToolRegistry,
};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("src"))?;
    std::fs::write(
        work.join("src/main.rs"),
        "fn main() {\n    let greeting = \"hello\";\n    println!(\"{greeting}, world\");\n}\n",
    )?;

    let registry = Arc::new(ToolRegistry::new());
    Builtins::new().register_all(&registry)?;
    println!("registered: {}", registry.names().join(", "));

    // Reads are allowed by the tools themselves; the edit is allowed by a rule, as a user
    // would configure it. Everything else would be denied in this non-interactive run.
    let rules = PermissionRules::parse(&["edit_file(src/**)"], &[], &[])?;
    let session = Session::new("example", dir.path().join("session"), &work)
        .with_mode(PermissionMode::DontAsk);
    let executor = Executor::builder(registry, Arc::new(session))
        .permissions(Arc::new(Permissions::new(rules)))
        .build();

    let calls = [
        ToolCall::new("toolu_1", "read_file", json!({"path": "src/main.rs"})),
        ToolCall::new(
            "toolu_2",
            "edit_file",
            json!({
                "path": "src/main.rs",
                "old_string": "let greeting = \"hello\";",
                "new_string": "let greeting = \"goodbye\";",
            }),
        ),
        ToolCall::new(
            "toolu_3",
            "grep",
            json!({"pattern": "greeting", "context": 1}),
        ),
        ToolCall::new("toolu_4", "shell", json!({"command": "rm -rf src"})),
    ];
    for call in calls {
        let name = call.name.clone();
        let result = executor.execute(call, CancellationToken::new(), None).await;
        let flag = if result.is_error { " (error)" } else { "" };
        println!("\n=== {name}{flag}\n{}", result.text());
    }
    Ok(())
}
