//! Test tools and helpers: three typed tools (echo, write, shell) for the typed path, and
//! [`TestTool`], one configurable tool for everything else.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tempfile::TempDir;
use tool_core::{
    CallInfo, CancellationToken, Executor, ExecutorBuilder, PermissionCheck, Session, Tool,
    ToolCall, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolResult, ToolSpec,
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
impl Tool for Echo {
    type Input = EchoInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new("echo", "Echoes the text back.", input_schema)
            .with_alias("say")
            .with_max_result_chars(Some(100))
    }

    fn info(&self, _: &EchoInput) -> CallInfo {
        CallInfo::reads().with_concurrency_safe(true)
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
impl Tool for Write {
    type Input = WriteInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new("write", "Pretends to write a file.", input_schema)
    }

    fn info(&self, input: &WriteInput) -> CallInfo {
        CallInfo::writes().with_path(Some(input.path.clone().into()))
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
impl Tool for Shell {
    type Input = ShellInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new("shell", "Pretends to run a command.", input_schema)
    }

    fn info(&self, input: &ShellInput) -> CallInfo {
        CallInfo::writes().with_subject(Some(input.command.clone()))
    }

    async fn call(&self, input: ShellInput, _: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("ran {}", input.command)))
    }
}

/// What a [`TestTool`] does when called.
type Behaviour = Arc<
    dyn for<'a> Fn(Value, &'a ToolContext) -> BoxFuture<'a, Result<ToolOutput, ToolError>>
        + Send
        + Sync,
>;

/// A tool configured for one test: its spec, whether it is read-only and concurrency-safe, its own
/// permission verdict, and what a call does. Built with [`tool`]; a test states only what it
/// relies on, and [`TestTool::bare`] keeps the trait's fail-closed defaults instead.
#[derive(Clone)]
pub struct TestTool {
    spec: ToolSpec,
    read_only: bool,
    concurrency_safe: bool,
    permission: PermissionCheck,
    behaviour: Behaviour,
}

/// A test tool named `name` with an object schema, that is not read-only, not concurrency-safe,
/// allows itself, and answers "done".
pub fn tool(name: &str) -> TestTool {
    TestTool {
        spec: ToolSpec::new(name, "A test tool.", json!({"type": "object"})),
        read_only: false,
        concurrency_safe: false,
        permission: PermissionCheck::Allow,
        behaviour: Arc::new(|_, _| Box::pin(async { Ok(ToolOutput::text("done")) })),
    }
}

impl TestTool {
    /// Changes the spec (description, schema, origin, aliases, result cap...).
    pub fn spec(mut self, change: impl FnOnce(ToolSpec) -> ToolSpec) -> Self {
        self.spec = change(self.spec);
        self
    }

    /// Sets the description.
    pub fn description(self, description: &str) -> Self {
        self.spec(|mut spec| {
            spec.description = description.to_owned();
            spec
        })
    }

    /// Sets the input schema.
    pub fn schema(self, schema: Value) -> Self {
        self.spec(|mut spec| {
            spec.input_schema = schema;
            spec
        })
    }

    /// Marks the tool read-only (or not).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
    }

    /// Marks the tool concurrency-safe (or not).
    pub fn concurrency_safe(mut self, safe: bool) -> Self {
        self.concurrency_safe = safe;
        self
    }

    /// The tool's own permission verdict.
    pub fn permission(mut self, verdict: PermissionCheck) -> Self {
        self.permission = verdict;
        self
    }

    /// Every call returns `output`.
    pub fn returns(self, output: ToolOutput) -> Self {
        self.runs(move |_, _| {
            let output = output.clone();
            Box::pin(async move { Ok(output) })
        })
    }

    /// Every call runs `behaviour`.
    pub fn runs(
        mut self,
        behaviour: impl for<'a> Fn(
            Value,
            &'a ToolContext,
        ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.behaviour = Arc::new(behaviour);
        self
    }

    /// The same tool overriding nothing but its spec and its call, so every other behaviour is
    /// the trait's default.
    pub fn bare(self) -> Bare {
        Bare(self)
    }
}

#[async_trait]
impl Tool for TestTool {
    type Input = Value;

    fn spec(&self, _: Value) -> ToolSpec {
        self.spec.clone()
    }

    fn info(&self, _: &Value) -> CallInfo {
        CallInfo::reads_if(self.read_only).with_concurrency_safe(self.concurrency_safe)
    }

    async fn check_permissions(&self, _: &Value, _: &ToolContext) -> PermissionCheck {
        self.permission.clone()
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        (self.behaviour)(input, ctx).await
    }
}

/// A [`TestTool`] that keeps the trait's defaults for everything but its spec and its call.
#[derive(Clone)]
pub struct Bare(TestTool);

#[async_trait]
impl Tool for Bare {
    type Input = Value;

    fn spec(&self, _: Value) -> ToolSpec {
        self.0.spec.clone()
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.call(input, ctx).await
    }
}

/// Records how many calls overlap in `running` and the most seen at once in `max_seen`; each call
/// stays open long enough for any call allowed to overlap it to start.
pub fn probe(
    name: &str,
    safe: bool,
    running: Arc<AtomicUsize>,
    max_seen: Arc<AtomicUsize>,
) -> TestTool {
    tool(name)
        .description("Probe")
        .schema(json!({"type": "object", "properties": {}}))
        .concurrency_safe(safe)
        .runs(move |_, ctx| {
            let running = Arc::clone(&running);
            let max_seen = Arc::clone(&max_seen);
            Box::pin(async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                max_seen.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(60)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                Ok(ToolOutput::text(format!("{} done", ctx.tool_use_id())))
            })
        })
}

/// Runs until cancelled.
pub fn forever() -> TestTool {
    tool("forever")
        .description("Never finishes.")
        .schema(json!({"type": "object", "properties": {}}))
        .runs(|_, ctx| {
            Box::pin(async move {
                ctx.progress("waiting forever");
                std::future::pending::<()>().await;
                Ok(ToolOutput::text("unreachable"))
            })
        })
}

/// Panics when called.
pub fn panics() -> TestTool {
    tool("panics")
        .description("Panics.")
        .schema(json!({"type": "object", "properties": {}}))
        .runs(|_, _| Box::pin(async { panic!("index out of bounds") }))
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
        registry.register(Arc::new(Echo)).unwrap();
        registry.register(Arc::new(Write)).unwrap();
        registry.register(Arc::new(Shell)).unwrap();
        registry.register(Arc::new(forever())).unwrap();
        registry.register(Arc::new(panics())).unwrap();
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
