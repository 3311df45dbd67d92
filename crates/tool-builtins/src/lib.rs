//! The everyday coding tools as [`tool_core`] tools: read_file, write_file, edit_file, glob,
//! grep, shell, web_fetch, enter_plan_mode, exit_plan_mode and todo_write.
//!
//! Build them with [`Builtins`], which holds their configuration (extra allowed roots, shell
//! timeouts, web_fetch limits) and the state they share: the session read state that makes
//! write_file and edit_file refuse files the model has not read (or that changed since), the
//! plan-mode bookkeeping and the task lists.
//!
//! Architecture invariants:
//! - Every file path is resolved (symlinks included) and checked against the allowed roots
//!   before any read or write; a path outside them is refused by the tool itself.
//! - Writes are atomic (temporary file in the same directory, fsync, rename).
//! - No tool's output exceeds 50,000 characters; longer output keeps head and tail.
//! - Errors are [`tool_core::ToolError`]s that tell the model what to do instead; nothing here
//!   panics on model input.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use tool_builtins::Builtins;
//! use tool_core::{CancellationToken, Executor, PermissionMode, Session, ToolCall, ToolRegistry};
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
//! let registry = Arc::new(ToolRegistry::new());
//! Builtins::new().register_all(&registry).unwrap();
//! let session = Session::new("demo", dir.path().join(".session"), dir.path())
//!     .with_mode(PermissionMode::Bypass);
//! let executor = Executor::builder(registry, Arc::new(session)).build();
//! let call = ToolCall::new("toolu_1", "grep", json!({"pattern": "^b"}));
//! let result = executor.execute(call, CancellationToken::new(), None).await;
//! assert_eq!(result.text(), "notes.txt:2:beta");
//! # });
//! ```

mod atomic;
mod denies;
mod diff;
mod edit_file;
mod file_state;
mod glob;
mod grep;
mod offload;
mod plan_mode;
mod read_file;
mod roots;
mod shell;
mod text;
mod todo;
mod walk;
mod web_fetch;
mod workspace;
mod write_file;

use std::path::PathBuf;
use std::sync::Arc;

use tool_core::{AnyTool, CoreError, ToolRegistry};

pub use atomic::write_atomic;
pub use denies::ReadDenies;
use edit_file::EditFile;
use file_state::FileState;
use glob::Glob;
use grep::Grep;
use plan_mode::{EnterPlanMode, ExitPlanMode, PlanState};
use read_file::ReadFile;
pub use shell::LAUNCH_FLAG;
pub use shell::{
    Enforcement, Landlock, NetworkPolicy, ParseSandboxModeError, SandboxMode, SandboxSupport,
    Shell, ShellConfig, ShellEnvironment, ShellInput, enforcement, run_if_launcher,
    sandbox_support, sandbox_warning,
};
pub use text::MAX_OUTPUT_CHARS;
use todo::TodoWrite;
pub use todo::{Todo, TodoStatus, TodoStore};
use web_fetch::WebFetch;
pub use web_fetch::WebFetchConfig;
use write_file::WriteFile;

use workspace::Workspace;

/// Builds the built-in tools with one configuration and shared state.
#[derive(Debug, Clone, Default)]
pub struct Builtins {
    workspace: Workspace,
    shell: ShellConfig,
    web_fetch: WebFetchConfig,
    files: Arc<FileState>,
    plan: Arc<PlanState>,
    todos: Arc<TodoStore>,
}

impl Builtins {
    /// Built-ins with default settings: the session's working directory as the only allowed
    /// root, 120 s shell timeout, web_fetch refusing private addresses.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses `cwd` as the working directory instead of the session's.
    #[must_use]
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.workspace.cwd = Some(cwd.into());
        self
    }

    /// Allows the file tools to work in `root` too (relative roots are taken from the working
    /// directory).
    #[must_use]
    pub fn allowed_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.workspace.extra_roots.push(root.into());
        self
    }

    /// Sets how the shell tool runs commands.
    #[must_use]
    pub fn shell_config(mut self, config: ShellConfig) -> Self {
        self.shell = config;
        self
    }

    /// Sets where the shell tool's commands may write (see [`SandboxMode`]).
    #[must_use]
    pub fn sandbox(mut self, mode: SandboxMode) -> Self {
        self.shell.sandbox = mode;
        self
    }

    /// Keeps what `denies` names from every tool that reads: read_file, grep's and glob's walks,
    /// and shell commands (hidden by the sandbox, or asked about where it cannot hide them).
    #[must_use]
    pub fn deny_reads(mut self, denies: ReadDenies) -> Self {
        self.workspace.denies = Arc::new(denies);
        self
    }

    /// Sets web_fetch's limits and address policy.
    #[must_use]
    pub fn web_fetch_config(mut self, config: WebFetchConfig) -> Self {
        self.web_fetch = config;
        self
    }

    /// The sessions' task lists written by todo_write.
    pub fn todos(&self) -> &Arc<TodoStore> {
        &self.todos
    }

    /// Every built-in tool: read_file, write_file, edit_file, glob, grep, shell, web_fetch,
    /// enter_plan_mode, exit_plan_mode and todo_write, in that order.
    pub fn tools(&self) -> Vec<AnyTool> {
        let workspace = Arc::new(self.workspace.clone());
        vec![
            AnyTool::new(ReadFile {
                workspace: Arc::clone(&workspace),
                files: Arc::clone(&self.files),
            }),
            AnyTool::new(WriteFile {
                workspace: Arc::clone(&workspace),
                files: Arc::clone(&self.files),
            }),
            AnyTool::new(EditFile {
                workspace: Arc::clone(&workspace),
                files: Arc::clone(&self.files),
            }),
            AnyTool::new(Glob {
                workspace: Arc::clone(&workspace),
            }),
            AnyTool::new(Grep {
                workspace: Arc::clone(&workspace),
            }),
            AnyTool::new(Shell {
                workspace,
                config: self.shell.clone(),
            }),
            AnyTool::new(WebFetch::new(self.web_fetch.clone())),
            AnyTool::new(EnterPlanMode {
                state: Arc::clone(&self.plan),
            }),
            AnyTool::new(ExitPlanMode {
                state: Arc::clone(&self.plan),
            }),
            AnyTool::new(TodoWrite {
                store: Arc::clone(&self.todos),
            }),
        ]
    }

    /// Registers every built-in tool in `registry`.
    pub fn register_all(&self, registry: &ToolRegistry) -> Result<(), CoreError> {
        for tool in self.tools() {
            registry.register(tool)?;
        }
        Ok(())
    }
}
