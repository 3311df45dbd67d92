//! The eight stages, one by one, and the `tool_result` blocks the model reads.

use std::sync::Arc;

use insta::assert_json_snapshot;
use serde_json::json;
use tool_core::{
    AnyTool, CancellationToken, CommandHook, Content, ExecutionEvent, PermissionMode,
    PermissionRules, Permissions, ToolCall, ToolOutput, result_path,
};

use super::support::{Fixture, run, tool};

#[tokio::test]
async fn success_maps_to_a_text_block() {
    let fx = Fixture::new();
    let result = run(&fx.executor(), "echo", json!({"text": "hello"})).await;
    assert!(!result.is_error);
    assert_json_snapshot!("success", result);
}

#[tokio::test]
async fn aliases_resolve_to_the_tool() {
    let fx = Fixture::new();
    let result = run(&fx.executor(), "say", json!({"text": "hi"})).await;
    assert_eq!(result.text(), "hi");
}

#[tokio::test]
async fn unknown_tool_answers_with_closest_names() {
    let fx = Fixture::new();
    let result = run(&fx.executor(), "ecko", json!({"text": "hello"})).await;
    assert!(result.is_error);
    assert!(result.text().contains("`echo`"), "{}", result.text());
    assert_json_snapshot!("unknown_tool", result);
}

#[tokio::test]
async fn unknown_tool_without_neighbours_points_to_tool_search() {
    let fx = Fixture::new();
    let result = run(&fx.executor(), "zzzzzz", json!({})).await;
    assert!(result.is_error);
    assert!(result.text().contains("tool_search"), "{}", result.text());
}

#[tokio::test]
async fn schema_violation_lists_what_is_wrong() {
    let fx = Fixture::new();
    let result = run(&fx.executor(), "echo", json!({"text": 5, "times": "two"})).await;
    assert!(result.is_error);
    assert_json_snapshot!("schema_violation", result);
}

#[tokio::test]
async fn input_that_is_not_an_object_is_an_error_not_a_panic() {
    let fx = Fixture::new();
    let executor = fx.executor();
    for input in [json!(null), json!([1, 2]), json!("text"), json!(3)] {
        let result = run(&executor, "echo", input).await;
        assert!(result.is_error);
        assert!(
            result.text().contains("must be a JSON object"),
            "{}",
            result.text()
        );
    }
    let call = ToolCall::from_json_text("toolu_02", "echo", "{\"text\": \"unterminated");
    let result = executor.execute(call, CancellationToken::new(), None).await;
    assert!(result.is_error);
    assert!(result.text().contains("unterminated"), "{}", result.text());
}

#[tokio::test]
async fn validation_failure_comes_from_the_tool() {
    let fx = Fixture::new();
    let result = run(&fx.executor(), "echo", json!({"text": "   "})).await;
    assert!(result.is_error);
    assert_json_snapshot!("validation_failure", result);
}

#[tokio::test]
async fn permission_denied_by_rule() {
    let fx = Fixture::new();
    let rules = PermissionRules::parse(&[], &[], &["echo"]).unwrap();
    let executor = fx
        .builder()
        .permissions(Arc::new(Permissions::new(rules)))
        .build();
    let result = run(&executor, "echo", json!({"text": "hello"})).await;
    assert!(result.is_error);
    assert_json_snapshot!("permission_denied", result);
}

