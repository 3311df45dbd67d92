//! The `agent` tool: starts a sub-agent of a chosen type and returns its final answer.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{
    CallInfo, Loading, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
    ToolSpec,
};

use super::kinds::{AGENT_TOOL, AgentType, AgentTypes, EXPLORE};
use super::run::Launcher;
use crate::provider::Provider;
use crate::runtime::ToolRuntime;
use crate::usage::Meter;

/// The `agent` tool's input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentInput {
    /// A short (3-5 words) description of the task, shown while the sub-agent works.
    pub description: String,
    // One line per field: schemars keeps a doc comment's line breaks in the schema's text.
    /// The whole task; the sub-agent sees none of your conversation, so include all it needs.
    pub prompt: String,
    /// The agent type (see the tool's description); `explore` when left out.
    #[serde(default)]
    pub subagent_type: Option<String>,
}

impl AgentInput {
    fn kind_name(&self) -> &str {
        self.subagent_type
            .as_deref()
            .map(str::trim)
            .filter(|name| !name.is_empty())
            .unwrap_or(EXPLORE)
    }
}

/// The `agent` tool.
pub(crate) struct AgentTool {
    types: AgentTypes,
    launcher: Launcher,
}

impl AgentTool {
    /// The tool over these types, starting sub-agents with `launcher`.
    pub fn new(types: AgentTypes, launcher: Launcher) -> Self {
        Self { types, launcher }
    }

    fn kind(&self, input: &AgentInput) -> Result<&AgentType, ToolError> {
        let name = input.kind_name();
        self.types.get(name).ok_or_else(|| {
            ToolError::invalid(format!(
                "there is no agent type `{name}`; use one of: {}",
                self.types.names().join(", ")
            ))
        })
    }

    /// Whether the sub-agent `input` asks for only reads (its type's every tool only reads).
    fn reads_only(&self, input: &AgentInput) -> bool {
        let (Ok(kind), Some(parent)) = (self.kind(input), self.parent()) else {
            return false;
        };
        kind.reads_only(&parent)
    }

    fn parent(&self) -> Option<Arc<ToolRegistry>> {
        self.launcher.parent.registry.upgrade()
    }

    fn description(&self) -> String {
        let mut text = String::from(
            "Starts a sub-agent for a self-contained task: it works in a conversation of its own, \
             with the tools of its type, and its final answer is this tool's result. Use it for \
             searches across many files and questions that need many reads, to keep your own \
             context small. Several read-only sub-agents asked for in one message run at the \
             same time. The sub-agent sees only `prompt`: include everything it needs and say \
             what its answer should contain. A sub-agent cannot start sub-agents.\n\nAgent types \
             (`subagent_type`):",
        );
        for kind in self.types.iter() {
            text.push('\n');
            text.push_str(&kind.summary());
        }
        text
    }
}

#[async_trait]
impl Tool for AgentTool {
    type Input = AgentInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(AGENT_TOOL, self.description(), input_schema)
            .with_search_hint("delegate a task to a sub-agent explore search codebase")
            .with_loading(Loading::AlwaysLoad)
    }

    fn info(&self, input: &AgentInput) -> CallInfo {
        let reads_only = self.reads_only(input);
        CallInfo::reads_if(reads_only)
            .with_concurrency_safe(reads_only)
            .with_activity(Some(format!(
                "{}: {}",
                input.kind_name(),
                input.description.trim()
            )))
    }

    async fn validate_input(
        &self,
        input: &AgentInput,
        _ctx: &ToolContext,
    ) -> Result<(), ToolError> {
        self.kind(input)?;
        if input.prompt.trim().is_empty() {
            return Err(ToolError::invalid(
                "the prompt is empty; describe the task the sub-agent should do",
            ));
        }
        Ok(())
    }

    async fn check_permissions(&self, _input: &AgentInput, _ctx: &ToolContext) -> PermissionCheck {
        // Starting a sub-agent does nothing by itself: each of its calls goes through the same
        // permission stage as the main agent's.
        PermissionCheck::Allow
    }

    async fn call(&self, input: AgentInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let kind = self.kind(&input)?;
        self.launcher.run(kind, &input.prompt, ctx).await
    }
}

/// The most model requests of one sub-agent.
pub(crate) const DEFAULT_MAX_TURNS: usize = 50;

/// Registers the `agent` tool in `runtime` (before the system prompt is built, so that the tool
/// is in the session's first request): sub-agents of `types` talk to `provider`, with `model`
/// for types that name none, and add their usage to `meter` (the session's).
pub fn install(
    runtime: &ToolRuntime,
    types: AgentTypes,
    provider: Arc<dyn Provider>,
    model: String,
    meter: Meter,
) -> anyhow::Result<()> {
    let launcher = Launcher {
        provider,
        model,
        parent: runtime.inheritance(),
        max_turns: DEFAULT_MAX_TURNS,
        meter,
    };
    runtime.registry.register(AgentTool::new(types, launcher))?;
    runtime.pool.sync();
    Ok(())
}
