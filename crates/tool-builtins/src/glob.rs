//! glob: gitignore-aware file matching, newest first.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{CallInfo, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::roots::AllowedRoots;
use crate::text::cap_output;
use crate::walk::{PathGlob, search_root, walk_files};
use crate::workspace::{Workspace, rule_path};

/// Paths listed before "and N more".
const DEFAULT_GLOB_LIMIT: usize = 100;

/// The glob tool.
pub(crate) struct Glob {
    pub(crate) workspace: Arc<Workspace>,
}

/// glob's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct GlobInput {
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
impl Tool for Glob {
    type Input = GlobInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "glob",
            "Finds files by name pattern, such as \"*.rs\" or \"src/**/*.{ts,tsx}\". Respects .gitignore. Lists matching file paths, newest first, up to 100 by default. Use it to find files; use grep to search inside them.",
            input_schema,
        )
        .with_search_hint("find files by name pattern")
    }

    fn info(&self, input: &GlobInput) -> CallInfo {
        CallInfo::reads()
            .with_concurrency_safe(true)
            .with_path(input.path.as_deref().map(rule_path))
            .with_activity(Some(format!("Finding files matching {}", input.pattern)))
    }

    async fn check_permissions(&self, input: &GlobInput, ctx: &ToolContext) -> PermissionCheck {
        self.workspace.check_search(ctx, input.path.as_deref())
    }

    async fn call(&self, input: GlobInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let roots = self.workspace.read_roots(ctx);
        let root = search_root(&roots, input.path.as_deref())?;
        let denied = self.workspace.denied(&roots);
        let glob = PathGlob::new(&input.pattern, "pattern")?;
        let limit = input.limit.unwrap_or(DEFAULT_GLOB_LIMIT).max(1);
        let found = walk_files(
            root,
            denied,
            ctx,
            || (),
            move |(), root, entry| {
                glob.is_match(root, entry.path()).then(|| {
                    let mtime = entry.metadata().ok().and_then(|m| m.modified().ok());
                    (entry.into_path(), mtime)
                })
            },
        )
        .await?;
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
    roots: &AllowedRoots,
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
