//! A temporary working directory with the built-ins, and helpers to call them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tempfile::TempDir;
use tool_builtins::Builtins;
use tool_core::{
    AnyTool, CallInfo, CancellationToken, Executor, PermissionCheck, PermissionMode, Session,
    ToolCall, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolResult,
};

/// A temporary directory `work/` (the working directory) beside `outside/`, with the built-ins.
pub struct Env {
    pub dir: TempDir,
    pub root: PathBuf,
    pub session: Arc<Session>,
    pub builtins: Builtins,
    pub registry: Arc<ToolRegistry>,
}

/// The shell's configuration in tests: `/bin/sh`, started through this crate's sandbox launcher.
pub fn shell_config() -> tool_builtins::ShellConfig {
    tool_builtins::ShellConfig {
        program: Some("/bin/sh".into()),
        launcher: Some(env!("CARGO_BIN_EXE_tool-sandbox").into()),
        ..tool_builtins::ShellConfig::default()
    }
}

impl Env {
    pub fn new() -> Self {
        Self::with(|b| b)
    }

    pub fn with(configure: impl FnOnce(Builtins) -> Builtins) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("work");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(dir.path().join("outside")).unwrap();
        let session = Arc::new(Session::new("test", dir.path().join("session"), &root));
        let builtins = configure(Builtins::new().shell_config(shell_config()));
        let registry = Arc::new(ToolRegistry::new());
        builtins.register_all(&registry).unwrap();
        Self {
            dir,
            root,
            session,
            builtins,
            registry,
        }
    }

    pub fn outside(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap().join("outside")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    pub fn tool(&self, name: &str) -> Probe {
        Probe(self.registry.get(name).unwrap().tool().clone())
    }

    pub fn ctx(&self, name: &str) -> ToolContext {
        ToolContext::new("toolu_test", name, Arc::clone(&self.session))
    }

    /// Validates and calls a tool directly (no permission stage).
    pub async fn call(&self, name: &str, input: Value) -> Result<ToolOutput, ToolError> {
        let tool = self.tool(name);
        let ctx = self.ctx(name);
        tool.validate_input(&input, &ctx).await?;
        tool.call(input, &ctx).await
    }

    /// Calls a tool and returns its text, panicking on an error.
    pub async fn ok(&self, name: &str, input: Value) -> String {
        match self.call(name, input).await {
            Ok(out) => out.joined_text(),
            Err(err) => panic!("{name} failed: {err}"),
        }
    }

    /// Calls a tool and returns its error message, panicking on success.
    pub async fn err(&self, name: &str, input: Value) -> String {
        match self.call(name, input).await {
            Ok(out) => panic!("{name} succeeded: {}", out.joined_text()),
            Err(err) => err.to_string(),
        }
    }

    pub async fn check(&self, name: &str, input: Value) -> PermissionCheck {
        self.tool(name)
            .check_permissions(&input, &self.ctx(name))
            .await
    }

    /// Runs a call through the executor in bypass mode (no prompts), as a model would see it.
    pub async fn execute(&self, name: &str, input: Value) -> ToolResult {
        self.session.set_mode(PermissionMode::Bypass);
        let executor =
            Executor::builder(Arc::clone(&self.registry), Arc::clone(&self.session)).build();
        let result = executor
            .execute(
                ToolCall::new("toolu_1", name, input),
                CancellationToken::new(),
                None,
            )
            .await;
        self.session.set_mode(PermissionMode::Default);
        result
    }

    /// Text with the temporary directory replaced by `[TMP]`, for stable snapshots.
    pub fn normalise(&self, text: &str) -> String {
        let tmp = self.dir.path().canonicalize().unwrap();
        text.replace(&tmp.to_string_lossy().into_owned(), "[TMP]")
            .replace(&self.dir.path().to_string_lossy().into_owned(), "[TMP]")
    }

    /// What the model sees for a call, normalised.
    pub async fn seen(&self, name: &str, input: Value) -> String {
        let result = self.execute(name, input).await;
        let flag = if result.is_error { "ERROR\n" } else { "" };
        self.normalise(&format!("{flag}{}", result.text()))
    }
}

/// Marks a file as older, so "newest first" ordering is deterministic.
pub fn set_age(path: &Path, seconds_ago: u64) {
    let time = std::time::SystemTime::now() - std::time::Duration::from_secs(seconds_ago);
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(time).unwrap();
}

/// A tool as the tests ask it: each question prepares the call as the executor would.
#[derive(Clone)]
pub struct Probe(pub AnyTool);

impl std::ops::Deref for Probe {
    type Target = AnyTool;

    fn deref(&self) -> &AnyTool {
        &self.0
    }
}

impl Probe {
    /// The built-in `name` of `builtins`.
    pub fn of(builtins: &Builtins, name: &str) -> Self {
        let tool = builtins.tools().into_iter().find(|t| t.name() == name);
        Self(tool.unwrap())
    }

    pub fn info(&self, input: &Value) -> CallInfo {
        self.0.info(input).unwrap()
    }

    pub fn is_read_only(&self, input: &Value) -> bool {
        self.info(input).is_read_only()
    }

    pub fn is_concurrency_safe(&self, input: &Value) -> bool {
        self.info(input).is_concurrency_safe()
    }

    pub fn activity(&self, input: &Value) -> Option<String> {
        self.info(input).activity().map(str::to_owned)
    }

    pub fn path(&self, input: &Value) -> Option<PathBuf> {
        self.info(input).path().map(Path::to_path_buf)
    }

    pub fn permission_subject(&self, input: &Value) -> Option<String> {
        self.info(input).permission_subject()
    }

    pub async fn validate_input(&self, input: &Value, ctx: &ToolContext) -> Result<(), ToolError> {
        self.0.prepare(input.clone())?.validate(ctx).await
    }

    pub async fn check_permissions(&self, input: &Value, ctx: &ToolContext) -> PermissionCheck {
        match self.0.prepare(input.clone()) {
            Ok(call) => call.check_permissions(ctx).await,
            Err(err) => PermissionCheck::Deny {
                reason: err.to_string(),
            },
        }
    }

    pub async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.prepare(input)?.call(ctx).await
    }
}
