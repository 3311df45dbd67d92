//! tool_search's answers for each query form, and execute_tool's checks.

use std::sync::Arc;

use insta::assert_snapshot;
use serde_json::json;
use tool_core::{PermissionMode, PermissionRules};
use tool_pool::{Activation, PoolConfig, RelatedSearch};

use super::support::Fixture;

#[tokio::test]
async fn keywords_find_and_load_tools() {
    let fx = Fixture::new(PoolConfig::default());
    let text = fx.search("send a message to a slack channel").await;
    assert!(text.contains("## mcp__slack__send_message"), "{text}");
    assert_snapshot!("keywords", text);
    assert!(fx.pool.is_discovered("mcp__slack__send_message"));
}

#[tokio::test]
async fn required_words_narrow_the_results() {
    let fx = Fixture::new(PoolConfig::default());
    let text = fx.search("+merge pull request").await;
    assert_snapshot!("required_word", text);
    assert!(!text.contains("list_pull_requests"), "{text}");
}

#[tokio::test]
async fn select_reports_found_loaded_and_missing() {
    let fx = Fixture::new(PoolConfig::default());
    let text = fx
        .search("select:MCP__GITHUB__CREATE_ISSUE,read_file,no_such_tool")
        .await;
    assert_snapshot!("select", text);
    assert!(fx.pool.is_discovered("mcp__github__create_issue"));
    assert!(!fx.pool.is_discovered("read_file"));
}

#[tokio::test]
async fn discover_shows_schemas_without_loading() {
    let fx = Fixture::new(PoolConfig::default());
    let text = fx.search("discover:github issue").await;
    assert_snapshot!("discover", text);
    assert!(fx.pool.discovered().is_empty());
}

#[tokio::test]
async fn a_server_query_lists_its_tools() {
    let fx = Fixture::new(PoolConfig::default());
    let result = fx
        .call(
            "tool_search",
            json!({"query": "mcp__slack", "max_results": 10}),
        )
        .await;
    assert_snapshot!("server", result.text());
}

#[tokio::test]
async fn inline_answers_say_to_call_directly() {
    let fx = Fixture::new(PoolConfig {
        activation: Activation::Inline,
        ..PoolConfig::default()
    });
    let text = fx.search("select:mcp__slack__send_message").await;
    assert_snapshot!("select_inline", text);
}

#[tokio::test]
async fn native_answers_reference_the_found_tools() {
    let fx = Fixture::new(PoolConfig {
        activation: Activation::Native,
        ..PoolConfig::default()
    });
    let result = fx
        .call(
            "tool_search",
            json!({"query": "select:mcp__slack__send_message,read_file"}),
        )
        .await;
    assert_eq!(
        tool_pool::tool_references(&result),
        ["mcp__slack__send_message"]
    );
    assert_snapshot!("select_native", result.text());
    let keywords = fx
        .call("tool_search", json!({"query": "create a github issue"}))
        .await;
    let found = tool_pool::tool_references(&keywords);
    assert!(found.contains(&"mcp__github__create_issue"), "{found:?}");
    assert!(fx.pool.is_discovered("mcp__github__create_issue"));
    let discover = fx
        .call("tool_search", json!({"query": "discover:github issue"}))
        .await;
    assert!(tool_pool::tool_references(&discover).is_empty());
    let proxy = Fixture::new(PoolConfig::default());
    let result = proxy
        .call(
            "tool_search",
            json!({"query": "select:mcp__slack__send_message"}),
        )
        .await;
    assert!(tool_pool::tool_references(&result).is_empty());
}

/// Answers every query naming a fruit with a line per fruit, and others with nothing.
struct Fruit;

impl RelatedSearch for Fruit {
    fn related(&self, query: &str) -> Option<String> {
        query.contains("apple").then(|| {
            "Skills that match (load one with the skill tool):\n- apple-picking: picks apples\n"
                .to_owned()
        })
    }
}

#[tokio::test]
async fn related_finds_are_added_to_keyword_and_discover_results_only() {
    let fx = Fixture::new(PoolConfig::default());
    let bytes = || serde_json::to_string(&fx.pool.request_tools()).unwrap();
    let before = bytes();
    fx.pool.set_related_search(Arc::new(Fruit));
    assert_eq!(bytes(), before, "the tools array does not change");

    let found = fx.search("send a slack message about apples").await;
    assert!(found.contains("## mcp__slack__send_message"), "{found}");
    assert!(
        found.ends_with(
            "Skills that match (load one with the skill tool):\n- apple-picking: picks apples"
        ),
        "{found}"
    );
    let nothing = fx.search("apple orchard").await;
    assert_snapshot!("related_without_tools", nothing);
    let discover = fx.search("discover:apple slack").await;
    assert!(discover.contains("- apple-picking"), "{discover}");
    assert!(fx.pool.discovered().iter().all(|n| n != "apple-picking"));
    let select = fx.search("select:mcp__slack__send_message,apple").await;
    assert!(!select.contains("apple-picking"), "{select}");
    let unrelated = fx.search("create a github issue").await;
    assert!(!unrelated.contains("Skills"), "{unrelated}");
}

