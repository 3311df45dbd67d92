//! The executor: every call through the eight stages, and one message's calls scheduled by their
//! concurrency safety.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::budget::ResultBudget;
use crate::context::{ExecutionEvent, Session, ToolContext};
use crate::hooks::{HookCall, PostHookOutcome, PostToolHook, PreHookOutcome, PreToolHook};
use crate::permission::{PermissionDecision, Permissions};
use crate::registry::{RegisteredTool, ToolRegistry};
use crate::result::ToolResult;
use crate::tool::{Content, ToolError, ToolOutput};

/// The most calls of one message that run at the same time.
pub const MAX_CONCURRENT_CALLS: usize = 10;

/// One `tool_use` block: which tool, with what input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The block's id, echoed in the result.
    pub id: String,
    /// The tool's name (or an alias) as the model wrote it.
    pub name: String,
    /// The input as the model sent it.
    pub input: Value,
}

impl ToolCall {
    /// A call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }

    /// A call whose input is raw JSON text as streamed by a provider. Text that does not parse
    /// is kept as a string, which schema validation then reports to the model.
    pub fn from_json_text(id: impl Into<String>, name: impl Into<String>, text: &str) -> Self {
        let input = if text.trim().is_empty() {
            Value::Object(serde_json::Map::new())
        } else {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
        };
        Self::new(id, name, input)
    }
}

/// Finds the closest tool names for an unknown one. The registry's own edit-distance suggester is
/// the default; tool-pool plugs in tool search.
pub trait NameSuggester: Send + Sync {
    /// Up to `limit` names close to `name`, best first.
    fn suggest(&self, name: &str, limit: usize) -> Vec<String>;
}

struct Inner {
    registry: Arc<ToolRegistry>,
    permissions: Arc<Permissions>,
    session: Arc<Session>,
    pre_hooks: Vec<Arc<dyn PreToolHook>>,
    post_hooks: Vec<Arc<dyn PostToolHook>>,
    budget: ResultBudget,
    max_concurrency: usize,
    suggester: Option<Arc<dyn NameSuggester>>,
}

/// Runs tool calls through the lifecycle. Cheap to clone.
///
/// The stages, in order: 1. lookup; 2. validation (JSON Schema, then the tool's `validate_input`);
/// 3. pre-tool hooks; 4. permission; 5. `call`; 6. the result budget; 7. post-tool hooks;
/// 8. mapping to a [`ToolResult`]. A failure at any stage is an `is_error` result telling the
/// model what to do next; nothing a model sends can panic the process.
#[derive(Clone)]
pub struct Executor {
    inner: Arc<Inner>,
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("tools", &self.inner.registry.len())
            .field("pre_hooks", &self.inner.pre_hooks.len())
            .field("post_hooks", &self.inner.post_hooks.len())
            .field("max_concurrency", &self.inner.max_concurrency)
            .finish_non_exhaustive()
    }
}

/// Builds an [`Executor`].
pub struct ExecutorBuilder {
    inner: Inner,
}

impl ExecutorBuilder {
    /// Sets the permission stage (default: no rules, non-interactive).
    #[must_use]
    pub fn permissions(mut self, permissions: Arc<Permissions>) -> Self {
        self.inner.permissions = permissions;
        self
    }

    /// Adds a pre-tool hook; hooks run in the order they were added.
    #[must_use]
    pub fn pre_hook(mut self, hook: Arc<dyn PreToolHook>) -> Self {
        self.inner.pre_hooks.push(hook);
        self
    }

    /// Adds a post-tool hook; hooks run in the order they were added.
    #[must_use]
    pub fn post_hook(mut self, hook: Arc<dyn PostToolHook>) -> Self {
        self.inner.post_hooks.push(hook);
        self
    }

    /// Sets the preview size of oversized results.
    #[must_use]
    pub fn budget(mut self, budget: ResultBudget) -> Self {
        self.inner.budget = budget;
        self
    }

    /// Sets how many concurrency-safe calls may run at once (at least 1).
    #[must_use]
    pub fn max_concurrency(mut self, max: usize) -> Self {
        self.inner.max_concurrency = max.max(1);
        self
    }

    /// Uses `suggester` for "did you mean" answers to unknown tool names.
    #[must_use]
    pub fn suggester(mut self, suggester: Arc<dyn NameSuggester>) -> Self {
        self.inner.suggester = Some(suggester);
        self
    }

