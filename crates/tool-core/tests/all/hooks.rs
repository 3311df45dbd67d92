//! Pre- and post-tool hooks, including a real command hook.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;
use tool_core::{
    CommandHook, HookCall, PermissionRules, Permissions, PostHookOutcome, PostToolHook,
    PreHookOutcome, PreToolHook, ToolOutput,
};

use super::support::{Fixture, run};

#[tokio::test]
async fn a_command_hook_sees_the_call_on_stdin() {
    let fx = Fixture::new();
    let seen = fx.dir.path().join("seen.json");
    let hook = CommandHook::new(format!("cat > '{}'", seen.display()));
    let executor = fx.builder().pre_hook(Arc::new(hook)).build();
    let result = run(&executor, "echo", json!({"text": "hello"})).await;
    assert_eq!(result.text(), "hello");
    let payload: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(seen).unwrap()).unwrap();
    assert_eq!(payload["hook_event_name"], "PreToolUse");
    assert_eq!(payload["tool_name"], "echo");
    assert_eq!(payload["tool_input"], json!({"text": "hello"}));
    assert_eq!(payload["tool_use_id"], "toolu_01");
    assert_eq!(payload["session_id"], "test-session");
}

#[tokio::test]
async fn a_command_hook_can_rewrite_the_input() {
    let fx = Fixture::new();
    let hook = CommandHook::new(r#"echo '{"updated_input": {"text": "rewritten"}}'"#);
    let executor = fx.builder().pre_hook(Arc::new(hook)).build();
    assert_eq!(
        run(&executor, "echo", json!({"text": "original"}))
            .await
            .text(),
        "rewritten"
    );
}

#[tokio::test]
async fn a_rewrite_is_validated_again() {
    let fx = Fixture::new();
    let hook = CommandHook::new(r#"echo '{"updated_input": {"text": 42}}'"#);
    let executor = fx.builder().pre_hook(Arc::new(hook)).build();
    let result = run(&executor, "echo", json!({"text": "original"})).await;
    assert!(result.is_error);
    assert!(
        result
            .text()
            .starts_with("a pre-tool hook rewrote the input"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn a_command_hook_can_allow_without_a_prompt_but_not_past_a_deny_rule() {
    let fx = Fixture::new();
    let hook = Arc::new(CommandHook::new(r#"echo '{"decision": "allow"}'"#));
    // The shell tool asks by default; a non-interactive run would deny it.
    let executor = fx.builder().pre_hook(hook.clone()).build();
    assert_eq!(
        run(&executor, "shell", json!({"command": "ls"}))
            .await
            .text(),
        "ran ls"
    );
    let rules = PermissionRules::parse(&[], &[], &["shell"]).unwrap();
    let executor = fx
        .builder()
        .pre_hook(hook)
        .permissions(Arc::new(Permissions::new(rules)))
        .build();
    assert!(
        run(&executor, "shell", json!({"command": "ls"}))
            .await
            .is_error
    );
}

#[tokio::test]
async fn exit_code_two_blocks_with_stderr_as_the_reason() {
    let fx = Fixture::new();
    let hook = CommandHook::new("echo 'no shell on fridays' >&2; exit 2");
    let executor = fx.builder().pre_hook(Arc::new(hook)).build();
    let result = run(&executor, "echo", json!({"text": "x"})).await;
    assert!(result.is_error);
    assert_eq!(
        result.text(),
        "a pre-tool hook blocked this echo call: no shell on fridays"
    );
}

#[tokio::test]
async fn a_broken_hook_fails_closed() {
    let fx = Fixture::new();
    for (command, fragment) in [
        ("exit 1", "exited with code 1"),
        ("echo not-json", "not the expected JSON"),
        ("no-such-command-xyz", "exited with code 127"),
        (
            "echo '{\"decision\": \"maybe\"}'",
            "unknown decision `maybe`",
        ),
    ] {
        let executor = fx
            .builder()
            .pre_hook(Arc::new(CommandHook::new(command)))
            .build();
        let result = run(&executor, "echo", json!({"text": "x"})).await;
        assert!(result.is_error, "{command}");
        assert!(
            result.text().contains(fragment),
            "{command}: {}",
            result.text()
        );
    }
}

#[tokio::test]
async fn a_hook_that_hangs_times_out() {
    let fx = Fixture::new();
    let hook = CommandHook::new("sleep 30").with_timeout(std::time::Duration::from_millis(200));
    let executor = fx.builder().pre_hook(Arc::new(hook)).build();
    let result = run(&executor, "echo", json!({"text": "x"})).await;
    assert!(result.is_error);
    assert!(result.text().contains("timed out"), "{}", result.text());
}

#[tokio::test]
async fn matchers_limit_a_hook_to_some_tools() {
    let fx = Fixture::new();
    let hook = CommandHook::new("exit 2")
        .with_matcher("shell|write")
        .unwrap();
    let executor = fx.builder().pre_hook(Arc::new(hook)).build();
    assert!(!run(&executor, "echo", json!({"text": "x"})).await.is_error);
    assert!(run(&executor, "write", json!({"path": "a"})).await.is_error);
    assert!(CommandHook::new("true").with_matcher("[").is_err());
}

struct Counting;

#[async_trait]
impl PreToolHook for Counting {
    async fn before(&self, call: &HookCall) -> PreHookOutcome {
        PreHookOutcome::Rewrite {
            input: json!({"text": format!("{}!", call.tool_input["text"].as_str().unwrap_or(""))}),
        }
    }
}

struct Annotate;

#[async_trait]
impl PostToolHook for Annotate {
    async fn after(&self, _: &HookCall, output: &ToolOutput) -> PostHookOutcome {
        PostHookOutcome::AddContext {
            text: format!("(checked {} chars)", output.joined_text().len()),
        }
    }
}

#[tokio::test]
async fn callback_hooks_run_in_order() {
    let fx = Fixture::new();
    let executor = fx
        .builder()
        .pre_hook(Arc::new(Counting))
        .pre_hook(Arc::new(Counting))
        .post_hook(Arc::new(Annotate))
        .build();
    let result = run(&executor, "echo", json!({"text": "hi"})).await;
    assert_eq!(result.text(), "hi!!\n(checked 4 chars)");
}

#[tokio::test]
async fn a_post_hook_command_can_flag_a_result() {
    let fx = Fixture::new();
    let hook =
        CommandHook::new(r#"echo '{"decision": "block", "reason": "output mentions a secret"}'"#);
    let executor = fx.builder().post_hook(Arc::new(hook)).build();
    let result = run(&executor, "echo", json!({"text": "hunter2"})).await;
    assert!(result.is_error);
    assert_eq!(
        result.text(),
        "hunter2\nA post-tool hook flagged this result: output mentions a secret"
    );
}
