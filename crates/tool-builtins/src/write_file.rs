//! write_file: creates or replaces a file, atomically, after checking the model has seen it.

use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{CallInfo, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::file_state::FileState;
use crate::offload::blocking;
use crate::text::cap_output;
use crate::workspace::{FileTarget, Workspace, rule_path};

/// Lines of the written file shown back to the model.
const PREVIEW_LINES: usize = 10;

/// The write_file tool.
pub(crate) struct WriteFile {
    pub(crate) workspace: Arc<Workspace>,
    pub(crate) files: Arc<FileState>,
}

/// write_file's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WriteFileInput {
    /// The file to write: relative to the working directory, or absolute.
    pub path: String,
    /// The complete new contents of the file.
    pub content: String,
}

#[async_trait]
impl Tool for WriteFile {
    type Input = WriteFileInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "write_file",
            "Writes a file, creating parent directories as needed, or replaces an existing file whole. An existing file must have been read with read_file in this session and be unchanged since. Prefer edit_file for changes to an existing file: it sends only the change. The write is atomic.",
            input_schema,
        )
        .with_search_hint("create or overwrite a file")
    }

    async fn check_permissions(
        &self,
        input: &WriteFileInput,
        ctx: &ToolContext,
    ) -> PermissionCheck {
        let ask = PermissionCheck::Ask {
            reason: format!("write_file wants to write {}", input.path),
        };
        self.workspace.check_path(ctx, &input.path, ask)
    }

    fn info(&self, input: &WriteFileInput) -> CallInfo {
        CallInfo::writes()
            .with_path(Some(rule_path(&input.path)))
            .with_activity(Some(format!("Writing {}", input.path)))
    }

    async fn call(
        &self,
        input: WriteFileInput,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let target = FileTarget::resolve(&self.workspace, &self.files, ctx, &input.path)?;
        blocking(move || {
            let existed = target.read_guarded()?.is_some();
            if !existed {
                target.create_parents()?;
            }
            target.write(input.content.as_bytes())?;
            let verb = if existed { "Updated" } else { "Created" };
            Ok(ToolOutput::text(cap_output(&format!(
                "{verb} {} ({} lines, {} bytes).\n{}",
                target.shown,
                input.content.lines().count(),
                input.content.len(),
                preview(&input.content)
            ))))
        })
        .await
    }
}

fn preview(content: &str) -> String {
    let mut out = String::new();
    let mut lines = content.lines();
    for (index, line) in lines.by_ref().take(PREVIEW_LINES).enumerate() {
        let (line, _) = tool_core::head_chars(line, 200);
        out.push_str(&format!("{:>6}\t{line}\n", index + 1));
    }
    let rest = lines.count();
    if rest > 0 {
        out.push_str(&format!("... ({rest} more lines)\n"));
    }
    out
}
