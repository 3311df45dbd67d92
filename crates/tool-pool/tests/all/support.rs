//! Stub tools and a pool fixture.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    AnyTool, CallInfo, CancellationToken, Executor, Loading, Origin, PermissionCheck,
    PermissionRules, Permissions, Session, Tool, ToolCall, ToolContext, ToolError, ToolOutput,
    ToolRegistry, ToolResult, ToolSpec,
};
use tool_pool::{PoolConfig, ToolPool};

/// A tool that answers with its own name and input; read-only when its name says so.
pub struct Stub {
    pub spec: ToolSpec,
}

impl Stub {
    fn is_read_only(&self) -> bool {
        self.spec.name.contains("read")
            || self.spec.name.contains("list")
            || self.spec.name.contains("get")
    }
}

#[async_trait]
impl Tool for Stub {
    type Input = Value;

    fn spec(&self, _: Value) -> ToolSpec {
        self.spec.clone()
    }

    fn info(&self, _: &Value) -> CallInfo {
        CallInfo::reads_if(self.is_read_only())
    }

    async fn check_permissions(&self, _: &Value, _: &ToolContext) -> PermissionCheck {
        if self.is_read_only() {
            PermissionCheck::Allow
        } else {
            PermissionCheck::ask_default(&self.spec.name)
        }
    }

    async fn call(&self, input: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!(
            "{} ran with {input}",
            self.spec.name
        )))
    }
}

pub fn schema(params: &[(&str, &str)]) -> Value {
    let props: serde_json::Map<String, Value> = params
        .iter()
        .map(|(name, desc)| {
            (
                (*name).to_owned(),
                json!({"type": "string", "description": desc}),
            )
        })
        .collect();
    let required: Vec<&str> = params.iter().map(|(n, _)| *n).collect();
    json!({"type": "object", "properties": props, "required": required})
}

pub fn builtin(name: &str, description: &str) -> AnyTool {
    AnyTool::new(Stub {
        spec: ToolSpec::new(name, description, schema(&[("path", "The file path")])),
    })
}

pub fn mcp(server: &str, tool: &str, description: &str, params: &[(&str, &str)]) -> AnyTool {
    AnyTool::new(Stub {
        spec: ToolSpec::new(
            format!("mcp__{server}__{tool}"),
            description,
            schema(params),
        )
        .with_loading(Loading::Defer)
        .with_origin(Origin::Mcp {
            server: server.into(),
            tool: tool.into(),
        }),
    })
}

/// The core built-ins of the default whitelist, as stubs.
pub fn core_builtins() -> Vec<AnyTool> {
    vec![
        builtin("read_file", "Reads a file from the local filesystem."),
        builtin("write_file", "Writes a file to the local filesystem."),
        builtin("edit_file", "Replaces text in a file."),
        builtin("glob", "Finds files by name pattern."),
        builtin("grep", "Searches file contents with a regular expression."),
        builtin("shell", "Runs a shell command."),
    ]
}

/// Tools of two MCP servers.
pub fn servers() -> Vec<AnyTool> {
    vec![
        mcp(
            "github",
            "create_issue",
            "Create a new issue in a GitHub repository.",
            &[("repo", "owner/name"), ("title", "Issue title")],
        ),
        mcp(
            "github",
            "list_pull_requests",
            "List pull requests of a GitHub repository.",
            &[("repo", "owner/name")],
        ),
        mcp(
            "github",
            "merge_pull_request",
            "Merge a pull request.",
            &[("repo", "owner/name"), ("number", "PR number")],
        ),
        mcp(
            "slack",
            "send_message",
            "Send a message to a Slack channel.",
            &[("channel", "Channel id"), ("text", "Message text")],
        ),
        mcp(
            "slack",
            "list_channels",
            "List the channels of a Slack workspace.",
            &[],
        ),
    ]
}

pub struct Fixture {
    /// Keeps the session directory alive for the fixture's lifetime.
    pub _dir: tempfile::TempDir,
    pub registry: Arc<ToolRegistry>,
    pub pool: ToolPool,
    pub executor: Executor,
}

impl Fixture {
    pub fn new(config: PoolConfig) -> Self {
        Self::with_rules(config, PermissionRules::default())
    }

    pub fn with_rules(config: PoolConfig, rules: PermissionRules) -> Self {
        let registry = Arc::new(ToolRegistry::new());
        for tool in core_builtins() {
            registry.register(tool).unwrap();
        }
        let pool = ToolPool::new(Arc::clone(&registry), config).unwrap();
        pool.set_rules(rules.clone());
        for tool in servers() {
            assert!(pool.add_mcp_tool(tool).unwrap());
        }
        let dir = tempfile::tempdir().unwrap();
        let session = Arc::new(Session::new("s", dir.path().join("session"), dir.path()));
        let executor = Executor::builder(Arc::clone(&registry), session)
            .permissions(Arc::new(Permissions::new(rules)))
            .suggester(pool.suggester())
            .build();
        Self {
            _dir: dir,
            registry,
            pool,
            executor,
        }
    }

    pub async fn call(&self, name: &str, input: Value) -> ToolResult {
        self.executor
            .execute(
                ToolCall::new("toolu_1", name, input),
                CancellationToken::new(),
                None,
            )
            .await
    }

    pub async fn search(&self, query: &str) -> String {
        let result = self.call("tool_search", json!({"query": query})).await;
        assert!(!result.is_error, "{}", result.text());
        result.text()
    }
}
