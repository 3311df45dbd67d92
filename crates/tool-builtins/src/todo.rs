//! todo_write: the session's task list, replaced whole on every call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_core::{CallInfo, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now (at most one task at a time).
    InProgress,
    /// Done.
    Completed,
}

/// One task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// What to do, in the imperative ("Run the tests").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// The task lists of every session, for front ends to show.
#[derive(Debug, Default)]
pub struct TodoStore {
    lists: Mutex<HashMap<String, Vec<Todo>>>,
}

impl TodoStore {
    /// The task list of `session` (empty if it has none).
    pub fn list(&self, session: &str) -> Vec<Todo> {
        self.lock().get(session).cloned().unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Todo>>> {
        // Lists are replaced whole; a poisoned map is still consistent.
        self.lists.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The todo_write tool.
pub(crate) struct TodoWrite {
    pub(crate) store: Arc<TodoStore>,
}

/// todo_write's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TodoWriteInput {
    /// The whole updated task list (it replaces the previous one).
    pub todos: Vec<Todo>,
}

#[async_trait]
impl Tool for TodoWrite {
    type Input = TodoWriteInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "todo_write",
            "Writes the session's task list, replacing it whole. Use it for tasks with three or more steps: add the steps, mark one in_progress before starting it and completed as soon as it is done. Keep exactly one task in_progress while working.",
            input_schema,
        )
        .with_search_hint("task list todo plan progress")
    }

    fn info(&self, _: &TodoWriteInput) -> CallInfo {
        // It changes only the session's own task list, never files or the world; plan mode
        // must allow it.
        CallInfo::reads().with_activity(Some("Updating the task list".to_owned()))
    }

    async fn validate_input(
        &self,
        input: &TodoWriteInput,
        _: &ToolContext,
    ) -> Result<(), ToolError> {
        if let Some(index) = input.todos.iter().position(|t| t.content.trim().is_empty()) {
            return Err(ToolError::invalid(format!(
                "task {} has empty content; describe every task in a few words",
                index + 1
            )));
        }
        let in_progress = input
            .todos
            .iter()
            .filter(|t| t.status == TodoStatus::InProgress)
            .count();
        if in_progress > 1 {
            return Err(ToolError::invalid(format!(
                "{in_progress} tasks are in_progress; keep exactly one in_progress and mark the others pending or completed"
            )));
        }
        Ok(())
    }

    async fn check_permissions(&self, _: &TodoWriteInput, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(
        &self,
        input: TodoWriteInput,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let rendered = render(&input.todos);
        let structured = serde_json::to_value(&input.todos)
            .map_err(|err| ToolError::failed(format!("the task list could not be saved: {err}")))?;
        self.store
            .lock()
            .insert(ctx.session().id().to_owned(), input.todos);
        Ok(ToolOutput::text(rendered).with_structured(serde_json::json!({ "todos": structured })))
    }
}

fn render(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "The task list is now empty.".to_owned();
    }
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let mut out = format!("Task list updated ({done} of {} done):\n", todos.len());
    for todo in todos {
        let mark = match todo.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
        };
        out.push_str(&format!("{mark} {}\n", todo.content.trim()));
    }
    out.push_str("Keep it current: mark tasks completed as soon as they are done.");
    out
}
