//! Test tools and helpers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tempfile::TempDir;
use tool_core::{
    CancellationToken, Executor, ExecutorBuilder, PermissionCheck, Session, Tool, ToolCall,
    ToolContext, ToolError, ToolOutput, ToolRegistry, ToolResult, ToolSpec, Typed, TypedTool,
};

/// Echoes its text; read-only and concurrency-safe; allowed by its own check.
pub struct Echo;

#[derive(Deserialize, JsonSchema)]
pub struct EchoInput {
    /// The text to echo.
    pub text: String,
    /// Repeat the text this many times.
    #[serde(default)]
    pub times: Option<usize>,
}

#[async_trait]
impl TypedTool for Echo {
    type Input = EchoInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new("echo", "Echoes the text back.", input_schema)
            .with_alias("say")
            .with_max_result_chars(Some(100))
    }

    fn is_read_only(&self, _: &EchoInput) -> bool {
        true
    }

    fn is_concurrency_safe(&self, _: &EchoInput) -> bool {
        true
    }

    async fn validate_input(&self, input: &EchoInput, _: &ToolContext) -> Result<(), ToolError> {
        if input.text.trim().is_empty() {
            return Err(ToolError::invalid(
                "`text` is empty: pass the words to echo, such as {\"text\": \"hello\"}",
            ));
        }
        Ok(())
    }

    async fn check_permissions(&self, _: &EchoInput, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(&self, input: EchoInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        ctx.progress("echoing");
        Ok(ToolOutput::text(
            input.text.repeat(input.times.unwrap_or(1)),
        ))
    }
}

/// Writes "files" (only in memory): not read-only, with a path, relying on the default ask.
pub struct Write;

#[derive(Deserialize, JsonSchema)]
pub struct WriteInput {
    /// Where.
    pub path: String,
}

#[async_trait]
impl TypedTool for Write {
    type Input = WriteInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new("write", "Pretends to write a file.", input_schema)
    }

    fn path(&self, input: &WriteInput) -> Option<std::path::PathBuf> {
        Some(input.path.clone().into())
    }

    async fn call(&self, input: WriteInput, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("wrote {}", input.path)))
    }
}

/// A shell-like tool: its permission subject is the command; nothing overridden but that.
pub struct Shell;

#[derive(Deserialize, JsonSchema)]
pub struct ShellInput {
    /// The command.
    pub command: String,
}

#[async_trait]
impl TypedTool for Shell {
    type Input = ShellInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new("shell", "Pretends to run a command.", input_schema)
    }

    fn permission_subject(&self, input: &ShellInput) -> Option<String> {
        Some(input.command.clone())
    }

    async fn call(&self, input: ShellInput, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("ran {}", input.command)))
    }
}

/// Records how many calls overlap; waits on a gate so tests control timing without sleeps.
pub struct Probe {
    pub spec: ToolSpec,
    pub safe: bool,
    pub running: Arc<AtomicUsize>,
    pub max_seen: Arc<AtomicUsize>,
    /// Calls wait here until released (or until `hold` is zero).
    pub hold: Duration,
}

impl Probe {
    pub fn new(
        name: &str,
        safe: bool,
        running: Arc<AtomicUsize>,
        max_seen: Arc<AtomicUsize>,
    ) -> Self {
        Self {
            spec: ToolSpec::new(
                name,
                "Probe",
                serde_json::json!({"type": "object", "properties": {}}),
            ),
            safe,
            running,
            max_seen,
            hold: Duration::from_millis(60),
        }
    }
}

#[async_trait]
impl Tool for Probe {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn is_concurrency_safe(&self, _: &Value) -> bool {
        self.safe
    }

    async fn check_permissions(&self, _: &Value, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(&self, _: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_seen.fetch_max(now, Ordering::SeqCst);
        // Hold the call open long enough for any call allowed to overlap to start.
        tokio::time::sleep(self.hold).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!("{} done", ctx.tool_use_id())))
    }
}

/// Runs until cancelled.
pub struct Forever;

#[async_trait]
impl Tool for Forever {
    fn spec(&self) -> &ToolSpec {
        static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
        SPEC.get_or_init(|| {
            ToolSpec::new(
                "forever",
                "Never finishes.",
                serde_json::json!({"type": "object", "properties": {}}),
            )
        })
    }

    async fn check_permissions(&self, _: &Value, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(&self, _: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        ctx.progress("waiting forever");
        std::future::pending::<()>().await;
        Ok(ToolOutput::text("unreachable"))
    }
}

/// Panics when called.
pub struct Panics;

#[async_trait]
impl Tool for Panics {
    fn spec(&self) -> &ToolSpec {
        static SPEC: std::sync::OnceLock<ToolSpec> = std::sync::OnceLock::new();
        SPEC.get_or_init(|| {
            ToolSpec::new(
                "panics",
                "Panics.",
                serde_json::json!({"type": "object", "properties": {}}),
            )
        })
    }

    async fn check_permissions(&self, _: &Value, _: &ToolContext) -> PermissionCheck {
        PermissionCheck::Allow
    }

    async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        panic!("index out of bounds")
    }
}

/// A temporary session with a registry holding the standard test tools.
pub struct Fixture {
    pub dir: TempDir,
    pub registry: Arc<ToolRegistry>,
    pub session: Arc<Session>,
}

impl Fixture {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let registry = Arc::new(ToolRegistry::new());
        registry.register(Arc::new(Typed::new(Echo))).unwrap();
        registry.register(Arc::new(Typed::new(Write))).unwrap();
        registry.register(Arc::new(Typed::new(Shell))).unwrap();
        registry.register(Arc::new(Forever)).unwrap();
        registry.register(Arc::new(Panics)).unwrap();
        let session = Arc::new(Session::new(
            "test-session",
            dir.path().join("session"),
            dir.path(),
        ));
        Self {
            dir,
            registry,
            session,
        }
    }

    pub fn builder(&self) -> ExecutorBuilder {
        Executor::builder(Arc::clone(&self.registry), Arc::clone(&self.session))
    }

    pub fn executor(&self) -> Executor {
        self.builder().build()
    }

    /// Replaces the temporary directory in text so snapshots are stable.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.dir.path().display().to_string(), "[TMP]")
    }
}

pub async fn run(executor: &Executor, name: &str, input: Value) -> ToolResult {
    executor
        .execute(
            ToolCall::new("toolu_01", name, input),
            CancellationToken::new(),
            None,
        )
        .await
}