#[tokio::test]
async fn queries_without_words_are_errors() {
    let fx = Fixture::new(PoolConfig::default());
    for query in ["", "   ", "!!! ???"] {
        let result = fx.call("tool_search", json!({"query": query})).await;
        assert!(result.is_error, "{query:?}");
    }
    let nothing = fx.search("quantum teleportation").await;
    assert!(
        nothing.starts_with("No deferred tools matched"),
        "{nothing}"
    );
}

#[tokio::test]
async fn execute_tool_refuses_a_tool_not_yet_discovered() {
    let fx = Fixture::new(PoolConfig::default());
    let call = json!({"tool_name": "mcp__github__list_pull_requests", "input": {"repo": "a/b"}});
    let refused = fx.call("execute_tool", call.clone()).await;
    assert!(refused.is_error);
    assert_snapshot!("undiscovered", refused.text());
    fx.search("select:mcp__github__list_pull_requests").await;
    let ran = fx.call("execute_tool", call).await;
    assert!(!ran.is_error, "{}", ran.text());
    assert_eq!(
        ran.text(),
        r#"mcp__github__list_pull_requests ran with {"repo":"a/b"}"#
    );
}

#[tokio::test]
async fn execute_tool_validates_against_the_targets_schema() {
    let fx = Fixture::new(PoolConfig::default());
    fx.search("select:mcp__github__create_issue").await;
    let result = fx
        .call(
            "execute_tool",
            json!({"tool_name": "mcp__github__create_issue", "input": {"repo": 5}}),
        )
        .await;
    assert!(result.is_error);
    assert!(
        result.text().contains("does not match its schema"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn execute_tool_enforces_the_targets_permissions() {
    let rules =
        PermissionRules::parse(&["execute_tool"], &[], &["mcp__github__merge_pull_request"])
            .unwrap();
    let fx = Fixture::with_rules(PoolConfig::default(), rules);
    // The denied tool is not even visible, so it cannot be discovered or run.
    let select = fx.search("select:mcp__github__merge_pull_request").await;
    assert!(select.starts_with("Not found"), "{select}");
    // A tool that asks (not read-only) is denied in this non-interactive run, although the proxy
    // itself is allowed by a rule: the target's permission is what counts.
    fx.search("select:mcp__slack__send_message").await;
    let result = fx
        .call("execute_tool", json!({"tool_name": "mcp__slack__send_message", "input": {"channel": "c", "text": "hi"}}))
        .await;
    assert!(result.is_error);
    assert!(
        result.text().contains("non-interactive"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn execute_tool_respects_plan_mode_through_the_target() {
    let fx = Fixture::new(PoolConfig::default());
    fx.search("select:mcp__github__create_issue,mcp__github__list_pull_requests")
        .await;
    fx.executor.session().set_mode(PermissionMode::Plan);
    let write = fx
        .call("execute_tool", json!({"tool_name": "mcp__github__create_issue", "input": {"repo": "a/b", "title": "t"}}))
        .await;
    assert!(write.is_error);
    assert!(write.text().contains("plan mode"), "{}", write.text());
    let read = fx
        .call(
            "execute_tool",
            json!({"tool_name": "mcp__github__list_pull_requests", "input": {"repo": "a/b"}}),
        )
        .await;
    assert!(!read.is_error, "{}", read.text());
}

#[tokio::test]
async fn execute_tool_sends_core_tools_back_to_direct_calls() {
    let fx = Fixture::new(PoolConfig::default());
    let result = fx
        .call(
            "execute_tool",
            json!({"tool_name": "read_file", "input": {"path": "a"}}),
        )
        .await;
    assert!(result.is_error);
    assert_snapshot!("core_through_proxy", result.text());
}

#[tokio::test]
async fn an_unknown_name_is_answered_with_deferred_tools_found_by_search() {
    let fx = Fixture::new(PoolConfig::default());
    // Not a typo of any loaded tool: the name's words find the deferred tool.
    let result = fx.call("open_github_issue", json!({})).await;
    assert!(result.is_error);
    assert!(
        result
            .text()
            .contains("did you mean `mcp__github__create_issue`"),
        "{}",
        result.text()
    );
    // A typo of a loaded tool is still answered by edit distance first.
    let typo = fx.call("read_fille", json!({})).await;
    assert!(typo.text().contains("`read_file`"), "{}", typo.text());
}

#[tokio::test]
async fn execute_tool_runs_the_target_once_with_its_progress() {
    let rules = PermissionRules::parse(&["mcp__slack"], &[], &[]).unwrap();
    let fx = Fixture::with_rules(PoolConfig::default(), rules);
    fx.search("select:mcp__slack__send_message").await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let result = fx
        .executor
        .execute(
            tool_core::ToolCall::new(
                "toolu_7",
                "execute_tool",
                json!({"tool_name": "mcp__slack__send_message", "input": {"channel": "c", "text": "hi"}}),
            ),
            tool_core::CancellationToken::new(),
            Some(tx),
        )
        .await;
    assert_eq!(result.tool_use_id, "toolu_7");
    let mut started = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let tool_core::ExecutionEvent::Started { tool, .. } = event {
            started.push(tool);
        }
    }
    // The target is the call: one start, under the target's name, not a nested execution.
    assert_eq!(started, ["mcp__slack__send_message"], "{}", result.text());
}