    /// The executor.
    pub fn build(self) -> Executor {
        Executor {
            inner: Arc::new(self.inner),
        }
    }
}

/// Where a call's lifecycle stopped early, with the message for the model.
struct Stop(String);

impl Executor {
    /// Starts building an executor over `registry` for `session`.
    pub fn builder(registry: Arc<ToolRegistry>, session: Arc<Session>) -> ExecutorBuilder {
        ExecutorBuilder {
            inner: Inner {
                registry,
                permissions: Arc::new(Permissions::default()),
                session,
                pre_hooks: Vec::new(),
                post_hooks: Vec::new(),
                budget: ResultBudget::default(),
                max_concurrency: MAX_CONCURRENT_CALLS,
                suggester: None,
            },
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.inner.registry
    }

    /// The permission stage.
    pub fn permissions(&self) -> &Arc<Permissions> {
        &self.inner.permissions
    }

    /// The session.
    pub fn session(&self) -> &Arc<Session> {
        &self.inner.session
    }

    /// Runs one call through all eight stages.
    pub async fn execute(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
        events: Option<UnboundedSender<ExecutionEvent>>,
    ) -> ToolResult {
        let id = call.id.clone();
        let result = match self.run_stages(call, cancel, events.clone()).await {
            Ok(result) => result,
            Err(Stop(message)) => ToolResult::error(id.clone(), message),
        };
        if let Some(events) = events {
            let _ = events.send(ExecutionEvent::Finished {
                tool_use_id: id,
                is_error: result.is_error,
            });
        }
        result
    }

    /// Runs the calls of one message with the concurrency rules and returns their results in the
    /// order of `calls`.
    pub async fn execute_all(
        &self,
        calls: Vec<ToolCall>,
        cancel: CancellationToken,
        events: Option<UnboundedSender<ExecutionEvent>>,
    ) -> Vec<ToolResult> {
        let mut batch = self.batch(cancel, events);
        for call in calls {
            batch.push(call);
        }
        batch.finish().await
    }

    /// Starts a batch for one assistant message: push each call as soon as its block is complete
    /// (while the model is still streaming), then collect the results in order.
    pub fn batch(
        &self,
        cancel: CancellationToken,
        events: Option<UnboundedSender<ExecutionEvent>>,
    ) -> Batch {
        Batch {
            executor: self.clone(),
            semaphore: Arc::new(Semaphore::new(self.inner.max_concurrency)),
            cancel,
            events,
            last_exclusive: None,
            since_exclusive: Vec::new(),
            running: Vec::new(),
        }
    }

    fn unknown_tool(&self, name: &str) -> String {
        let suggestions = match &self.inner.suggester {
            Some(s) => s.suggest(name, 3),
            None => self.inner.registry.suggest(name, 3),
        };
        if suggestions.is_empty() {
            format!(
                "there is no tool named `{name}`; use one of the tools listed in this request (or tool_search to find more)"
            )
        } else {
            let list: Vec<String> = suggestions.iter().map(|s| format!("`{s}`")).collect();
            format!(
                "there is no tool named `{name}`; did you mean {}? Call it by its exact name",
                list.join(", ")
            )
        }
    }

    fn schema_errors(entry: &RegisteredTool, input: &Value) -> Option<String> {
        let name = &entry.tool().spec().name;
        if !input.is_object() {
            let got = match input {
                Value::String(text) => {
                    format!("text that is not a JSON object: {}", short(text, 200))
                }
                other => format!("{} instead of an object", json_type(other)),
            };
            return Some(format!(
                "the input to {name} must be a JSON object matching its schema, but it was {got}; send the parameters as a JSON object"
            ));
        }
        let errors: Vec<String> = entry
            .validator()
            .iter_errors(input)
            .take(5)
            .map(|err| {
                let path = err.instance_path().to_string();
                let at = if path.is_empty() {
                    "the input".to_owned()
                } else {
                    format!("`{path}`")
                };
                format!("- at {at}: {err}")
            })
            .collect();
        if errors.is_empty() {
            None
        } else {
            Some(format!(
                "the input to {name} does not match its schema:\n{}\nFix these and call the tool again",
                errors.join("\n")
            ))
        }
    }

    async fn run_stages(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
        events: Option<UnboundedSender<ExecutionEvent>>,
    ) -> Result<ToolResult, Stop> {
        let inner = &self.inner;
        // Stage 1: lookup.
        let entry = inner
            .registry
            .get(&call.name)
            .ok_or_else(|| Stop(self.unknown_tool(&call.name)))?;
        let tool = Arc::clone(entry.tool());
        let spec = tool.spec();
        if !tool.is_enabled() {
            return Err(Stop(format!(
                "the tool {} is disabled in this session; use another tool",
                spec.name
            )));
        }
        let mut ctx = ToolContext::new(
            call.id.clone(),
            spec.name.clone(),
            Arc::clone(&inner.session),
        )
        .with_cancellation(cancel.clone());
        if let Some(events) = events {
            ctx = ctx.with_events(events);
        }
        let mut input = call.input;

        // Stage 2: validation.
        if let Some(message) = Self::schema_errors(&entry, &input) {
            return Err(Stop(message));
        }
        tool.validate_input(&input, &ctx)
            .await
            .map_err(|err| Stop(err.to_string()))?;

        // Stage 3: pre-tool hooks.
        let mut hook_allowed = false;
        for hook in &inner.pre_hooks {
            let hook_call = self.hook_call(&ctx, &input);
            match hook.before(&hook_call).await {
                PreHookOutcome::Continue => {}
                PreHookOutcome::Allow => hook_allowed = true,
                PreHookOutcome::Deny { reason } => {
                    return Err(Stop(format!(
                        "a pre-tool hook blocked this {} call: {reason}",
                        spec.name
                    )));
                }
                PreHookOutcome::Rewrite { input: rewritten } => {
                    if let Some(message) = Self::schema_errors(&entry, &rewritten) {
                        return Err(Stop(format!(
                            "a pre-tool hook rewrote the input into one that is not valid: {message}"
                        )));
                    }
                    tool.validate_input(&rewritten, &ctx).await.map_err(|err| {
                        Stop(format!(
                            "a pre-tool hook rewrote the input into one that is not valid: {err}"
                        ))
                    })?;
                    input = rewritten;
                }
            }
        }

        // Stage 4: permission.
        let decision = inner
            .permissions
            .decide_with_hook(&*tool, &input, &ctx, hook_allowed)
            .await;
        if let PermissionDecision::Deny { reason, .. } = decision {
            return Err(Stop(reason));
        }

        // Stage 5: call, with cancellation.
        if cancel.is_cancelled() {
            return Err(Stop(CANCELLED_BEFORE_START.to_owned()));
        }
        ctx.emit(ExecutionEvent::Started {
            tool_use_id: call.id.clone(),
            tool: spec.name.clone(),
            activity: tool.activity(&input),
        });
        let running = AssertUnwindSafe(tool.call(input.clone(), &ctx)).catch_unwind();
        let output = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ToolError::Cancelled),
            outcome = running => match outcome {
                Ok(result) => result,
                Err(panic) => Err(ToolError::Failed(format!(
                    "{} crashed while running ({}); this is a bug in the tool, try another way",
                    spec.name,
                    panic_message(&*panic)
                ))),
            },
        };
        let output = match output {
            Ok(output) => output,
            Err(ToolError::Cancelled) => return Err(Stop(CANCELLED_WHILE_RUNNING.to_owned())),
            Err(err) => return Err(Stop(err.to_string())),
        };

