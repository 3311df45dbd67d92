//! The executor: every call through the eight stages.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt as _;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::budget::ResultBudget;
use crate::call::ToolCall;
use crate::context::{ExecutionEvent, Session, ToolContext};
use crate::erased::PreparedCall;
use crate::hooks::{HookCall, PostHookOutcome, PostToolHook, PreHookOutcome, PreToolHook};
use crate::output::{Content, ToolError, ToolOutput};
use crate::permission::{PermissionDecision, Permissions};
use crate::registry::{RegisteredTool, ToolRegistry};
use crate::result::ToolResult;

/// The most calls of one message that run at the same time.
pub(crate) const MAX_CONCURRENT_CALLS: usize = 10;

/// Finds the closest tool names for an unknown one. The registry's own edit-distance suggester is
/// the default; tool-pool's `ToolPool::suggester` answers through tool search.
pub trait NameSuggester: Send + Sync {
    /// Up to `limit` names close to `name`, best first.
    fn suggest(&self, name: &str, limit: usize) -> Vec<String>;
}

pub(crate) struct Inner {
    registry: Arc<ToolRegistry>,
    permissions: Arc<Permissions>,
    session: Arc<Session>,
    pre_hooks: Vec<Arc<dyn PreToolHook>>,
    post_hooks: Vec<Arc<dyn PostToolHook>>,
    budget: ResultBudget,
    pub(crate) max_concurrency: usize,
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
    pub(crate) inner: Arc<Inner>,
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
pub(crate) struct Stop(pub(crate) String);

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
        let admitted = self.admit(call, cancel, events.clone());
        self.run_admitted(id, admitted, events).await
    }

    /// Stages 1 and 2 up to the tool's own checks: lookup (through a proxy to its target), the
    /// JSON Schema, and the input parsed once into a prepared call.
    pub(crate) fn admit(
        &self,
        call: ToolCall,
        cancel: CancellationToken,
        events: Option<UnboundedSender<ExecutionEvent>>,
    ) -> Result<Admitted, Stop> {
        let ToolCall { id, name, input } = call;
        let entry = self.lookup(&name)?;
        Self::check_schema(&entry, &input)?;
        let (entry, input) = self.through_proxy(entry, input)?;
        let tool = entry.tool().clone();
        let prepared = tool.prepare(input).map_err(|err| Stop(err.to_string()))?;
        let mut ctx = ToolContext::new(
            id,
            tool.spec().name.clone(),
            Arc::clone(&self.inner.session),
        )
        .with_cancellation(cancel);
        if let Some(events) = events {
            ctx = ctx.with_events(events);
        }
        Ok(Admitted {
            entry,
            call: prepared,
            ctx,
        })
    }

    /// Stages 2 (the tool's own checks) to 8 for an admitted call, reporting when it finished.
    pub(crate) async fn run_admitted(
        &self,
        id: String,
        admitted: Result<Admitted, Stop>,
        events: Option<UnboundedSender<ExecutionEvent>>,
    ) -> ToolResult {
        let result = match admitted {
            Ok(admitted) => self.run_stages(admitted).await,
            Err(stop) => Err(stop),
        };
        let result = result.unwrap_or_else(|Stop(message)| ToolResult::error(id.clone(), message));
        if let Some(events) = events {
            let _ = events.send(ExecutionEvent::Finished {
                tool_use_id: id,
                is_error: result.is_error,
            });
        }
        result
    }

    /// Stage 1: the tool by name or alias, enabled.
    fn lookup(&self, name: &str) -> Result<Arc<RegisteredTool>, Stop> {
        let entry = self
            .inner
            .registry
            .get(name)
            .ok_or_else(|| Stop(self.unknown_tool(name)))?;
        if !entry.tool().is_enabled() {
            return Err(Stop(format!(
                "the tool {} is disabled in this session; use another tool",
                entry.tool().spec().name
            )));
        }
        Ok(entry)
    }

    /// Stage 1 for a proxy: its target, looked up, with the target's input checked against the
    /// target's schema. A call of any other tool passes through unchanged.
    fn through_proxy(
        &self,
        entry: Arc<RegisteredTool>,
        input: Value,
    ) -> Result<(Arc<RegisteredTool>, Value), Stop> {
        let Some(target) = entry.tool().proxy_target(&input) else {
            return Ok((entry, input));
        };
        let target = target.map_err(|err| Stop(err.to_string()))?;
        let target_entry = self.lookup(&target.name)?;
        if target_entry.tool().proxy_target(&target.input).is_some() {
            return Err(Stop(format!(
                "{} cannot call {}: call it directly",
                entry.tool().spec().name,
                target_entry.tool().spec().name
            )));
        }
        Self::check_schema(&target_entry, &target.input)?;
        Ok((target_entry, target.input))
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

    /// Stage 2: the input against the tool's compiled JSON Schema.
    fn check_schema(entry: &RegisteredTool, input: &Value) -> Result<(), Stop> {
        match Self::schema_errors(entry, input) {
            Some(message) => Err(Stop(message)),
            None => Ok(()),
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

    /// Stages 2 (the tool's own checks) to 8, in order.
    async fn run_stages(&self, admitted: Admitted) -> Result<ToolResult, Stop> {
        let Admitted { entry, call, ctx } = admitted;
        call.validate(&ctx)
            .await
            .map_err(|err| Stop(err.to_string()))?;
        let (call, hook_allowed) = self.pre_hooks(&entry, call, &ctx).await?;
        self.permission(&entry, &call, &ctx, hook_allowed).await?;
        let input = call.input().clone();
        let output = self.call(&entry, call, &ctx).await?;
        let spec = entry.tool().spec();
        let output = self
            .inner
            .budget
            .apply(
                output,
                spec.max_result_chars,
                self.inner.session.dir(),
                ctx.tool_use_id(),
            )
            .await;
        let output = self.post_hooks(&ctx, &input, output).await;
        Ok(map_output(ctx.tool_use_id().to_owned(), output))
    }

    /// Stage 3: pre-tool hooks, which may block the call, allow it, or rewrite its input (which
    /// is then validated and prepared again).
    async fn pre_hooks(
        &self,
        entry: &RegisteredTool,
        mut call: PreparedCall,
        ctx: &ToolContext,
    ) -> Result<(PreparedCall, bool), Stop> {
        let mut hook_allowed = false;
        for hook in &self.inner.pre_hooks {
            let hook_call = self.hook_call(ctx, call.input());
            match hook.before(&hook_call).await {
                PreHookOutcome::Continue => {}
                PreHookOutcome::Allow => hook_allowed = true,
                PreHookOutcome::Deny { reason } => {
                    return Err(Stop(format!(
                        "a pre-tool hook blocked this {} call: {reason}",
                        entry.tool().spec().name
                    )));
                }
                PreHookOutcome::Rewrite { input } => {
                    call = Self::rewritten(entry, input, ctx).await?;
                }
            }
        }
        Ok((call, hook_allowed))
    }

    async fn rewritten(
        entry: &RegisteredTool,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<PreparedCall, Stop> {
        let invalid = |message: String| {
            Stop(format!(
                "a pre-tool hook rewrote the input into one that is not valid: {message}"
            ))
        };
        if let Some(message) = Self::schema_errors(entry, &input) {
            return Err(invalid(message));
        }
        let call = entry
            .tool()
            .prepare(input)
            .map_err(|err| invalid(err.to_string()))?;
        call.validate(ctx)
            .await
            .map_err(|err| invalid(err.to_string()))?;
        Ok(call)
    }

    /// Stage 4: permission.
    async fn permission(
        &self,
        entry: &RegisteredTool,
        call: &PreparedCall,
        ctx: &ToolContext,
        hook_allowed: bool,
    ) -> Result<(), Stop> {
        let decision = self
            .inner
            .permissions
            .decide_with_hook(entry.tool().spec(), call, ctx, hook_allowed)
            .await;
        match decision {
            PermissionDecision::Deny { reason, .. } => Err(Stop(reason)),
            PermissionDecision::Allow { .. } => Ok(()),
        }
    }

    /// Stage 5: the call, with cancellation; a panicking tool is caught and reported.
    async fn call(
        &self,
        entry: &RegisteredTool,
        call: PreparedCall,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, Stop> {
        let name = &entry.tool().spec().name;
        let cancel = ctx.cancellation().clone();
        if cancel.is_cancelled() {
            return Err(Stop(CANCELLED_BEFORE_START.to_owned()));
        }
        ctx.emit(ExecutionEvent::Started {
            tool_use_id: ctx.tool_use_id().to_owned(),
            tool: name.clone(),
            activity: call.info().activity().map(str::to_owned),
        });
        let running = AssertUnwindSafe(call.call(ctx)).catch_unwind();
        let output = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ToolError::Cancelled),
            outcome = running => match outcome {
                Ok(result) => result,
                Err(panic) => Err(ToolError::Failed(format!(
                    "{name} crashed while running ({}); this is a bug in the tool, try another way",
                    panic_message(&*panic)
                ))),
            },
        };
        match output {
            Ok(output) => Ok(output),
            Err(ToolError::Cancelled) => Err(Stop(CANCELLED_WHILE_RUNNING.to_owned())),
            Err(err) => Err(Stop(err.to_string())),
        }
    }

    /// Stage 7: post-tool hooks, which may add context or flag the result.
    async fn post_hooks(
        &self,
        ctx: &ToolContext,
        input: &Value,
        mut output: ToolOutput,
    ) -> ToolOutput {
        for hook in &self.inner.post_hooks {
            let hook_call = self.hook_call(ctx, input);
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
        output
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

/// A call past lookup and schema validation: its tool (a proxy's target), its prepared input and
/// its context.
pub(crate) struct Admitted {
    entry: Arc<RegisteredTool>,
    call: PreparedCall,
    ctx: ToolContext,
}

impl Admitted {
    pub(crate) fn is_concurrency_safe(&self) -> bool {
        self.call.info().is_concurrency_safe()
    }

    pub(crate) fn is_read_only(&self) -> bool {
        self.call.info().is_read_only()
    }
}

pub(crate) const CANCELLED_BEFORE_START: &str = "the user cancelled this call before it started; nothing was done. Do not retry unless the user asks";
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
    match crate::budget::head_chars(text, max) {
        (all, 0) => all.to_owned(),
        (head, _) => format!("{head}…"),
    }
}
