//! enter_plan_mode and exit_plan_mode: switch the session to plan mode (read-only) and back,
//! with the plan shown to the user for approval on the way out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{
    CallInfo, Loading, PermissionCheck, PermissionMode, Tool, ToolContext, ToolError, ToolOutput,
    ToolSpec,
};

/// The mode each session was in before it entered plan mode, to restore on the way out.
#[derive(Debug, Default)]
pub(crate) struct PlanState {
    previous: Mutex<HashMap<String, PermissionMode>>,
}

impl PlanState {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PermissionMode>> {
        // Entries are plain values inserted whole; a poisoned map is still consistent.
        self.previous.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The enter_plan_mode tool.
pub(crate) struct EnterPlanMode {
    pub(crate) state: Arc<PlanState>,
}

/// The exit_plan_mode tool.
pub(crate) struct ExitPlanMode {
    pub(crate) state: Arc<PlanState>,
}

/// enter_plan_mode's input (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct EnterPlanModeInput {}

/// exit_plan_mode's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ExitPlanModeInput {
    /// The plan, in markdown: the steps you will take, the files you will change and how you
    /// will check the result. The user approves or rejects it.
    pub plan: String,
}

#[async_trait]
impl Tool for EnterPlanMode {
    type Input = EnterPlanModeInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "enter_plan_mode",
            "Switches the session to plan mode: only read-only tools run, so you can explore the code and design an approach before changing anything. Use it for non-trivial tasks where the approach is unclear or the user asked for a plan. Leave with exit_plan_mode, which shows the plan to the user for approval.",
            input_schema,
        )
        .with_search_hint("plan mode explore before editing")
        .with_loading(Loading::Defer)
    }

    fn info(&self, _: &EnterPlanModeInput) -> CallInfo {
        // Entering plan mode only takes permissions away.
        CallInfo::reads().with_activity(Some("Entering plan mode".to_owned()))
    }

    async fn check_permissions(&self, _: &EnterPlanModeInput, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(
        &self,
        _: EnterPlanModeInput,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let session = ctx.session();
        let mode = session.mode();
        if mode == PermissionMode::Plan {
            return Ok(ToolOutput::text(
                "The session is already in plan mode. Explore with read-only tools, then call exit_plan_mode with your plan.",
            ));
        }
        self.state.lock().insert(session.id().to_owned(), mode);
        session.set_mode(PermissionMode::Plan);
        Ok(ToolOutput::text(
            "Entered plan mode (the previous mode was ".to_owned()
                + mode.as_str()
                + "). Only read-only tools run now. Explore the code, design the approach, then call exit_plan_mode with the plan for the user to approve. Do not change files yet.",
        ))
    }
}

#[async_trait]
impl Tool for ExitPlanMode {
    type Input = ExitPlanModeInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "exit_plan_mode",
            "Presents your plan to the user for approval and, once approved, leaves plan mode so you can carry it out. Call it when the plan is complete, with the plan as markdown. If the user rejects it, revise the plan and call it again.",
            input_schema,
        )
        .with_search_hint("finish plan ask user approval")
        .with_loading(Loading::Defer)
    }

    fn info(&self, _: &ExitPlanModeInput) -> CallInfo {
        // It changes no file; marked read-only so that plan mode itself does not block it. The
        // approval happens in the permission stage (see check_permissions).
        CallInfo::reads().with_activity(Some("Presenting the plan".to_owned()))
    }

    async fn validate_input(
        &self,
        input: &ExitPlanModeInput,
        _: &ToolContext,
    ) -> Result<(), ToolError> {
        if input.plan.trim().is_empty() {
            return Err(ToolError::invalid(
                "the plan is empty: pass the plan as markdown in `plan`",
            ));
        }
        Ok(())
    }

    async fn check_permissions(
        &self,
        input: &ExitPlanModeInput,
        _: &ToolContext,
    ) -> PermissionCheck {
        PermissionCheck::Ask {
            reason: format!("approve this plan?\n\n{}", input.plan.trim()),
        }
    }

    async fn call(
        &self,
        input: ExitPlanModeInput,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let session = ctx.session();
        if session.mode() != PermissionMode::Plan {
            return Err(ToolError::failed(
                "the session is not in plan mode, so there is nothing to exit; carry on with the task (or call enter_plan_mode first if you meant to plan)",
            ));
        }
        let previous = self
            .state
            .lock()
            .remove(session.id())
            .unwrap_or(PermissionMode::Default);
        session.set_mode(previous);
        Ok(ToolOutput::text(format!(
            "The user approved the plan. Plan mode is over (the mode is {previous} again); carry out the plan now.\n\n## Approved plan\n\n{}",
            input.plan.trim()
        )))
    }
}
