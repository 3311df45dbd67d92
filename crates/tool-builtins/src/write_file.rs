//! write_file: creates or replaces a file, atomically, after checking the model has seen it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{PermissionCheck, ToolContext, ToolError, ToolOutput, ToolSpec, TypedTool};

use crate::atomic::write_atomic;
use crate::file_state::{FileSnapshot, FileState};
use crate::text::cap_output;
use crate::workspace::{Workspace, blocking, io_error, rule_path};

/// Lines of the written file shown back to the model.
const PREVIEW_LINES: usize = 10;

/// The write_file tool.
pub struct WriteFile {
    pub(crate) workspace: Arc<Workspace>,
    pub(crate) files: Arc<FileState>,
}

/// write_file's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileInput {
    /// The file to write: relative to the working directory, or absolute.
    pub path: String,
    /// The complete new contents of the file.
    pub content: String,
}

#[async_trait]
impl TypedTool for WriteFile {
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
        match self.workspace.roots(ctx).resolve(&input.path) {
            Ok(_) => PermissionCheck::Ask {
                reason: format!("write_file wants to write {}", input.path),
            },
            Err(err) => PermissionCheck::Deny {
                reason: err.to_string(),
            },
        }
    }

    fn activity(&self, input: &WriteFileInput) -> Option<String> {
        Some(format!("Writing {}", input.path))
    }

    fn path(&self, input: &WriteFileInput) -> Option<PathBuf> {
        Some(rule_path(&input.path))
    }

    async fn call(
        &self,
        input: WriteFileInput,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let roots = self.workspace.roots(ctx);
        let path = roots.resolve(&input.path)?;
        let shown = roots.display(&path);
        let files = Arc::clone(&self.files);
        let session = ctx.session().id().to_owned();
        blocking(move || {
            let existed = guard_existing(&path, &shown, &files, &session)?.is_some();
            if !existed && let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| io_error("create the directories of", &shown, &e))?;
            }
            commit(&path, &shown, input.content.as_bytes(), &files, &session)?;
            let verb = if existed { "Updated" } else { "Created" };
            Ok(ToolOutput::text(cap_output(&format!(
                "{verb} {shown} ({} lines, {} bytes).\n{}",
                input.content.lines().count(),
                input.content.len(),
                preview(&input.content)
            ))))
        })
        .await
    }
}

/// For an existing file: checks it is a file the session has read and that is unchanged since,
/// and returns its bytes. For a missing file: `None`.
pub(crate) fn guard_existing(
    path: &Path,
    shown: &str,
    files: &FileState,
    session: &str,
) -> Result<Option<Vec<u8>>, ToolError> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io_error("inspect", shown, &err)),
    };
    if meta.is_dir() {
        return Err(ToolError::failed(format!(
            "{shown} is a directory; give the path of a file inside it"
        )));
    }
    let current = std::fs::read(path).map_err(|e| io_error("read", shown, &e))?;
    files.check_fresh(session, path, shown, &current, meta.modified().ok())?;
    Ok(Some(current))
}

/// Writes atomically and records the new contents as seen, so a second edit needs no re-read.
pub(crate) fn commit(
    path: &Path,
    shown: &str,
    bytes: &[u8],
    files: &FileState,
    session: &str,
) -> Result<(), ToolError> {
    write_atomic(path, bytes).map_err(|e| io_error("write", shown, &e))?;
    let mtime = std::fs::metadata(path).ok().and_then(|m| m.modified().ok());
    files.record(session, path, FileSnapshot::of(bytes, mtime));
    Ok(())
}

fn preview(content: &str) -> String {
    let mut out = String::new();
    let mut lines = content.lines();
    for (index, line) in lines.by_ref().take(PREVIEW_LINES).enumerate() {
        let line: String = line.chars().take(200).collect();
        out.push_str(&format!("{:>6}\t{line}\n", index + 1));
    }
    let rest = lines.count();
    if rest > 0 {
        out.push_str(&format!("... ({rest} more lines)\n"));
    }
    out
}
