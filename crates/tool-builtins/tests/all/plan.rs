//! enter_plan_mode and exit_plan_mode.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use tool_core::{
    CancellationToken, Executor, Loading, PermissionMode, PermissionRequest, PermissionRules,
    Permissions, PromptAnswer, Prompter, ToolCall,
};

use crate::support::Env;

struct Approve;

#[async_trait]
impl Prompter for Approve {
    async fn ask(&self, request: &PermissionRequest) -> PromptAnswer {
        assert!(
            request.reason.contains("1. Read the code"),
            "{}",
            request.reason
        );
        PromptAnswer::AllowOnce
    }
}

#[tokio::test]
async fn plan_mode_round_trip_restores_the_previous_mode() {
    let env = Env::new();
    env.session.set_mode(PermissionMode::AcceptEdits);
    let out = env.ok("enter_plan_mode", json!({})).await;
    assert!(out.contains("Entered plan mode"), "{out}");
    assert_eq!(env.session.mode(), PermissionMode::Plan);
    let again = env.ok("enter_plan_mode", json!({})).await;
    assert!(again.contains("already in plan mode"));

    let permissions = Permissions::new(PermissionRules::default()).with_prompter(Arc::new(Approve));
    let executor = Executor::builder(Arc::clone(&env.registry), Arc::clone(&env.session))
        .permissions(Arc::new(permissions))
        .build();
    // Plan mode denies writes.
    let denied = executor
        .execute(
            ToolCall::new("t1", "write_file", json!({"path": "x.txt", "content": "x"})),
            CancellationToken::new(),
            None,
        )
        .await;
    assert!(
        denied.is_error && denied.text().contains("plan mode"),
        "{}",
        denied.text()
    );
    // exit_plan_mode asks (the prompter sees the plan) and restores the mode.
    let plan = "1. Read the code\n2. Change it";
    let result = executor
        .execute(
            ToolCall::new("t2", "exit_plan_mode", json!({"plan": plan})),
            CancellationToken::new(),
            None,
        )
        .await;
    assert!(!result.is_error, "{}", result.text());
    insta::assert_snapshot!(result.text());
    assert_eq!(env.session.mode(), PermissionMode::AcceptEdits);
}

#[tokio::test]
async fn exit_outside_plan_mode_and_empty_plans_are_errors() {
    let env = Env::new();
    let err = env.err("exit_plan_mode", json!({"plan": "do it"})).await;
    assert!(err.contains("not in plan mode"), "{err}");
    let err = env.err("exit_plan_mode", json!({"plan": "  "})).await;
    assert!(err.contains("plan is empty"), "{err}");
}

#[tokio::test]
async fn plan_tools_are_deferred() {
    let env = Env::new();
    for name in ["enter_plan_mode", "exit_plan_mode"] {
        assert_eq!(env.tool(name).spec().loading, Loading::Defer);
    }
}
