//! A pool with two core tools and 300 MCP-style tools: the request carries the core tools and the
//! two search tools only, `tool_search` finds the right deferred tool, and `execute_tool` runs it
//! through the executor's whole lifecycle. The tools array is the same before and after.
//!
//! Run with `cargo run -p tool-pool --example deferred_tools`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    CallInfo, CancellationToken, Executor, Origin, PermissionCheck, PermissionRules, Permissions,
    Session, Tool, ToolCall, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolSpec,
};
use tool_pool::{PoolConfig, ToolPool};

/// A tool that says what it was called with.
struct Echo(ToolSpec);

#[async_trait]
impl Tool for Echo {
    type Input = Value;

    fn spec(&self, _: Value) -> ToolSpec {
        self.0.clone()
    }

    fn info(&self, _: &Value) -> CallInfo {
        CallInfo::reads()
    }

    async fn check_permissions(&self, _: &Value, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(&self, input: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "{} ran with {input}",
            self.0.name
        )))
    }
}

fn mcp_tool(server: &str, tool: &str, description: &str) -> Echo {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    Echo(
        ToolSpec::new(format!("mcp__{server}__{tool}"), description, schema).with_origin(
            Origin::Mcp {
                server: server.into(),
                tool: tool.into(),
            },
        ),
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Arc::new(ToolRegistry::new());
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    for (name, description) in [("read_file", "Reads a file."), ("grep", "Searches files.")] {
        registry.register(Arc::new(Echo(ToolSpec::new(
            name,
            description,
            schema.clone(),
        ))))?;
    }
    let pool = ToolPool::new(Arc::clone(&registry), PoolConfig::default())?;
    for i in 0..300 {
        pool.add_mcp_tool(mcp_tool(
            "crm",
            &format!("record_{i}"),
            &format!("Updates CRM record type {i}."),
        ))?;
    }
    pool.add_mcp_tool(mcp_tool(
        "slack",
        "send_message",
        "Sends a message to a Slack channel.",
    ))?;

    let before = pool.request_tools().names();
    println!("request tools: {before:?}");
    println!("deferred: {} tools", pool.deferred_names().len());

    let session = Arc::new(Session::new(
        "example",
        std::env::temp_dir().join("pool-example"),
        ".",
    ));
    let executor = Executor::builder(Arc::clone(&registry), session)
        .permissions(Arc::new(Permissions::new(PermissionRules::default())))
        .suggester(pool.suggester())
        .build();
    let run = |id: &str, name: &str, input: Value| {
        executor.execute(
            ToolCall::new(id, name, input),
            CancellationToken::new(),
            None,
        )
    };
    let found = run(
        "call_1",
        "tool_search",
        json!({"query": "post a slack message"}),
    )
    .await;
    println!("\ntool_search:\n{}", found.text());
    let called = run(
        "call_2",
        "execute_tool",
        json!({"tool_name": "mcp__slack__send_message", "input": {"text": "shipped"}}),
    )
    .await;
    println!("\nexecute_tool:\n{}", called.text());

    assert!(found.text().contains("mcp__slack__send_message"));
    assert_eq!(
        pool.request_tools().names(),
        before,
        "the tools array never changed"
    );
    Ok(())
}
