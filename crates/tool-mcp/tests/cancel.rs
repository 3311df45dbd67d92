//! Cancelling a call tells the server (`notifications/cancelled`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use tool_core::ExecutionEvent;

use crate::support::*;

/// Polls for the server's cancellation mark until the deadline.
async fn wait_for_mark(mark: &Path) -> bool {
    let deadline = Instant::now() + DEADLINE;
    let mut interval = tokio::time::interval(Duration::from_millis(20));
    while Instant::now() < deadline {
        if std::fs::read_to_string(mark).is_ok_and(|t| t.contains("cancelled")) {
            return true;
        }
        interval.tick().await;
    }
    false
}

async fn started_call(
    drop_instead_of_cancel: bool,
) -> (
    tempfile::TempDir,
    Result<Result<tool_core::ToolOutput, tool_core::ToolError>, tokio::task::JoinError>,
) {
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("mark");
    let (manager, registry) = start(
        vec![(
            "slow",
            stdio(
                &venv_python(),
                &[&fixture!("cancel_server.py"), mark.to_str().unwrap()],
            ),
        )],
        options(),
    );
    settled(&manager).await;
    let tool = registry.get("mcp__slow__wait").unwrap().tool().clone();
    let (ctx, mut events) = context("mcp__slow__wait");
    let cancel = ctx.cancellation().clone();
    let task = tokio::spawn(async move { tool.call(json!({}), &ctx).await });
    while let Some(event) = events.recv().await {
        if let ExecutionEvent::Progress { message, .. } = event {
            assert_eq!(message, "started");
            break;
        }
    }
    if drop_instead_of_cancel {
        task.abort();
    } else {
        cancel.cancel();
    }
    let outcome = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("the call did not end");
    assert!(
        wait_for_mark(&mark).await,
        "the server never saw the cancellation"
    );
    drop(manager);
    (dir, outcome)
}

#[tokio::test]
async fn cancelling_a_call_sends_notifications_cancelled() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let (_dir, outcome) = started_call(false).await;
    assert_eq!(outcome.unwrap(), Err(tool_core::ToolError::Cancelled));
}

#[tokio::test]
async fn dropping_a_call_sends_notifications_cancelled() {
    if !external_tests(&[External::PythonSdk]) {
        return;
    }
    let (_dir, outcome) = started_call(true).await;
    assert!(outcome.unwrap_err().is_cancelled());
}
