//! Defines a typed tool and runs calls through the executor's eight stages.
//!
//! Run with `cargo run -p tool-core --example typed_tool`.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    AnyTool, CallInfo, CancellationToken, Executor, PermissionCheck, PermissionRules, Permissions,
    Session, Tool, ToolCall, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolSpec,
};

/// Counts the words of a text.
struct WordCount;

#[derive(Deserialize, JsonSchema)]
struct WordCountInput {
    /// The text whose words to count.
    text: String,
    /// Count only words at least this long.
    #[serde(default)]
    min_len: usize,
}

#[async_trait]
impl Tool for WordCount {
    type Input = WordCountInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new("word_count", "Counts the words of a text.", input_schema)
            .with_search_hint("count words in text")
    }

    fn info(&self, _: &WordCountInput) -> CallInfo {
        CallInfo::reads().with_concurrency_safe(true)
    }

    async fn check_permissions(&self, _: &WordCountInput, _: &ToolContext) -> PermissionCheck {
        // Pure computation: nothing to ask about.
        PermissionCheck::Allow
    }

    async fn call(
        &self,
        input: WordCountInput,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        ctx.progress("counting");
        let count = input
            .text
            .split_whitespace()
            .filter(|w| w.chars().count() >= input.min_len)
            .count();
        Ok(ToolOutput::text(format!("{count} words")).with_structured(json!({ "count": count })))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let registry = Arc::new(ToolRegistry::new());
    registry.register(AnyTool::new(WordCount))?;
    let dir = tempfile::tempdir()?;
    let session = Arc::new(Session::new(
        "example",
        dir.path().join("session"),
        dir.path(),
    ));
    let rules = PermissionRules::parse(&[], &[], &["mcp__untrusted"])?;
    let executor = Executor::builder(registry, session)
        .permissions(Arc::new(Permissions::new(rules)))
        .build();

    let calls = vec![
        ToolCall::new(
            "toolu_1",
            "word_count",
            json!({"text": "the quick brown fox", "min_len": 4}),
        ),
        ToolCall::new("toolu_2", "word_count", json!({"text": 42})),
        ToolCall::new("toolu_3", "word_cnt", json!({"text": "typo in the name"})),
    ];
    for result in executor
        .execute_all(calls, CancellationToken::new(), None)
        .await
    {
        println!("{}", serde_json::to_string_pretty(&result)?);
    }
    Ok(())
}
