//! What keeps a sub-agent inside its type: a guard that lets only reading calls through, a
//! stand-in that refuses a tool outside the type's set, and a front end that names the sub-agent
//! in every permission prompt.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tool_core::{
    AnyTool, CallInfo, ExecutionEvent, PermissionCheck, PermissionRequest, Permissions,
    PromptAnswer, Tool, ToolContext, ToolError, ToolOutput, ToolSpec,
};

use crate::agent::AgentEvent;
use crate::frontend::FrontEnd;

/// A tool of a read-only sub-agent: a call that would not only read is refused before it runs,
/// so the sub-agent's type really is read-only (the shell keeps its read-only commands).
pub fn read_only(inner: AnyTool, agent: &str) -> AnyTool {
    let agent = agent.to_owned();
    let name = inner.name().to_owned();
    inner.gated(move |call: &CallInfo| {
        if call.is_read_only() {
            return Ok(());
        }
        Err(ToolError::invalid(format!(
            "the {agent} sub-agent only reads, and this {name} call could change something; use a \
             call that only reads (for the shell: ls, cat, git status, ...), or say in your \
             answer what should be run"
        )))
    })
}

/// Stands in for a tool a sub-agent may not use: the model never sees it, and a call of it is
/// answered with what the sub-agent may use instead (rather than "no such tool").
pub struct Refused {
    spec: ToolSpec,
    reason: String,
}

impl Refused {
    /// The stand-in for the tool `name` in a sub-agent of type `agent`, whose tools are `allowed`.
    pub fn stand_in(name: &str, agent: &str, allowed: &[String]) -> AnyTool {
        let reason = if name == super::kinds::AGENT_TOOL {
            format!(
                "a sub-agent cannot start sub-agents; do the work with your own tools ({})",
                allowed.join(", ")
            )
        } else {
            format!(
                "the {agent} sub-agent may not use {name}; its tools are {}. Do what you can with \
                 those, and say in your answer what else is needed",
                allowed.join(", ")
            )
        };
        AnyTool::new(Self {
            spec: ToolSpec::new(
                name,
                "Not available to this sub-agent.",
                json!({"type": "object"}),
            ),
            reason,
        })
    }
}

#[async_trait]
impl Tool for Refused {
    type Input = Value;

    fn spec(&self, _: Value) -> ToolSpec {
        self.spec.clone()
    }

    async fn validate_input(&self, _input: &Value, _ctx: &ToolContext) -> Result<(), ToolError> {
        Err(ToolError::invalid(self.reason.clone()))
    }

    async fn check_permissions(&self, _input: &Value, _ctx: &ToolContext) -> PermissionCheck {
        PermissionCheck::Deny {
            reason: self.reason.clone(),
        }
    }

    async fn call(&self, _input: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::failed(self.reason.clone()))
    }
}

/// A sub-agent's front end: each tool call it starts is reported as the `agent` call's progress
/// (such as `explore: Searching for foo`); each permission prompt goes to the parent's front end
/// saying which sub-agent asks, and an "always allow" answer also holds for the main agent (the
/// user allowed the call, not the sub-agent).
pub(crate) struct SubAgentFrontEnd {
    parent: Arc<dyn FrontEnd>,
    agent: String,
    permissions: Arc<Permissions>,
    call: Option<ToolContext>,
}

impl SubAgentFrontEnd {
    /// The front end of the sub-agent `agent`, run by the call `call` (`None`: no progress is
    /// reported), asking through `parent`; rules learned go to `permissions` (the parent's).
    pub fn wrap(
        parent: Arc<dyn FrontEnd>,
        agent: &str,
        permissions: Arc<Permissions>,
        call: Option<ToolContext>,
    ) -> Arc<dyn FrontEnd> {
        Arc::new(Self {
            parent,
            agent: agent.to_owned(),
            permissions,
            call,
        })
    }
}

#[async_trait]
impl FrontEnd for SubAgentFrontEnd {
    fn event(&self, event: AgentEvent) {
        if let (
            Some(call),
            AgentEvent::Tool {
                event: ExecutionEvent::Started { tool, activity, .. },
            },
        ) = (&self.call, event)
        {
            call.progress(format!("{}: {}", self.agent, activity.unwrap_or(tool)));
        }
    }

    fn can_ask(&self) -> bool {
        self.parent.can_ask()
    }

    async fn ask(&self, request: &PermissionRequest) -> PromptAnswer {
        let mut named = request.clone();
        let what = request
            .activity
            .clone()
            .unwrap_or_else(|| format!("{} {}", request.tool, request.input));
        named.activity = Some(format!("[{} sub-agent] {what}", self.agent));
        named.reason = format!("{} (asked by the {} sub-agent)", request.reason, self.agent);
        let answer = self.parent.ask(&named).await;
        if let PromptAnswer::AllowAlways { rule, .. } = &answer {
            self.permissions.allow(rule.clone());
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use tool_core::{PermissionRule, RuleScope};

    use super::*;

    struct Recording {
        asked: Mutex<Vec<PermissionRequest>>,
        answer: PromptAnswer,
    }

    #[async_trait]
    impl FrontEnd for Recording {
        fn can_ask(&self) -> bool {
            true
        }

        async fn ask(&self, request: &PermissionRequest) -> PromptAnswer {
            self.asked.lock().unwrap().push(request.clone());
            self.answer.clone()
        }
    }

    #[tokio::test]
    async fn a_prompt_names_the_sub_agent_and_always_allow_reaches_the_parent() {
        let rule: PermissionRule = "shell(cargo test:*)".parse().unwrap();
        let recording = Arc::new(Recording {
            asked: Mutex::new(Vec::new()),
            answer: PromptAnswer::AllowAlways {
                rule: rule.clone(),
                scope: RuleScope::Session,
            },
        });
        let parent = Arc::new(Permissions::default());
        let prompter =
            SubAgentFrontEnd::wrap(recording.clone(), "tester", Arc::clone(&parent), None);
        let request = PermissionRequest {
            tool_use_id: "toolu_1".into(),
            tool: "shell".into(),
            input: json!({"command": "cargo test"}),
            reason: "shell needs the user's approval".into(),
            activity: Some("Running cargo test".into()),
            suggested_rule: rule.clone(),
        };
        let answer = prompter.ask(&request).await;
        assert!(matches!(answer, PromptAnswer::AllowAlways { .. }));
        let asked = recording.asked.lock().unwrap();
        assert_eq!(
            asked[0].activity.as_deref(),
            Some("[tester sub-agent] Running cargo test")
        );
        assert_eq!(
            asked[0].reason,
            "shell needs the user's approval (asked by the tester sub-agent)"
        );
        assert!(parent.rules().allow.contains(&rule));
    }
}