#[tokio::test]
async fn hook_denial_reaches_the_model() {
    let fx = Fixture::new();
    let hook =
        CommandHook::new(r#"echo '{"decision": "deny", "reason": "echo is off limits today"}'"#);
    let executor = fx.builder().pre_hook(Arc::new(hook)).build();
    let result = run(&executor, "echo", json!({"text": "hello"})).await;
    assert!(result.is_error);
    assert_json_snapshot!("hook_denial", result);
}

#[tokio::test]
async fn oversized_result_is_persisted_whole_and_previewed() {
    let fx = Fixture::new();
    let executor = fx
        .builder()
        .budget(tool_core::ResultBudget {
            head_chars: 20,
            tail_chars: 10,
        })
        .build();
    // echo's limit is 100 characters; 26 letters × 10 = 260.
    let text = "abcdefghijklmnopqrstuvwxyz";
    let result = run(&executor, "echo", json!({"text": text, "times": 10})).await;
    assert!(!result.is_error);
    let saved = std::fs::read_to_string(result_path(fx.session.dir(), "toolu_01")).unwrap();
    assert_eq!(
        saved,
        text.repeat(10),
        "the persisted file holds the whole output"
    );
    let mut block = serde_json::to_value(&result).unwrap();
    block["content"][0]["text"] = json!(fx.redact(block["content"][0]["text"].as_str().unwrap()));
    assert_json_snapshot!("oversized_result", block);
}

#[tokio::test]
async fn unbounded_tools_are_not_budgeted() {
    let fx = Fixture::new();
    let big = tool("big")
        .description("Big output.")
        .spec(|spec| spec.with_max_result_chars(None))
        .returns(ToolOutput::text("x".repeat(200_000)));
    fx.registry.register(Arc::new(big)).unwrap();
    let result = run(&fx.executor(), "big", json!({})).await;
    assert_eq!(result.text().len(), 200_000);
}

#[tokio::test]
async fn cancelled_call_says_so() {
    let fx = Fixture::new();
    let executor = fx.executor();
    let cancel = CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = {
        let executor = executor.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            executor
                .execute(
                    ToolCall::new("toolu_01", "forever", json!({})),
                    cancel,
                    Some(tx),
                )
                .await
        })
    };
    // Wait until the tool reports that it is running, then cancel.
    loop {
        match rx.recv().await.unwrap() {
            ExecutionEvent::Progress { message, .. } if message == "waiting forever" => break,
            _ => {}
        }
    }
    cancel.cancel();
    let result = task.await.unwrap();
    assert!(result.is_error);
    assert_json_snapshot!("cancelled_call", result);
    let finished = rx.recv().await.unwrap();
    assert_eq!(
        finished,
        ExecutionEvent::Finished {
            tool_use_id: "toolu_01".into(),
            is_error: true
        }
    );
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let fx = Fixture::new();
    let result = run(&fx.executor(), "panics", json!({})).await;
    assert!(result.is_error);
    assert!(
        result.text().contains("index out of bounds"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn events_follow_the_stages() {
    let fx = Fixture::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let result = fx
        .executor()
        .execute(
            ToolCall::new("toolu_9", "echo", json!({"text": "hi"})),
            CancellationToken::new(),
            Some(tx),
        )
        .await;
    assert!(!result.is_error);
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    assert_json_snapshot!("events", events);
}

#[tokio::test]
async fn structured_output_is_also_given_as_text() {
    let fx = Fixture::new();
    let shape = tool("shape")
        .description("Structured output.")
        .returns(ToolOutput {
            content: vec![Content::Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            }],
            structured: Some(json!({"width": 1, "height": 1})),
            is_error: false,
        });
    fx.registry.register(Arc::new(shape)).unwrap();
    let result = run(&fx.executor(), "shape", json!({})).await;
    assert_json_snapshot!("structured_and_image", result);
}

#[tokio::test]
async fn plan_mode_blocks_writes_but_not_reads() {
    let fx = Fixture::new();
    fx.session.set_mode(PermissionMode::Plan);
    let executor = fx.executor();
    let read = run(&executor, "echo", json!({"text": "hi"})).await;
    assert!(!read.is_error);
    let write = run(&executor, "write", json!({"path": "a.txt"})).await;
    assert!(write.is_error);
    assert!(write.text().contains("plan mode"), "{}", write.text());
}

#[test]
fn registry_refuses_bad_names_duplicates_and_schemas() {
    let fx = Fixture::new();
    let dup = AnyTool::new(super::support::Echo);
    let err = fx.registry.register(dup).unwrap_err();
    assert_eq!(
        err.to_string(),
        "the name `echo` is already registered by `echo`: rename one of the tools or unregister the other first"
    );
    let bad_name = tool("bad name").description("");
    assert!(fx.registry.register(Arc::new(bad_name)).is_err());
    let bad_schema = tool("bad_schema")
        .description("")
        .schema(json!({"type": "no-such-type"}));
    let err = fx.registry.register(Arc::new(bad_schema)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the input schema of `bad_schema` is invalid"),
        "{err}"
    );
    let alias_clash = tool("other")
        .description("")
        .spec(|spec| spec.with_alias("say"));
    assert!(fx.registry.register(Arc::new(alias_clash)).is_err());
    assert!(fx.registry.unregister("echo").is_some());
    assert!(
        !fx.registry.contains("say"),
        "aliases leave with their tool"
    );
}
