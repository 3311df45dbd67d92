//! Serves a small demo tool set over MCP on stdin and stdout: `add` and `echo` (allowed), and
//! `delete_everything` (left at the fail-closed default, so the executor denies it without a
//! prompt). `agent-cli mcp serve` calls the same [`tool_mcp::serve_stdio`].

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{
    CallInfo, Executor, PermissionCheck, Session, Tool, ToolContext, ToolError, ToolOutput,
    ToolRegistry, ToolSpec,
};

/// Adds two integers.
struct Add;

#[derive(Deserialize, JsonSchema)]
struct AddInput {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

#[async_trait::async_trait]
impl Tool for Add {
    type Input = AddInput;
    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new("add", "Adds two integers.", input_schema)
    }
    fn info(&self, _: &AddInput) -> CallInfo {
        CallInfo::reads()
    }
    async fn check_permissions(&self, _: &AddInput, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }
    async fn call(&self, input: AddInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        ctx.progress_with("adding", Some(1.0), Some(1.0));
        let sum = input
            .a
            .checked_add(input.b)
            .ok_or_else(|| ToolError::failed("the sum overflows"))?;
        Ok(ToolOutput::text(sum.to_string()))
    }
}

/// Echoes its message.
struct Echo;

#[derive(Deserialize, JsonSchema)]
struct EchoInput {
    /// What to echo.
    message: String,
}

#[async_trait::async_trait]
impl Tool for Echo {
    type Input = EchoInput;
    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new("echo", "Echoes the message back.", input_schema)
    }
    fn info(&self, _: &EchoInput) -> CallInfo {
        CallInfo::reads()
    }
    async fn check_permissions(&self, _: &EchoInput, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }
    async fn call(&self, input: EchoInput, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(input.message))
    }
}

/// A tool that would be dangerous: it keeps the fail-closed permission default.
struct DeleteEverything;

#[derive(Deserialize, JsonSchema)]
struct NoInput {}

#[async_trait::async_trait]
impl Tool for DeleteEverything {
    type Input = NoInput;
    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "delete_everything",
            "Deletes everything (never allowed without approval).",
            input_schema,
        )
    }
    async fn call(&self, _: NoInput, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("deleted"))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Add)?;
    registry.register(Echo)?;
    registry.register(DeleteEverything)?;
    let dir = std::env::temp_dir();
    let session = Arc::new(Session::new("mcp-serve-demo", &dir, &dir));
    let executor = Arc::new(Executor::builder(registry, session).build());
    tool_mcp::serve_stdio(executor, "serve-demo").await?;
    Ok(())
}
