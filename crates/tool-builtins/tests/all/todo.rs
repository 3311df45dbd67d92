//! todo_write.

use serde_json::json;
use tool_builtins::TodoStatus;

use crate::support::Env;

#[tokio::test]
async fn writes_and_shows_the_task_list() {
    let env = Env::new();
    let input = json!({"todos": [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress"},
        {"content": "Run the tests", "status": "pending"},
    ]});
    insta::assert_snapshot!(env.seen("todo_write", input).await);
    let list = env.builtins.todos().list("test");
    assert_eq!(list.len(), 3);
    assert_eq!(list[1].status, TodoStatus::InProgress);
    env.ok("todo_write", json!({"todos": []})).await;
    assert!(env.builtins.todos().list("test").is_empty());
}

#[tokio::test]
async fn rejects_two_tasks_in_progress_and_empty_tasks() {
    let env = Env::new();
    let err = env
        .err(
            "todo_write",
            json!({"todos": [
                {"content": "a", "status": "in_progress"},
                {"content": "b", "status": "in_progress"},
            ]}),
        )
        .await;
    assert!(err.contains("keep exactly one in_progress"), "{err}");
    let err = env
        .err(
            "todo_write",
            json!({"todos": [{"content": " ", "status": "pending"}]}),
        )
        .await;
    assert!(err.contains("empty content"), "{err}");
}