        // Stage 6: result budget.
        let output = inner
            .budget
            .apply(output, spec.max_result_chars, inner.session.dir(), &call.id)
            .await;

        // Stage 7: post-tool hooks.
        let mut output = output;
        for hook in &inner.post_hooks {
            let hook_call = self.hook_call(&ctx, &input);
            match hook.after(&hook_call, &output).await {
                PostHookOutcome::Continue => {}
                PostHookOutcome::AddContext { text } => output.content.push(Content::text(text)),
                PostHookOutcome::Block { reason } => {
                    output.is_error = true;
                    output.content.push(Content::text(format!(
                        "A post-tool hook flagged this result: {reason}"
                    )));
                }
            }
        }

        // Stage 8: mapping.
        Ok(map_output(call.id, output))
    }

    fn hook_call(&self, ctx: &ToolContext, input: &Value) -> HookCall {
        HookCall {
            tool_use_id: ctx.tool_use_id().to_owned(),
            tool_name: ctx.tool_name().to_owned(),
            tool_input: input.clone(),
            session_id: self.inner.session.id().to_owned(),
            cwd: self.inner.session.cwd().to_string_lossy().into_owned(),
        }
    }
}

const CANCELLED_BEFORE_START: &str = "the user cancelled this call before it started; nothing was done. Do not retry unless the user asks";
const CANCELLED_WHILE_RUNNING: &str = "the user cancelled this call while it was running; it may have done part of its work. Check the state before retrying, and do not retry unless the user asks";

