//! glob: gitignore-aware file matching, newest first.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use async_trait::async_trait;
use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{PermissionCheck, ToolContext, ToolError, ToolOutput, ToolSpec, TypedTool};

use crate::text::cap_output;
use crate::walk::{PathGlob, search_root, walker};
use crate::workspace::{Workspace, blocking};

/// Paths listed before "and N more".
pub const DEFAULT_GLOB_LIMIT: usize = 100;

/// The glob tool.
pub struct Glob {
    pub(crate) workspace: Arc<Workspace>,
}

/// glob's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// The glob. Without `/` it matches file names at any depth ("*.rs"); with `/` it matches
    /// paths relative to `path` ("src/**/*.ts"). Supports *, ?, **, [abc] and {a,b}.
    pub pattern: String,
    /// The directory to search (default: the working directory).
    #[serde(default)]
    pub path: Option<String>,
    /// How many paths to list at most (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[async_trait]
impl TypedTool for Glob {
    type Input = GlobInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "glob",
            "Finds files by name pattern, such as \"*.rs\" or \"src/**/*.{ts,tsx}\". Respects .gitignore. Lists matching file paths, newest first, up to 100 by default. Use it to find files; use grep to search inside them.",
            input_schema,
        )
        .with_search_hint("find files by name pattern")
    }

    fn is_read_only(&self, _: &GlobInput) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _: &GlobInput) -> bool {
        true
    }

    async fn check_permissions(&self, input: &GlobInput, ctx: &ToolContext) -> PermissionCheck {
        match search_root(&self.workspace.roots(ctx), input.path.as_deref()) {
            Ok(_) => PermissionCheck::Allow,
            Err(err) => PermissionCheck::Deny {
                reason: err.to_string(),
            },
        }
    }

    fn activity(&self, input: &GlobInput) -> Option<String> {
        Some(format!("Finding files matching {}", input.pattern))
    }

    fn path(&self, input: &GlobInput) -> Option<PathBuf> {
        input.path.as_deref().map(crate::workspace::rule_path)
    }

    async fn call(&self, input: GlobInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let roots = self.workspace.roots(ctx);
        let root = search_root(&roots, input.path.as_deref())?;
        let glob = PathGlob::new(&input.pattern, "pattern")?;
        let limit = input.limit.unwrap_or(DEFAULT_GLOB_LIMIT).max(1);
        let cancel = ctx.cancellation().clone();
        let found = blocking(move || {
            let found: Mutex<Vec<(PathBuf, Option<SystemTime>)>> = Mutex::new(Vec::new());
            walker(&root).run(|| {
                let found = &found;
                let glob = &glob;
                let root = &root;
                let cancel = &cancel;
                Box::new(move |entry| {
                    if cancel.is_cancelled() {
                        return WalkState::Quit;
                    }
                    let Ok(entry) = entry else {
                        return WalkState::Continue;
                    };
                    if entry.file_type().is_some_and(|t| t.is_file())
                        && glob.is_match(root, entry.path())
                    {
                        let mtime = entry.metadata().ok().and_then(|m| m.modified().ok());
                        found
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((entry.into_path(), mtime));
                    }
                    WalkState::Continue
                })
            });
            Ok(found.into_inner().unwrap_or_else(|e| e.into_inner()))
        })
        .await?;
        if ctx.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        Ok(ToolOutput::text(render(
            &roots,
            &input.pattern,
            input.path.as_deref(),
            found,
            limit,
        )))
    }
}

/// Paths newest first (ties by path, so output is stable), capped at `limit`.
fn render(
    roots: &crate::roots::AllowedRoots,
    pattern: &str,
    path: Option<&str>,
    mut found: Vec<(PathBuf, Option<SystemTime>)>,
    limit: usize,
) -> String {
    if found.is_empty() {
        let place = path.unwrap_or("the working directory");
        return format!("No files match {pattern} in {place}.");
    }
    found.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let total = found.len();
    let mut out: Vec<String> = found
        .iter()
        .take(limit)
        .map(|(p, _)| roots.display(p))
        .collect();
    if total > limit {
        out.push(format!(
            "[... and {} more files; narrow the pattern or path to see them]",
            total - limit
        ));
    }
    cap_output(&out.join("\n"))
}
