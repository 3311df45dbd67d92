//! The Tool contract and its execution lifecycle for LLM coding agents.
//!
//! A [`Tool`] is a typed input, a [`ToolSpec`] and behaviour; its defaults are fail-closed (not read-only, not
//! concurrency-safe, permission `ask`). An [`Executor`] runs every call through eight stages:
//! lookup, validation, pre-tool hooks, permission, call, result budget, post-tool hooks, mapping.
//! A failure at any stage becomes a [`ToolResult`] with `is_error: true` that tells the model what
//! to do next: errors are data, and nothing a model sends can panic the process.
//!
//! ```
//! use std::sync::Arc;
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::{Value, json};
//! use tool_core::{
//!     AnyTool, CallInfo, CancellationToken, Executor, PermissionCheck, Session, Tool, ToolCall,
//!     ToolContext, ToolError, ToolOutput, ToolRegistry, ToolSpec,
//! };
//!
//! /// Adds two numbers.
//! struct Add;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct AddInput {
//!     /// The first number.
//!     a: i64,
//!     /// The second number.
//!     b: i64,
//! }
//!
//! #[async_trait::async_trait]
//! impl Tool for Add {
//!     type Input = AddInput;
//!     fn spec(&self, input_schema: Value) -> ToolSpec {
//!         ToolSpec::new("add", "Adds two integers.", input_schema)
//!     }
//!     fn info(&self, _: &AddInput) -> CallInfo { CallInfo::reads() }
//!     async fn check_permissions(&self, _: &AddInput, _: &ToolContext) -> PermissionCheck {
//!         PermissionCheck::Allow
//!     }
//!     async fn call(&self, input: AddInput, _: &ToolContext) -> Result<ToolOutput, ToolError> {
//!         let sum = input.a.checked_add(input.b).ok_or_else(|| ToolError::failed("the sum overflows"))?;
//!         Ok(ToolOutput::text(sum.to_string()))
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let registry = Arc::new(ToolRegistry::new());
//! registry.register(AnyTool::new(Add)).unwrap();
//! let dir = std::env::temp_dir();
//! let executor = Executor::builder(registry, Arc::new(Session::new("demo", &dir, &dir))).build();
//! let call = ToolCall::new("toolu_1", "add", json!({"a": 2, "b": 40}));
//! let result = executor.execute(call, CancellationToken::new(), None).await;
//! assert_eq!(result.text(), "42");
//! assert!(!result.is_error);
//! # });
//! ```

mod batch;
mod budget;
mod call;
pub mod child_env;
mod claude;
mod context;
mod erased;
mod error;
mod executor;
mod hooks;
mod mode;
pub mod net;
mod output;
mod permission;
mod registry;
mod result;
mod rule;
mod spec;
mod tool;

pub use batch::Batch;
pub use budget::{
    RESULTS_DIR, ResultBudget, file_name_of_id, head_chars, result_path, truncate_middle,
};
pub use call::ToolCall;
pub use claude::tool_name_from_claude;
pub use context::{ExecutionEvent, Session, ToolContext};
pub use erased::{AnyTool, PreparedCall};
pub use error::CoreError;
pub use executor::{Executor, ExecutorBuilder, NameSuggester};
pub use hooks::{
    CommandHook, HookCall, PostHookOutcome, PostToolHook, PreHookOutcome, PreToolHook,
};
pub use mode::PermissionMode;
pub use output::{Content, ToolError, ToolOutput};
pub use permission::{
    DecisionSource, PermissionDecision, PermissionRequest, Permissions, PromptAnswer, Prompter,
    RuleScope,
};
pub use registry::{RegisteredTool, ToolRegistry};
pub use result::ToolResult;
pub use rule::{PermissionRule, PermissionRules};
pub use spec::{DEFAULT_MAX_RESULT_CHARS, Loading, Origin, ToolSpec, is_valid_tool_name};
pub use tool::{CallInfo, PermissionCheck, ProxyTarget, Tool};

/// Re-exported so that tools can name the cancellation token type without a direct dependency.
pub use tokio_util::sync::CancellationToken;