/// Stage 8: a tool's output as a result block. Structured output with no text is also given as
/// JSON text, since not every provider reads structured content.
fn map_output(tool_use_id: String, output: ToolOutput) -> ToolResult {
    let mut content = output.content;
    if let Some(structured) = &output.structured
        && !content.iter().any(|c| matches!(c, Content::Text { .. }))
    {
        content.insert(0, Content::text(structured.to_string()));
    }
    if content.is_empty() {
        content.push(Content::text("(no output)"));
    }
    ToolResult {
        tool_use_id,
        content,
        structured: output.structured,
        is_error: output.is_error,
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_owned())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn short(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

type Done = Shared<BoxFuture<'static, ()>>;

/// The calls of one assistant message, started as they arrive.
///
/// Concurrency-safe calls run together (up to the executor's limit, 10 by default); a call that
/// is not concurrency-safe waits for every earlier call and runs alone, and later calls wait for
/// it. Results come back in the order the calls were pushed.
pub struct Batch {
    executor: Executor,
    semaphore: Arc<Semaphore>,
    cancel: CancellationToken,
    events: Option<UnboundedSender<ExecutionEvent>>,
    last_exclusive: Option<Done>,
    since_exclusive: Vec<Done>,
    running: Vec<(String, JoinHandle<ToolResult>)>,
}

impl fmt::Debug for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("calls", &self.running.len())
            .finish_non_exhaustive()
    }
}

impl Batch {
    /// Starts a call as soon as the concurrency rules allow. Must be called inside a tokio runtime.
    pub fn push(&mut self, call: ToolCall) {
        let safe = self
            .executor
            .inner
            .registry
            .get(&call.name)
            .is_some_and(|entry| entry.tool().is_concurrency_safe(&call.input));
        let (done_tx, done_rx) = oneshot::channel::<()>();
        let done: Done = done_rx.map(|_| ()).boxed().shared();
        let waits: Vec<Done> = if safe {
            self.last_exclusive.iter().cloned().collect()
        } else {
            self.last_exclusive
                .iter()
                .cloned()
                .chain(self.since_exclusive.drain(..))
                .collect()
        };
        if safe {
            self.since_exclusive.push(done.clone());
        } else {
            self.last_exclusive = Some(done);
        }
        let executor = self.executor.clone();
        let semaphore = Arc::clone(&self.semaphore);
        let cancel = self.cancel.clone();
        let events = self.events.clone();
        let id = call.id.clone();
        let handle = tokio::spawn(async move {
            // Dropping `done_tx` at the end of this task (however it ends) releases the calls
            // waiting on this one.
            let _done_tx = done_tx;
            let waited = async {
                futures::future::join_all(waits).await;
                if safe {
                    semaphore.acquire_owned().await.ok()
                } else {
                    None
                }
            };
            let permit = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    let result = ToolResult::error(call.id.clone(), CANCELLED_BEFORE_START);
                    if let Some(events) = &events {
                        let _ = events.send(ExecutionEvent::Finished { tool_use_id: call.id.clone(), is_error: true });
                    }
                    return result;
                }
                permit = waited => permit,
            };
            let result = executor.execute(call, cancel, events).await;
            drop(permit);
            result
        });
        self.running.push((id, handle));
    }

    /// Waits for every call and returns the results in the order the calls were pushed.
    pub async fn finish(self) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(self.running.len());
        for (id, handle) in self.running {
            results.push(match handle.await {
                Ok(result) => result,
                Err(err) => ToolResult::error(
                    id,
                    format!("the call ended abnormally ({err}); it may have done part of its work"),
                ),
            });
        }
        results
    }
}
